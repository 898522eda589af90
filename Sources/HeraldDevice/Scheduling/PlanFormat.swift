import Foundation
import HeraldCore

/// The JSON form of local requests, device events and planned deliveries (`docs/device-plan.md`):
/// what `herald device plan` reads and prints.
public enum PlanFormat {
    public struct FormatError: Error, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    // MARK: instants

    /// An ISO 8601 date-time: `2026-06-10T13:00:00Z`, `…+09:00`, optional fractional seconds.
    /// Without an offset it is a wall-clock time (returned in `wallClock`, `instant` nil).
    public static func parseDateTime(_ text: String) -> (instant: Int64?, wallClock: NotificationTrigger.WallClockTime?)? {
        let chars = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= chars.count else { return nil }
            var value = 0
            for c in chars[from..<(from + count)] {
                guard c >= 48 && c <= 57 else { return nil }
                value = value * 10 + Int(c - 48)
            }
            return value
        }
        guard chars.count >= 19, chars[4] == UInt8(ascii: "-"), chars[7] == UInt8(ascii: "-"),
              chars[10] == UInt8(ascii: "T") || chars[10] == UInt8(ascii: " "), chars[13] == UInt8(ascii: ":"), chars[16] == UInt8(ascii: ":"),
              let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var millis = 0
        if index < chars.count, chars[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < chars.count, chars[index] >= 48, chars[index] <= 57 {
                if digits < 3 { millis = millis * 10 + Int(chars[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            // Fewer than three digits are tenths or hundredths; digits past the third are dropped.
            for _ in 0..<max(0, 3 - digits) { millis *= 10 }
        }
        let wall = NotificationTrigger.WallClockTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        if index == chars.count { return (nil, wall) }
        var offsetSeconds = 0
        if chars[index] == UInt8(ascii: "Z") || chars[index] == UInt8(ascii: "z") {
            guard index + 1 == chars.count else { return nil }
        } else if chars[index] == UInt8(ascii: "+") || chars[index] == UInt8(ascii: "-") {
            let sign = chars[index] == UInt8(ascii: "+") ? 1 : -1
            guard let h = number(index + 1, 2) else { return nil }
            var m = 0
            if index + 3 < chars.count {
                let colon = chars[index + 3] == UInt8(ascii: ":") ? 1 : 0
                guard let mm = number(index + 3 + colon, 2), index + 5 + colon == chars.count else { return nil }
                m = mm
            } else if index + 3 != chars.count { return nil }
            offsetSeconds = sign * (h * 3600 + m * 60)
        } else { return nil }
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        guard let date = utc.date(from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)) else {
            return nil
        }
        let instant = Int64(date.timeIntervalSince1970) * 1000 + Int64(millis) - Int64(offsetSeconds) * 1000
        return (instant, wall)
    }

    /// `2026-06-10T13:00:00Z` (milliseconds shown only when not zero).
    public static func utcString(_ milliseconds: Int64) -> String { format(milliseconds, in: TimeZone(identifier: "UTC")!, zulu: true) }

    /// `2026-06-10T09:00:00-04:00` in the zone.
    public static func localString(_ milliseconds: Int64, in zone: TimeZone) -> String { format(milliseconds, in: zone, zulu: false) }

    private static func format(_ milliseconds: Int64, in zone: TimeZone, zulu: Bool) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let seconds = Int64((Double(milliseconds) / 1000).rounded(.down))
        let date = Date(timeIntervalSince1970: Double(seconds))
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        var text = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
        let ms = milliseconds - seconds * 1000
        if ms != 0 { text += String(format: ".%03d", ms) }
        if zulu { return text + "Z" }
        let offset = zone.secondsFromGMT(for: date)
        let sign = offset < 0 ? "-" : "+"
        return text + String(format: "%@%02d:%02d", sign, abs(offset) / 3600, abs(offset) % 3600 / 60)
    }

    public static func timeZone(_ identifier: String) throws -> TimeZone {
        guard let zone = TimeZone(identifier: identifier) else {
            throw FormatError("\"\(identifier)\" is not an IANA time zone (e.g. America/New_York)")
        }
        return zone
    }

    // MARK: requests

    /// A request: `{"id":…, "content":{…}, "trigger":{…}}` (trigger optional: deliver at once).
    public static func request(_ value: JSONValue) throws -> LocalRequest {
        guard case .object(let object) = value else { throw FormatError("a request must be a JSON object") }
        guard case .string(let id)? = object["id"], !id.isEmpty else { throw FormatError("a request needs a non-empty \"id\" string") }
        let content = object["content"] ?? .object([:])
        guard case .object = content else { throw FormatError("request \"\(id)\": \"content\" must be an object") }
        var trigger: NotificationTrigger?
        if let raw = object["trigger"], raw != .null {
            do { trigger = try self.trigger(raw) } catch let error as FormatError {
                throw FormatError("request \"\(id)\": \(error.description)")
            }
            do { try trigger?.validate() } catch { throw FormatError("request \"\(id)\": \(error.message)") }
        }
        return LocalRequest(id: id, content: content, trigger: trigger)
    }

    static func trigger(_ value: JSONValue) throws -> NotificationTrigger {
        guard case .object(let t) = value else { throw FormatError("\"trigger\" must be an object") }
        func bool(_ key: String, _ fallback: Bool) throws -> Bool {
            guard let v = t[key] else { return fallback }
            guard case .bool(let b) = v else { throw FormatError("trigger \"\(key)\" must be true or false") }
            return b
        }
        func number(_ key: String) throws -> Double? {
            guard let v = t[key] else { return nil }
            guard let n = v.finiteDouble else { throw FormatError("trigger \"\(key)\" must be a number") }
            return n
        }
        guard case .string(let type)? = t["type"] else { throw FormatError("a trigger needs \"type\": interval, calendar, date or location") }
        switch type {
        case "interval":
            guard let seconds = try number("seconds") else { throw FormatError("an interval trigger needs \"seconds\"") }
            return .interval(seconds: seconds, repeats: try bool("repeats", false))
        case "calendar":
            guard case .object(let c)? = t["components"] else { throw FormatError("a calendar trigger needs \"components\" (an object)") }
            func component(_ key: String) throws -> Int? {
                guard let v = c[key] else { return nil }
                guard case .int(let i) = v else { throw FormatError("calendar component \"\(key)\" must be an integer") }
                return Int(i)
            }
            let known: Set<String> = ["year", "month", "day", "weekday", "hour", "minute", "second"]
            if let unknown = c.keys.first(where: { !known.contains($0) }) {
                throw FormatError("unknown calendar component \"\(unknown)\" (year, month, day, weekday, hour, minute, second)")
            }
            let match = NotificationTrigger.CalendarMatch(
                year: try component("year"), month: try component("month"), day: try component("day"),
                weekday: try component("weekday"), hour: try component("hour"), minute: try component("minute"),
                second: try component("second"))
            return .calendar(match, repeats: try bool("repeats", false))
        case "date":
            if t["latitude"] != nil || t["region"] != nil {
                throw FormatError("a fire date and a region cannot be combined (as UILocalNotification refuses fireDate with region)")
            }
            guard case .string(let text)? = t["date"], let parsed = parseDateTime(text) else {
                throw FormatError("a date trigger needs \"date\" in ISO 8601 (2026-06-10T13:00:00Z, or 2026-06-10T09:00:00 with \"timeZone\")")
            }
            var unit: NotificationTrigger.RepeatUnit?
            if let r = t["repeat"] {
                guard case .string(let name) = r, let u = NotificationTrigger.RepeatUnit(rawValue: name) else {
                    throw FormatError("\"repeat\" must be one of minute, hour, day, week, month, year")
                }
                unit = u
            }
            if let instant = parsed.instant {
                if t["timeZone"] != nil { throw FormatError("a date with an offset is an absolute instant: drop \"timeZone\" or the offset") }
                return .date(.absolute(instant), repeat: unit)
            }
            guard case .string(let zoneName)? = t["timeZone"] else {
                throw FormatError("a date without an offset needs \"timeZone\" (the zone it was written in)")
            }
            _ = try timeZone(zoneName)  // the wall-clock time is kept as written and follows the device
            return .date(.wallClock(parsed.wallClock!), repeat: unit)
        case "location":
            guard let lat = try number("latitude"), let lon = try number("longitude"), let radius = try number("radius") else {
                throw FormatError("a location trigger needs \"latitude\", \"longitude\" and \"radius\" (metres)")
            }
            return .location(
                .init(latitude: lat, longitude: lon, radius: radius),
                onEntry: try bool("onEntry", true), onExit: try bool("onExit", true), repeats: try bool("repeats", false))
        default:
            throw FormatError("unknown trigger type \"\(type)\" (interval, calendar, date, location)")
        }
    }

    // MARK: events

    public enum EventChange: Sendable, Hashable {
        case timeZone(TimeZone)
        case location(latitude: Double, longitude: Double)
        case locationServices(Bool)
        case authorization(Authorization)
    }

    /// What the user allowed (events may change it).
    public struct Authorization: Sendable, Hashable {
        public var alert = true, sound = true, badge = true, location = true
        public init() {}
    }

    public struct Event: Sendable, Hashable {
        public var at: Int64
        public var change: EventChange
        public init(at: Int64, change: EventChange) {
            self.at = at
            self.change = change
        }
    }

    public static func event(_ value: JSONValue, current: inout Authorization) throws -> Event {
        guard case .object(let e) = value else { throw FormatError("an event must be a JSON object") }
        guard case .string(let atText)? = e["at"], let at = parseDateTime(atText)?.instant else {
            throw FormatError("an event needs \"at\": an instant in ISO 8601 with Z or an offset")
        }
        if case .string(let zone)? = e["timeZone"] { return Event(at: at, change: .timeZone(try timeZone(zone))) }
        if case .object(let l)? = e["location"] {
            guard let lat = l["latitude"]?.finiteDouble, let lon = l["longitude"]?.finiteDouble else {
                throw FormatError("a location event needs \"latitude\" and \"longitude\"")
            }
            return Event(at: at, change: .location(latitude: lat, longitude: lon))
        }
        if let services = e["locationServices"] {
            guard case .bool(let on) = services else { throw FormatError("\"locationServices\" must be true or false") }
            return Event(at: at, change: .locationServices(on))
        }
        if case .object(let a)? = e["authorization"] {
            for (key, value) in a {
                guard case .bool(let allowed) = value else { throw FormatError("authorization \"\(key)\" must be true or false") }
                switch key {
                case "alert": current.alert = allowed
                case "sound": current.sound = allowed
                case "badge": current.badge = allowed
                case "location": current.location = allowed
                default: throw FormatError("unknown authorization \"\(key)\" (alert, sound, badge, location)")
                }
            }
            return Event(at: at, change: .authorization(current))
        }
        throw FormatError("an event needs one of \"timeZone\", \"location\", \"locationServices\", \"authorization\"")
    }
}
