import HeraldCore
import HeraldStore
import Logging
import NIOCore

/// What every device session shares.
struct DevicePort: Sendable {
    var environment: PushEnvironment
    var clock: any WallClock
    var store: any GatewayStore
    var registry: DeviceRegistry
    var recorder: DeliveryRecorder
    /// `nil` when background pushes are not throttled.
    var backgroundThrottle: BackgroundThrottle?
    /// How often quiet connections are pinged, and when a silent one is dropped.
    var keepalive: DeviceKeepalive
    /// How long priority 5 and 1 notifications may wait to be sent together.
    var lowPriorityDelay: TimeAmount
    var metrics: GatewayMetrics
    var logger: Logger
    /// Deadlines and bounds on device connections.
    var limits: GatewayLimits
    var connectionsPerAddress: ConnectionsPerAddress
    /// `nil`: enrollment is open.
    var enrollmentSecret: String?
    /// Sends and acks, for watchers of the live feed.
    var feed: DeliveryFeed
    /// This node's part in a cluster; `nil` for a single gateway.
    var cluster: ClusterNode?
    /// Where Web Push subscriptions of devices get their endpoints; `nil` without a Web Push port.
    var webPush: WebPushEndpoints?
}
