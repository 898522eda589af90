import HeraldCore
import Synchronization
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the bus could not be used or answered with an error.
struct DBusError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One D-Bus message, as read or to be written.
struct DBusMessage: Sendable {
    enum Kind: UInt8, Sendable {
        case methodCall = 1, methodReturn = 2, error = 3, signal = 4
    }

    var kind: Kind
    /// Header flags: ``noReplyExpected`` (0x1).
    var flags: UInt8 = 0
    var serial: UInt32 = 0
    var path: String?
    var interface: String?
    var member: String?
    var errorName: String?
    var replySerial: UInt32?
    var destination: String?
    var sender: String?
    var body: [DBusValue] = []

    /// The largest message read (the notification interface's are a few hundred bytes).
    static let maximumLength = 1 << 20
    /// The caller does not want an answer (a method annotated `NoReply`).
    static let noReplyExpected: UInt8 = 0x1

    /// The arguments of a method taking one `a{sv}` (UnifiedPush's): string keys, variants
    /// unwrapped. `nil` when the body is anything else.
    var variantDictionary: [String: DBusValue]? {
        guard body.count == 1, case .dictionary(_, _, let entries) = body[0] else { return nil }
        var result: [String: DBusValue] = [:]
        for (key, value) in entries {
            guard case .string(let name) = key, case .variant(let inner) = value else { return nil }
            result[name] = inner
        }
        return result
    }

    /// An `a{sv}` argument from string keys.
    static func variantDictionary(_ entries: [String: DBusValue]) -> DBusValue {
        .dictionary(key: "s", value: "v", Dictionary(uniqueKeysWithValues: entries.map { (DBusValue.string($0.key), DBusValue.variant($0.value)) }))
    }

    func encoded() -> [UInt8] {
        var fields: [DBusValue] = []
        func field(_ code: UInt8, _ value: DBusValue?) {
            if let value { fields.append(.structure([.byte(code), .variant(value)])) }
        }
        field(1, path.map(DBusValue.objectPath))
        field(2, interface.map(DBusValue.string))
        field(3, member.map(DBusValue.string))
        field(4, errorName.map(DBusValue.string))
        field(5, replySerial.map(DBusValue.uint32))
        field(6, destination.map(DBusValue.string))
        let bodySignature = body.map(\.signature).joined()
        if !body.isEmpty { field(8, .signature(bodySignature)) }
        var bodyWriter = DBusWriter()
        for value in body { bodyWriter.write(value) }
        var writer = DBusWriter()
        writer.bytes = [UInt8(ascii: "l"), kind.rawValue, flags, 1]
        writer.writeUInt32(UInt32(bodyWriter.bytes.count))
        writer.writeUInt32(serial)
        writer.write(.array(element: "(yv)", fields))
        writer.pad(to: 8)
        return writer.bytes + bodyWriter.bytes
    }

