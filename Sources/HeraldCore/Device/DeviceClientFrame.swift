import Crypto
import Foundation

/// A frame a device sends.
public enum DeviceClientFrame: Sendable, Hashable {
    /// Answers the challenge: the device's raw P-256 public key and its signature (raw r ‖ s) of
    /// ``DeviceProtocol/challengeMessage(nonce:)``. The first hello of a key enrolls the device;
    /// a gateway that closed open enrollment enrolls a new key only with its `enrollmentSecret`.
    /// `keepaliveSeconds` is the ping interval the device's network has kept idle connections
    /// through (what ``KeepaliveLearner`` learned; `nil`: the gateway's own): the gateway pings
    /// no less often, within its bounds, and says the interval in its `welcome`.
    case hello(version: Int, publicKey: [UInt8], signature: [UInt8], enrollmentSecret: String? = nil, keepaliveSeconds: Int? = nil)
    /// Asks for the device token of an app (a topic = its bundle id).
    case register(topic: String)
    /// The app was removed: its token becomes unregistered.
    case unregister(topic: String)
    /// Acknowledges notifications by apns-id.
    case ack(ids: [NotificationID])
    /// Version 2: asks for a Live Activity token of an app: its push-to-start token
    /// (``LiveActivityToken/pushToStart``) or the update token of one activity.
    case registerActivity(topic: String, activity: LiveActivityToken)
    /// Version 2: the activity ended; its update token becomes unregistered.
    case unregisterActivity(topic: String, activity: LiveActivityToken)
    /// Version 2 (`"widgets": true` on `register`): asks for the app's widget push token (iOS 26:
    /// `widgets` pushes reload the app's widgets and go only to this token).
    case registerWidgets(topic: String)
    /// The app no longer configures its widgets for pushes: its widget token becomes unregistered.
    case unregisterWidgets(topic: String)
    /// Version 4 (`"pushkit": kind` on `register`): asks for the app's token of a PushKit kind
    /// (VoIP, Push to Talk while a channel is joined, location, complication, File Provider):
    /// pushes of that type go only to it, and it takes no other.
    case registerPushKit(topic: String, kind: PushKitKind)
    /// The app gave up that token (left its Push to Talk channel, stopped monitoring location
    /// pushes, unregistered the type): it becomes unregistered.
    case unregisterPushKit(topic: String, kind: PushKitKind)
    /// Version 2: subscribes the device to an app's broadcast channel.
    case subscribe(topic: String, channel: String)
    case unsubscribe(topic: String, channel: String)
    /// Version 3: a Web Push subscription for an app: `subscription` is its id (a UUID the device
    /// chose), `applicationServerKey` the raw P-256 key pushes must be VAPID-signed with, if any.
    /// The device keeps the subscription's decryption keys: the gateway never sees them.
    case webPushSubscribe(topic: String, subscription: String, applicationServerKey: [UInt8]?)
    case webPushUnsubscribe(topic: String, subscription: String)

    /// The protocol version a frame needs.
    public var minimumVersion: Int {
        switch self {
        case .hello, .register, .unregister, .ack: 1
        case .registerActivity, .unregisterActivity, .registerWidgets, .unregisterWidgets, .subscribe, .unsubscribe: 2
        case .webPushSubscribe, .webPushUnsubscribe: 3
        case .registerPushKit, .unregisterPushKit: 4
        }
    }

    public func encoded() -> [UInt8] {
        var object = JSONObjectText()
        switch self {
        case .hello(let version, let publicKey, let signature, let secret, let keepalive):
            object.add("type", "hello"); object.add("version", version)
            object.add("public-key", Data(publicKey).base64EncodedString()); object.add("signature", Data(signature).base64EncodedString())
            if let secret { object.add("enrollment-secret", secret) }
            if let keepalive { object.add("keepalive", keepalive) }
        case .register(let topic): object.add("type", "register"); object.add("topic", topic)
        case .unregister(let topic): object.add("type", "unregister"); object.add("topic", topic)
        case .ack(let ids): object.add("type", "ack"); object.add("ids", ids.map(\.description))
        case .registerActivity(let topic, let activity):
            object.add("type", "register"); object.add("topic", topic); object.add("activity", activity.wireValue)
        case .unregisterActivity(let topic, let activity):
            object.add("type", "unregister"); object.add("topic", topic); object.add("activity", activity.wireValue)
        case .registerWidgets(let topic): object.add("type", "register"); object.add("topic", topic); object.add("widgets", true)
        case .unregisterWidgets(let topic): object.add("type", "unregister"); object.add("topic", topic); object.add("widgets", true)
        case .registerPushKit(let topic, let kind): object.add("type", "register"); object.add("topic", topic); object.add("pushkit", kind.rawValue)
        case .unregisterPushKit(let topic, let kind): object.add("type", "unregister"); object.add("topic", topic); object.add("pushkit", kind.rawValue)
        case .subscribe(let topic, let channel): object.add("type", "subscribe"); object.add("topic", topic); object.add("channel", channel)
        case .unsubscribe(let topic, let channel): object.add("type", "unsubscribe"); object.add("topic", topic); object.add("channel", channel)
        case .webPushSubscribe(let topic, let subscription, let key):
            object.add("type", "webpush-subscribe"); object.add("topic", topic); object.add("subscription", subscription)
            if let key { object.add("application-server-key", Base64URL.encode(key)) }
        case .webPushUnsubscribe(let topic, let subscription):
            object.add("type", "webpush-unsubscribe"); object.add("topic", topic); object.add("subscription", subscription)
        }
        return object.bytes
    }

