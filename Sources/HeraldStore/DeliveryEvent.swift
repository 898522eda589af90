import HeraldCore

/// Something that happened to a stored notification after it was accepted, recorded in batches.
public enum DeliveryEvent: Sendable, Hashable {
    /// Sent on the device's connection at `sentAt` and acknowledged by the device at `ackedAt`.
    case acked(seq: Int64, sentAtMilliseconds: Int64, ackedAtMilliseconds: Int64)
    /// Sent on the device's connection, not (yet) acknowledged; it stays held and is sent again.
    case sent(seq: Int64, atMilliseconds: Int64)
    /// Replaced before delivery by a newer one (background throttling keeps only the newest).
    case replaced(seq: Int64, atMilliseconds: Int64)
    /// Given up without delivery (`apns-expiration: 0` and the device was not connected).
    case dropped(seq: Int64, atMilliseconds: Int64)
    /// A broadcast (its own sequence number, ``StoredBroadcast/seq``) acknowledged by the device
    /// of `subscription` at `ackedAt`: the subscription's acked sequence moves up to it.
    case broadcastAcked(seq: Int64, subscription: DeviceToken, ackedAtMilliseconds: Int64)
}
