import Foundation

/// The triggers of UserNotifications (and UILocalNotification's fire date, time zone and repeat
/// interval), built as the agent reads them (docs/device-plan.md, "Triggers").
extension NotificationTrigger {
    /// UNTimeIntervalNotificationTrigger: `seconds` after it is added (at least 60 when repeating).
    public static func timeInterval(_ seconds: Double, repeats: Bool = false) -> NotificationTrigger {
        NotificationTrigger(type: .interval, seconds: seconds, repeats: repeats)
    }

    /// UNCalendarNotificationTrigger: when the components match in the device's current zone
    /// (weekday 1 is Sunday); absent components are free.
    public static func calendar(matching components: CalendarComponents, repeats: Bool = false) -> NotificationTrigger {
        NotificationTrigger(type: .calendar, repeats: repeats, components: components)
    }

    /// An absolute instant (a countdown: it does not move when the device changes zone), repeated
    /// by `repeatUnit` in UTC if given.
    public static func date(_ instant: Date, repeat repeatUnit: RepeatUnit? = nil) -> NotificationTrigger {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return NotificationTrigger(type: .date, date: formatter.string(from: instant), repeat: repeatUnit)
    }

    /// UILocalNotification's `fireDate` with a `timeZone` and a `repeatInterval`: a wall-clock time
    /// written in `timeZone` that follows the device's zone (09:00 wherever the device is), repeated
    /// by calendar unit (09:00 daily stays 09:00 across DST).
    public static func date(wallClock components: CalendarComponents, timeZone: TimeZone, repeat repeatUnit: RepeatUnit? = nil) -> NotificationTrigger {
        let text = String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d", components.year ?? 0, components.month ?? 1, components.day ?? 1,
            components.hour ?? 0, components.minute ?? 0, components.second ?? 0)
        return NotificationTrigger(type: .date, date: text, timeZone: timeZone.identifier, repeat: repeatUnit)
    }

    /// UNLocationNotificationTrigger: entering and/or leaving a circular region (metres).
    public static func location(
        latitude: Double, longitude: Double, radius: Double, notifyOnEntry: Bool = true, notifyOnExit: Bool = true, repeats: Bool = false
    ) -> NotificationTrigger {
        NotificationTrigger(
            type: .location, repeats: repeats, latitude: latitude, longitude: longitude, radius: radius, onEntry: notifyOnEntry, onExit: notifyOnExit)
    }
}

extension DeliveredNotification {
    /// When it was delivered.
    public var deliveredDate: Date? { ISO8601DateFormatter().date(from: delivered) }
}