    /// The length of the message that starts with these 16 bytes, or nil if they cannot start one.
    static func length(ofMessageStartingWith header: ArraySlice<UInt8>) -> Int? {
        guard header.count >= 16 else { return nil }
        let start = header.startIndex
        let big: Bool
        switch header[start] {
        case UInt8(ascii: "l"): big = false
        case UInt8(ascii: "B"): big = true
        default: return nil
        }
        func u32(_ at: Int) -> Int {
            let b = header[(start + at)..<(start + at + 4)].map(Int.init)
            return big ? (b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3]) : (b[3] << 24 | b[2] << 16 | b[1] << 8 | b[0])
        }
        let fieldsLength = u32(12), bodyLength = u32(4)
        guard fieldsLength <= maximumLength, bodyLength <= maximumLength else { return nil }
        let headerLength = (16 + fieldsLength + 7) & ~7
        return headerLength + bodyLength
    }

    /// Reads one whole message (its length from ``length(ofMessageStartingWith:)``).
    static func decode(_ bytes: [UInt8]) throws(DBusError) -> DBusMessage {
        guard bytes.count >= 16, let kind = Kind(rawValue: bytes[1]) else { throw DBusError("not a D-Bus message") }
        var reader = DBusReader(bytes: bytes, bigEndian: bytes[0] == UInt8(ascii: "B"))
        reader.offset = 4
        let bodyLength = Int(try reader.readUInt32())
        var message = DBusMessage(kind: kind)
        message.flags = bytes[2]
        message.serial = try reader.readUInt32()
        guard case .array(_, let fields) = try reader.read("a(yv)") else { throw DBusError("malformed header") }
        var bodySignature = ""
        for case .structure(let pair) in fields {
            guard pair.count == 2, case .byte(let code) = pair[0], case .variant(let value) = pair[1] else { continue }
            switch code {
            case 1: message.path = value.stringValue
            case 2: message.interface = value.stringValue
            case 3: message.member = value.stringValue
            case 4: message.errorName = value.stringValue
            case 5: message.replySerial = value.uint32Value
            case 6: message.destination = value.stringValue
            case 7: message.sender = value.stringValue
            case 8: bodySignature = value.stringValue ?? ""
            default: break
            }
        }
        reader.align(8)
        guard reader.offset + bodyLength == bytes.count else { throw DBusError("the body's length does not match") }
        var types = Substring(bodySignature)
        while !types.isEmpty {
            let type = try DBusReader.firstCompleteType(of: types)
            types = types.dropFirst(type.count)
            message.body.append(try reader.read(type))
        }
        return message
    }
}

/// Marshals values in little-endian order with D-Bus alignment.
struct DBusWriter {
    var bytes: [UInt8] = []

    mutating func pad(to alignment: Int) {
        while bytes.count % alignment != 0 { bytes.append(0) }
    }

    mutating func writeUInt32(_ value: UInt32) {
        pad(to: 4)
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    mutating func write(_ value: DBusValue) {
        switch value {
        case .byte(let b): bytes.append(b)
        case .boolean(let b): writeUInt32(b ? 1 : 0)
        case .int32(let i): writeUInt32(UInt32(bitPattern: i))
        case .uint32(let u): writeUInt32(u)
        case .string(let s), .objectPath(let s):
            writeUInt32(UInt32(s.utf8.count))
            bytes += s.utf8
            bytes.append(0)
        case .signature(let s):
            bytes.append(UInt8(s.utf8.count))
            bytes += s.utf8
            bytes.append(0)
        case .array(let element, let items):
            writeArray(elementAlignment: DBusReader.alignment(of: element.first ?? "y")) {
                for item in items { $0.write(item) }
            }
        case .dictionary(_, _, let entries):
            writeArray(elementAlignment: 8) { writer in
                for (key, value) in entries.sorted(by: { "\($0.key)" < "\($1.key)" }) {
                    writer.pad(to: 8)
                    writer.write(key)
                    writer.write(value)
                }
            }
        case .variant(let inner):
            write(.signature(inner.signature))
            write(inner)
        case .structure(let fields):
            pad(to: 8)
            for field in fields { write(field) }
        }
    }

    private mutating func writeArray(elementAlignment: Int, _ elements: (inout DBusWriter) -> Void) {
        writeUInt32(0)
        let lengthAt = bytes.count - 4
        pad(to: elementAlignment)
        let start = bytes.count
        elements(&self)
        let length = UInt32(bytes.count - start).littleEndian
        withUnsafeBytes(of: length) { bytes.replaceSubrange(lengthAt..<(lengthAt + 4), with: $0) }
    }
}

/// Unmarshals values by signature, every length checked against what was received.
struct DBusReader {
    let bytes: [UInt8]
    let bigEndian: Bool
    var offset = 0
    /// Nesting deeper than this is refused (the specification allows 64 in all).
    static let maximumDepth = 32

    init(bytes: [UInt8], bigEndian: Bool) {
        self.bytes = bytes
        self.bigEndian = bigEndian
    }

    static func alignment(of type: Character) -> Int {
        switch type {
        case "y", "g", "v": 1
        case "n", "q": 2
        case "x", "t", "d", "(", "{": 8
        default: 4
        }
    }

    mutating func align(_ alignment: Int) { offset = (offset + alignment - 1) / alignment * alignment }

