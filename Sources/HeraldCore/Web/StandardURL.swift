import Foundation

/// A URL as the WHATWG URL Standard parses it (https://url.spec.whatwg.org/, the "basic URL
/// parser" and the "URL serializer"): what a browser accepts in `new URL(input, base)`, and
/// nothing else. Declarative Web Push reads `navigate` with it, as the Push API says; Foundation's
/// `URLComponents` follows RFC 3986 instead and disagrees with browsers both ways (it refuses
/// `mailto:` with spaces around it and relative references, and accepts port 99999).
///
/// Checked against the Web Platform Tests' `urltestdata.json` (891 cases) and `toascii.json` (87),
/// all passing (Tests/HeraldCoreTests). Where it approximates: a non-ASCII domain is mapped by
/// NFKC and lower-casing rather than UTS #46's own table, and its Bidi and ContextJ rules are
/// approximated by script ranges and the virama (Swift exposes no bidi or joining classes);
/// the query is always UTF-8 (a push message has no other encoding).
public struct StandardURL: Sendable, Hashable, CustomStringConvertible {
    /// Lower-cased, without the colon: `https`.
    public internal(set) var scheme: String = ""
    public internal(set) var username: String = ""
    public internal(set) var password: String = ""
    public internal(set) var host: Host?
    public internal(set) var port: UInt16?
    public internal(set) var path: Path = .segments([])
    public internal(set) var query: String?
    public internal(set) var fragment: String?

    public enum Host: Sendable, Hashable {
        /// An ASCII domain (after IDNA), or an IPv4 address's absence: `example.com`.
        case domain(String)
        case ipv4(UInt32)
        case ipv6([UInt16])
        /// A non-special URL's host, kept as written (percent-encoded).
        case opaque(String)
        /// `file:///x`'s host.
        case empty

        /// As the serializer writes it: `[::1]`, `127.0.0.1`, `example.com`.
        public var serialized: String {
            switch self {
            case .domain(let name), .opaque(let name): name
            case .empty: ""
            case .ipv4(let address): (0..<4).map { String((address >> (24 - 8 * $0)) & 0xFF) }.joined(separator: ".")
            case .ipv6(let pieces): "[" + StandardURL.serializeIPv6(pieces) + "]"
            }
        }
    }

    public enum Path: Sendable, Hashable {
        /// A URL that cannot be a base (`mailto:a@b`, `javascript:…`): its path is one string.
        case opaque(String)
        case segments([String])
    }

    /// Why an input is not a URL (the first failure the parser met).
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// http, https, ws, wss, ftp and file, with their default ports (file has none).
    public static let specialSchemes: [String: UInt16?] = ["ftp": 21, "file": nil, "http": 80, "https": 443, "ws": 80, "wss": 443]

    public var isSpecial: Bool { Self.specialSchemes[scheme] != nil }

    /// Parses `input` against `base` (the basic URL parser without a state override).
    public init(parsing input: String, base: StandardURL? = nil) throws(Failure) {
        var parser = StandardURLParser(input: input, base: base)
        self = try parser.run()
    }

    init() {}

    // MARK: - The serializer and the URL API's getters

    /// The URL serializer's output (`URL.href`).
    public var href: String {
        var out = scheme + ":"
        if let host {
            out += "//"
            if !username.isEmpty || !password.isEmpty {
                out += username
                if !password.isEmpty { out += ":" + password }
                out += "@"
            }
            out += host.serialized
            if let port { out += ":" + String(port) }
        }
        if host == nil, case .segments(let segments) = path, segments.count > 1, segments[0].isEmpty { out += "/." }
        out += pathname
        if let query { out += "?" + query }
        if let fragment { out += "#" + fragment }
        return out
    }

    public var description: String { href }
    public var hostname: String { host?.serialized ?? "" }
    public var pathname: String {
        switch path {
        case .opaque(let text): text
        case .segments(let segments): segments.map { "/" + $0 }.joined()
        }
    }
    /// `?query`, or "" when there is none or it is empty (the URL API's `search`).
    public var search: String { query.map { $0.isEmpty ? "" : "?" + $0 } ?? "" }
    /// `#fragment`, or "" (the URL API's `hash`).
    public var hash: String { fragment.map { $0.isEmpty ? "" : "#" + $0 } ?? "" }

