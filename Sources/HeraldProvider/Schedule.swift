import Foundation
import HeraldCore

/// A send that happens later, once or again and again: the same ``SendRequest`` as an immediate
/// send, and a ``ScheduleTiming``.
public struct Schedule: Sendable, Hashable, Codable {
    public enum State: String, Sendable, Hashable, Codable {
        /// It will send again.
        case active
        /// Every occurrence has passed (a one-off that ran, or a recurrence past its end).
        case finished
        /// Cancelled: it will not send again; its runs stay readable.
        case cancelled
    }
    public var id: String
    public var timing: ScheduleTiming
    public var send: SendRequest
    public var createdAt: Int64
    public var state: State

    public init(id: String, timing: ScheduleTiming, send: SendRequest, createdAt: Int64, state: State = .active) {
        (self.id, self.timing, self.send, self.createdAt, self.state) = (id, timing, send, createdAt, state)
    }

    /// Which zone the schedule's occurrences are computed in.
    public var zoneKey: ZoneKey {
        switch timing {
        case .instant: return .everyone
        case .wallClock(let rule): return rule.timeZone.map(ZoneKey.fixed) ?? .eachRegistration
        }
    }

    public enum ZoneKey: Sendable, Hashable {
        /// One instant for all targets.
        case everyone
        /// A wall-clock time in one named zone, for all targets.
        case fixed(String)
        /// A wall-clock time in each registration's own zone: one run per zone.
        case eachRegistration
    }
}

/// When a schedule sends.
public enum ScheduleTiming: Sendable, Hashable, Codable {
    /// Once, at an instant (milliseconds since 1970).
    case instant(Int64)
    /// At a wall-clock time, in one zone or in each registration's own.
    case wallClock(WallClockRule)

    /// The first due instant strictly after `after` and not before `createdAt`, in `zone` (ignored
    /// for an instant), with the local date it falls on.
    public func next(after: Int64, createdAt: Int64, in zone: TimeZone) -> (date: LocalDate?, at: Int64)? {
        switch self {
        case .instant(let at): return at > after && at >= createdAt ? (nil, at) : nil
        case .wallClock(let rule): return rule.next(after: after, createdAt: createdAt, in: zone).map { ($0.date, $0.at) }
        }
    }
}

/// "09:00 every weekday until the end of March", in a zone: the rule a person would write.
///
/// Decisions where calendars are ambiguous (the same as the device scheduler's): a time that does
/// not exist on a day (spring forward) is sent when the clock jumps over it, moved forward by the
/// gap (02:30 → 03:30); a time that happens twice (fall back) is sent at its first occurrence;
/// a monthly day that a month does not have (the 31st in April) is skipped that month, as
/// `UNCalendarNotificationTrigger` and cron do.
public struct WallClockRule: Sendable, Hashable, Codable {
    public enum Repeat: Sendable, Hashable, Codable {
        /// The first day (from `from`) on which the time is still ahead.
        case once
        case daily
        /// On these weekdays, 1 = Sunday … 7 = Saturday.
        case weekly(weekdays: [Int])
        /// On this day of the month, 1…31.
        case monthly(day: Int)
    }
    public var hour: Int
    public var minute: Int
    /// The zone of the wall-clock time; `nil` for each registration's own zone.
    public var timeZone: String?
    public var repeats: Repeat
    /// The first local date it may send on; by default the day it was created (in each zone).
    public var from: LocalDate?
    /// The last local date it may send on (inclusive); `nil`: no end.
    public var until: LocalDate?

    public init(hour: Int, minute: Int, timeZone: String? = nil, repeats: Repeat, from: LocalDate? = nil, until: LocalDate? = nil) {
        (self.hour, self.minute, self.timeZone, self.repeats, self.from, self.until) = (hour, minute, timeZone, repeats, from, until)
    }

    /// What is wrong with the rule, if anything.
    public var problem: String? {
        guard (0...23).contains(hour), (0...59).contains(minute) else { return "\"time\" must be HH:MM between 00:00 and 23:59" }
        if let timeZone, TimeZone(identifier: timeZone) == nil { return "\"timeZone\" must be an IANA time zone such as Europe/Paris, not \"\(timeZone)\"" }
        switch repeats {
        case .weekly(let days) where days.isEmpty || !days.allSatisfy({ (1...7).contains($0) }):
            return "\"weekdays\" must list days such as [\"mon\", \"fri\"]"
        case .monthly(let day) where !(1...31).contains(day):
            return "\"day\" of a monthly schedule must be 1…31"
        default: break
        }
        if let from, let until, until < from { return "\"until\" (\(until)) is before \"from\" (\(from))" }
        return nil
    }

    func matches(_ date: LocalDate) -> Bool {
        switch repeats {
        case .once, .daily: return true
        case .weekly(let days): return days.contains(date.weekday)
        case .monthly(let day): return date.day == day
        }
    }

    /// The first occurrence strictly after `after` and not before `createdAt`, in `zone`.
    public func next(after: Int64, createdAt: Int64, in zone: TimeZone) -> (date: LocalDate, at: Int64)? {
        let first = from ?? LocalDate.of(createdAt, in: zone)
        if case .once = repeats {
            // The one occurrence: the first day from `first` on which the time is not before creation.
            for offset in 0..<3 {
                let day = first.adding(days: offset)
                if let until, until < day { return nil }
                let at = LocalTime.instant(day, hour: hour, minute: minute, in: zone)
                if at >= createdAt { return at > after ? (day, at) : nil }
                if from != nil { return nil }  // a fixed date whose time has passed
            }
            return nil
        }
        // A day before `after`'s own local date cannot be due after it (offsets are under 26 hours).
        var day = max(first, LocalDate.of(after, in: zone).adding(days: -1))
        // Eight years of days: every monthly day 1…31 and every weekday occur within that.
        for _ in 0..<2_930 {
            if let until, until < day { return nil }
            if matches(day) {
                let at = LocalTime.instant(day, hour: hour, minute: minute, in: zone)
                if at > after && at >= createdAt { return (day, at) }
            }
            day = day.adding(days: 1)
        }
        return nil
    }
}

/// One run of a schedule: an occurrence in one zone (or for everyone), sent or missed.
public struct ScheduleRun: Sendable, Hashable, Codable {
    public enum Outcome: String, Sendable, Hashable, Codable {
        /// Sent (on time, or late at start-up inside the missed-send window).
        case sent
        /// Not sent: the service was not running at the due time and came back after the window.
        case missed
        /// Sending: recorded before the first push, so that a restart never sends it again.
        case started
        /// The service stopped while sending it; found so at the next start and not sent again
        /// (some of its pushes may have gone out).
        case interrupted
    }
    public var scheduleID: String
    /// The zone this run was for (`""` for a schedule that is one instant for everyone).
    public var zone: String
    public var localDate: LocalDate?
    public var dueAt: Int64
    public var startedAt: Int64
    public var finishedAt: Int64
    public var outcome: Outcome
    /// The send's report (`GET /v1/sends/{id}`), when sent.
    public var sendID: String?
    /// Counts by outcome, as in ``SendReport/counts`` (for a missed run: `{"missed": targets}`).
    public var counts: [String: Int]
    /// Why the run could not send (its counts are then `{"error": 1}`).
    public var error: String? = nil
}
