import HeraldCore

/// A device enrolled on the device port: its id is derived from its P-256 public key.
public struct DeviceRecord: Sendable, Hashable {
    public var id: String
    /// The raw P-256 public key (64 bytes, x ‖ y).
    public var publicKey: [UInt8]
    public var enrolledAtMilliseconds: Int64
    /// When the device last opened an authenticated connection.
    public var lastSeenAtMilliseconds: Int64

    public init(id: String, publicKey: [UInt8], enrolledAtMilliseconds: Int64, lastSeenAtMilliseconds: Int64) {
        self.id = id
        self.publicKey = publicKey
        self.enrolledAtMilliseconds = enrolledAtMilliseconds
        self.lastSeenAtMilliseconds = lastSeenAtMilliseconds
    }
}