    private mutating func take(_ count: Int) throws(DBusError) -> ArraySlice<UInt8> {
        guard count >= 0, offset <= bytes.count, count <= bytes.count - offset else { throw DBusError("a value runs past the message") }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func readUInt32() throws(DBusError) -> UInt32 {
        align(4)
        let b = try take(4).map(UInt32.init)
        return bigEndian ? (b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3]) : (b[3] << 24 | b[2] << 16 | b[1] << 8 | b[0])
    }

    /// The first complete type of a signature (`as`, `a{sv}`, `(yv)`, `u`…).
    static func firstCompleteType(of signature: Substring) throws(DBusError) -> Substring {
        var depth = 0, arrays = 0
        var index = signature.startIndex
        while index < signature.endIndex {
            let c = signature[index]
            index = signature.index(after: index)
            // Containers nested past the limit are refused even when empty.
            guard depth + arrays <= maximumDepth else { throw DBusError("signature nested too deep") }
            switch c {
            case "a":
                arrays += 1
                continue
            case "(", "{": depth += 1
            case ")", "}":
                depth -= 1
                guard depth >= 0 else { throw DBusError("unbalanced signature") }
            default: break
            }
            if depth == 0 { return signature[signature.startIndex..<index] }
        }
        throw DBusError("incomplete signature \(signature)")
    }

    mutating func read(_ type: Substring, depth: Int = 0) throws(DBusError) -> DBusValue {
        guard depth <= Self.maximumDepth, let first = type.first else { throw DBusError("signature too deep or empty") }
        switch first {
        case "y": return .byte(try take(1).first ?? 0)
        case "b": return .boolean(try readUInt32() != 0)
        case "i": return .int32(Int32(bitPattern: try readUInt32()))
        case "u": return .uint32(try readUInt32())
        case "n", "q":
            align(2)
            _ = try take(2)
            return .int32(0)
        case "x", "t", "d":
            align(8)
            _ = try take(8)
            return .int32(0)
        case "s", "o":
            let length = Int(try readUInt32())
            let text = String(decoding: try take(length), as: UTF8.self)
            _ = try take(1)
            return first == "s" ? .string(text) : .objectPath(text)
        case "g":
            let length = Int(try take(1).first ?? 0)
            let text = String(decoding: try take(length), as: UTF8.self)
            _ = try take(1)
            return .signature(text)
        case "v":
            guard case .signature(let inner) = try read("g", depth: depth + 1) else { throw DBusError("bad variant") }
            let innerType = try Self.firstCompleteType(of: Substring(inner))
            guard innerType.count == inner.count else { throw DBusError("a variant holds more than one type") }
            return .variant(try read(innerType, depth: depth + 1))
        case "a":
            let element = type.dropFirst()
            _ = try Self.firstCompleteType(of: type)
            let length = Int(try readUInt32())
            guard length <= DBusMessage.maximumLength else { throw DBusError("array too long") }
            align(Self.alignment(of: element.first ?? "y"))
            let end = offset + length
            guard end <= bytes.count else { throw DBusError("an array runs past the message") }
            if element.first == "{" {
                let inner = element.dropFirst().dropLast()
                let keyType = try Self.firstCompleteType(of: inner)
                let valueType = inner.dropFirst(keyType.count)
                var entries: [DBusValue: DBusValue] = [:]
                while offset < end {
                    align(8)
                    let key = try read(keyType, depth: depth + 1)
                    entries[key] = try read(valueType, depth: depth + 1)
                }
                return .dictionary(key: String(keyType), value: String(valueType), entries)
            }
            var items: [DBusValue] = []
            while offset < end { items.append(try read(element, depth: depth + 1)) }
            return .array(element: String(element), items)
        case "(":
            align(8)
            var inner = type.dropFirst().dropLast()
            var fields: [DBusValue] = []
            while !inner.isEmpty {
                let field = try Self.firstCompleteType(of: inner)
                inner = inner.dropFirst(field.count)
                fields.append(try read(field, depth: depth + 1))
            }
            return .structure(fields)
        default:
            throw DBusError("unsupported type \(first)")
        }
    }
}
