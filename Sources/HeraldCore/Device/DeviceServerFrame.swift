import Crypto
import Foundation

/// A notification as the device receives it.
public struct DeviceNotification: Sendable, Hashable {
    public var apnsID: NotificationID
    /// The app's bundle id.
    public var topic: String
    public var pushType: PushType
    public var priority: Priority
    public var collapseID: String?
    /// `apns-expiration` as sent (UNIX seconds, 0 = deliver now or never), if any.
    public var expiration: Int64?
    /// The payload (`aps` and custom keys) as the provider sent it.
    public var payload: JSONValue
    /// Version 2, `liveactivity` pushes: the token the push was sent to (the app's push-to-start
    /// token or one activity's update token), so the device knows which activity it is for.
    public var token: DeviceToken?

    public init(
        apnsID: NotificationID, topic: String, pushType: PushType, priority: Priority, collapseID: String?,
        expiration: Int64?, payload: JSONValue, token: DeviceToken? = nil
    ) {
        self.token = token
        self.apnsID = apnsID
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.expiration = expiration
        self.payload = payload
    }
}

/// A frame the gateway sends.
public enum DeviceServerFrame: Sendable, Hashable {
    /// The first frame on every connection: sign `nonce` and answer with hello.
    case challenge(version: Int, nonce: String)
    /// Authentication succeeded. `enrolled` is true when this hello enrolled the device.
    case welcome(deviceID: String, environment: PushEnvironment, enrolled: Bool, pingIntervalSeconds: Int)
    case registered(topic: String, token: DeviceToken)
    case unregistered(topic: String, atMilliseconds: Int64)
    /// Version 2: a Live Activity token (answer to `register` with `activity`).
    case registeredActivity(topic: String, activity: LiveActivityToken, token: DeviceToken)
    case unregisteredActivity(topic: String, activity: LiveActivityToken, atMilliseconds: Int64)
    /// Version 2: the app's widget push token (answer to `register` with `widgets`), and its end.
    case registeredWidgets(topic: String, token: DeviceToken)
    case unregisteredWidgets(topic: String, atMilliseconds: Int64)
    /// Version 4: the app's token of a PushKit kind (answer to `register` with `pushkit`), and its end.
    case registeredPushKit(topic: String, kind: PushKitKind, token: DeviceToken)
    case unregisteredPushKit(topic: String, kind: PushKitKind, atMilliseconds: Int64)
    /// Version 2: answers to `subscribe` (with the subscription's token, which the channel's
    /// broadcasts carry) and `unsubscribe`.
    case subscribed(topic: String, channel: String, token: DeviceToken)
    case unsubscribed(topic: String, channel: String)
    /// Version 3: the subscription's endpoint (what the app gives its application server, with
    /// its keys) and its token (the one its notifications carry).
    case webPushSubscribed(topic: String, subscription: String, endpoint: String, token: DeviceToken)
    case webPushUnsubscribed(topic: String, subscription: String)
    case notification(DeviceNotification)
    /// `reconnectWithinMilliseconds` (field `reconnect-within`, any version; a gateway sends it
    /// with `shutdown` when it stops gracefully): the device reconnects after a random delay up to
    /// this, instead of its usual backoff, so that every device of a stopping node does not come
    /// back in the same second. At most ``DeviceProtocol/maximumReconnectWithinMilliseconds``.
    case error(code: DeviceErrorCode, message: String, reconnectWithinMilliseconds: Int64? = nil)

