import Crypto
import Foundation

/// A notification's id: a UUID, unique per accepted request. The APNs port reads and answers it
/// as the `apns-id` header; receipts, the store, the device protocol and acks use it whatever
/// protocol the notification came in by. Compared case-insensitively (Apple writes lowercase,
/// generated ids are seen uppercase); written lowercase.
public struct NotificationID: Hashable, Sendable, CustomStringConvertible {
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
    public static func random() -> NotificationID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// A fresh random (version 4) id from `generator`.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> NotificationID {
        let high = (generator.next() & ~0xf000) | 0x4000  // version 4
        let low = (generator.next() & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000  // RFC 4122 variant
        return NotificationID(high: high, low: low)
    }

    /// A fresh time-ordered (version 7, RFC 9562) id: the first 48 bits are `milliseconds` since
    /// 1970, the other 74 random. The gateway gives these to pushes whose provider sent no
    /// `apns-id`: ids made later sort later, so the store's apns-id index grows at its end instead
    /// of dirtying a random page per push (measured in docs/benchmarks.md). APNs promises only a
    /// UUID; a provider sees no difference.
    public static func timeOrdered<G: RandomNumberGenerator>(atMilliseconds milliseconds: Int64, using generator: inout G) -> NotificationID {
        let time = UInt64(clamping: max(0, milliseconds)) & 0xffff_ffff_ffff
        let high = time << 16 | (generator.next() & 0x0fff) | 0x7000  // version 7
        let low = (generator.next() & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000  // RFC 9562 variant
        return NotificationID(high: high, low: low)
    }

    /// The id whose 16 bytes are `high` then `low`, big-endian.
    private init(high: UInt64, low: UInt64) {
        let b = (
            UInt8(truncatingIfNeeded: high >> 56), UInt8(truncatingIfNeeded: high >> 48),
            UInt8(truncatingIfNeeded: high >> 40), UInt8(truncatingIfNeeded: high >> 32),
            UInt8(truncatingIfNeeded: high >> 24), UInt8(truncatingIfNeeded: high >> 16),
            UInt8(truncatingIfNeeded: high >> 8), UInt8(truncatingIfNeeded: high),
            UInt8(truncatingIfNeeded: low >> 56), UInt8(truncatingIfNeeded: low >> 48),
            UInt8(truncatingIfNeeded: low >> 40), UInt8(truncatingIfNeeded: low >> 32),
            UInt8(truncatingIfNeeded: low >> 24), UInt8(truncatingIfNeeded: low >> 16),
            UInt8(truncatingIfNeeded: low >> 8), UInt8(truncatingIfNeeded: low))
        self.init(UUID(uuid: b))
    }

    /// A fast, non-cryptographic generator (xoshiro256**) for ids that must be unique, not secret:
    /// seeded from the system's secure generator, it spares a system call per id on the hot path.
    /// Not thread-safe: keep one per thread or event loop.
    public struct FastGenerator: RandomNumberGenerator, Sendable {
        private var s0, s1, s2, s3: UInt64

        public init() {
            var system = SystemRandomNumberGenerator()
            repeat {
                (s0, s1, s2, s3) = (system.next(), system.next(), system.next(), system.next())
            } while s0 | s1 | s2 | s3 == 0
        }

        public mutating func next() -> UInt64 {
            let result = ((s1 &* 5) << 7 | (s1 &* 5) >> 57) &* 9
            let t = s1 << 17
            s2 ^= s0
            s3 ^= s1
            s1 ^= s2
            s0 ^= s3
            s2 ^= t
            s3 = s3 << 45 | s3 >> 19
            return result
        }
    }

    /// A cryptographically secure generator for ids that must be unguessable (a Web Push
    /// message's URL is the capability to read its receipt): BoringSSL's generator read 512 bytes
    /// at a time, instead of a system call per 8 bytes. Not thread-safe: keep one per thread, or
    /// behind a lock.
    public struct BufferedSecureGenerator: RandomNumberGenerator, Sendable {
        private var buffer = [UInt64](repeating: 0, count: 64)
        private var index = 64

        public init() {}

        public mutating func next() -> UInt64 {
            if index == buffer.count {
                refill()
                index = 0
            }
            defer { index += 1 }
            return buffer[index]
        }

        private mutating func refill() {
            // BoringSSL's generator (RAND_bytes, seeded by the kernel), through swift-crypto.
            let bytes = SymmetricKey(size: SymmetricKeySize(bitCount: buffer.count * 64))
            bytes.withUnsafeBytes { source in
                buffer.withUnsafeMutableBytes { target in target.copyMemory(from: source) }
            }
        }
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