    // MARK: - Hosts

    static func serializeIPv6(_ pieces: [UInt16]) -> String {
        // The first longest run of two or more zero pieces is compressed.
        var compress: Int?
        var best = 1
        var index = 0
        while index < 8 {
            guard pieces[index] == 0 else { index += 1; continue }
            var end = index
            while end < 8 && pieces[end] == 0 { end += 1 }
            if end - index > best { (best, compress) = (end - index, index) }
            index = end
        }
        var out = ""
        var ignoreZero = false
        for pieceIndex in 0..<8 {
            if ignoreZero && pieces[pieceIndex] == 0 { continue }
            ignoreZero = false
            if compress == pieceIndex {
                out += pieceIndex == 0 ? "::" : ":"
                ignoreZero = true
                continue
            }
            out += String(pieces[pieceIndex], radix: 16)
            if pieceIndex != 7 { out += ":" }
        }
        return out
    }
}

// MARK: - Code point sets

/// The URL Standard's percent-encode sets.
enum PercentEncodeSet {
    case c0Control, fragment, query, specialQuery, path, userinfo

    func contains(_ c: Unicode.Scalar) -> Bool {
        let v = c.value
        if v < 0x20 || v > 0x7E { return true }
        switch self {
        case .c0Control: return false
        case .fragment: return [0x20, 0x22, 0x3C, 0x3E, 0x60].contains(v)
        case .query: return [0x20, 0x22, 0x23, 0x3C, 0x3E].contains(v)
        case .specialQuery: return [0x20, 0x22, 0x23, 0x3C, 0x3E, 0x27].contains(v)
        case .path: return [0x20, 0x22, 0x23, 0x3C, 0x3E, 0x3F, 0x5E, 0x60, 0x7B, 0x7D].contains(v)
        case .userinfo:
            return [0x20, 0x22, 0x23, 0x3C, 0x3E, 0x3F, 0x5E, 0x60, 0x7B, 0x7D, 0x2F, 0x3A, 0x3B, 0x3D, 0x40, 0x5B, 0x5C, 0x5D, 0x7C].contains(v)
        }
    }

    /// UTF-8 percent-encodes one code point.
    func encode(_ c: Unicode.Scalar, into out: inout String) {
        guard contains(c) else { out.unicodeScalars.append(c); return }
        for byte in String(c).utf8 { out += "%" + PercentEncodeSet.hex(byte) }
    }

    func encode(_ text: some Sequence<Unicode.Scalar>) -> String {
        var out = ""
        for c in text { encode(c, into: &out) }
        return out
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".unicodeScalars)
        return String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xF)])
    }
}

extension Unicode.Scalar {
    var isASCIIAlpha: Bool { (0x41...0x5A).contains(value) || (0x61...0x7A).contains(value) }
    var isASCIIDigit: Bool { (0x30...0x39).contains(value) }
    var isASCIIHexDigit: Bool { isASCIIDigit || (0x41...0x46).contains(value) || (0x61...0x66).contains(value) }
    var asciiLowercased: Unicode.Scalar { (0x41...0x5A).contains(value) ? Unicode.Scalar(value + 0x20)! : self }
    var hexValue: UInt32? {
        switch value {
        case 0x30...0x39: value - 0x30
        case 0x41...0x46: value - 0x41 + 10
        case 0x61...0x66: value - 0x61 + 10
        default: nil
        }
    }
    /// The URL Standard's forbidden host code points.
    var isForbiddenHost: Bool { [0x00, 0x09, 0x0A, 0x0D, 0x20, 0x23, 0x2F, 0x3A, 0x3C, 0x3E, 0x3F, 0x40, 0x5B, 0x5C, 0x5D, 0x5E, 0x7C].contains(value) }
    /// Forbidden host code points, C0 controls, `%` and DEL.
    var isForbiddenDomain: Bool { isForbiddenHost || value <= 0x1F || value == 0x25 || value == 0x7F }
}
