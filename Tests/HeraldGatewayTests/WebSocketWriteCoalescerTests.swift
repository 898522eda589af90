import HeraldCore
@testable import HeraldGateway
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

/// What a session writes between two flushes leaves as one buffer (one TLS record), and
/// NIOWebSocket's decoder reads it back as the frames sent.
@Suite("WebSocket write coalescing")
struct WebSocketWriteCoalescerTests {
    /// A session's pipeline below the session: the coalescer, then the encoder the server
    /// upgrader adds.
    func pipeline() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
        try WebSocketWriteCoalescer.insert(in: channel.pipeline.syncOperations)
        return channel
    }

    func written(_ channel: EmbeddedChannel) throws -> [ByteBuffer] {
        var buffers: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { buffers.append(buffer) }
        return buffers
    }

    func decoded(_ buffers: [ByteBuffer]) throws -> [WebSocketFrame] {
        let decoder = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)))
        defer { _ = try? decoder.finish() }
        for buffer in buffers { try decoder.writeInbound(buffer) }
        var frames: [WebSocketFrame] = []
        while let frame = try decoder.readInbound(as: WebSocketFrame.self) { frames.append(frame) }
        return frames
    }

    func text(_ length: Int, seed: UInt8 = 0) -> [UInt8] { (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) &+ seed } }

    @Test("one frame, flushed: one buffer, read back byte for byte, whatever its header's size", arguments: [0, 1, 125, 126, 5_120, 65_536])
    func oneFrame(length: Int) throws {
        let channel = try pipeline()
        defer { _ = try? channel.finish() }
        try channel.writeOutbound(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: text(length))))
        let buffers = try written(channel)
        #expect(buffers.count == 1)
        let frames = try decoded(buffers)
        #expect(frames.count == 1 && frames[0].opcode == .text && frames[0].fin)
        #expect(frames.first.map { Array($0.data.readableBytesView) } == text(length))
    }

    @Test("frames written before one flush leave as one buffer; their promises are kept")
    func severalFrames() throws {
        let channel = try pipeline()
        defer { _ = try? channel.finish() }
        let done = (0..<3).map { _ in channel.eventLoop.makePromise(of: Void.self) }
        for i in 0..<3 {
            channel.write(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: text(300, seed: UInt8(i)))), promise: done[i])
        }
        channel.flush()
        let buffers = try written(channel)
        #expect(buffers.count == 1)
        #expect(try decoded(buffers).map { Array($0.data.readableBytesView) } == (0..<3).map { text(300, seed: UInt8($0)) })
        for promise in done { #expect(throws: Never.self) { try outcome(promise)?.get() } }
        #expect(done.allSatisfy { outcome($0) != nil })
    }

    @Test("what would pass a TLS record's length goes down without waiting for the flush")
    func bounded() throws {
        let channel = try pipeline()
        defer { _ = try? channel.finish() }
        for i in 0..<8 { channel.write(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: text(4_000, seed: UInt8(i)))), promise: nil) }
        channel.flush()
        let buffers = try written(channel)
        #expect(buffers.count == 2 && buffers[0].readableBytes >= WebSocketWriteCoalescer.recordBytes, "\(buffers.map(\.readableBytes))")
        let frames = try decoded(buffers)
        #expect(frames.map { Array($0.data.readableBytesView) } == (0..<8).map { text(4_000, seed: UInt8($0)) })
    }

    /// A promise's result, read without waiting (an embedded loop runs what it is given at once).
    func outcome(_ promise: EventLoopPromise<Void>) -> Result<Void, any Error>? {
        let result = Locked<Result<Void, any Error>?>(nil)
        promise.futureResult.whenComplete { outcome in result.withLock { $0 = outcome } }
        return result.withLock { $0 }
    }

    /// A close frame written and flushed, then a frame written and not flushed, then the close:
    /// what left, and how the unflushed write was answered (`nil`: not yet).
    func closing(_ channel: EmbeddedChannel) throws -> (opcodes: [WebSocketOpcode], unflushed: String?) {
        let flushed = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: ByteBuffer(bytes: [0x03, 0xE8])), promise: flushed)
        #expect(throws: Never.self) { try outcome(flushed)?.get() }
        let opcodes = try decoded(written(channel)).map(\.opcode)
        let unflushed = channel.eventLoop.makePromise(of: Void.self)
        channel.write(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: "{}")), promise: unflushed)
        channel.close(promise: nil)
        channel.embeddedEventLoop.run()
        let answer = outcome(unflushed).map { result in (try? result.get()) == nil ? "failed" : "succeeded" }
        unflushed.succeed()  // answered here if the channel did not (a promise must be)
        return (opcodes, answer)
    }

    @Test("a close frame flushed before the close leaves; a write unflushed at the close is answered as without the coalescer")
    func close() throws {
        let plain = EmbeddedChannel()
        try plain.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
        let without = try closing(plain)
        let with = try closing(try pipeline())
        #expect(with.opcodes == [.connectionClose])
        #expect(with.opcodes == without.opcodes && with.unflushed == without.unflushed, "with \(with), without \(without)")
    }
}
