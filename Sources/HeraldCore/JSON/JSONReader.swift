import Foundation

/// How much JSON a reader accepts before it stops: the bounds are checked while reading, so a
/// hostile document costs at most `maximumBytes` of input and `maximumDepth` levels of nesting.
public struct JSONLimits: Sendable, Hashable {
    /// The longest document, in bytes.
    public var maximumBytes: Int
    /// The deepest nesting of arrays and objects (a scalar is depth 0, `[]` is depth 1).
    public var maximumDepth: Int

    public init(maximumBytes: Int, maximumDepth: Int) {
        self.maximumBytes = maximumBytes
        self.maximumDepth = maximumDepth
    }

    /// 1 MiB and 64 levels: REST bodies, agent-socket lines, files.
    public static let standard = JSONLimits(maximumBytes: 1 << 20, maximumDepth: 64)
    /// 64 KiB and 32 levels: notification payloads (APNs allows 5 KiB) and device frames.
    public static let payload = JSONLimits(maximumBytes: 64 << 10, maximumDepth: 32)
}

/// Why bytes are not a JSON document Herald accepts, with the byte offset where reading stopped.
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    public init(_ message: String, at offset: Int) {
        self.message = message
        self.offset = offset
    }
    public var description: String { "\(message) at byte \(offset)" }
}

/// The one way Herald reads JSON that crosses a process boundary: strict RFC 8259 (no trailing
/// commas, comments, `NaN`, leading zeros, unescaped control characters, invalid UTF-8 or unpaired
/// surrogates; no duplicate keys in an object), bounded in size and depth, numbers kept exact
/// (integers that fit `Int64` as integers, others as finite doubles; a number beyond `Double`'s
/// range is an error, never infinity).
public enum JSONReader {
    /// Reads a whole document into a ``JSONValue``.
    public static func parse(_ bytes: some Collection<UInt8>, limits: JSONLimits = .standard) throws(JSONSyntaxError) -> JSONValue {
        let array = bytes as? [UInt8] ?? Array(bytes)
        return try array.withUnsafeBufferPointer { (buffer) throws(JSONSyntaxError) -> JSONValue in
            var reader = Reader(bytes: buffer, limits: limits, building: true)
            return try reader.document()
        }
    }

    /// Reads a document and returns its top-level object, or a message saying what it is instead.
    public static func parseObject(_ bytes: some Collection<UInt8>, limits: JSONLimits = .standard) throws(JSONSyntaxError) -> [String: JSONValue] {
        guard case .object(let object) = try parse(bytes, limits: limits) else {
            throw JSONSyntaxError("the document is not a JSON object", at: 0)
        }
        return object
    }

    /// Checks a document without building it (the provider port's hot path); returns whether its
    /// top level is an object.
    @discardableResult
    public static func validate(_ bytes: UnsafeBufferPointer<UInt8>, limits: JSONLimits) throws(JSONSyntaxError) -> Bool {
        var reader = Reader(bytes: bytes, limits: limits, building: false)
        let first = reader.firstSignificantByte
        _ = try reader.document()
        return first == UInt8(ascii: "{")
    }

    /// Whether bytes are one strict JSON object within `limits`.
    public static func isObject(_ bytes: [UInt8], limits: JSONLimits = .payload) -> Bool {
        bytes.withUnsafeBufferPointer { (try? validate($0, limits: limits)) ?? false }
    }

    /// Decodes a `Decodable` type from a document that first passed the strict reader.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: some Collection<UInt8>, limits: JSONLimits = .standard) throws -> T {
        let array = bytes as? [UInt8] ?? Array(bytes)
        try array.withUnsafeBufferPointer { (buffer) throws(JSONSyntaxError) in _ = try validate(buffer, limits: limits) }
        return try JSONDecoder().decode(type, from: Data(array))
    }
}

