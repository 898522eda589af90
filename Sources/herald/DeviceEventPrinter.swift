import Foundation
import HeraldCore
import HeraldDevice

/// Prints device events for people or as JSON lines.
struct DeviceEventPrinter {
    var json: Bool

    func print(_ event: DeviceEvent) {
        guard let line = json ? Self.jsonLine(event) : Self.text(event) else { return }
        printLineFlushed(line)
    }

    /// `nil` for what the connection never passes on (a challenge, a welcome).
    static func text(_ event: DeviceEvent) -> String? {
        switch event {
        case .connected(let id, let enrolled): return "connected as device \(id)\(enrolled ? " (enrolled now)" : "")"
        case .reconnected(let id): return "reconnected as device \(id)"
        case .tokenChanged(let topic, let previous, let current):
            return "token changed for \(topic): \(previous) -> \(current) (tell the provider)"
        case .disconnected(let reason): return "disconnected: \(ConnectionAdvice.explain(reason, side: .device))"
        case .frame(let frame): return text(frame)
        }
    }

    private static func text(_ frame: DeviceServerFrame) -> String? {
        switch frame {
        case .challenge, .welcome: return nil
        case .registered(let topic, let token): return "registered \(topic): token \(token)"
        case .notification(let n):
            let payload = (try? encoder.encode(n.payload)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
            return "notification \(n.apnsID) for \(n.topic) (\(n.pushType.rawValue), priority \(n.priority.rawValue)\(n.collapseID.map { ", collapse-id \($0)" } ?? "")): \(payload)"
        case .unregistered(let topic, let at): return "unregistered \(topic) at \(at)"
        case .registeredActivity(let topic, let activity, let token):
            return activity == .pushToStart ? "push-to-start token for \(topic): \(token)" : "update token for \(topic) activity \(activity): \(token)"
        case .unregisteredActivity(let topic, let activity, let at): return "unregistered \(topic) activity token \(activity) at \(at)"
        case .registeredWidgets(let topic, let token): return "widget push token for \(topic): \(token)"
        case .unregisteredWidgets(let topic, let at): return "unregistered \(topic) widget token at \(at)"
        case .registeredPushKit(let topic, let kind, let token): return "\(kind.rawValue) token for \(topic): \(token)"
        case .unregisteredPushKit(let topic, let kind, let at): return "unregistered \(topic) \(kind.rawValue) token at \(at)"
        case .subscribed(let topic, let channel, _): return "subscribed \(topic) to channel \(channel)"
        case .unsubscribed(let topic, let channel): return "unsubscribed \(topic) from channel \(channel)"
        case .webPushSubscribed(let topic, let subscription, let endpoint, _): return "Web Push endpoint for \(topic) (\(subscription)): \(endpoint)"
        case .webPushUnsubscribed(let topic, let subscription): return "unsubscribed \(topic) from Web Push (\(subscription))"
        case .error(let code, let message, _): return "gateway error \(code.rawValue): \(message)"
        }
    }

    /// `nil` for what the connection never passes on (a challenge, a welcome).
    static func jsonLine(_ event: DeviceEvent) -> String? {
        let object: [String: JSONValue]
        switch event {
        case .connected(let id, let enrolled): object = ["event": .string("connected"), "device": .string(id), "enrolled": .bool(enrolled)]
        case .reconnected(let id): object = ["event": .string("reconnected"), "device": .string(id)]
        case .tokenChanged(let topic, let previous, let current):
            object = [
                "event": .string("token-changed"), "topic": .string(topic), "previous": .string(previous.description),
                "token": .string(current.description),
            ]
        case .disconnected(let reason): object = ["event": .string("disconnected"), "reason": .string(ConnectionAdvice.explain(reason, side: .device))]
        case .frame(let frame):
            guard let frameObject = jsonObject(frame) else { return nil }
            object = frameObject
        }
        return (try? encoder.encode(object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    private static func jsonObject(_ frame: DeviceServerFrame) -> [String: JSONValue]? {
        switch frame {
        case .challenge, .welcome: return nil
        case .registered(let topic, let token):
            return ["event": .string("registered"), "topic": .string(topic), "token": .string(token.description)]
        case .notification(let n):
            return [
                "event": .string("notification"), "apns-id": .string(n.apnsID.description), "topic": .string(n.topic),
                "push-type": .string(n.pushType.rawValue), "priority": .int(Int64(n.priority.rawValue)),
                "collapse-id": n.collapseID.map(JSONValue.string) ?? .null,
                "expiration": n.expiration.map(JSONValue.int) ?? .null, "payload": n.payload,
            ]
        case .unregistered(let topic, let at):
            return ["event": .string("unregistered"), "topic": .string(topic), "timestamp": .int(at)]
        case .registeredActivity(let topic, let activity, let token):
            return ["event": .string("activity-token"), "topic": .string(topic), "activity": .string(activity.wireValue), "token": .string(token.description)]
        case .unregisteredActivity(let topic, let activity, let at):
            return ["event": .string("activity-token-unregistered"), "topic": .string(topic), "activity": .string(activity.wireValue), "timestamp": .int(at)]
        case .registeredWidgets(let topic, let token):
            return ["event": .string("widget-token-issued"), "topic": .string(topic), "token": .string(token.description)]
        case .unregisteredWidgets(let topic, let at):
            return ["event": .string("widget-token-unregistered"), "topic": .string(topic), "timestamp": .int(at)]
        case .registeredPushKit(let topic, let kind, let token):
            return ["event": .string("pushkit-token-issued"), "topic": .string(topic), "kind": .string(kind.rawValue), "token": .string(token.description)]
        case .unregisteredPushKit(let topic, let kind, let at):
            return ["event": .string("pushkit-token-unregistered"), "topic": .string(topic), "kind": .string(kind.rawValue), "timestamp": .int(at)]
        case .subscribed(let topic, let channel, let token):
            return ["event": .string("subscribed"), "topic": .string(topic), "channel": .string(channel), "token": .string(token.description)]
        case .unsubscribed(let topic, let channel):
            return ["event": .string("unsubscribed"), "topic": .string(topic), "channel": .string(channel)]
        case .webPushSubscribed(let topic, let subscription, let endpoint, let token):
            return [
                "event": .string("webpush-endpoint"), "topic": .string(topic), "subscription": .string(subscription),
                "endpoint": .string(endpoint), "token": .string(token.description),
            ]
        case .webPushUnsubscribed(let topic, let subscription):
            return ["event": .string("webpush-endpoint-removed"), "topic": .string(topic), "subscription": .string(subscription)]
        case .error(let code, let message, _):
            return ["event": .string("error"), "code": .string(code.rawValue), "message": .string(message)]
        }
    }

    func print(_ event: UnifiedPushEvent) {
        var object: [String: JSONValue]
        switch event {
        case .registered(let service, let description, let endpoint):
            object = ["event": .string("unifiedpush-registered"), "service": .string(service), "endpoint": endpoint.map(JSONValue.string) ?? .null]
            object["description"] = description.map(JSONValue.string)
        case .refused(let service, let reason, let why):
            object = ["event": .string("unifiedpush-refused"), "service": service.map(JSONValue.string) ?? .null, "reason": .string(reason), "why": .string(why)]
        case .unregistered(let service): object = ["event": .string("unifiedpush-unregistered"), "service": .string(service)]
        case .message(let service, let id, let bytes):
            object = ["event": .string("unifiedpush-message"), "service": .string(service), "id": .string(id), "bytes": .int(Int64(bytes))]
        case .notDelivered(let service, let id, let why):
            object = ["event": .string("unifiedpush-not-delivered"), "service": .string(service), "id": .string(id), "why": .string(why)]
        }
        let line = (try? Self.encoder.encode(object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        if json { printLineFlushed(line) } else { printLineFlushed("unifiedpush: \(line)") }
    }

    func print(_ event: RuntimeEvent, in zone: TimeZone) {
        let object: [String: JSONValue]
        switch event {
        case .prompted(let app, let requested, let granted):
            object = ["event": .string("prompted"), "app": .string(app), "requested": RuntimeJSON.names(requested), "granted": RuntimeJSON.names(granted)]
        case .delivered(let app, let n):
            object = ["event": .string("delivered"), "app": .string(app), "notification": RuntimeJSON.json(n, in: zone)]
        case .dropped(let app, let ids):
            object = ["event": .string("dropped"), "app": .string(app), "ids": .array(ids.map(JSONValue.string))]
        case .dismissed(let app, let id): object = ["event": .string("dismissed"), "app": .string(app), "id": .string(id)]
        case .badgeChanged(let app, let badge): object = ["event": .string("badge"), "app": .string(app), "badge": .int(Int64(badge))]
        case .soundReplaced(let app, let name, let reason):
            object = ["event": .string("sound-replaced"), "app": .string(app), "sound": .string(name), "reason": .string(reason)]
        case .lifecycleChanged(let app, let lifecycle): object = ["event": .string("app-state"), "app": .string(app), "state": .string("\(lifecycle)")]
        case .silentPush(let app, let outcome): object = ["event": .string("silent-push"), "app": .string(app), "outcome": .string(outcome)]
        case .tokenDelivered(let app, let token): object = ["event": .string("token-delivered"), "app": .string(app), "token": .string(token.description)]
        case .contractViolation(let app, let message):
            object = ["event": .string("contract-violation"), "app": .string(app), "message": .string(message)]
        case .liveActivity(let app, let event):
            object = RuntimeJSON.json(event).merging(["app": .string(app)]) { $1 }
        case .webPush(let app, let event):
            object = RuntimeJSON.json(event).merging(["app": .string(app)]) { $1 }
        case .pushKit(let app, let event):
            object = RuntimeJSON.json(event).merging(["app": .string(app)]) { $1 }
        case .widgets(let app, let event):
            switch event {
            case .token(let token): object = ["event": .string("widget-token"), "app": .string(app), "token": .string(token.description)]
            case .reloaded(let id, let remaining):
                object = ["event": .string("widget-reload"), "app": .string(app), "apns-id": .string(id), "remaining": .int(Int64(remaining))]
            case .refused(let id, let reason, let retryAt):
                object = [
                    "event": .string("widget-refused"), "app": .string(app), "apns-id": .string(id), "reason": .string(reason),
                    "retry-at": retryAt.map { .string(PlanFormat.utcString($0)) } ?? .null,
                ]
            }
        case .heldForSummary(let app, let id, let origin, let until):
            object = RuntimeJSON.identity(id: id, origin: origin).merging([
                "event": .string("held-for-summary"), "app": .string(app),
                "until": .string(PlanFormat.utcString(until)), "local": .string(PlanFormat.localString(until, in: zone)),
            ]) { $1 }
        case .summary(let at, let items):
            object = [
                "event": .string("summary"), "at": .string(PlanFormat.utcString(at)), "local": .string(PlanFormat.localString(at, in: zone)),
                "notifications": .array(items.map { .object(RuntimeJSON.identity(id: $0.id, origin: $0.origin).merging(["app": .string($0.app)]) { $1 }) }),
            ]
        case .focus(let active, let settings):
            object = ["event": .string("focus"), "active": active.map(JSONValue.string) ?? .null, "settings": settings.json]
        }
        let line = (try? Self.encoder.encode(object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        if json { printLineFlushed(line) } else { printLineFlushed("center: \(line)") }
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
