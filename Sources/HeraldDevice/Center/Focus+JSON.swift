import HeraldCore

/// The JSON form of ``FocusSettings`` (docs/device-agent.md, "Focus and the scheduled summary"):
/// what `herald device run --focus FILE` and the agent's `device` message take, what is saved in
/// the device's directory and what `focus` events print.
///
/// ```json
/// {"modes": [{"name": "Work", "state": "scheduled",
///             "schedule": {"start": "09:00", "end": "17:30", "days": ["mon", "tue", "wed", "thu", "fri"]},
///             "allowedApps": ["com.example.mail"], "allowedPeople": ["+14155550100"],
///             "timeSensitive": true, "filters": {"com.example.mail": ["work"]}}],
///  "summary": {"times": ["08:00", "18:00"], "apps": ["com.example.news"]}}
/// ```
///
/// Everything is checked and bounded (``FocusSettings/maximumModes`` and the others); an error
/// names the field.
extension FocusSettings {
    static let dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    public init(json: JSONValue) throws(RuntimeError) {
        guard case .object(let root) = json else { throw RuntimeError("focus settings must be a JSON object") }
        try Self.onlyKeys(root, ["modes", "summary"], in: "focus settings")
        var modes: [FocusMode] = []
        if let value = root["modes"] {
            guard case .array(let items) = value else { throw RuntimeError("\"modes\" must be an array") }
            guard items.count <= Self.maximumModes else {
                throw RuntimeError("\"modes\" has \(items.count) Focus modes; at most \(Self.maximumModes) are allowed")
            }
            for (index, item) in items.enumerated() { modes.append(try Self.mode(item, at: index)) }
        }
        var names = Set<String>()
        for mode in modes where !names.insert(mode.name).inserted { throw RuntimeError("modes: two Focus modes are named \"\(mode.name)\"") }
        if modes.filter({ $0.state == .on }).count > 1 { throw RuntimeError("modes: only one Focus can be on at a time") }
        var summary: ScheduledSummary?
        if let value = root["summary"], value != .null {
            guard case .object(let s) = value else { throw RuntimeError("\"summary\" must be an object") }
            try Self.onlyKeys(s, ["times", "apps"], in: "summary")
            guard case .array(let times)? = s["times"], !times.isEmpty, times.count <= Self.maximumSummaryTimes else {
                throw RuntimeError("summary.times must be an array of 1 to \(Self.maximumSummaryTimes) times \"HH:MM\"")
            }
            var minutes: [Int] = []
            for (i, t) in times.enumerated() { minutes.append(try Self.time(t, field: "summary.times[\(i)]")) }
            summary = ScheduledSummary(times: minutes, apps: try Self.identifiers(s["apps"], field: "summary.apps"))
        }
        self.init(modes: modes, summary: summary)
    }

    public var json: JSONValue {
        var root: [String: JSONValue] = ["modes": .array(modes.map(Self.json))]
        if let summary {
            root["summary"] = .object(["times": .array(summary.times.map { .string(Self.timeString($0)) }), "apps": Self.sorted(summary.apps)])
        }
        return .object(root)
    }

