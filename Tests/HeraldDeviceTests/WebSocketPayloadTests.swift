@testable import HeraldDevice
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

/// A device's frame made from ``ByteBufferAllocator/webSocketPayload(_:)`` leaves NIOWebSocket's
/// encoder as one buffer, header and payload together: SwiftNIO SSL seals each buffer written to
/// it as a TLS record of its own, so a frame in two buffers costs two records.
@Suite("WebSocket payloads of the device")
struct WebSocketPayloadTests {
    /// The buffers the encoder writes for one text frame of `length` bytes.
    func encoded(length: Int, masked: Bool, payload: (ByteBufferAllocator, [UInt8]) -> ByteBuffer) throws -> [ByteBuffer] {
        let channel = EmbeddedChannel(handler: WebSocketFrameEncoder())
        defer { _ = try? channel.finish() }
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0) }
        let frame = WebSocketFrame(
            fin: true, opcode: .text, maskKey: masked ? WebSocketMaskingKey([1, 2, 3, 4]) : nil, data: payload(channel.allocator, bytes))
        try channel.writeOutbound(frame)
        var written: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { written.append(buffer) }
        // Whatever the buffers, the bytes on the wire decode to the frame sent.
        let decoder = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)))
        defer { _ = try? decoder.finish() }
        for buffer in written { try decoder.writeInbound(buffer) }
        let decoded = try #require(try decoder.readInbound(as: WebSocketFrame.self))
        #expect(Array(decoded.unmaskedData.readableBytesView) == bytes)
        return written
    }

    @Test("a masked frame is one buffer, whatever its length's header", arguments: [0, 1, 125, 126, 65_535, 65_536])
    func oneBuffer(length: Int) throws {
        let written = try encoded(length: length, masked: true) { $0.webSocketPayload($1) }
        #expect(written.count == 1, "length \(length): \(written.count) buffers")
    }

    @Test("without the room in front, the encoder writes the header apart (what this helper is for)")
    func twoBuffersWithout() throws {
        let written = try encoded(length: 300, masked: true) { allocator, bytes in
            var buffer = allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            return buffer
        }
        #expect(written.count == 2)
    }
}
