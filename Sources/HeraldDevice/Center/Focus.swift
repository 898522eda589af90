import Foundation
import HeraldCore

/// A Focus (iOS 15 and later): a named mode that, while on, lets through only the apps and people
/// it allows. What it does not allow is still delivered, silently: listed in Notification Center
/// with no banner, no sound and no screen lighting up ("Silenced notifications are still available
/// in Notification Center", Apple, *Set up a Focus on iPhone*).
public struct FocusMode: Sendable, Hashable {
    /// On by hand, off, or on during its ``schedule``.
    public enum State: String, Sendable, Hashable, CaseIterable { case off, on, scheduled }

    public var name: String
    public var state: State
    public var schedule: FocusSchedule?
    /// Bundle ids whose notifications are delivered as usual while the Focus is on.
    public var allowedApps: Set<String>
    /// Handles (phone number, e-mail, or any id the app uses) of people whose communication
    /// notifications are delivered as usual while the Focus is on.
    public var allowedPeople: Set<String>
    /// "Time Sensitive Notifications: Allow apps to notify immediately" — on by default, as in Settings.
    public var allowsTimeSensitive: Bool
    /// Focus filters (iOS 16): for an app, the `filter-criteria` values shown while this Focus is
    /// on. A notification of that app carrying another value is silenced even if the app is
    /// allowed; one carrying a listed value is delivered even if it is not. One without
    /// `filter-criteria` follows the app's rule (Herald's reading: Apple evaluates the app's
    /// predicate against the criteria and says nothing of notifications without any).
    public var filters: [String: Set<String>]

    public init(
        name: String, state: State = .off, schedule: FocusSchedule? = nil, allowedApps: Set<String> = [], allowedPeople: Set<String> = [],
        allowsTimeSensitive: Bool = true, filters: [String: Set<String>] = [:]
    ) {
        self.name = name
        self.state = state
        self.schedule = schedule
        self.allowedApps = allowedApps
        self.allowedPeople = allowedPeople
        self.allowsTimeSensitive = allowsTimeSensitive
        self.filters = filters
    }

    /// Whether `app`'s notification with `criteria` gets through this Focus by the app rules
    /// (the filter first, then the allowed apps).
    func allows(app: String, criteria: String?) -> Bool {
        if let criteria, let shown = filters[app] { return shown.contains(criteria) }
        return allowedApps.contains(app)
    }
}

/// When a scheduled Focus is on: from `start` to `end` (minutes after local midnight, in the
/// device's zone) on each of `weekdays` (1 Sunday … 7 Saturday, as `Calendar` numbers them). An
/// `end` at or before `start` runs past midnight into the next day, as Settings allows
/// ("10:00 PM to 7:00 AM").
public struct FocusSchedule: Sendable, Hashable {
    public var start: Int
    public var end: Int
    public var weekdays: Set<Int>

    public init(start: Int, end: Int, weekdays: Set<Int> = Set(1...7)) {
        self.start = start
        self.end = end
        self.weekdays = weekdays
    }

    /// Whether the schedule is on at a local weekday and minute of the day.
    func contains(weekday: Int, minute: Int) -> Bool {
        if start < end { return weekdays.contains(weekday) && minute >= start && minute < end }
        let previous = weekday == 1 ? 7 : weekday - 1
        return (weekdays.contains(weekday) && minute >= start) || (weekdays.contains(previous) && minute < end)
    }
}

/// The scheduled summary (iOS 15): notifications of the chosen apps that are not time-sensitive
/// are held and delivered together at the next of the chosen times, the most relevant first
/// ("Time Sensitive notifications … and messages from people are delivered immediately", Apple,
/// *Schedule a notification summary on iPhone*).
public struct ScheduledSummary: Sendable, Hashable {
    /// Minutes after local midnight, ascending, without repeats (Settings offers 1 to 12 times).
    public var times: [Int]
    public var apps: Set<String>

    public init(times: [Int], apps: Set<String>) {
        self.times = Array(Set(times)).sorted()
        self.apps = apps
    }
}

/// The device's Focus modes and summary, as the user set them.
public struct FocusSettings: Sendable, Hashable {
    public var modes: [FocusMode]
    public var summary: ScheduledSummary?

    public init(modes: [FocusMode] = [], summary: ScheduledSummary? = nil) {
        self.modes = modes
        self.summary = summary
    }