    private static func json(_ mode: FocusMode) -> JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(mode.name), "state": .string(mode.state.rawValue), "allowedApps": sorted(mode.allowedApps),
            "allowedPeople": sorted(mode.allowedPeople), "timeSensitive": .bool(mode.allowsTimeSensitive),
        ]
        if let s = mode.schedule {
            object["schedule"] = .object([
                "start": .string(timeString(s.start)), "end": .string(timeString(s.end)),
                "days": .array(s.weekdays.sorted().map { .string(dayNames[$0 - 1]) }),
            ])
        }
        if !mode.filters.isEmpty { object["filters"] = .object(mode.filters.mapValues(sorted)) }
        return .object(object)
    }

    private static func sorted(_ set: Set<String>) -> JSONValue { .array(set.sorted().map(JSONValue.string)) }

    static func timeString(_ minutes: Int) -> String {
        let h = minutes / 60, m = minutes % 60
        return (h < 10 ? "0" : "") + String(h) + ":" + (m < 10 ? "0" : "") + String(m)
    }

    private static func mode(_ value: JSONValue, at index: Int) throws(RuntimeError) -> FocusMode {
        let field = "modes[\(index)]"
        guard case .object(let m) = value else { throw RuntimeError("\(field) must be an object") }
        try onlyKeys(m, ["name", "state", "schedule", "allowedApps", "allowedPeople", "timeSensitive", "filters"], in: field)
        guard let name = m["name"]?.stringValue, !name.isEmpty, name.utf8.count <= maximumNameLength else {
            throw RuntimeError("\(field).name must be a string of 1 to \(maximumNameLength) bytes")
        }
        var state = FocusMode.State.off
        if let s = m["state"] {
            guard let raw = s.stringValue, let known = FocusMode.State(rawValue: raw) else {
                throw RuntimeError("\(field).state must be \"off\", \"on\" or \"scheduled\"")
            }
            state = known
        }
        var schedule: FocusSchedule?
        if let s = m["schedule"], s != .null {
            guard case .object(let o) = s else { throw RuntimeError("\(field).schedule must be an object") }
            try onlyKeys(o, ["start", "end", "days"], in: "\(field).schedule")
            let start = try time(o["start"], field: "\(field).schedule.start")
            let end = try time(o["end"], field: "\(field).schedule.end")
            guard start != end else { throw RuntimeError("\(field).schedule: start and end are both \(timeString(start)); a Focus on all day is \"state\": \"on\"") }
            var days = Set(1...7)
            if let d = o["days"] {
                guard case .array(let items) = d, !items.isEmpty, items.count <= 7 else {
                    throw RuntimeError("\(field).schedule.days must be an array of 1 to 7 days (\(dayNames.joined(separator: ", ")))")
                }
                days = []
                for item in items {
                    guard let name = item.stringValue, let i = dayNames.firstIndex(of: name.lowercased()) else {
                        throw RuntimeError("\(field).schedule.days: \(item) is not a day (\(dayNames.joined(separator: ", ")))")
                    }
                    days.insert(i + 1)
                }
            }
            schedule = FocusSchedule(start: start, end: end, weekdays: days)
        }
        if state == .scheduled, schedule == nil { throw RuntimeError("\(field): a scheduled Focus needs a \"schedule\"") }
        var allowsTimeSensitive = true
        if let t = m["timeSensitive"] {
            guard case .bool(let b) = t else { throw RuntimeError("\(field).timeSensitive must be true or false") }
            allowsTimeSensitive = b
        }
        var filters: [String: Set<String>] = [:]
        if let f = m["filters"] {
            guard case .object(let byApp) = f, byApp.count <= maximumAllowed else {
                throw RuntimeError("\(field).filters must be an object of at most \(maximumAllowed) apps, each with an array of filter-criteria values")
            }
            for (app, values) in byApp {
                try checkIdentifier(app, field: "\(field).filters key")
                let set = try identifiers(values, field: "\(field).filters.\(app)")
                guard set.count <= maximumFilterValues else {
                    throw RuntimeError("\(field).filters.\(app) has \(set.count) values; at most \(maximumFilterValues) are allowed")
                }
                filters[app] = set
            }
        }
        return FocusMode(
            name: name, state: state, schedule: schedule, allowedApps: try identifiers(m["allowedApps"], field: "\(field).allowedApps"),
            allowedPeople: try identifiers(m["allowedPeople"], field: "\(field).allowedPeople"), allowsTimeSensitive: allowsTimeSensitive,
            filters: filters)
    }

    /// "HH:MM", 00:00 to 23:59, as minutes after midnight.
    static func time(_ value: JSONValue?, field: String) throws(RuntimeError) -> Int {
        guard let text = value?.stringValue else { throw RuntimeError("\(field) must be a time \"HH:MM\"") }
        let bytes = Array(text.utf8)
        func digit(_ b: UInt8) -> Int? { b >= 48 && b <= 57 ? Int(b - 48) : nil }
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":"), let h1 = digit(bytes[0]), let h2 = digit(bytes[1]),
              let m1 = digit(bytes[3]), let m2 = digit(bytes[4]), h1 * 10 + h2 < 24, m1 * 10 + m2 < 60 else {
            throw RuntimeError("\(field): \"\(text.prefix(40))\" is not a time of day \"HH:MM\" (00:00 to 23:59)")
        }
        return (h1 * 10 + h2) * 60 + m1 * 10 + m2
    }

    private static func identifiers(_ value: JSONValue?, field: String) throws(RuntimeError) -> Set<String> {
        guard let value, value != .null else { return [] }
        guard case .array(let items) = value else { throw RuntimeError("\(field) must be an array of strings") }
        guard items.count <= maximumAllowed else { throw RuntimeError("\(field) has \(items.count) entries; at most \(maximumAllowed) are allowed") }
        var set = Set<String>()
        for item in items {
            guard let s = item.stringValue else { throw RuntimeError("\(field) must be an array of strings") }
            try checkIdentifier(s, field: field)
            set.insert(s)
        }
        return set
    }

    private static func checkIdentifier(_ s: String, field: String) throws(RuntimeError) {
        guard !s.isEmpty, s.utf8.count <= maximumIdentifierLength else {
            throw RuntimeError("\(field): each entry must be 1 to \(maximumIdentifierLength) bytes")
        }
    }

    private static func onlyKeys(_ object: [String: JSONValue], _ known: Set<String>, in field: String) throws(RuntimeError) {
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw RuntimeError("\(field): unknown key \"\(unknown.prefix(40))\" (known: \(known.sorted().joined(separator: ", ")))")
        }
    }
}
