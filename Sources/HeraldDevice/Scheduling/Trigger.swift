import Foundation
import HeraldCore

/// When a local notification fires (reference user-notifications §3, §11). Every computation
/// takes the current instant and the device's current time zone as arguments: nothing here reads
/// a clock.
public enum NotificationTrigger: Sendable, Hashable {
    /// Elapsed time from scheduling: no time-zone or DST adjustment.
    case interval(seconds: Double, repeats: Bool)
    /// Fires when the given components match, in the device's current zone. Absent components
    /// are free; a date that does not exist resolves to the next time preserving the smaller
    /// components (Feb 31 → Mar 1, a skipped 02:30 → 03:30), a repeated hour to its first occurrence.
    case calendar(CalendarMatch, repeats: Bool)
    /// A fire date (the legacy model): an absolute instant, or a wall-clock time that follows the
    /// device's zone; with an optional calendar repeat.
    case date(FireDate, repeat: RepeatUnit?)
    /// A circular region: fires on entry and/or exit; once (then removed) or on every crossing.
    case location(Region, onEntry: Bool, onExit: Bool, repeats: Bool)

    public struct CalendarMatch: Sendable, Hashable, Codable {
        public var year, month, day, weekday, hour, minute, second: Int?
        public init(year: Int? = nil, month: Int? = nil, day: Int? = nil, weekday: Int? = nil, hour: Int? = nil, minute: Int? = nil, second: Int? = nil) {
            (self.year, self.month, self.day, self.weekday, self.hour, self.minute, self.second) = (year, month, day, weekday, hour, minute, second)
        }
        var components: DateComponents {
            DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second, weekday: weekday)
        }
    }

    public enum FireDate: Sendable, Hashable {
        /// Milliseconds since 1970 (a countdown: the zone does not matter).
        case absolute(Int64)
        /// A wall-clock date and time (an alarm clock): re-resolved in the device's zone.
        case wallClock(WallClockTime)
    }

    public struct WallClockTime: Sendable, Hashable {
        public var year, month, day, hour, minute, second: Int
        public init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
            (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
        }
        var components: DateComponents {
            DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        }
    }

    public enum RepeatUnit: String, Sendable, Hashable, CaseIterable {
        case minute, hour, day, week, month, year
        var component: Calendar.Component {
            switch self {
            case .minute: .minute
            case .hour: .hour
            case .day: .day
            case .week: .weekOfYear
            case .month: .month
            case .year: .year
            }
        }
    }

    public struct Region: Sendable, Hashable {
        public var latitude: Double
        public var longitude: Double
        /// Metres.
        public var radius: Double
        public init(latitude: Double, longitude: Double, radius: Double) {
            (self.latitude, self.longitude, self.radius) = (latitude, longitude, radius)
        }

        /// Whether a point is inside (great-circle distance, mean Earth radius).
        public func contains(latitude lat: Double, longitude lon: Double) -> Bool {
            let r = 6_371_008.8, rad = Double.pi / 180
            let dLat = (lat - latitude) * rad, dLon = (lon - longitude) * rad
            let a = sin(dLat / 2) * sin(dLat / 2) + cos(latitude * rad) * cos(lat * rad) * sin(dLon / 2) * sin(dLon / 2)
            return 2 * r * asin(min(1, sqrt(a))) <= radius
        }
    }

    /// Whether the trigger fires more than once.
    public var repeats: Bool {
        switch self {
        case .interval(_, let repeats), .calendar(_, let repeats), .location(_, _, _, let repeats): repeats
        case .date(_, let unit): unit != nil
        }
    }

    /// Checks the rules a device enforces when the request is added.
    /// The longest time interval a trigger may wait: 100 years.
    public static let maximumIntervalSeconds: Double = 3_155_760_000

    public func validate() throws(TriggerError) {
        switch self {
        case .interval(let seconds, let repeats):
            guard seconds > 0, seconds.isFinite else { throw TriggerError("a time interval must be greater than 0 seconds") }
            guard seconds <= Self.maximumIntervalSeconds else {
                throw TriggerError("a time interval must be at most \(Int(Self.maximumIntervalSeconds)) seconds (100 years)")
            }
            if repeats && seconds < 60 { throw TriggerError("a repeating time interval must be at least 60 seconds, not \(seconds)") }
        case .calendar(let match, _):
            let ranges: [(String, Int?, ClosedRange<Int>)] = [
                ("year", match.year, 1...9999), ("month", match.month, 1...12), ("day", match.day, 1...31), ("weekday", match.weekday, 1...7),
                ("hour", match.hour, 0...23), ("minute", match.minute, 0...59), ("second", match.second, 0...59),
            ]
            for (name, value, range) in ranges {
                if let value, !range.contains(value) { throw TriggerError("calendar \(name) must be in \(range), not \(value)") }
            }
            if [match.year, match.month, match.day, match.weekday, match.hour, match.minute, match.second].allSatisfy({ $0 == nil }) {
                throw TriggerError("a calendar trigger needs at least one component")
            }
        case .date: break
        case .location(let region, let onEntry, let onExit, _):
            guard (-90...90).contains(region.latitude), (-180...180).contains(region.longitude) else {
                throw TriggerError("latitude must be in -90...90 and longitude in -180...180")
            }
            guard region.radius > 0, region.radius <= 20_000_000 else {
                throw TriggerError("a region's radius must be greater than 0 and at most 20,000,000 metres")
            }
            guard onEntry || onExit else { throw TriggerError("a location trigger needs onEntry or onExit") }
        }
    }

    /// The first fire strictly after `after` (ms), for a request scheduled at `scheduledAt`, in
    /// the device's zone `timeZone`; `nil` when it will not fire again by time (location triggers
    /// never fire by time).
    public func nextFire(after: Int64, scheduledAt: Int64, timeZone: TimeZone) -> Int64? {
        switch self {
        case .interval(let seconds, let repeats):
            let step = Int64((seconds * 1000).rounded())
            let first = scheduledAt + step
            if first > after { return first }
            guard repeats else { return nil }
            let k = (after - scheduledAt) / step + 1
            return scheduledAt + k * step
        case .calendar(let match, let repeats):
            let calendar = Self.calendar(timeZone)
            if repeats { return Self.nextMatch(match, after: after, calendar: calendar) }
            // A one-shot fires at its first match after it was scheduled.
            guard let fire = Self.nextMatch(match, after: scheduledAt, calendar: calendar) else { return nil }
            return fire > after ? fire : nil
        case .date(let fireDate, let unit):
            return nextDateFire(fireDate, unit: unit, after: after, timeZone: timeZone)
        case .location:
            return nil
        }
    }

    /// The n-th occurrence (n ≥ 0) of a fire date.
    func occurrence(_ fireDate: FireDate, unit: RepeatUnit?, index n: Int, timeZone: TimeZone) -> Int64? {
        switch fireDate {
        case .absolute(let instant):
            guard n > 0, let unit else { return n == 0 ? instant : nil }
            // An absolute instant repeats by the calendar in UTC (a day is 24 h, a month a calendar month).
            return Self.calendar(TimeZone(identifier: "UTC")!).date(byAdding: unit.component, value: n, to: Self.date(instant)).map(Self.milliseconds)
        case .wallClock(let time):
            // Add to the wall-clock components, then resolve them in the device's current zone.
            let utc = Self.calendar(TimeZone(identifier: "UTC")!)
            guard let base = utc.date(from: time.components) else { return nil }
            let shifted = n == 0 ? base : unit.flatMap { utc.date(byAdding: $0.component, value: n, to: base) }
            guard let shifted else { return nil }
            var components = utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: shifted)
            components.nanosecond = 0
            return Self.resolve(components, in: timeZone)
        }
    }

    private func nextDateFire(_ fireDate: FireDate, unit: RepeatUnit?, after: Int64, timeZone: TimeZone) -> Int64? {
        guard let first = occurrence(fireDate, unit: unit, index: 0, timeZone: timeZone) else { return nil }
        if first > after { return first }
        guard let unit else { return nil }
        // Jump close with the unit's nominal length, then step.
        let nominal: Int64 = switch unit {
        case .minute: 60_000
        case .hour: 3_600_000
        case .day: 86_400_000
        case .week: 604_800_000
        case .month: 2_419_200_000  // 28 days: never overshoots
        case .year: 31_536_000_000  // 365 days
        }
        var n = max(1, Int((after - first) / nominal) - 2)
        while let fire = occurrence(fireDate, unit: unit, index: n, timeZone: timeZone) {
            if fire > after { return fire }
            n += 1
        }
        return nil
    }

    /// Wall-clock components in a zone, resolved by ``LocalTime/instant(_:hour:minute:second:in:)``
    /// (gaps move forward by the gap, repeated times take their first occurrence). Done by hand
    /// because Foundation's `nextDate` skips the whole day when the gap is not an hour.
    static func resolve(_ components: DateComponents, in timeZone: TimeZone) -> Int64? {
        guard let year = components.year, let month = components.month, let day = components.day else { return nil }
        // Components may overflow (day 32, month 13): normalise them as Foundation would.
        guard let naive = utcCalendar.date(from: DateComponents(year: year, month: month, day: day)) else { return nil }
        let date = LocalDate(dayNumber: Int((naive.timeIntervalSince1970 / 86_400).rounded(.down)))
        return LocalTime.instant(date, hour: components.hour ?? 0, minute: components.minute ?? 0, second: components.second ?? 0, in: timeZone)
    }

    /// The first instant after `after` matching `match` in `calendar`'s zone. A daily or weekly
    /// match (an hour, with at most a weekday among the date components) is found by checking the
    /// next days by hand, which also handles DST gaps of any size; anything else is Foundation's
    /// answer, corrected where a matching day's time fell into a gap Foundation skipped.
    static func nextMatch(_ match: CalendarMatch, after: Int64, calendar: Calendar) -> Int64? {
        guard match.hour != nil else { return foundationMatch(match, after: after, calendar: calendar) }
        if match.year == nil && match.month == nil && match.day == nil {
            // Some day within the next 8 matches (2 suffice without a weekday).
            return handMatch(match, after: after, days: match.weekday == nil ? 3 : 9, bound: nil, calendar: calendar)
        }
        let foundation = foundationMatch(match, after: after, calendar: calendar)
        return handMatch(match, after: after, days: 3, bound: foundation, calendar: calendar)
    }

    private static func foundationMatch(_ match: CalendarMatch, after: Int64, calendar: Calendar) -> Int64? {
        calendar.nextDate(
            after: date(after), matching: match.components, matchingPolicy: .nextTimePreservingSmallerComponents,
            repeatedTimePolicy: .first, direction: .forward).map(milliseconds)
    }

    /// The earliest of `bound` and the matches on the `days` days from `after`'s day, by hand.
    private static func handMatch(_ match: CalendarMatch, after: Int64, days: Int, bound: Int64?, calendar: Calendar) -> Int64? {
        var best = bound
        var day = calendar.startOfDay(for: date(after))
        for _ in 0..<days {
            let c = calendar.dateComponents([.year, .month, .day, .weekday], from: day)
            let dayMatches = (match.year == nil || match.year == c.year) && (match.month == nil || match.month == c.month)
                && (match.day == nil || match.day == c.day) && (match.weekday == nil || match.weekday == c.weekday)
            if dayMatches, let at = resolve(
                DateComponents(year: c.year, month: c.month, day: c.day, hour: match.hour, minute: match.minute ?? 0, second: match.second ?? 0),
                in: calendar.timeZone), at > after, best.map({ at < $0 }) ?? true {
                best = at
                if bound == nil { return best }  // days are in order: the first found is the earliest
            }
            guard let next = calendar.date(byAdding: .day, value: 1, to: day) else { break }
            day = next
        }
        return best
    }

    private static let utcCalendar: Calendar = calendar(TimeZone(identifier: "UTC")!)

    static func calendar(_ timeZone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return calendar
    }

    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}

/// A trigger a device refuses, in words.
public struct TriggerError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