private struct Reader {
    let bytes: UnsafeBufferPointer<UInt8>
    let limits: JSONLimits
    /// False: check only, build nothing (values come back as `.null`).
    let building: Bool
    var index = 0
    var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>, limits: JSONLimits, building: Bool) {
        self.bytes = bytes
        self.limits = limits
        self.building = building
    }

    var firstSignificantByte: UInt8? {
        bytes.first { !Self.isWhitespace($0) }
    }

    static func isWhitespace(_ b: UInt8) -> Bool {
        b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09
    }

    func fail(_ message: String) -> JSONSyntaxError { JSONSyntaxError(message, at: index) }

    mutating func document() throws(JSONSyntaxError) -> JSONValue {
        guard bytes.count <= limits.maximumBytes else {
            throw JSONSyntaxError("the document is \(bytes.count) bytes, more than the \(limits.maximumBytes) allowed", at: 0)
        }
        skipWhitespace()
        guard index < bytes.count else { throw fail("the document is empty") }
        let value = try self.value()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected bytes after the JSON value") }
        return value
    }

    mutating func skipWhitespace() {
        while index < bytes.count, Self.isWhitespace(bytes[index]) { index += 1 }
    }

    mutating func value() throws(JSONSyntaxError) -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of the document") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail("unexpected character \(Self.describe(bytes[index]))")
        }
    }

    static func describe(_ b: UInt8) -> String {
        (0x21...0x7E).contains(b) ? "'\(Character(Unicode.Scalar(b)))'" : String(format: "0x%02x", b)
    }

    mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw fail("unexpected end of the document") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw fail("unexpected character \(Self.describe(bytes[index]))")
        }
        index += count
    }

    mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        guard depth <= limits.maximumDepth else { throw fail("nesting deeper than \(limits.maximumDepth) levels") }
    }

    mutating func object() throws(JSONSyntaxError) -> JSONValue {
        try enter()
        index += 1
        var members: [String: JSONValue] = [:]
        var keys = Set<String>()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return building ? .object(members) : .null
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of the document inside an object") }
            guard bytes[index] == UInt8(ascii: "\"") else {
                throw fail(bytes[index] == UInt8(ascii: "}") ? "trailing comma in an object" : "an object key must be a string")
            }
            let keyStart = index
            let key = try string(alwaysBuild: true)
            guard keys.insert(key).inserted else {
                throw JSONSyntaxError("duplicate key \"\(key.prefix(64))\" in an object", at: keyStart)
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':' after an object key") }
            index += 1
            skipWhitespace()
            let member = try value()
            if building { members[key] = member }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of the document inside an object") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return building ? .object(members) : .null
            default: throw fail("expected ',' or '}' in an object")
            }
        }
    }

    mutating func array() throws(JSONSyntaxError) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return building ? .array(elements) : .null
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of the document inside an array") }
            if bytes[index] == UInt8(ascii: "]") { throw fail("trailing comma in an array") }
            let element = try value()
            if building { elements.append(element) }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of the document inside an array") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return building ? .array(elements) : .null
            default: throw fail("expected ',' or ']' in an array")
            }
        }
    }

    mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail("a number needs a digit") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, Self.isDigit(bytes[index]) { throw fail("a number may not have a leading zero") }
        } else {
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail("a fraction needs a digit after '.'") }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw fail("an exponent needs a digit") }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let integer = Int64(text) { return building ? .int(integer) : .null }
        guard let double = Double(text), double.isFinite else {
            throw JSONSyntaxError("the number \(text.prefix(40)) is beyond the range of a double", at: start)
        }
        return building ? .double(double) : .null
    }

    static func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    mutating func string(alwaysBuild: Bool = false) throws(JSONSyntaxError) -> String {
        index += 1
        let build = building || alwaysBuild
        var scalars: [UInt8] = []
        var runStart = index
        func flush(_ reader: Reader, _ end: Int) {
            if build, end > runStart { scalars.append(contentsOf: UnsafeBufferPointer(rebasing: reader.bytes[runStart..<end])) }
        }
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                flush(self, index)
                index += 1
                return build ? String(decoding: scalars, as: UTF8.self) : ""
            case UInt8(ascii: "\\"):
                flush(self, index)
                index += 1
                guard index < bytes.count else { throw fail("unterminated escape") }
                let escaped: UInt8
                switch bytes[index] {
                case UInt8(ascii: "\""): escaped = 0x22
                case UInt8(ascii: "\\"): escaped = 0x5C
                case UInt8(ascii: "/"): escaped = 0x2F
                case UInt8(ascii: "b"): escaped = 0x08
                case UInt8(ascii: "f"): escaped = 0x0C
                case UInt8(ascii: "n"): escaped = 0x0A
                case UInt8(ascii: "r"): escaped = 0x0D
                case UInt8(ascii: "t"): escaped = 0x09
                case UInt8(ascii: "u"):
                    let scalar = try unicodeEscape()
                    if build { scalars.append(contentsOf: String(Character(scalar)).utf8) }
                    runStart = index
                    continue
                default: throw fail("invalid escape \\\(Self.describe(bytes[index]))")
                }
                if build { scalars.append(escaped) }
                index += 1
                runStart = index
            case 0..<0x20:
                throw fail("unescaped control character \(Self.describe(b)) in a string")
            case 0x20..<0x80:
                index += 1
            default:
                try utf8Sequence()
            }
        }
    }

    /// After `\u`: four hex digits, a surrogate pair when the first is a high surrogate.
    mutating func unicodeEscape() throws(JSONSyntaxError) -> Unicode.Scalar {
        index += 1
        let first = try hex4()
        if (0xD800...0xDBFF).contains(first) {
            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw fail("unpaired surrogate \\u\(String(first, radix: 16))")
            }
            index += 2
            let second = try hex4()
            guard (0xDC00...0xDFFF).contains(second) else { throw fail("unpaired surrogate \\u\(String(first, radix: 16))") }
            let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            return Unicode.Scalar(value)!
        }
        guard let scalar = Unicode.Scalar(first) else { throw fail("unpaired surrogate \\u\(String(first, radix: 16))") }
        return scalar
    }

    mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw fail("a \\u escape needs four hex digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let digit: UInt32
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(b - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(b - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(b - UInt8(ascii: "A") + 10)
            default: throw fail("a \\u escape needs four hex digits")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// One well-formed UTF-8 sequence of two to four bytes (no overlongs, no surrogates, ≤ U+10FFFF).
    mutating func utf8Sequence() throws(JSONSyntaxError) {
        let lead = bytes[index]
        let count: Int
        var lower: UInt8 = 0x80, upper: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: count = 2
        case 0xE0: count = 3; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: count = 3
        case 0xED: count = 3; upper = 0x9F
        case 0xF0: count = 4; lower = 0x90
        case 0xF1...0xF3: count = 4
        case 0xF4: count = 4; upper = 0x8F
        default: throw fail("invalid UTF-8")
        }
        guard bytes.count - index >= count else { throw fail("invalid UTF-8") }
        let second = bytes[index + 1]
        guard second >= lower, second <= upper else { throw fail("invalid UTF-8") }
        for offset in 2..<max(2, count) where bytes[index + offset] & 0xC0 != 0x80 {
            throw fail("invalid UTF-8")
        }
        index += count
    }
}
