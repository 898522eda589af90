/// A device token: opaque bytes that name one app on one device, written as hexadecimal in the
/// provider API's `:path`.
///
/// Herald issues 32-byte tokens. As syntax, any even-length hexadecimal string of 1 to 100 bytes
/// is accepted (the binary API's limit), in either case; the canonical form is lowercase.
public struct DeviceToken: Hashable, Sendable, CustomStringConvertible {
    /// The number of bytes in a token that Herald issues.
    public static let issuedByteCount = 32
    /// The largest token accepted as syntax.
    public static let maximumByteCount = 100

    /// The token's bytes.
    public let bytes: [UInt8]

    // Hashing and comparing the bytes as one block: tokens key the rate limiter and the store's
    // caches on every push, and the derived versions went through the array one byte at a time.
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    public static func == (lhs: DeviceToken, rhs: DeviceToken) -> Bool {
        lhs.bytes.count == rhs.bytes.count && lhs.bytes.withUnsafeBytes { l in
            rhs.bytes.withUnsafeBytes { r in l.elementsEqual(r) }
        }
    }

    /// Creates a token from raw bytes. Returns `nil` when the count is outside `1...100`.
    public init?(bytes: [UInt8]) {
        guard (1...Self.maximumByteCount).contains(bytes.count) else { return nil }
        self.bytes = bytes
    }

    /// Parses hexadecimal of either case. Returns `nil` for anything else.
    public init?<S: StringProtocol>(hex: S) {
        self.init(hexBytes: hex.utf8)
    }

    /// Parses hexadecimal of either case given as ASCII bytes. Returns `nil` for anything else.
    public init?<C: Collection>(hexBytes utf8: C) where C.Element == UInt8 {
        let count = utf8.count
        guard count > 0, count % 2 == 0, count / 2 <= Self.maximumByteCount else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(count / 2)
        var high: UInt8 = 0
        var isHigh = true
        for c in utf8 {
            guard let nibble = Self.nibble(c) else { return nil }
            if isHigh { high = nibble } else { bytes.append(high << 4 | nibble) }
            isHigh.toggle()
        }
        self.bytes = bytes
    }

    /// A fresh random token of ``issuedByteCount`` bytes.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> DeviceToken {
        var bytes = [UInt8](repeating: 0, count: issuedByteCount)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
        return DeviceToken(bytes: bytes)!
    }

    /// A fresh random token from the system's secure generator.
    public static func random() -> DeviceToken {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// Lowercase hexadecimal.
    public var hex: String { Hex.encode(bytes) }

    public var description: String { hex }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension DeviceToken: Codable {
    /// Encoded as its hex text, as every Herald interface writes tokens.
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let token = DeviceToken(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\"\(text)\" is not a device token in hex"))
        }
        self = token
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
