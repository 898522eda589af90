/// A reason string of the provider API with its HTTP status (reference §2).
///
/// The known reasons form a closed set of static members. A reason a peer sends that Herald does
/// not know decodes through ``init(rawValue:)`` with ``isKnown`` false and status 0, so a client
/// never fails on a new reason.
public struct APNsReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    /// The HTTP status that carries this reason (0 when unknown).
    public let status: Int

    private init(_ rawValue: String, _ status: Int) {
        self.rawValue = rawValue
        self.status = status
    }

    /// Looks the string up among the known reasons; anything else is kept as an unknown reason.
    public init(rawValue: String) {
        self = Self.byRawValue[rawValue] ?? APNsReason(rawValue, 0)
    }

    public var isKnown: Bool { Self.byRawValue[rawValue] != nil }

    // 400
    public static let badCollapseId = APNsReason("BadCollapseId", 400)
    public static let badDeviceToken = APNsReason("BadDeviceToken", 400)
    public static let badExpirationDate = APNsReason("BadExpirationDate", 400)
    public static let badMessageId = APNsReason("BadMessageId", 400)
    public static let badPriority = APNsReason("BadPriority", 400)
    public static let badTopic = APNsReason("BadTopic", 400)
    public static let deviceTokenNotForTopic = APNsReason("DeviceTokenNotForTopic", 400)
    public static let duplicateHeaders = APNsReason("DuplicateHeaders", 400)
    public static let idleTimeout = APNsReason("IdleTimeout", 400)
    public static let invalidPushType = APNsReason("InvalidPushType", 400)
    public static let missingDeviceToken = APNsReason("MissingDeviceToken", 400)
    public static let missingTopic = APNsReason("MissingTopic", 400)
    public static let payloadEmpty = APNsReason("PayloadEmpty", 400)
    public static let topicDisallowed = APNsReason("TopicDisallowed", 400)
    // 403
    public static let badCertificate = APNsReason("BadCertificate", 403)
    public static let badCertificateEnvironment = APNsReason("BadCertificateEnvironment", 403)
    public static let expiredProviderToken = APNsReason("ExpiredProviderToken", 403)
    public static let forbidden = APNsReason("Forbidden", 403)
    public static let invalidProviderToken = APNsReason("InvalidProviderToken", 403)
    public static let missingProviderToken = APNsReason("MissingProviderToken", 403)
    public static let unrelatedKeyIdInToken = APNsReason("UnrelatedKeyIdInToken", 403)
    /// Apple's documented spelling; Herald sends this one.
    public static let badEnvironmentKeyIdInToken = APNsReason("BadEnvironmentKeyIdInToken", 403)
    /// The spelling real APNs responses were reported with; decoded, never sent by Herald.
    public static let badEnvironmentKeyInToken = APNsReason("BadEnvironmentKeyInToken", 403)
    // 404, 405
    public static let badPath = APNsReason("BadPath", 404)
    public static let methodNotAllowed = APNsReason("MethodNotAllowed", 405)
    // 410
    public static let expiredToken = APNsReason("ExpiredToken", 410)
    public static let unregistered = APNsReason("Unregistered", 410)
    // 413
    public static let payloadTooLarge = APNsReason("PayloadTooLarge", 413)
    // 429
    public static let tooManyProviderTokenUpdates = APNsReason("TooManyProviderTokenUpdates", 429)
    public static let tooManyRequests = APNsReason("TooManyRequests", 429)
    // 500, 503
    public static let internalServerError = APNsReason("InternalServerError", 500)
    public static let serviceUnavailable = APNsReason("ServiceUnavailable", 503)
    public static let shutdown = APNsReason("Shutdown", 503)

    // Broadcast and channel management only (reference §2). Apple names them without statuses;
    // Herald's choices are in docs/broadcasts.md.
    public static let featureNotEnabled = APNsReason("FeatureNotEnabled", 400)
    public static let missingChannelId = APNsReason("MissingChannelId", 400)
    public static let badChannelId = APNsReason("BadChannelId", 400)
    public static let channelNotRegistered = APNsReason("ChannelNotRegistered", 400)
    public static let badRequestParams = APNsReason("BadRequestParams", 400)
    public static let badRequestPayload = APNsReason("BadRequestPayload", 400)
    public static let missingPushType = APNsReason("MissingPushType", 400)
    public static let cannotCreateChannelConfig = APNsReason("CannotCreateChannelConfig", 400)
    public static let topicMismatch = APNsReason("TopicMismatch", 400)

    /// Herald's own (not APNs): no receipt with this apns-id exists for the caller's team
    /// (`GET /3/notifications/<apns-id>`). Not in ``allKnown``, which is APNs's list.
    public static let notFound = APNsReason("NotFound", 404)

    /// Every reason of reference §2.
    public static let allKnown: [APNsReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
        .missingTopic, .payloadEmpty, .topicDisallowed,
        .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden,
        .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken,
        .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken,
        .badPath, .methodNotAllowed, .expiredToken, .unregistered, .payloadTooLarge,
        .tooManyProviderTokenUpdates, .tooManyRequests,
        .internalServerError, .serviceUnavailable, .shutdown,
        .featureNotEnabled, .missingChannelId, .badChannelId, .channelNotRegistered, .badRequestParams,
        .badRequestPayload, .missingPushType, .cannotCreateChannelConfig, .topicMismatch,
    ]

    private static let byRawValue: [String: APNsReason] = Dictionary(
        uniqueKeysWithValues: (allKnown + [.notFound]).map { ($0.rawValue, $0) })

    /// Whether the reason's status is 410 and so carries a `timestamp`.
    public var carriesTimestamp: Bool { status == 410 }

    public var description: String { rawValue }
}

