import Foundation
import HeraldCore
import HeraldProviderAPI
import OpenAPIRuntime

// MARK: reading requests

extension ProviderAPI {
    static let notJSON = ProviderError(.notJSON, "the body must be JSON (Content-Type: application/json)")

    /// A list's page size: `limit`, 1 to ``ProviderDatabase/maximumPage`` (default 100).
    static func limit(_ value: Int?) throws -> Int {
        guard let value else { return 100 }
        guard (1...ProviderStoreLimits.maximumPage).contains(value) else {
            throw ProviderError(.invalid, "limit must be a number from 1 to \(ProviderStoreLimits.maximumPage)")
        }
        return value
    }

    /// A string field no longer than `maximumBytes` of UTF-8.
    static func bounded(_ value: String?, _ name: String, maximumBytes: Int) throws -> String? {
        guard let value else { return nil }
        guard value.utf8.count <= maximumBytes else { throw ProviderError(.invalid, "\"\(name)\" is longer than \(maximumBytes) bytes") }
        return value
    }

    /// A required, non-empty string field.
    static func required(_ value: String, _ name: String, maximumBytes: Int) throws -> String {
        guard !value.isEmpty else { throw ProviderError(.invalid, "\"\(name)\" is required (a string)") }
        return try bounded(value, name, maximumBytes: maximumBytes) ?? value
    }

    static func strings(_ values: [String]?, _ name: String, maximumCount: Int, maximumBytes: Int) throws -> [String] {
        guard let values else { return [] }
        guard values.count <= maximumCount else { throw ProviderError(.invalid, "\"\(name)\" has more than \(maximumCount) items") }
        for value in values where value.utf8.count > maximumBytes {
            throw ProviderError(.invalid, "an item of \"\(name)\" is longer than \(maximumBytes) bytes")
        }
        return values
    }

    /// An alert's text: any of title, subtitle and body, at least one of them not empty (APNs
    /// accepts an alert with only a title or only a subtitle; one with no text shows nothing).
    static func text(_ text: Components.Schemas.Text, _ path: String) throws -> MessageTemplate.Text {
        let result = MessageTemplate.Text(
            title: try bounded(text.title, path + "title", maximumBytes: 4096), subtitle: try bounded(text.subtitle, path + "subtitle", maximumBytes: 4096),
            body: try bounded(text.body, path + "body", maximumBytes: 4096))
        guard [result.title, result.subtitle, result.body].contains(where: { $0?.isEmpty == false }) else {
            throw ProviderError(.invalid, "\"\(path.dropLast())\" needs a \"title\", \"subtitle\" or \"body\" that is not empty")
        }
        return result
    }

    /// Format arguments: strings, or numbers written as text (at most 100).
    static func arguments(_ values: [Components.Schemas.FormatArgument]?, _ name: String) throws -> [String] {
        guard let values else { return [] }
        guard values.count <= 100 else { throw ProviderError(.invalid, "\"\(name)\" has more than 100 items") }
        return try values.map { value in
            switch value {
            case .case1(let text): return try bounded(text, name, maximumBytes: 4096) ?? text
            case .case2(let number): return LocalizedFormat.argument(.double(number))
            }
        }
    }

