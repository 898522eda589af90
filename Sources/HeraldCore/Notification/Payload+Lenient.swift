/// The payload as a device reads it.
///
/// The gateway and the provider side read payloads strictly (``NotificationPayload/decode(_:)``
/// refuses a field of the wrong type). A device never refuses a notification that has arrived: it
/// ignores a key whose value it cannot use, as iOS does, and reads the rest. That reading is
/// defined here, once, so that "is this silent?", the alert, the sound and the grouping keys mean
/// the same on the device as everywhere else.
extension NotificationPayload {
    /// Reads `json` leniently: a non-object is an empty payload, an `aps` that is not an object is
    /// an empty ``APS``, and each `aps` key of the wrong type or range is left out. Every
    /// top-level key other than `aps` is kept in ``custom``.
    public init(lenient json: JSONValue) {
        guard case .object(var root) = json else {
            self.init()
            return
        }
        let aps = root.removeValue(forKey: Self.apsKey)
        if case .object(let fields)? = aps {
            self.init(aps: APS(lenient: fields), custom: root)
        } else {
            self.init(aps: APS(), custom: root)
        }
    }
}

extension APS {
    /// The `aps` keys a device uses, each read only when its value has the type reference §4
    /// gives it (`loc-args` items that are numbers become their text, as the device formats them).
    public init(lenient aps: [String: JSONValue]) {
        self.init()
        alert = aps["alert"].flatMap(Alert.init(lenient:))
        badge = aps["badge"]?.integer(Int.self)
        sound = aps["sound"].flatMap(Sound.init(lenient:))
        threadID = aps["thread-id"]?.stringValue
        category = aps["category"]?.stringValue
        contentAvailable = aps["content-available"]?.integer(Int.self)
        mutableContent = aps["mutable-content"]?.integer(Int.self)
        targetContentID = aps["target-content-id"]?.stringValue
        interruptionLevel = aps["interruption-level"]?.stringValue.map(InterruptionLevel.init(rawValue:))
        relevanceScore = aps["relevance-score"]?.finiteDouble
        filterCriteria = aps["filter-criteria"]?.stringValue
        if case .bool(let changed)? = aps["content-changed"] { contentChanged = changed }
    }

    /// The level the device applies: one of Apple's four, an absent or unknown level being active.
    public var effectiveInterruptionLevel: InterruptionLevel {
        interruptionLevel.flatMap { InterruptionLevel(known: $0.rawValue) } ?? .active
    }

    /// `relevance-score` clamped to 0…1 (absent: 0), as the system ranks a thread's notifications.
    public var effectiveRelevance: Double {
        min(1, max(0, relevanceScore ?? 0))
    }

    /// Whether the alert has text to show (what a service extension needs to run, and must keep).
    public var hasAlertText: Bool {
        switch alert {
        case .body(let text)?: !text.isEmpty
        case .fields(let f)?: [f.title, f.subtitle, f.body, f.locKey, f.titleLocKey, f.subtitleLocKey].contains { $0 != nil }
        case nil: false
        }
    }
}

extension APS.Alert {
    /// A string is the body; a dictionary keeps its keys of the right type.
    public init?(lenient value: JSONValue) {
        switch value {
        case .string(let body): self = .body(body)
        case .object(let d):
            var f = APS.AlertFields(title: d["title"]?.stringValue, subtitle: d["subtitle"]?.stringValue, body: d["body"]?.stringValue)
            f.launchImage = d["launch-image"]?.stringValue
            f.titleLocKey = d["title-loc-key"]?.stringValue
            f.titleLocArgs = Self.arguments(d["title-loc-args"])
            f.subtitleLocKey = d["subtitle-loc-key"]?.stringValue
            f.subtitleLocArgs = Self.arguments(d["subtitle-loc-args"])
            f.locKey = d["loc-key"]?.stringValue
            f.locArgs = Self.arguments(d["loc-args"])
            self = .fields(f)
        default: return nil
        }
    }

    private static func arguments(_ value: JSONValue?) -> [String]? {
        guard case .array(let items)? = value else { return nil }
        return items.map(LocalizedFormat.argument)
    }
}

extension APS.Sound {
    /// A string names the file; a dictionary is the critical-alert form (`name` defaults to
    /// `"default"`).
    public init?(lenient value: JSONValue) {
        switch value {
        case .string(let name): self = .named(name)
        case .object(let d):
            self = .critical(name: d["name"]?.stringValue ?? "default", volume: d["volume"]?.finiteDouble, critical: d["critical"]?.integer(Int.self))
        default: return nil
        }
    }

    /// The file name to play (`"default"` for the system sound).
    public var name: String {
        switch self {
        case .named(let name): name
        case .critical(let name, _, _): name
        }
    }

    /// The critical-alert form with `critical: 1` (plays even when muted, needs the entitlement).
    public var isCritical: Bool {
        if case .critical(_, _, 1?) = self { return true }
        return false
    }
}
