import Foundation

/// Any JSON value, kept exactly enough to round-trip custom payload keys: integers stay integers,
/// other numbers stay doubles.
public enum JSONValue: Hashable, Sendable, Codable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null; return }
        if let b = try? c.decode(Bool.self) { self = .bool(b); return }
        if let i = try? c.decode(Int64.self) { self = .int(i); return }
        if let d = try? c.decode(Double.self) { self = .double(d); return }
        if let s = try? c.decode(String.self) { self = .string(s); return }
        if let a = try? c.decode([JSONValue].self) { self = .array(a); return }
        if let o = try? c.decode([String: JSONValue].self) { self = .object(o); return }
        throw DecodingError.dataCorruptedError(in: c, debugDescription: "not a JSON value")
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    /// The members of an object (`nil` for anything else).
    public var objectValue: [String: JSONValue]? { if case .object(let o) = self { return o } else { return nil } }
    /// The elements of an array (`nil` for anything else).
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    /// A member of an object (`nil` for anything else).
    public subscript(key: String) -> JSONValue? { if case .object(let o) = self { return o[key] } else { return nil } }
    /// The value as an integer of type `T` when it is exactly one (`3` and `3.0`, not `3.5`, not
    /// `1e300` for `Int`): the checked conversion every externally read integer goes through.
    public func integer<T: FixedWidthInteger>(_ type: T.Type = Int.self) -> T? {
        switch self {
        case .int(let i): return T(exactly: i)
        case .double(let d): return d.isFinite ? T(exactly: d) : nil
        default: return nil
        }
    }

    /// The value as an `Int` within `range`, or `nil`.
    public func integer(in range: ClosedRange<Int>) -> Int? {
        guard let i = integer(Int.self), range.contains(i) else { return nil }
        return i
    }

    /// The value as a finite double (integers converted), or `nil`.
    public var finiteDouble: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d.isFinite ? d : nil
        default: return nil
        }
    }

    /// The value when it is a string of at most `maximumBytes` UTF-8 bytes.
    public func string(maximumBytes: Int) -> String? {
        guard case .string(let s) = self, s.utf8.count <= maximumBytes else { return nil }
        return s
    }
}

/// A JSON object read from outside, with accessors that name the field in their errors: a field of
/// the wrong type or range is refused with a message such as `"badge" must be an integer from 0 to
/// 99999`, never converted with a trap. Absent and `null` fields read as `nil`.
public struct JSONFields: Sendable {
    public var object: [String: JSONValue]
    /// Prefix for field names in messages (`"alert."` for a nested object).
    public var path: String

    public init(_ object: [String: JSONValue], path: String = "") {
        self.object = object
        self.path = path
    }

    /// The longest string a field may hold unless a caller says otherwise.
    public static let defaultStringBytes = 64 << 10

    func present(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    func error(_ key: String, _ what: String) -> JSONFieldError { JSONFieldError(field: path + key, message: what) }

    public func integer(_ key: String, in range: ClosedRange<Int>) throws(JSONFieldError) -> Int? {
        guard let value = present(key) else { return nil }
        guard let i = value.integer(in: range) else {
            throw error(key, "must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return i
    }

    public func int64(_ key: String, in range: ClosedRange<Int64> = Int64.min...Int64.max) throws(JSONFieldError) -> Int64? {
        guard let value = present(key) else { return nil }
        guard let i = value.integer(Int64.self), range.contains(i) else {
            throw error(key, "must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return i
    }

    public func double(_ key: String, in range: ClosedRange<Double>) throws(JSONFieldError) -> Double? {
        guard let value = present(key) else { return nil }
        guard let d = value.finiteDouble, range.contains(d) else {
            throw error(key, "must be a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return d
    }

    public func bool(_ key: String) throws(JSONFieldError) -> Bool? {
        guard let value = present(key) else { return nil }
        guard case .bool(let b) = value else { throw error(key, "must be true or false") }
        return b
    }

    public func string(_ key: String, maximumBytes: Int = defaultStringBytes) throws(JSONFieldError) -> String? {
        guard let value = present(key) else { return nil }
        guard case .string(let s) = value else { throw error(key, "must be a string") }
        guard s.utf8.count <= maximumBytes else { throw error(key, "must be at most \(maximumBytes) bytes") }
        return s
    }

    public func requiredString(_ key: String, maximumBytes: Int = defaultStringBytes) throws(JSONFieldError) -> String {
        guard let s = try string(key, maximumBytes: maximumBytes) else { throw error(key, "is required (a string)") }
        return s
    }

    public func strings(_ key: String, maximumCount: Int = 1_000, maximumBytes: Int = 1_024) throws(JSONFieldError) -> [String]? {
        guard let value = present(key) else { return nil }
        guard case .array(let items) = value else { throw error(key, "must be an array of strings") }
        guard items.count <= maximumCount else { throw error(key, "must have at most \(maximumCount) items") }
        var strings: [String] = []
        strings.reserveCapacity(items.count)
        for item in items {
            guard case .string(let s) = item else { throw error(key, "must be an array of strings") }
            guard s.utf8.count <= maximumBytes else { throw error(key, "items must be at most \(maximumBytes) bytes") }
            strings.append(s)
        }
        return strings
    }

    /// An array of any values (format arguments, for example), of at most `maximumCount` items.
    public func array(_ key: String, maximumCount: Int = 1_000) throws(JSONFieldError) -> [JSONValue]? {
        guard let value = present(key) else { return nil }
        guard case .array(let items) = value else { throw error(key, "must be an array") }
        guard items.count <= maximumCount else { throw error(key, "must have at most \(maximumCount) items") }
        return items
    }

    public func object(_ key: String) throws(JSONFieldError) -> JSONFields? {
        guard let value = present(key) else { return nil }
        guard case .object(let o) = value else { throw error(key, "must be an object") }
        return JSONFields(o, path: path + key + ".")
    }
}

/// A field read from outside that has the wrong type or range.
public struct JSONFieldError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The field's name, with its parents (`alert.title`).
    public var field: String
    public var message: String
    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
    public var description: String { "\"\(field)\" \(message)" }
}

extension JSONValue {
    /// The value as compact JSON text with sorted keys and unescaped slashes: how Herald writes
    /// the JSON documents it builds (stable bytes, so equal values write equal text).
    public var compactBytes: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a JSONValue cannot fail: every case is a JSON value (doubles are finite by construction of the readers).
        return (try? Array(encoder.encode(self))) ?? Array("null".utf8)
    }
}