extension APNsReason {
    /// What a provider should check when the server refuses its provider token, in the words of
    /// the flags Herald's commands take (`--key`, `--key-id`, `--team`); `nil` for other reasons.
    /// `herald push send` prints it, and `herald provider` puts it in a send report's delivery.
    public var providerTokenAdvice: String? {
        switch self {
        case .invalidProviderToken:
            return "the server does not accept this provider token: check the key id (--key-id), the team (--team) and the key file "
                + "(--key) — one of them is not what the server holds, or the key was revoked (on a Herald gateway, "
                + "herald keys list --data-dir DIR shows each key with its team and state)"
        case .expiredProviderToken:
            return "the provider token is more than an hour old: is this machine's clock right?"
        case .missingProviderToken:
            return "the request carried no provider token (authorization: bearer <JWT>)"
        case .unrelatedKeyIdInToken:
            return "this connection already used another key of the same team; use one key per connection"
        case .badEnvironmentKeyIdInToken, .badEnvironmentKeyInToken:
            return "the key is restricted to the other environment (development or production) than this server's"
        default:
            return nil
        }
    }
}

/// A rejection as the provider API answers it: a reason and, for 410, the time (milliseconds
/// since 1970) at which the token was found invalid.
public struct APNsRejection: Error, Hashable, Sendable, CustomStringConvertible {
    public var reason: APNsReason
    public var timestampMilliseconds: Int64?
    /// Why, for the gateway's operator (its debug log and live feed): which of the key id, team or
    /// key is wrong behind an `InvalidProviderToken`, say. Never sent: APNs answers the reason
    /// alone. Not part of equality.
    public var detail: String?

    public init(_ reason: APNsReason, timestampMilliseconds: Int64? = nil, detail: String? = nil) {
        self.reason = reason
        self.timestampMilliseconds = timestampMilliseconds
        self.detail = detail
    }

    public static func == (a: APNsRejection, b: APNsRejection) -> Bool {
        a.reason == b.reason && a.timestampMilliseconds == b.timestampMilliseconds
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(reason)
        hasher.combine(timestampMilliseconds)
    }

    public var status: Int { reason.status }

    /// The JSON body: `{"reason":"…"}` plus `"timestamp"` when present.
    public var jsonBody: String {
        if let ts = timestampMilliseconds {
            return #"{"reason":"\#(reason.rawValue)","timestamp":\#(ts)}"#
        }
        return #"{"reason":"\#(reason.rawValue)"}"#
    }

    public var description: String {
        if let ts = timestampMilliseconds { return "\(status) \(reason.rawValue) (timestamp \(ts))" }
        return "\(status) \(reason.rawValue)"
    }
}
