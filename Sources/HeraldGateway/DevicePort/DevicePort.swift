import HeraldCore
import HeraldStore
import Logging
import NIOCore

/// What every device session shares: the core's parts (``SessionCore``) and the device port's settings.
struct DevicePort: SessionPort {
    var core: SessionCore
    /// `nil` when background pushes are not throttled.
    var backgroundThrottle: BackgroundThrottle?
    /// How often quiet connections are pinged, and when a silent one is dropped.
    var keepalive: DeviceKeepalive
    /// How long priority 5 and 1 notifications may wait to be sent together.
    var lowPriorityDelay: TimeAmount
    var connectionsPerAddress: ConnectionsPerAddress
    /// `nil`: enrollment is open.
    var enrollmentSecret: String?
    /// Where Web Push subscriptions of devices get their endpoints; `nil` without a Web Push port.
    var webPush: WebPushEndpoints?
}
