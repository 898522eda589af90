import HeraldCore

/// Where a device was connected when a push for it was stored, as the store saw it.
public enum DevicePresence: Sendable, Hashable {
    /// The store does not track presence (SQLite, in memory: one node).
    case unknown
    /// Connected to no node.
    case nowhere
    /// Connected to this node.
    case node(String)
}

/// What the store decided about one accepted request.
public enum SubmissionOutcome: Sendable, Hashable {
    /// Stored durably under `seq` until its device acks it (or it expires or is replaced).
    /// `deviceID` is the device holding the token (`nil` for a token registered by hand).
    /// With `apns-expiration: 0` the record exists for the receipt only: the notification is
    /// handed to the device if it is connected now, and never sent later. `presence`: where the
    /// device was connected when the batch was stored, read in the same statement by a store that
    /// knows (PostgreSQL), so that routing across nodes needs no query of its own.
    case stored(seq: Int64, deviceID: String?, presence: DevicePresence = .unknown)
    /// Accepted but already expired (`apns-expiration` in the past): recorded as expired, never sent.
    case discarded
    /// Refused because of the token's registration.
    case rejected(TokenRefusal)

    public var isRejected: Bool {
        if case .rejected = self { return true }
        return false
    }

    public var isStored: Bool {
        if case .stored = self { return true }
        return false
    }
}