    /// Parses a text frame, or says precisely what is wrong with it.
    public static func decode(_ bytes: [UInt8]) -> Result<DeviceClientFrame, DeviceFrameError> {
        let fields: FrameFields
        switch FrameFields.parse(bytes) {
        case .failure(let error): return .failure(error)
        case .success(let parsed): fields = parsed
        }
        switch fields.type {
        case "hello":
            guard let version = fields.integer("version") else { return .failure(fields.missing("version", "an integer")) }
            guard let key = fields.base64("public-key") else { return .failure(fields.missing("public-key", "base64")) }
            guard let signature = fields.base64("signature") else { return .failure(fields.missing("signature", "base64")) }
            let secret = fields.object["enrollment-secret"]
            guard secret == nil || secret?.string(maximumBytes: DeviceProtocol.maximumEnrollmentSecretBytes) != nil else {
                return .failure(DeviceFrameError("\"enrollment-secret\" must be a string of at most \(DeviceProtocol.maximumEnrollmentSecretBytes) bytes"))
            }
            let keepalive = fields.object["keepalive"]
            guard keepalive == nil || keepalive?.integer(in: DeviceProtocol.keepaliveSeconds) != nil else {
                return .failure(DeviceFrameError("\"keepalive\" must be an integer from \(DeviceProtocol.keepaliveSeconds.lowerBound) to \(DeviceProtocol.keepaliveSeconds.upperBound) (seconds)"))
            }
            return .success(.hello(
                version: version, publicKey: key, signature: signature, enrollmentSecret: secret?.stringValue,
                keepaliveSeconds: keepalive?.integer(in: DeviceProtocol.keepaliveSeconds)))
        case "register", "unregister":
            guard let topic = fields.string("topic") else { return .failure(fields.missing("topic", "a string")) }
            let isRegister = fields.type == "register"
            if let raw = fields.object["activity"] {
                guard let text = raw.string(maximumBytes: DeviceProtocol.maximumIdentifierBytes), let activity = LiveActivityToken(wireValue: text) else {
                    return .failure(DeviceFrameError("\"activity\" must be \"start\" or an activity id (letters, digits, '-', '_', '.', at most \(DeviceProtocol.maximumIdentifierBytes) bytes)"))
                }
                return .success(isRegister ? .registerActivity(topic: topic, activity: activity) : .unregisterActivity(topic: topic, activity: activity))
            }
            if let raw = fields.object["pushkit"] {
                guard let name = raw.string(maximumBytes: 64), let kind = PushKitKind(rawValue: name) else {
                    return .failure(DeviceFrameError("\"pushkit\" must be one of \(PushKitKind.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))"))
                }
                return .success(isRegister ? .registerPushKit(topic: topic, kind: kind) : .unregisterPushKit(topic: topic, kind: kind))
            }
            switch fields.object["widgets"] {
            case nil, .bool(false)?: break
            case .bool(true)?: return .success(isRegister ? .registerWidgets(topic: topic) : .unregisterWidgets(topic: topic))
            default: return .failure(DeviceFrameError("\"widgets\" must be true or false"))
            }
            return .success(isRegister ? .register(topic: topic) : .unregister(topic: topic))
        case "subscribe", "unsubscribe":
            guard let topic = fields.string("topic") else { return .failure(fields.missing("topic", "a string")) }
            guard let channel = fields.object["channel"]?.string(maximumBytes: DeviceProtocol.maximumIdentifierBytes),
                  BroadcastChannelID(channel) != nil else {
                return .failure(fields.missing("channel", "a channel id: base64 of 16 bytes"))
            }
            return .success(fields.type == "subscribe" ? .subscribe(topic: topic, channel: channel) : .unsubscribe(topic: topic, channel: channel))
        case "webpush-subscribe", "webpush-unsubscribe":
            guard let topic = fields.string("topic") else { return .failure(fields.missing("topic", "a string")) }
            guard let text = fields.object["subscription"]?.string(maximumBytes: 64), let subscription = BrowserPushProtocol.channelID(text) else {
                return .failure(fields.missing("subscription", "a UUID"))
            }
            guard fields.type == "webpush-subscribe" else { return .success(.webPushUnsubscribe(topic: topic, subscription: subscription)) }
            var key: [UInt8]?
            if let raw = fields.object["application-server-key"], raw != .null {
                guard let decoded = raw.string(maximumBytes: 256).flatMap({ Base64URL.decode($0[...]) }), ApplicationServerKey.isValid(decoded) else {
                    return .failure(DeviceFrameError("\"application-server-key\" must be an uncompressed P-256 public key (65 bytes), base64url"))
                }
                key = decoded
            }
            return .success(.webPushSubscribe(topic: topic, subscription: subscription, applicationServerKey: key))
        case "ack":
            guard case .array(let raw)? = fields.object["ids"] else {
                return .failure(fields.missing("ids", "an array of apns-id strings"))
            }
            let texts = raw.compactMap { $0.string(maximumBytes: 64) }
            guard texts.count == raw.count else { return .failure(fields.missing("ids", "an array of apns-id strings")) }
            guard texts.count <= DeviceProtocol.maximumAcksPerFrame else {
                return .failure(DeviceFrameError("an ack frame carries at most \(DeviceProtocol.maximumAcksPerFrame) ids"))
            }
            var ids: [NotificationID] = []
            ids.reserveCapacity(texts.count)
            for text in texts {
                guard let id = NotificationID(header: text) else { return .failure(DeviceFrameError("\"\(text)\" is not an apns-id (a UUID)")) }
                ids.append(id)
            }
            return .success(.ack(ids: ids))
        default:
            return .failure(DeviceFrameError("unknown frame type \"\(fields.type)\" (expected hello, register, unregister, ack, subscribe, unsubscribe, webpush-subscribe or webpush-unsubscribe)"))
        }
    }
}