    /// Encodes every frame but notifications (see ``encodeNotification(apnsID:topic:pushType:priority:collapseID:expiration:payload:into:)``).
    public func encoded() -> [UInt8] {
        var object = JSONObjectText()
        switch self {
        case .challenge(let version, let nonce):
            object.add("type", "challenge"); object.add("version", version); object.add("nonce", nonce)
        case .welcome(let deviceID, let environment, let enrolled, let ping):
            object.add("type", "welcome"); object.add("device", deviceID); object.add("environment", environment.rawValue)
            object.add("enrolled", enrolled); object.add("ping-interval", ping)
        case .registered(let topic, let token):
            object.add("type", "registered"); object.add("topic", topic); object.add("token", token.description)
        case .unregistered(let topic, let at):
            object.add("type", "unregistered"); object.add("topic", topic); object.add("timestamp", at)
        case .registeredActivity(let topic, let activity, let token):
            object.add("type", "registered"); object.add("topic", topic); object.add("activity", activity.wireValue)
            object.add("token", token.description)
        case .unregisteredActivity(let topic, let activity, let at):
            object.add("type", "unregistered"); object.add("topic", topic); object.add("activity", activity.wireValue)
            object.add("timestamp", at)
        case .registeredWidgets(let topic, let token):
            object.add("type", "registered"); object.add("topic", topic); object.add("widgets", true); object.add("token", token.description)
        case .unregisteredWidgets(let topic, let at):
            object.add("type", "unregistered"); object.add("topic", topic); object.add("widgets", true); object.add("timestamp", at)
        case .registeredPushKit(let topic, let kind, let token):
            object.add("type", "registered"); object.add("topic", topic); object.add("pushkit", kind.rawValue); object.add("token", token.description)
        case .unregisteredPushKit(let topic, let kind, let at):
            object.add("type", "unregistered"); object.add("topic", topic); object.add("pushkit", kind.rawValue); object.add("timestamp", at)
        case .subscribed(let topic, let channel, let token):
            object.add("type", "subscribed"); object.add("topic", topic); object.add("channel", channel); object.add("token", token.description)
        case .unsubscribed(let topic, let channel):
            object.add("type", "unsubscribed"); object.add("topic", topic); object.add("channel", channel)
        case .webPushSubscribed(let topic, let subscription, let endpoint, let token):
            object.add("type", "webpush-subscribed"); object.add("topic", topic); object.add("subscription", subscription)
            object.add("endpoint", endpoint); object.add("token", token.description)
        case .webPushUnsubscribed(let topic, let subscription):
            object.add("type", "webpush-unsubscribed"); object.add("topic", topic); object.add("subscription", subscription)
        case .error(let code, let message, let within):
            object.add("type", "error"); object.add("code", code.rawValue); object.add("message", message)
            if let within { object.add("reconnect-within", within) }
        case .notification(let n):
            var bytes: [UInt8] = []
            Self.encodeNotification(
                apnsID: n.apnsID, topic: n.topic, pushType: n.pushType, priority: n.priority,
                collapseID: n.collapseID, expiration: n.expiration, payload: n.payload.compactBytes, token: n.token, into: &bytes)
            return bytes
        }
        return object.bytes
    }

