/// The parts of a provider request that the validation reads, collected from the HTTP/2 headers
/// by the transport. Each field is the header's value, or `nil` when the header is absent.
public struct APNsRequestHead: Sendable {
    public var method: String?
    public var path: String?
    public var authorization: String?
    public var apnsID: String?
    public var pushType: String?
    public var topic: String?
    public var priority: String?
    public var expiration: String?
    public var collapseID: String?
    /// Broadcasts and channel management: `apns-channel-id` and `apns-request-id`.
    public var channelID: String?
    public var requestID: String?
    /// W3C Trace Context (read only while tracing is on, ``Traces``): the first of each is kept;
    /// a malformed one is ignored (the push starts a trace of its own), never refused.
    public var traceparent: String?
    public var tracestate: String?
    /// Set by the transport when a header that may appear once appeared again.
    public var hasDuplicateHeaders = false

    public init() {}

    /// The headers a request may carry at most once.
    public static let singularHeaders: Set<String> = [
        ":method", ":path", ":scheme", ":authority", "authorization", "apns-id", "apns-push-type",
        "apns-topic", "apns-priority", "apns-expiration", "apns-collapse-id", "content-length",
        "apns-channel-id", "apns-request-id",
    ]

    /// Records one header (name lowercase, as HTTP/2 requires). Returns `false` for a repeat of a
    /// singular header, which also sets ``hasDuplicateHeaders``.
    @discardableResult
    public mutating func record(name: String, value: String) -> Bool {
        func set(_ field: inout String?) -> Bool {
            if field != nil { hasDuplicateHeaders = true; return false }
            field = value
            return true
        }
        // Most headers a provider sends are ones Herald reads; others are skipped on their first byte.
        let first = name.utf8.first
        guard first == UInt8(ascii: ":") || first == UInt8(ascii: "a") else {
            if first == UInt8(ascii: "t"), Traces.isEnabled {
                if name == "traceparent", traceparent == nil { traceparent = value }
                if name == "tracestate", tracestate == nil { tracestate = value }
            }
            return true
        }
        switch name {
        case ":method": return set(&method)
        case ":path": return set(&path)
        case "authorization": return set(&authorization)
        case "apns-id": return set(&apnsID)
        case "apns-push-type": return set(&pushType)
        case "apns-topic": return set(&topic)
        case "apns-priority": return set(&priority)
        case "apns-expiration": return set(&expiration)
        case "apns-collapse-id": return set(&collapseID)
        case "apns-channel-id": return set(&channelID)
        case "apns-request-id": return set(&requestID)
        default: return true
        }
    }
}

/// What the request line names: the notification's id and its device token.
public struct APNsRequestTarget: Sendable, Hashable {
    /// The request's `apns-id`, or `nil` when the provider sent none (the gateway generates one).
    public var apnsID: NotificationID?
    public var token: DeviceToken
}

/// The notification headers, validated.
public struct PushHeaders: Sendable, Hashable {
    public var pushType: PushType
    /// `apns-topic` as sent.
    public var topic: String
    /// The app's bundle id: the topic without the push type's suffix.
    public var bundleID: String
    public var priority: Priority
    public var expiration: Expiration
    public var collapseID: CollapseID?
}

/// Validation of provider requests in Herald's fixed order (see `docs/provider-api.md`):
///
/// 1. ``validateTarget(_:)``: duplicate headers, `apns-id`, method, `:path`, token syntax;
/// 2. the provider token (the gateway's ``APNsConnectionAuthorization``);
/// 3. ``validateHeaders(_:)``: push type, topic, priority, expiration, collapse id;
/// 4. topic ownership (the gateway, with the team's topics);
/// 5. ``validatePayload(_:pushType:)``: empty, size, JSON object;
/// 6. the per-token rate limit, then the token's registration (the store).
public enum APNsRequestValidation {
    /// The path prefix of the device endpoint.
    public static let devicePathPrefix = "/3/device/"

