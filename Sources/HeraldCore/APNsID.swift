import Foundation

/// The `apns-id` of a notification: a UUID. Compared case-insensitively (Apple writes lowercase,
/// generated ids are seen uppercase); written lowercase.
public struct APNsID: Hashable, Sendable, CustomStringConvertible {
    public let uuid: UUID

    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Parses the canonical 8-4-4-4-12 form in either case. `nil` for anything else.
    public init?(header: String) {
        // UUID(uuidString:) accepts exactly the 36-character hyphenated form in either case.
        guard header.utf8.count == 36, let uuid = UUID(uuidString: header) else { return nil }
        self.uuid = uuid
    }

    /// A fresh random (version 4) id. Built from the system's secure generator directly:
    /// Foundation's `UUID()` costs a file open per call on Linux, which shows on the hot path.
    public static func random() -> APNsID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// A fresh random (version 4) id from `generator`.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> APNsID {
        let high = generator.next(), low = generator.next()
        var b = (
            UInt8(truncatingIfNeeded: high >> 56), UInt8(truncatingIfNeeded: high >> 48),
            UInt8(truncatingIfNeeded: high >> 40), UInt8(truncatingIfNeeded: high >> 32),
            UInt8(truncatingIfNeeded: high >> 24), UInt8(truncatingIfNeeded: high >> 16),
            UInt8(truncatingIfNeeded: high >> 8), UInt8(truncatingIfNeeded: high),
            UInt8(truncatingIfNeeded: low >> 56), UInt8(truncatingIfNeeded: low >> 48),
            UInt8(truncatingIfNeeded: low >> 40), UInt8(truncatingIfNeeded: low >> 32),
            UInt8(truncatingIfNeeded: low >> 24), UInt8(truncatingIfNeeded: low >> 16),
            UInt8(truncatingIfNeeded: low >> 8), UInt8(truncatingIfNeeded: low))
        b.6 = (b.6 & 0x0f) | 0x40  // version 4
        b.8 = (b.8 & 0x3f) | 0x80  // RFC 4122 variant
        return APNsID(UUID(uuid: b))
    }

    /// Lowercase canonical text.
    public var description: String {
        let digits: StaticString = "0123456789abcdef"
        return withUnsafeBytes(of: uuid.uuid) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                var i = 0
                for (index, byte) in raw.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        out[i] = UInt8(ascii: "-")
                        i += 1
                    }
                    out[i] = digits.utf8Start[Int(byte >> 4)]
                    out[i + 1] = digits.utf8Start[Int(byte & 0x0f)]
                    i += 2
                }
                return 36
            }
        }
    }
}
