import HeraldCore

/// Why the core refused a notification because of its token's registration, in the core's own
/// terms. Each port says it in its protocol: the APNs port as `BadDeviceToken`,
/// `DeviceTokenNotForTopic`, `Unregistered` or `ExpiredToken` with their statuses, the Web Push
/// port as 404 or 410 (RFC 8030).
public enum TokenRefusal: Sendable, Hashable, CustomStringConvertible {
    /// No token like it is registered in this environment.
    case unknownToken
    /// The token's scope (an app, a Live Activity, a widget extension, a Web Push subscription)
    /// does not take this kind of push for this app.
    case notForThisScope
    /// The app was removed from its device (or the subscription deleted) at this instant.
    case unregistered(atMilliseconds: Int64)
    /// The token expired at this instant.
    case expired(atMilliseconds: Int64)

    /// Whether the token is gone for good: the sender should forget it.
    public var isGone: Bool {
        switch self {
        case .unregistered, .expired: true
        case .unknownToken, .notForThisScope: false
        }
    }

    public var description: String {
        switch self {
        case .unknownToken: "unknown token"
        case .notForThisScope: "token not for this app or push type"
        case .unregistered(let at): "unregistered at \(at)"
        case .expired(let at): "expired at \(at)"
        }
    }
}
