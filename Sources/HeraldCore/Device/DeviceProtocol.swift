import Crypto
import Foundation

/// Herald's device protocol, versions 1 to 3: JSON text frames over one WebSocket per device.
/// Version 2 adds broadcast channel subscriptions and Live Activity tokens, version 3 Web Push
/// subscriptions (the device as a Web Push user agent); a device says which
/// version it speaks in its `hello`, and a version 1 device never sees a frame of version 2.
/// `docs/device-protocol.md` is its specification; this file is its implementation, shared by the
/// gateway and the device runtime.
public enum DeviceProtocol {
    /// The version of the challenge (and of the signed challenge message), the same for every
    /// device version so that older devices keep working.
    public static let version = 1
    /// The newest version this build speaks (a device's `hello` names its own).
    public static let latestVersion = 3
    /// The versions a gateway of this build accepts in a `hello`.
    public static let supportedVersions = 1...3
    /// The longest Live Activity id or broadcast channel id a frame may carry.
    public static let maximumIdentifierBytes = 128
    /// The WebSocket path of version 1.
    public static let path = "/device/v1"
    /// The largest frame either side accepts (a notification frame is at most ~6 KiB).
    /// The longest enrollment secret a hello may carry.
    public static let maximumEnrollmentSecretBytes = 1_024
    public static let maximumFrameSize = 64 * 1024
    /// The longest Web Push endpoint a `webpush-subscribed` frame may carry (UnifiedPush's bound).
    public static let maximumEndpointBytes = 1_000
    /// The longest `reconnect-within` a gateway may give (one hour); a frame with more is malformed.
    public static let maximumReconnectWithinMilliseconds = 3_600_000
    /// The most apns-ids one ack frame may carry.
    public static let maximumAcksPerFrame = 1024

    /// The bytes a device signs to answer a challenge.
    public static func challengeMessage(nonce: String) -> [UInt8] {
        Array("herald-device-challenge:v\(version):\(nonce)".utf8)
    }

    /// A device's id: the first 16 bytes of the SHA-256 of its raw public key, in hex.
    public static func deviceID(publicKey: [UInt8]) -> String {
        SHA256.hash(data: publicKey).prefix(16).map { hexDigits[Int($0)] }.joined()
    }

    private static let hexDigits: [String] = (0..<256).map { String(format: "%02x", $0) }

    /// Whether a topic (an app's bundle id) may be registered: printable ASCII without spaces, at
    /// most 255 bytes, and not ending in a push type's suffix.
    public static func isValidTopic(_ topic: String) -> Bool {
        guard !topic.isEmpty, topic.utf8.count <= APNsRequestValidation.maximumTopicByteCount,
              topic.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { return false }
        // A Live Activity token's scope (`….push-type.liveactivity/<id>`) is never an app.
        return PushType.implied(byTopic: topic) == .alert && !topic.contains(PushType.liveactivity.topicSuffix)
    }
}

