/// base64url without padding, as JWTs and Web Push use it (RFC 4648 §5). Table-driven, without
/// Foundation: it is on the Web Push port's hot path (every message's body is stored as it).
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's value in base64 (both alphabets: `-`/`+` are 62, `_`/`/` 63), 0xFF for any other.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        var out = [UInt8]()
        out.reserveCapacity((input.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= input.count {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        switch input.count - i {
        case 1:
            let n = UInt32(input[i]) << 16
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
        case 2:
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url; tolerates padding and the standard alphabet's `+` and `/`. `nil` on any
    /// other character, or a length no encoding has.
    public static func decode(_ text: Substring) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        while utf8.last == UInt8(ascii: "=") { utf8.removeLast() }
        if utf8.count % 4 == 1 { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in utf8 {
            let value = values[Int(c)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        return out
    }
}

/// Lowercase hexadecimal, the one encoder (device tokens, digests).
public enum Hex {
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