    /// What `POST /v1/sends` (and a schedule's send) asks for.
    static func sendRequest(_ body: Components.Schemas.SendInput) throws -> SendRequest {
        let to = body.to
        let target: SendTarget
        if let token = to.token {
            target = .token(try required(token, "to.token", maximumBytes: 200))
        } else if let user = to.user {
            target = .user(try required(user, "to.user", maximumBytes: 256))
        } else if let segment = to.segment {
            target = .segment(
                topic: try bounded(segment.topic, "to.segment.topic", maximumBytes: 255),
                tags: try strings(segment.tags, "to.segment.tags", maximumCount: 64, maximumBytes: 64),
                languages: try strings(segment.languages, "to.segment.languages", maximumCount: 64, maximumBytes: 64))
        } else {
            throw ProviderError(.invalid, "\"to\" needs \"token\", \"user\" or \"segment\"")
        }
        let message: SendMessage
        if let t = body.template {
            message = .template(id: try required(t.id, "template.id", maximumBytes: 256), arguments: try arguments(t.args, "template.args"))
        } else if let a = body.alert {
            let text = try text(a, "alert.")
            message = .alert(title: text.title, subtitle: text.subtitle, body: text.body)
        } else if let l = body.locKey {
            let key = try bounded(l.key, "locKey.key", maximumBytes: 256), titleKey = try bounded(l.titleKey, "locKey.titleKey", maximumBytes: 256)
            guard key?.isEmpty == false || titleKey?.isEmpty == false else {
                throw ProviderError(.invalid, "\"locKey\" needs a \"key\" (the body's) or a \"titleKey\" that is not empty")
            }
            message = .deviceLocalized(
                key: key, arguments: try arguments(l.args, "locKey.args"),
                titleKey: titleKey, titleArguments: try arguments(l.titleArgs, "locKey.titleArgs"))
        } else {
            message = .none
        }
        var data: [String: JSONValue] = [:]
        if let custom = body.data {
            guard custom.additionalProperties.value[NotificationPayload.apsKey] == nil else {
                throw ProviderError(.invalid, "\"data\" may not hold \"aps\" (use the send's fields)")
            }
            data = try JSONReader.parseObject(Array(JSONEncoder().encode(custom)))
        }
        if let badge = body.badge, !(0...BadgeCount.maximum).contains(badge) {
            throw ProviderError(.invalid, "\"badge\" must be from 0 to \(BadgeCount.maximum)")
        }
        if let increment = body.badgeIncrement {
            guard (1...BadgeCount.maximumIncrement).contains(increment) else {
                throw ProviderError(.invalid, "\"badgeIncrement\" must be from 1 to \(BadgeCount.maximumIncrement) (to lower a count, set it: \"badge\", or POST /v1/registrations/{token}/badge)")
            }
            guard body.badge == nil else { throw ProviderError(.invalid, "give \"badge\" (set the count) or \"badgeIncrement\" (add to it), not both") }
        }
        if let priority = body.priority, !(1...10).contains(priority) { throw ProviderError(.invalid, "\"priority\" must be from 1 to 10") }
        if let expiration = body.expiration, !(0...Int64(UInt32.max)).contains(expiration) {
            throw ProviderError(.invalid, "\"expiration\" must be from 0 to \(UInt32.max) (seconds since 1970)")
        }
        let contentAvailable = body.contentAvailable ?? false
        let sound = try bounded(body.sound, "sound", maximumBytes: 256)
        var liveActivity: LiveActivitySend?
        if let live = body.liveActivity {
            func object(_ container: OpenAPIObjectContainer?, _ name: String) throws -> [String: JSONValue]? {
                guard let container else { return nil }
                return try JSONReader.parseObject(Array(JSONEncoder().encode(container)))
            }
            if let channel = live.inputPushChannel, BroadcastChannelID(channel) == nil {
                throw ProviderError(.invalid, "\"liveActivity.inputPushChannel\" must be a channel id (base64 of 16 bytes)")
            }
            liveActivity = LiveActivitySend(
                event: live.event.rawValue, timestamp: live.timestamp, contentState: try object(live.contentState?.additionalProperties, "contentState"),
                staleDate: live.staleDate, dismissalDate: live.dismissalDate,
                relevanceScore: try live.relevanceScore.map { score in
                    guard score.isFinite else { throw ProviderError(.invalid, "\"liveActivity.relevanceScore\" must be a finite number") }
                    return score
                },
                attributesType: try bounded(live.attributesType, "liveActivity.attributesType", maximumBytes: 256),
                attributes: try object(live.attributes?.additionalProperties, "attributes"),
                inputPushToken: live.inputPushToken ?? false, inputPushChannel: live.inputPushChannel)
        }
        if case .none = message, body.badge == nil, body.badgeIncrement == nil, sound == nil, !contentAvailable, liveActivity == nil {
            throw ProviderError(.invalid, "say something: \"template\", \"alert\", \"locKey\", \"badge\", \"badgeIncrement\", \"sound\", \"contentAvailable\": true or \"liveActivity\"")
        }
        return SendRequest(
            target: target, message: message, badge: body.badge, sound: sound, contentAvailable: contentAvailable,
            category: try bounded(body.category, "category", maximumBytes: 256), threadID: try bounded(body.threadId, "threadId", maximumBytes: 256),
            data: data, pushType: try bounded(body.pushType, "pushType", maximumBytes: 64), priority: body.priority,
            expiration: body.expiration, collapseID: try bounded(body.collapseId, "collapseId", maximumBytes: 64),
            idempotencyKey: try bounded(body.idempotencyKey, "idempotencyKey", maximumBytes: 256), liveActivity: liveActivity,
            url: try body.url.map { page throws in
                try ProviderService.checkPage(page, "url")
                return page
            }, badgeIncrement: body.badgeIncrement)
    }