/// Why a frame or a connection was refused (the `code` of an error frame).
public enum DeviceErrorCode: String, Sendable, Hashable, Codable {
    /// Not JSON, not an object, no known `type`, or a field missing or of the wrong type.
    case malformedFrame = "malformed-frame"
    /// Larger than ``DeviceProtocol/maximumFrameSize``; the connection is closed.
    case frameTooLarge = "frame-too-large"
    /// A binary or continuation frame where a text frame was expected.
    case unsupportedFrame = "unsupported-frame"
    /// The hello names a version this gateway does not speak; the connection is closed.
    case unsupportedVersion = "unsupported-version"
    /// A new device without the gateway's enrollment secret (enrollment is closed); the
    /// connection is closed. Devices enrolled before need no secret.
    case enrollmentRefused = "enrollment-refused"
    /// The hello's key or signature is invalid; the connection is closed.
    case authenticationFailed = "authentication-failed"
    /// Version 2: subscribing to a channel the app does not have (never created, or deleted).
    case unknownChannel = "unknown-channel"
    /// A version 2 frame on a connection whose hello said version 1.
    case unsupportedFrameForVersion = "needs-version-2"
    /// A version 3 frame on a connection whose hello said version 1 or 2.
    case needsVersion3 = "needs-version-3"
    /// Version 3: a Web Push subscription asked of a gateway without a Web Push port.
    case webPushUnavailable = "webpush-unavailable"
    /// Version 3: `webpush-unsubscribe` of a subscription the device does not have.
    case unknownSubscription = "unknown-subscription"
    /// A frame other than hello before authentication.
    case notAuthenticated = "not-authenticated"
    /// A second hello on an authenticated connection.
    case alreadyAuthenticated = "already-authenticated"
    /// A topic that is not a valid bundle id.
    case invalidTopic = "invalid-topic"
    /// Unregistering a topic the device has no token for.
    case unknownTopic = "unknown-topic"
    /// Another connection of the same device took over; this one is closed.
    case replaced
    /// Nothing was heard from the device for the idle timeout; the connection is closed.
    case idleTimeout = "idle-timeout"
    /// The gateway is shutting down; reconnect later.
    case shutdown
    /// The device registered more topics than the gateway allows a device.
    case tooManyTopics = "too-many-topics"
    /// The device did not read what was queued for it; the connection is closed (its
    /// notifications stay held for its next connection).
    case slowConsumer = "slow-consumer"
    /// The gateway could not do what was asked (its store failed); try again.
    case internalError = "internal-error"

    /// Whether the gateway closes the connection after sending this error.
    public var closesConnection: Bool {
        switch self {
        case .frameTooLarge, .unsupportedVersion, .authenticationFailed, .enrollmentRefused, .replaced, .idleTimeout, .shutdown,
             .slowConsumer: return true
        default: return false
        }
    }
}

