import Crypto
import Foundation

/// Herald's device protocol, versions 1 to 4: JSON text frames over one WebSocket per device.
/// Version 2 adds broadcast channel subscriptions and Live Activity tokens, version 3 Web Push
/// subscriptions (the device as a Web Push user agent), version 4 PushKit tokens (VoIP, Push to
/// Talk, location, complication, File Provider); a device says which
/// version it speaks in its `hello`, and a version 1 device never sees a frame of version 2.
/// `docs/device-protocol.md` is its specification; this file is its implementation, shared by the
/// gateway and the device runtime.
public enum DeviceProtocol {
    /// The version of the challenge (and of the signed challenge message), the same for every
    /// device version so that older devices keep working.
    public static let version = 1
    /// The newest version this build speaks (a device's `hello` names its own).
    public static let latestVersion = 4
    /// The versions a gateway of this build accepts in a `hello`.
    public static let supportedVersions = 1...4
    /// The longest Live Activity id or broadcast channel id a frame may carry.
    public static let maximumIdentifierBytes = 128
    /// The WebSocket path of version 1.
    public static let path = "/device/v1"
    /// The largest frame either side accepts (a notification frame is at most ~6 KiB).
    /// The longest enrollment secret a hello may carry.
    public static let maximumEnrollmentSecretBytes = 1_024
    /// The range of a hello's `keepalive` and a welcome's `ping-interval`, in seconds (a day at
    /// most: longer than any NAT keeps an idle mapping).
    public static let keepaliveSeconds = 1...86_400
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
        // A Live Activity token's scope (`….push-type.liveactivity/<id>`), a Web Push
        // subscription's or a PushKit token's is never an app.
        return PushType.implied(byTopic: topic) == .alert && !topic.contains(PushType.liveactivity.topicSuffix)
            && !topic.contains(TokenScope.webPushMarker) && !topic.contains(TokenScope.pushKitMarker)
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
    /// A version 4 frame (a PushKit token) on a connection whose hello said an earlier version.
    case needsVersion4 = "needs-version-4"
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

/// What is wrong with a frame, in words for the person reading the error frame.
public struct DeviceFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A frame's top-level JSON object and its `type`.
struct FrameFields {
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