    public static func validateTarget(_ head: APNsRequestHead) -> Result<APNsRequestTarget, APNsRejection> {
        if head.hasDuplicateHeaders { return .failure(APNsRejection(.duplicateHeaders)) }
        var apnsID: NotificationID?
        if let header = head.apnsID {
            guard let parsed = NotificationID(header: header) else { return .failure(APNsRejection(.badMessageId)) }
            apnsID = parsed
        }
        guard head.method == "POST" else { return .failure(APNsRejection(.methodNotAllowed)) }
        guard let path = head.path?.utf8, path.starts(with: devicePathPrefix.utf8) else {
            return .failure(APNsRejection(.badPath))
        }
        var tokenText = path.dropFirst(devicePathPrefix.utf8.count)
        if let query = tokenText.firstIndex(of: UInt8(ascii: "?")) { tokenText = tokenText[..<query] }
        if tokenText.isEmpty { return .failure(APNsRejection(.missingDeviceToken)) }
        guard let token = DeviceToken(hexBytes: tokenText) else { return .failure(APNsRejection(.badDeviceToken)) }
        return .success(APNsRequestTarget(apnsID: apnsID, token: token))
    }

    /// The longest topic accepted (bundle ids are far shorter; the limit keeps garbage out of the store).
    public static let maximumTopicByteCount = 255

    public static func validateHeaders(_ head: APNsRequestHead) -> Result<PushHeaders, APNsRejection> {
        var pushType: PushType?
        if let header = head.pushType {
            guard let parsed = PushType(header: header) else { return .failure(APNsRejection(.invalidPushType)) }
            pushType = parsed
        }
        guard let topic = head.topic, !topic.isEmpty else { return .failure(APNsRejection(.missingTopic)) }
        guard topic.utf8.count <= maximumTopicByteCount,
              topic.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f })
        else { return .failure(APNsRejection(.badTopic)) }
        let type = pushType ?? PushType.implied(byTopic: topic)
        guard let bundleID = type.bundleID(fromTopic: topic) else { return .failure(APNsRejection(.badTopic)) }

        var priority = type == .background ? Priority.conservePower : Priority.immediate
        if let header = head.priority {
            guard let parsed = Priority(header: header) else { return .failure(APNsRejection(.badPriority)) }
            // Apple documents priority 10 for a background push as an error, and Live Activity
            // pushes as priority 5 or 10.
            if type == .background && parsed == .immediate { return .failure(APNsRejection(.badPriority)) }
            if type == .liveactivity && parsed == .low { return .failure(APNsRejection(.badPriority)) }
            priority = parsed
        }
        var expiration = Expiration.unspecified
        if let header = head.expiration {
            guard let parsed = Expiration(header: header) else { return .failure(APNsRejection(.badExpirationDate)) }
            expiration = parsed
        }
        var collapseID: CollapseID?
        if let header = head.collapseID {
            guard let parsed = CollapseID(header) else { return .failure(APNsRejection(.badCollapseId)) }
            collapseID = parsed
        }
        return .success(PushHeaders(
            pushType: type, topic: topic, bundleID: bundleID, priority: priority,
            expiration: expiration, collapseID: collapseID))
    }

    /// Checks the body: not empty, within the push type's limit (`bodySize` may exceed the bytes
    /// kept when the transport stopped buffering), and a JSON object.
    ///
    /// APNs has no reason for a body that is not strict JSON (RFC 8259, see ``JSONReader``); Herald answers `PayloadEmpty` (as APNSwift's
    /// test server does), because such a body carries no notification.
    public static func validatePayload(_ body: [UInt8], bodySize: Int, pushType: PushType) -> APNsRejection? {
        if bodySize == 0 { return APNsRejection(.payloadEmpty) }
        if bodySize > pushType.maximumPayloadSize { return APNsRejection(.payloadTooLarge) }
        guard JSONReader.isObject(body) else { return APNsRejection(.payloadEmpty) }
        return nil
    }
}