/// A frame a device sends.
public enum DeviceClientFrame: Sendable, Hashable {
    /// Answers the challenge: the device's raw P-256 public key and its signature (raw r ‖ s) of
    /// ``DeviceProtocol/challengeMessage(nonce:)``. The first hello of a key enrolls the device;
    /// a gateway that closed open enrollment enrolls a new key only with its `enrollmentSecret`.
    case hello(version: Int, publicKey: [UInt8], signature: [UInt8], enrollmentSecret: String? = nil)
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
        }
    }

    public func encoded() -> [UInt8] {
        var object: [String: Any]
        switch self {
        case .hello(let version, let publicKey, let signature, let secret):
            object = [
                "type": "hello", "version": version,
                "public-key": Data(publicKey).base64EncodedString(), "signature": Data(signature).base64EncodedString(),
            ]
            if let secret { object["enrollment-secret"] = secret }
        case .register(let topic): object = ["type": "register", "topic": topic]
        case .unregister(let topic): object = ["type": "unregister", "topic": topic]
        case .ack(let ids): object = ["type": "ack", "ids": ids.map(\.description)]
        case .registerActivity(let topic, let activity): object = ["type": "register", "topic": topic, "activity": activity.wireValue]
        case .unregisterActivity(let topic, let activity): object = ["type": "unregister", "topic": topic, "activity": activity.wireValue]
        case .registerWidgets(let topic): object = ["type": "register", "topic": topic, "widgets": true]
        case .unregisterWidgets(let topic): object = ["type": "unregister", "topic": topic, "widgets": true]
        case .subscribe(let topic, let channel): object = ["type": "subscribe", "topic": topic, "channel": channel]
        case .unsubscribe(let topic, let channel): object = ["type": "unsubscribe", "topic": topic, "channel": channel]
        case .webPushSubscribe(let topic, let subscription, let key):
            object = ["type": "webpush-subscribe", "topic": topic, "subscription": subscription]
            if let key { object["application-server-key"] = Base64URL.encode(key) }
        case .webPushUnsubscribe(let topic, let subscription): object = ["type": "webpush-unsubscribe", "topic": topic, "subscription": subscription]
        }
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
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
            return .success(.hello(version: version, publicKey: key, signature: signature, enrollmentSecret: secret?.stringValue))
        case "register", "unregister":
            guard let topic = fields.string("topic") else { return .failure(fields.missing("topic", "a string")) }
            let isRegister = fields.type == "register"
            if let raw = fields.object["activity"] {
                guard let text = raw.string(maximumBytes: DeviceProtocol.maximumIdentifierBytes), let activity = LiveActivityToken(wireValue: text) else {
                    return .failure(DeviceFrameError("\"activity\" must be \"start\" or an activity id (letters, digits, '-', '_', '.', at most \(DeviceProtocol.maximumIdentifierBytes) bytes)"))
                }
                return .success(isRegister ? .registerActivity(topic: topic, activity: activity) : .unregisterActivity(topic: topic, activity: activity))
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
        var object: [String: Any]
        switch self {
        case .challenge(let version, let nonce): object = ["type": "challenge", "version": version, "nonce": nonce]
        case .welcome(let deviceID, let environment, let enrolled, let ping):
            object = [
                "type": "welcome", "device": deviceID, "environment": environment.rawValue, "enrolled": enrolled,
                "ping-interval": ping,
            ]
        case .registered(let topic, let token): object = ["type": "registered", "topic": topic, "token": token.description]
        case .unregistered(let topic, let at): object = ["type": "unregistered", "topic": topic, "timestamp": at]
        case .registeredActivity(let topic, let activity, let token):
            object = ["type": "registered", "topic": topic, "activity": activity.wireValue, "token": token.description]
        case .unregisteredActivity(let topic, let activity, let at):
            object = ["type": "unregistered", "topic": topic, "activity": activity.wireValue, "timestamp": at]
        case .registeredWidgets(let topic, let token): object = ["type": "registered", "topic": topic, "widgets": true, "token": token.description]
        case .unregisteredWidgets(let topic, let at): object = ["type": "unregistered", "topic": topic, "widgets": true, "timestamp": at]
        case .subscribed(let topic, let channel, let token): object = ["type": "subscribed", "topic": topic, "channel": channel, "token": token.description]
        case .unsubscribed(let topic, let channel): object = ["type": "unsubscribed", "topic": topic, "channel": channel]
        case .webPushSubscribed(let topic, let subscription, let endpoint, let token):
            object = ["type": "webpush-subscribed", "topic": topic, "subscription": subscription, "endpoint": endpoint, "token": token.description]
        case .webPushUnsubscribed(let topic, let subscription): object = ["type": "webpush-unsubscribed", "topic": topic, "subscription": subscription]
        case .error(let code, let message, let within):
            object = ["type": "error", "code": code.rawValue, "message": message]
            if let within { object["reconnect-within"] = within }
        case .notification(let n):
            var bytes: [UInt8] = []
            let payload = (try? JSONEncoder().encode(n.payload)).map(Array.init) ?? Array("{}".utf8)
            Self.encodeNotification(
                apnsID: n.apnsID, topic: n.topic, pushType: n.pushType, priority: n.priority,
                collapseID: n.collapseID, expiration: n.expiration, payload: payload, token: n.token, into: &bytes)
            return bytes
        }
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
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
        }
    }

}

/// What is wrong with a frame, in words for the person reading the error frame.
public struct DeviceFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A frame's top-level JSON object and its `type`.
private struct FrameFields {
    var object: [String: JSONValue]
    var type: String

    static func parse(_ bytes: [UInt8]) -> Result<FrameFields, DeviceFrameError> {
        let object: [String: JSONValue]
        do { object = try JSONReader.parseObject(bytes, limits: .payload) } catch {
            return .failure(DeviceFrameError("the frame is not a JSON object (\(error))"))
        }
        guard let type = object["type"]?.string(maximumBytes: 64) else { return .failure(DeviceFrameError("the frame has no \"type\" string")) }
        return .success(FrameFields(object: object, type: type))
    }

    func string(_ key: String) -> String? { object[key]?.string(maximumBytes: 4_096) }
    func integer(_ key: String) -> Int? { object[key]?.integer(in: 0...Int(Int32.max)) }
    func base64(_ key: String) -> [UInt8]? { string(key).flatMap { Data(base64Encoded: $0) }.map(Array.init) }
    func missing(_ key: String, _ kind: String) -> DeviceFrameError {
        DeviceFrameError("a \(type) frame needs \"\(key)\" (\(kind))")
    }
}

/// Minimal JSON text writing for the hot path.
enum JSONText {
    static func appendString(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xf)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
