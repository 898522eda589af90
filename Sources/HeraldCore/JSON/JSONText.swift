/// JSON text for the device protocol's frames, written straight into bytes: the notification
/// frame by ``DeviceServerFrame/encodeNotification(apnsID:topic:pushType:priority:collapseID:expiration:payload:token:into:)``,
/// every other frame as a ``JSONObjectText``.
///
/// Foundation's `JSONSerialization` wrote the control frames before (issue 48): a device's first
/// connection gets three of them (challenge, welcome, subscribed) and they cost 11.5 % of the
/// gateway's CPU for that connection (perf, `bench scale`), through `NSDictionary` bridging.
/// Documents whose bytes are kept (``JSONValue/compactBytes``) are still written by `JSONEncoder`.
enum JSONText {
    private static let hex = Array("0123456789abcdef".utf8)

    /// A JSON string: quote and backslash escaped, control characters as `\u00XX`; everything
    /// else, `/` and non-ASCII included, as is (RFC 8259 §7).
    static func appendString(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0..<0x20:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xf)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// A flat JSON object built member by member and written with its keys in byte order (the order
/// `JSONSerialization`'s sorted keys gave these frames, so their text did not change but for `/`,
/// no longer escaped). Values are strings, integers, booleans or arrays of strings: what the
/// device protocol's control frames hold.
struct JSONObjectText {
    private var members: [(key: String, value: [UInt8])] = []

    init() {}

    mutating func add(_ key: String, _ value: String) {
        var text: [UInt8] = []
        JSONText.appendString(value, to: &text)
        members.append((key, text))
    }

    mutating func add<Integer: BinaryInteger>(_ key: String, _ value: Integer) {
        members.append((key, Array(String(value).utf8)))
    }

    mutating func add(_ key: String, _ value: Bool) {
        members.append((key, Array((value ? "true" : "false").utf8)))
    }

    mutating func add(_ key: String, _ values: [String]) {
        var text: [UInt8] = [UInt8(ascii: "[")]
        for (index, value) in values.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ",")) }
            JSONText.appendString(value, to: &text)
        }
        text.append(UInt8(ascii: "]"))
        members.append((key, text))
    }

    /// The object's text. A key added twice is written twice (callers add each once).
    var bytes: [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(members.reduce(2) { $0 + $1.key.utf8.count + $1.value.count + 4 })
        for (index, member) in members.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONText.appendString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            out.append(contentsOf: member.value)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}