    static let weekdayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    /// `"at"` (an instant) or `"time"` (HH:MM) with `"timeZone"` (absent: each registration's
    /// own), `"repeat"`, `"weekdays"`, `"day"`, `"from"` and `"until"` (local dates, inclusive).
    static func timing(_ t: Components.Schemas.Timing) throws -> ScheduleTiming {
        if let at = t.at {
            guard t.time == nil else { throw ProviderError(.invalid, "give \"at\" (an instant) or \"time\" (a wall-clock time), not both") }
            guard at.timeIntervalSince1970.magnitude < 1e13 else { throw ProviderError(.invalid, "\"at\" is out of range") }
            return .instant(Int64((at.timeIntervalSince1970 * 1000).rounded()))
        }
        guard let time = t.time else {
            throw ProviderError(.invalid, "a schedule needs \"at\" (an instant) or \"time\" (HH:MM, in each registration's zone or in \"timeZone\")")
        }
        let hm = time.split(separator: ":", omittingEmptySubsequences: false)
        guard hm.count == 2, hm[0].count == 2, hm[1].count == 2, let hour = Int(hm[0]), let minute = Int(hm[1]),
              (0...23).contains(hour), (0...59).contains(minute) else {
            throw ProviderError(.invalid, "\"time\" must be HH:MM from 00:00 to 23:59, such as 09:00, not \"\(time.prefix(64))\"")
        }
        func date(_ text: String?, _ key: String) throws -> LocalDate? {
            guard let text else { return nil }
            guard let date = LocalDate(text) else { throw ProviderError(.invalid, "\"\(key)\" must be a date YYYY-MM-DD") }
            return date
        }
        let repeats: WallClockRule.Repeat
        switch t._repeat ?? .once {
        case .once: repeats = .once
        case .daily: repeats = .daily
        case .weekly:
            let days = Set((t.weekdays ?? []).compactMap { weekdayNames.firstIndex(of: $0.rawValue).map { $0 + 1 } }).sorted()
            guard !days.isEmpty else { throw ProviderError(.invalid, "a weekly schedule needs \"weekdays\", such as [\"mon\", \"wed\", \"fri\"]") }
            repeats = .weekly(weekdays: days)
        case .monthly:
            guard let day = t.day, (1...31).contains(day) else { throw ProviderError(.invalid, "a monthly schedule needs \"day\" (1…31)") }
            repeats = .monthly(day: day)
        }
        return .wallClock(WallClockRule(
            hour: hour, minute: minute, timeZone: try bounded(t.timeZone, "timeZone", maximumBytes: 64), repeats: repeats,
            from: try date(t.from, "from"), until: try date(t.until, "until")))
    }
}
