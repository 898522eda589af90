import Foundation
import HeraldCore

/// Plans, without waiting, every local delivery of one app in a window: the requests are added
/// at `from` in order (so replacement by identifier and the 64 limit apply as on a device), then
/// the scheduler runs over the window with the events applied at their instants. What
/// `herald device plan` prints.
public enum LocalPlanner {
    public struct Delivery: Sendable, Hashable {
        public var id: String
        public var atMilliseconds: Int64
        public var timeZone: TimeZone
        public var trigger: String
        public var content: JSONValue
        /// What is presented, given the content and what the user allowed.
        public var presented: [String]
    }

    public struct Plan: Sendable {
        public var deliveries: [Delivery]
        /// Requests dropped by the 64 limit (for good).
        public var dropped: [String]
    }

    public static func plan(
        requests: [LocalRequest], events: [PlanFormat.Event], from: Int64, until: Int64, timeZone: TimeZone,
        authorization: PlanFormat.Authorization = .init()
    ) throws(TriggerError) -> Plan {
        var scheduler = LocalScheduler(timeZone: timeZone)
        var authorization = authorization
        var deliveries: [Delivery] = []
        var dropped: [String] = []
        func record(_ firings: [LocalFiring]) {
            for firing in firings where firing.atMilliseconds <= until {
                deliveries.append(Delivery(
                    id: firing.request.id, atMilliseconds: firing.atMilliseconds, timeZone: firing.timeZone,
                    trigger: triggerName(firing.request.trigger), content: firing.request.content,
                    presented: presented(firing.request.content, authorization)))
            }
        }
        for request in requests {
            let (now, gone) = try scheduler.add(request, now: from)
            record(now)
            dropped.append(contentsOf: gone.map(\.id))
        }
        // Events in time order; at the same instant, in file order. Fires due at an event's
        // instant happen before it.
        let ordered = events.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        var next = ordered.makeIterator()
        var event = next.next()
        while true {
            let due = scheduler.nextDue
            if let e = event, e.at <= until, due.map({ e.at < $0 }) ?? true {
                record(scheduler.fireDue(upTo: e.at - 1))
                switch e.change {
                case .timeZone(let zone): scheduler.setTimeZone(zone, now: e.at)
                case .location(let lat, let lon): record(scheduler.updateLocation(latitude: lat, longitude: lon, now: e.at))
                case .locationServices(let on): scheduler.setLocation(servicesEnabled: on)
                case .authorization(let allowed):
                    authorization = allowed
                    scheduler.setLocation(authorized: allowed.location)
                }
                event = next.next()
                continue
            }
            guard let due, due <= until else { break }
            record(scheduler.fireDue(upTo: due))
        }
        return Plan(deliveries: deliveries, dropped: dropped)
    }

    static func triggerName(_ trigger: NotificationTrigger?) -> String {
        switch trigger {
        case nil: "now"
        case .interval?: "interval"
        case .calendar?: "calendar"
        case .date?: "date"
        case .location?: "location"
        }
    }

    /// Alert when the content has a title, subtitle or body; sound when it names one; badge when it sets one.
    static func presented(_ content: JSONValue, _ allowed: PlanFormat.Authorization) -> [String] {
        guard case .object(let c) = content else { return [] }
        var kinds: [String] = []
        if allowed.alert, ["title", "subtitle", "body"].contains(where: { c[$0] != nil }) { kinds.append("alert") }
        if allowed.sound, let sound = c["sound"], sound != .null { kinds.append("sound") }
        if allowed.badge, let badge = c["badge"], badge != .null { kinds.append("badge") }
        return kinds
    }

    /// One JSON line: `{"id","fire","local","timeZone","trigger","presented","content"}`.
    public static func line(_ delivery: Delivery) -> String {
        let object: [String: JSONValue] = [
            "id": .string(delivery.id),
            "fire": .string(PlanFormat.utcString(delivery.atMilliseconds)),
            "local": .string(PlanFormat.localString(delivery.atMilliseconds, in: delivery.timeZone)),
            "timeZone": .string(delivery.timeZone.identifier),
            "trigger": .string(delivery.trigger),
            "presented": .array(delivery.presented.map(JSONValue.string)),
            "content": delivery.content,
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
