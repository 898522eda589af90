import Foundation
import HeraldCore
import Testing

/// The device protocol's frames, written without Foundation's JSONSerialization (issue 48).
@Suite("Frames written as JSON text")
struct JSONTextTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func controlFramesHaveTheirKeysInByteOrder() {
        #expect(text(DeviceServerFrame.challenge(version: 1, nonce: "abc").encoded()) == #"{"nonce":"abc","type":"challenge","version":1}"#)
        #expect(text(DeviceServerFrame.welcome(deviceID: "d1", environment: .development, enrolled: true, pingIntervalSeconds: 1500).encoded())
            == #"{"device":"d1","enrolled":true,"environment":"development","ping-interval":1500,"type":"welcome"}"#)
        #expect(text(DeviceServerFrame.error(code: .malformedFrame, message: "no", reconnectWithinMilliseconds: -5).encoded())
            == #"{"code":"malformed-frame","message":"no","reconnect-within":-5,"type":"error"}"#)
        #expect(text(DeviceClientFrame.hello(version: 3, publicKey: [1, 2], signature: [3], enrollmentSecret: nil, keepaliveSeconds: 60).encoded())
            == #"{"keepalive":60,"public-key":"AQI=","signature":"Aw==","type":"hello","version":3}"#)
        #expect(text(DeviceClientFrame.ack(ids: []).encoded()) == #"{"ids":[],"type":"ack"}"#)
    }

    @Test func hostileStringsAreEscapedAndReadBackTheSame() throws {
        let hostile = "q\"b\\s/\u{0}\u{1f}\n\té😀\u{7f}"
        let frame = DeviceServerFrame.error(code: .malformedFrame, message: hostile)
        let bytes = frame.encoded()
        #expect(text(bytes).contains(#"q\"b\\s/\u0000\u001f\u000a\u0009é😀"#))
        #expect(try DeviceServerFrame.decode(bytes).get() == frame)
        let client = DeviceClientFrame.hello(version: 1, publicKey: [1], signature: [2], enrollmentSecret: hostile)
        #expect(try DeviceClientFrame.decode(client.encoded()).get() == client)
        // The same value Foundation reads from it.
        let object = try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["message"] as? String == hostile)
    }

    @Test func severalAcksAreAnArrayOfStrings() throws {
        let ids = [NotificationID(UUID()), NotificationID(UUID())]
        let frame = DeviceClientFrame.ack(ids: ids)
        #expect(try DeviceClientFrame.decode(frame.encoded()).get() == frame)
        #expect(text(frame.encoded()) == #"{"ids":[""# + ids.map(\.description).joined(separator: #"",""#) + #""],"type":"ack"}"#)
    }
}
