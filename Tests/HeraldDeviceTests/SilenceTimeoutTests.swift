import NIOCore
import NIOEmbedded
import Testing

@testable import HeraldDevice

/// The device's watch on a silent connection, on an embedded event loop whose time the test moves.
@Suite("device: a silent connection is closed")
struct SilenceTimeoutTests {
    final class Timeouts: @unchecked Sendable { var seen: [TimeAmount] = [] }

    func connected(timeout: TimeAmount) throws -> (EmbeddedChannel, SilenceTimeoutHandler, Timeouts) {
        let timeouts = Timeouts()
        let handler = SilenceTimeoutHandler(timeout: timeout) { timeouts.seen.append($0) }
        let channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: .init(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, handler, timeouts)
    }

    @Test("closed once nothing was read for the bound; every read postpones it")
    func readsKeepItAlive() throws {
        let (channel, _, timeouts) = try connected(timeout: .seconds(10))
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        try channel.writeInbound(ByteBuffer(string: "x"))
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "x"), "bytes pass through")
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive, "9 s after the last read")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive, "10 s after the last read")
        #expect(timeouts.seen == [.seconds(10)])
    }

    @Test("a new bound (the welcome's ping interval) counts from when it is set")
    func newBound() throws {
        let (channel, handler, timeouts) = try connected(timeout: .seconds(10))
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        handler.setTimeout(.seconds(6), context: try channel.pipeline.syncOperations.context(handler: handler))
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(channel.isActive, "the handshake's bound no longer applies")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
        #expect(timeouts.seen == [.seconds(6)])
    }

    @Test("a connection closed by the peer stops the watch")
    func closedConnection() throws {
        let (channel, _, timeouts) = try connected(timeout: .seconds(1))
        _ = try channel.finish()
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(timeouts.seen.isEmpty)
    }
}
