import Foundation
import Testing

@testable import HeraldDevice

/// The D-Bus marshalling behind `herald device run --desktop`: what the notification server
/// sends is read with every length checked; nothing it sends can trap the device.
@Suite("desktop notifications: the D-Bus wire format")
struct SessionBusTests {
    func notify() -> DBusMessage {
        var message = DBusMessage(kind: .methodCall)
        message.serial = 7
        message.destination = "org.freedesktop.Notifications"
        message.path = "/org/freedesktop/Notifications"
        message.interface = "org.freedesktop.Notifications"
        message.member = "Notify"
        message.body = [
            .string("Herald: com.example.app"), .uint32(0), .string(""), .string("Lunch"), .string("At noon? 'é' \\ \"x\""),
            .array(element: "s", [.string("default"), .string("Open"), .string("a0"), .string("Accept")]),
            .dictionary(key: "s", value: "v", [.string("urgency"): .variant(.byte(1)), .string("desktop-entry"): .variant(.string("herald"))]),
            .int32(-1),
        ]
        return message
    }

    @Test("a Notify call reads back as written: header fields, signature susssasa{sv}i, every value")
    func roundTrip() throws {
        let bytes = notify().encoded()
        #expect(DBusMessage.length(ofMessageStartingWith: bytes[0..<16]) == bytes.count)
        let read = try DBusMessage.decode(bytes)
        #expect(read.kind == .methodCall && read.serial == 7 && read.member == "Notify" && read.path == "/org/freedesktop/Notifications")
        #expect(read.body == notify().body)
        #expect(read.body.map(\.signature).joined() == "susssasa{sv}i")
    }

    @Test("signals as a server sends them: ActionInvoked (us) and NotificationClosed (uu)")
    func signals() throws {
        var signal = DBusMessage(kind: .signal)
        signal.path = "/org/freedesktop/Notifications"
        signal.interface = "org.freedesktop.Notifications"
        signal.member = "ActionInvoked"
        signal.body = [.uint32(12), .string("a1")]
        let read = try DBusMessage.decode(signal.encoded())
        #expect(read.member == "ActionInvoked" && read.body == [.uint32(12), .string("a1")])
    }

    @Test("hostile messages: every truncation, a length past the end, a bad endianness, deep nesting: an error, never a trap")
    func hostile() throws {
        let bytes = notify().encoded()
        for cut in stride(from: 0, to: bytes.count, by: 3) {
            #expect(throws: DBusError.self) { try DBusMessage.decode(Array(bytes[0..<cut])) }
        }
        var corrupt = bytes
        corrupt[0] = UInt8(ascii: "X")
        #expect(DBusMessage.length(ofMessageStartingWith: corrupt[0..<16]) == nil)
        // A body length of 4 GiB is refused before anything waits for it.
        var huge = bytes
        huge.replaceSubrange(4..<8, with: [0xff, 0xff, 0xff, 0xff])
        #expect(DBusMessage.length(ofMessageStartingWith: huge[0..<16]) == nil)
        // An array that says it is longer than the message.
        var reader = DBusReader(bytes: [0xff, 0xff, 0x00, 0x00, 1, 2, 3, 4], bigEndian: false)
        #expect(throws: DBusError.self) { try reader.read("as") }
        // A signature nested past the limit.
        var deep = DBusReader(bytes: [UInt8](repeating: 0, count: 64), bigEndian: false)
        #expect(throws: DBusError.self) { try deep.read(Substring(String(repeating: "a", count: 40) + "y")) }
        #expect(throws: DBusError.self) { try DBusReader.firstCompleteType(of: "(us") }
    }

    @Test("what the desktop shows is text: markup escaped for a server that reads it")
    func markup() {
        #expect(DesktopNotifications.escapeMarkup("<b>x</b> & y") == "&lt;b&gt;x&lt;/b&gt; &amp; y")
    }

    @Test("a byte stream in any pieces: every message of the fuzz seeds read (replies, signals, an error, two in one read)")
    func stream() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/corpus/dbus-stream").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted()
        #expect(files.count >= 6)
        for file in files {
            let bytes = Array(try Data(contentsOf: corpus.appendingPathComponent(file)).dropFirst())
            let expected = file == "two-in-one" ? 2 : 1
            for piece in [1, 3, 16, 4096] {
                #expect(DBusStream.count(bytes, pieceSize: piece) == expected, "\(file) in pieces of \(piece)")
            }
        }
        // A stream that is not D-Bus ends: nothing after it is read.
        var stream = DBusStream()
        #expect(stream.append(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)) == nil)
        #expect(stream.append(notify().encoded()) == nil)
    }
}