    /// The Focus on at `instant` in `zone`: one turned on by hand first, then the first scheduled
    /// one whose schedule covers the instant (only one Focus is on at a time, as on iOS).
    public func activeMode(at instant: Int64, in zone: TimeZone) -> FocusMode? {
        if let manual = modes.first(where: { $0.state == .on }) { return manual }
        let scheduled = modes.filter { $0.state == .scheduled && $0.schedule != nil }
        guard !scheduled.isEmpty else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.weekday, .hour, .minute], from: Date(timeIntervalSince1970: Double(instant) / 1000))
        guard let weekday = parts.weekday, let hour = parts.hour, let minute = parts.minute else { return nil }
        return scheduled.first { $0.schedule!.contains(weekday: weekday, minute: hour * 60 + minute) }
    }

    /// The next summary time strictly after `instant`, in `zone` (a time that a daylight-saving
    /// change skips is taken at the next instant that exists, as a calendar trigger is).
    public func nextSummary(after instant: Int64, in zone: TimeZone) -> Int64? {
        guard let summary, !summary.times.isEmpty else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let from = Date(timeIntervalSince1970: Double(instant) / 1000)
        let next = summary.times.compactMap { minutes in
            calendar.nextDate(after: from, matching: DateComponents(hour: minutes / 60, minute: minutes % 60, second: 0), matchingPolicy: .nextTime)
        }.min()
        return next.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }

    /// The next instant strictly after `instant` at which a scheduled Focus may start or end, in
    /// `zone` (a start or end that a daylight-saving change skips is taken at the next instant
    /// that exists); `nil` when no Focus is scheduled, or one is on by hand (it outranks them). An
    /// edge on a weekday the schedule skips changes nothing: the caller compares the Focus on
    /// before and after.
    public func nextFocusEdge(after instant: Int64, in zone: TimeZone) -> Int64? {
        guard !modes.contains(where: { $0.state == .on }) else { return nil }
        let minutes = Set(modes.filter { $0.state == .scheduled }.compactMap(\.schedule).flatMap { [$0.start, $0.end] })
        guard !minutes.isEmpty else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let from = Date(timeIntervalSince1970: Double(instant) / 1000)
        let next = minutes.compactMap { m in
            calendar.nextDate(after: from, matching: DateComponents(hour: m / 60, minute: m % 60, second: 0), matchingPolicy: .nextTime)
        }.min()
        return next.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }

    /// Bounds on what a user (or a hostile agent client) may set.
    public static let maximumModes = 32
    public static let maximumNameLength = 64
    public static let maximumAllowed = 1_000
    public static let maximumIdentifierLength = 256
    public static let maximumFilterValues = 100
    public static let maximumSummaryTimes = 12
}

// MARK: the decision

/// What the device does with a notification's interruption level, given the Focus and summary
/// (Apple, `UNNotificationInterruptionLevel`): where each rule comes from is in
/// docs/device-runtime.md, "Focus, interruption levels and the scheduled summary".
public enum Interruption {
    /// The level the device applies: `critical` needs the critical-alert entitlement and the
    /// user's critical-alert setting, `time-sensitive` the time-sensitive entitlement and its
    /// setting; without them the notification is `active` (Herald's choice where Apple only says
    /// the entitlement is required).
    public static func effectiveLevel(
        _ level: NotificationGrouping.InterruptionLevel, entitlements: AuthorizationOptions, settings: NotificationSettings
    ) -> NotificationGrouping.InterruptionLevel {
        switch level {
        case .critical: entitlements.contains(.criticalAlert) && settings.criticalAlert == .enabled ? .critical : .active
        case .timeSensitive: entitlements.contains(.timeSensitive) && settings.timeSensitive != .disabled ? .timeSensitive : .active
        default: level
        }
    }

    /// Why a notification was delivered as usual although a Focus or the summary would have held it back.
    public enum Breakthrough: String, Sendable, Hashable {
        case critical, timeSensitive = "time-sensitive", person, allowedApp = "allowed-app", filter
    }

    public enum Outcome: Sendable, Hashable {
        /// Delivered as usual; `through` says what let it through an active Focus or the summary (nil: neither was in the way).
        case deliver(through: Breakthrough?)
        /// Listed quietly (no banner, no sound, the screen stays dark) because of the named Focus.
        case silence(focus: String)
        /// Held for the next scheduled summary.
        case holdForSummary
    }

    /// Decides for one notification of `app` at one instant.
    /// - Parameters:
    ///   - level: the effective level (``effectiveLevel(_:entitlements:settings:)``).
    ///   - sender: the handle of the person a communication notification is from.
    public static func decide(
        app: String, level: NotificationGrouping.InterruptionLevel, criteria: String?, sender: String?,
        focus: FocusMode?, summary: ScheduledSummary?
    ) -> Outcome {
        if level == .critical { return .deliver(through: focus != nil || summary?.apps.contains(app) == true ? .critical : nil) }
        let inSummary = summary?.apps.contains(app) == true
        if level == .timeSensitive {
            guard let focus else { return .deliver(through: inSummary ? .timeSensitive : nil) }
            if focus.allowsTimeSensitive { return .deliver(through: .timeSensitive) }
        }
        // Messages from people are never held for the summary.
        if inSummary, sender == nil, level != .timeSensitive { return .holdForSummary }
        guard let focus else { return .deliver(through: nil) }
        if let sender, focus.allowedPeople.contains(sender) { return .deliver(through: .person) }
        if focus.allows(app: app, criteria: criteria) {
            return .deliver(through: criteria != nil && focus.filters[app] != nil ? .filter : .allowedApp)
        }
        return .silence(focus: focus.name)
    }
}
