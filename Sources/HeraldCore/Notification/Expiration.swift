/// How long an undelivered notification may wait for its device. The APNs port reads it from
/// the `apns-expiration` header (UNIX seconds); another protocol maps its own time to live onto it.
public enum Expiration: Hashable, Sendable {
    /// No header: the store-and-forward policy's own limit applies.
    case unspecified
    /// `0`: one delivery attempt, never stored.
    case immediately
    /// UNIX seconds (UTC) after which the notification is discarded.
    case at(secondsSince1970: Int64)

    /// Parses the header: decimal UNIX seconds, `0` meaning ``immediately``. `nil` when unparsable.
    public init?(header: String) {
        guard !header.isEmpty, header.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let value = Int64(header) else {
            return nil
        }
        self = value == 0 ? .immediately : .at(secondsSince1970: value)
    }

    /// Whether a notification with this expiration may still be stored or delivered at `nowMilliseconds`.
    public func isLive(atMilliseconds nowMilliseconds: Int64) -> Bool {
        switch self {
        case .unspecified: return true
        case .immediately: return false
        case .at(let seconds): return seconds * 1000 > nowMilliseconds
        }
    }

    /// The header's value as stored: `nil` for unspecified, `0` for immediately.
    public var storedSeconds: Int64? {
        switch self {
        case .unspecified: return nil
        case .immediately: return 0
        case .at(let seconds): return seconds
        }
    }

    public init(storedSeconds: Int64?) {
        switch storedSeconds {
        case nil: self = .unspecified
        case 0?: self = .immediately
        case let s?: self = .at(secondsSince1970: s)
        }
    }
}

/// A replacement key: a newer notification of the same app with the same key replaces one still
/// waiting for its device. At most 64 bytes of UTF-8 (the APNs port reads it from the
/// `apns-collapse-id` header).
public struct CollapseID: Hashable, Sendable, CustomStringConvertible {
    public static let maximumByteCount = 64
    public let value: String
    /// `nil` when the value is empty or longer than 64 bytes.
    public init?(_ value: String) {
        guard !value.isEmpty, value.utf8.count <= Self.maximumByteCount else { return nil }
        self.value = value
    }
    public var description: String { value }
}