    /// Writes a notification frame, splicing in the payload bytes exactly as the provider sent
    /// them (they were validated as a JSON object on the provider port). The gateway's hot path.
    public static func encodeNotification(
        apnsID: NotificationID, topic: String, pushType: PushType, priority: Priority, collapseID: String?,
        expiration: Int64?, payload: [UInt8], token: DeviceToken? = nil, into bytes: inout [UInt8]
    ) {
        bytes.reserveCapacity(bytes.count + payload.count + 200)
        bytes.append(contentsOf: #"{"type":"notification","apns-id":""#.utf8)
        bytes.append(contentsOf: apnsID.description.utf8)
        bytes.append(contentsOf: #"","topic":"#.utf8)
        JSONText.appendString(topic, to: &bytes)
        bytes.append(contentsOf: #","push-type":"#.utf8)
        JSONText.appendString(pushType.rawValue, to: &bytes)
        bytes.append(contentsOf: #","priority":"#.utf8)
        bytes.append(contentsOf: String(priority.rawValue).utf8)
        bytes.append(contentsOf: #","collapse-id":"#.utf8)
        if let collapseID { JSONText.appendString(collapseID, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
        bytes.append(contentsOf: #","expiration":"#.utf8)
        bytes.append(contentsOf: (expiration.map { String($0) } ?? "null").utf8)
        if let token {
            bytes.append(contentsOf: #","token":""#.utf8)
            bytes.append(contentsOf: token.description.utf8)
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(contentsOf: #","payload":"#.utf8)
        bytes.append(contentsOf: payload)
        bytes.append(UInt8(ascii: "}"))
    }

    /// Parses a text frame from the gateway, in one decoding pass (the device's hot path).
    public static func decode(_ bytes: [UInt8]) -> Result<DeviceServerFrame, DeviceFrameError> {
        let f: Fields
        do { f = try Fields(JSONReader.parseObject(bytes, limits: .payload)) } catch {
            return .failure(DeviceFrameError("the frame is not a JSON object of the protocol (\(error))"))
        }
        switch f.type {
        case "notification":
            guard let id = f.apnsID.flatMap(NotificationID.init(header:)), let topic = f.topic, let type = f.pushType,
                  let priority = f.priority.flatMap(Priority.init(rawValue:))
            else { return .failure(DeviceFrameError("a notification needs apns-id, topic, push-type and priority")) }
            guard case .object? = f.payload, let payload = f.payload else {
                return .failure(DeviceFrameError("a notification needs a JSON object payload"))
            }
            return .success(.notification(DeviceNotification(
                apnsID: id, topic: topic, pushType: PushType(rawValue: type), priority: priority,
                collapseID: f.collapseID, expiration: f.expiration, payload: payload,
                token: f.token.flatMap { DeviceToken(hex: $0) })))
        case "challenge":
            guard let version = f.version, let nonce = f.nonce else {
                return .failure(DeviceFrameError("a challenge needs version and nonce"))
            }
            return .success(.challenge(version: version, nonce: nonce))
        case "welcome":
            guard let device = f.device, let env = f.environment.flatMap(PushEnvironment.init(rawValue:)) else {
                return .failure(DeviceFrameError("a welcome needs device and environment"))
            }
            return .success(.welcome(deviceID: device, environment: env, enrolled: f.enrolled ?? false, pingIntervalSeconds: f.pingInterval ?? 0))
        case "registered":
            guard let topic = f.topic, let token = f.token.flatMap({ DeviceToken(hex: $0) }) else {
                return .failure(DeviceFrameError("a registered frame needs topic and token"))
            }
            if let activity = f.activity {
                guard let parsed = LiveActivityToken(wireValue: activity) else { return .failure(DeviceFrameError("a registered frame's activity is not an activity id")) }
                return .success(.registeredActivity(topic: topic, activity: parsed, token: token))
            }
            if f.widgets == true { return .success(.registeredWidgets(topic: topic, token: token)) }
            if let kind = f.pushKit {
                guard let parsed = PushKitKind(rawValue: kind) else { return .failure(DeviceFrameError("a registered frame's pushkit is not a PushKit kind")) }
                return .success(.registeredPushKit(topic: topic, kind: parsed, token: token))
            }
            return .success(.registered(topic: topic, token: token))
        case "unregistered":
            guard let topic = f.topic, let at = f.timestamp else {
                return .failure(DeviceFrameError("an unregistered frame needs topic and timestamp"))
            }
            if let activity = f.activity {
                guard let parsed = LiveActivityToken(wireValue: activity) else { return .failure(DeviceFrameError("an unregistered frame's activity is not an activity id")) }
                return .success(.unregisteredActivity(topic: topic, activity: parsed, atMilliseconds: at))
            }
            if f.widgets == true { return .success(.unregisteredWidgets(topic: topic, atMilliseconds: at)) }
            if let kind = f.pushKit {
                guard let parsed = PushKitKind(rawValue: kind) else { return .failure(DeviceFrameError("an unregistered frame's pushkit is not a PushKit kind")) }
                return .success(.unregisteredPushKit(topic: topic, kind: parsed, atMilliseconds: at))
            }
            return .success(.unregistered(topic: topic, atMilliseconds: at))
        case "subscribed":
            guard let topic = f.topic, let channel = f.channel, let token = f.token.flatMap({ DeviceToken(hex: $0) }) else {
                return .failure(DeviceFrameError("a subscribed frame needs topic, channel and token"))
            }
            return .success(.subscribed(topic: topic, channel: channel, token: token))
        case "unsubscribed":
            guard let topic = f.topic, let channel = f.channel else {
                return .failure(DeviceFrameError("an unsubscribed frame needs topic and channel"))
            }
            return .success(.unsubscribed(topic: topic, channel: channel))
        case "webpush-subscribed":
            guard let topic = f.topic, let subscription = f.subscription, let endpoint = f.endpoint, let token = f.token.flatMap({ DeviceToken(hex: $0) }) else {
                return .failure(DeviceFrameError("a webpush-subscribed frame needs topic, subscription, endpoint and token"))
            }
            return .success(.webPushSubscribed(topic: topic, subscription: subscription, endpoint: endpoint, token: token))
        case "webpush-unsubscribed":
            guard let topic = f.topic, let subscription = f.subscription else {
                return .failure(DeviceFrameError("a webpush-unsubscribed frame needs topic and subscription"))
            }
            return .success(.webPushUnsubscribed(topic: topic, subscription: subscription))
        case "error":
            return .success(.error(code: f.code.flatMap(DeviceErrorCode.init(rawValue:)) ?? .internalError, message: f.message ?? "",
                                   reconnectWithinMilliseconds: f.reconnectWithin.map(Int64.init)))
        default:
            return .failure(DeviceFrameError("unknown frame type \"\(f.type)\""))
        }
    }

    /// Every field a gateway frame may carry, read with checked conversions.
    private struct Fields {
        var type: String
        var version: Int?
        var nonce: String?
        var device: String?
        var environment: String?
        var enrolled: Bool?
        var pingInterval: Int?
        var topic: String?
        var token: String?
        var timestamp: Int64?
        var code: String?
        var message: String?
        var apnsID: String?
        var pushType: String?
        var priority: Int?
        var collapseID: String?
        var expiration: Int64?
        var payload: JSONValue?
        var activity: String?
        var channel: String?
        var subscription: String?
        var endpoint: String?
        var reconnectWithin: Int?
        var widgets: Bool?
        var pushKit: String?

        init(_ object: [String: JSONValue]) throws(JSONFieldError) {
            let o = JSONFields(object)
            type = try o.requiredString("type", maximumBytes: 64)
            version = try o.integer("version", in: 0...Int(Int32.max))
            nonce = try o.string("nonce", maximumBytes: 1_024)
            device = try o.string("device", maximumBytes: 256)
            environment = try o.string("environment", maximumBytes: 64)
            enrolled = try o.bool("enrolled")
            pingInterval = try o.integer("ping-interval", in: 0...Int(Int32.max))
            topic = try o.string("topic", maximumBytes: 1_024)
            token = try o.string("token", maximumBytes: 1_024)
            timestamp = try o.int64("timestamp")
            code = try o.string("code", maximumBytes: 256)
            message = try o.string("message", maximumBytes: 4_096)
            apnsID = try o.string("apns-id", maximumBytes: 64)
            pushType = try o.string("push-type", maximumBytes: 64)
            priority = try o.integer("priority", in: 0...255)
            collapseID = try o.string("collapse-id", maximumBytes: 256)
            expiration = try o.int64("expiration")
            payload = object["payload"]
            activity = try o.string("activity", maximumBytes: DeviceProtocol.maximumIdentifierBytes)
            channel = try o.string("channel", maximumBytes: DeviceProtocol.maximumIdentifierBytes)
            subscription = try o.string("subscription", maximumBytes: 64)
            endpoint = try o.string("endpoint", maximumBytes: DeviceProtocol.maximumEndpointBytes)
            reconnectWithin = try o.integer("reconnect-within", in: 0...DeviceProtocol.maximumReconnectWithinMilliseconds)
            widgets = try o.bool("widgets")
            pushKit = try o.string("pushkit", maximumBytes: 64)
        }
    }

}
