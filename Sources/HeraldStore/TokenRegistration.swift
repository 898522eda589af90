import HeraldCore

/// A device token as the gateway registered it: what it stands for (an app, a Live Activity, a
/// widget extension, a channel subscription or a Web Push subscription, on which device), in
/// which environment, and whether it is still active.
public struct TokenRegistration: Sendable, Hashable {
    public var token: DeviceToken
    /// What the token stands for; its app is `scope.bundleID`.
    public var scope: TokenScope
    public var environment: PushEnvironment
    /// The device that holds the token; `nil` for a token registered by hand (`herald tokens create`).
    public var deviceID: String?
    public var createdAtMilliseconds: Int64
    /// When the app was removed; the provider API then answers 410 `Unregistered` with this time.
    public var unregisteredAtMilliseconds: Int64?
    /// When the token expired; the provider API then answers 410 `ExpiredToken` with this time.
    public var expiredAtMilliseconds: Int64?

    public init(
        token: DeviceToken, scope: TokenScope, environment: PushEnvironment, deviceID: String? = nil,
        createdAtMilliseconds: Int64, unregisteredAtMilliseconds: Int64? = nil, expiredAtMilliseconds: Int64? = nil
    ) {
        self.token = token
        self.scope = scope
        self.environment = environment
        self.deviceID = deviceID
        self.createdAtMilliseconds = createdAtMilliseconds
        self.unregisteredAtMilliseconds = unregisteredAtMilliseconds
        self.expiredAtMilliseconds = expiredAtMilliseconds
    }
}
