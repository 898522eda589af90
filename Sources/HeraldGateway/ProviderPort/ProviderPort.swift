import HeraldCore
import HeraldStore
import Logging
import NIOCore

/// What every stream of the provider port shares: configuration, the caches in front of the
/// store, the rate limiter, the intake and the metrics.
struct ProviderPort: Sendable {
    var environment: PushEnvironment
    var clock: any WallClock
    var directory: ProviderKeyDirectory
    var limiter: TokenRateLimiter
    var intake: NotificationIntake
    var store: any GatewayStore
    /// A device not connected for this long has its tokens in the feedback list.
    var inactivityPeriodMilliseconds: Int64
    var metrics: GatewayMetrics
    var logger: Logger
    /// Refusals an operator asked for (admin port).
    var faults: GatewayFaults
    /// Deadlines and bounds on provider connections.
    var limits: GatewayLimits
    /// Open provider connections per address, shared by the TLS and h2c listeners.
    var connectionsPerAddress: ConnectionsPerAddress
    /// Refusals, for watchers of the live feed.
    var feed: DeliveryFeed
    /// What the listener serves: the provider API, or the channel management API.
    var role: Role = .provider
    /// Sends broadcasts; `nil` when the gateway has no channel port (broadcasts answer
    /// `FeatureNotEnabled`).
    var broadcaster: Broadcaster?

    enum Role: Sendable { case provider, channels }

    /// Whether answers carry `apns-unique-id` (the sandbox does, production does not).
    var sendsUniqueID: Bool { environment == .development }
}
