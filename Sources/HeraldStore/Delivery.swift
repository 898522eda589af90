import HeraldCore

/// A notification waiting for its device: the store's sequence number (its order, and the
/// handle by which deliveries and acks are recorded) and the notification.
public struct Delivery: Sendable, Hashable {
    public var seq: Int64
    public var deviceID: String
    public var notification: StoredNotification
    /// Where the device was connected when the push was stored (``SubmissionOutcome/stored(seq:deviceID:presence:)``).
    public var presence: DevicePresence

    public init(seq: Int64, deviceID: String, notification: StoredNotification, presence: DevicePresence = .unknown) {
        self.seq = seq
        self.deviceID = deviceID
        self.notification = notification
        self.presence = presence
    }
}
