import Foundation

/// A calendar day (proleptic Gregorian) without a zone: what "the 22nd" means to someone in Tokyo
/// and someone in Honolulu, who live it at different instants. Arithmetic is done on day numbers
/// (days since 1970-01-01), without `Calendar`, so planning across many zones stays cheap.
public struct LocalDate: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) { (self.year, self.month, self.day) = (year, month, day) }

    /// `YYYY-MM-DD`, or nil when it is not a real date.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
              (1...12).contains(m), (1...LocalDate.days(inMonth: m, year: y)).contains(d) else { return nil }
        self.init(year: y, month: m, day: d)
    }

    public var description: String {
        func pad(_ n: Int, _ width: Int) -> String { String(repeating: "0", count: max(0, width - String(n).count)) + String(n) }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let date = LocalDate(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YYYY-MM-DD date: \(text)"))
        }
        self = date
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public static func < (a: LocalDate, b: LocalDate) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }

    public static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    public static func days(inMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 (H. Hinnant's `days_from_civil`).
    public var dayNumber: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date `dayNumber` days after 1970-01-01 (`civil_from_days`).
    public init(dayNumber: Int) {
        let z = dayNumber + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        self.init(year: yoe + era * 400 + (m <= 2 ? 1 : 0), month: m, day: d)
    }

    public func adding(days: Int) -> LocalDate { LocalDate(dayNumber: dayNumber + days) }

    /// 1 = Sunday … 7 = Saturday (as `Calendar` and `UNCalendarNotificationTrigger` count).
    public var weekday: Int {
        let n = dayNumber  // 1970-01-01 was a Thursday (5)
        return ((n % 7 + 7) % 7 + 4) % 7 + 1
    }

    /// The day an instant falls on in `zone`.
    public static func of(_ milliseconds: Int64, in zone: TimeZone) -> LocalDate {
        let seconds = Int64(floor(Double(milliseconds) / 1000))
        let offset = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(seconds))))
        let local = seconds + offset
        return LocalDate(dayNumber: Int((Double(local) / 86_400).rounded(.down)))
    }
}

/// Wall-clock time in a zone, turned into instants the way a person living there means it.
public enum LocalTime {
    /// The instant (milliseconds since 1970) at which `date` `hour:minute:second` happens in `zone`.
    /// A time that exists once is that instant; a time in a gap (spring forward) moves forward by
    /// the gap (02:30 → 03:30 for a one-hour gap, 02:15 → 02:45 on Lord Howe's half hour); a
    /// repeated time (fall back) takes its first occurrence.
    public static func instant(_ date: LocalDate, hour: Int, minute: Int, second: Int = 0, in zone: TimeZone) -> Int64 {
        let naive = Double(date.dayNumber) * 86_400 + Double(hour * 3600 + minute * 60 + second)
        let offsets = Set([-129_600.0, 0, 129_600].map { Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: naive + $0))) })
        var exact: [Double] = []
        for offset in offsets {
            let candidate = naive - offset
            if Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: candidate))) == offset { exact.append(candidate) }
        }
        if let first = exact.min() { return Int64(first * 1000) }
        // In a gap: read the time with the offset before it (the smaller one).
        return Int64((naive - (offsets.min() ?? 0)) * 1000)
    }
}
