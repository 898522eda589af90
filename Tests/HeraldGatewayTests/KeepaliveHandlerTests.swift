@testable import HeraldGateway
import NIOCore
import NIOEmbedded
import Testing

/// The keepalive of every gateway connection, on an embedded loop whose clock the test moves.
@Suite("Connections: the keepalive timer")
struct KeepaliveHandlerTests {
    /// Records the idle events the keepalive fires.
    final class Events: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        var seen: [IdleStateHandler.IdleStateEvent] = []
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let idle = event as? IdleStateHandler.IdleStateEvent { seen.append(idle) }
        }
    }

    func connected(ping: TimeAmount?, idle: TimeAmount) throws -> (EmbeddedChannel, Events) {
        let events = Events()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(KeepaliveHandler(pingInterval: ping, idleTimeout: idle, wheel: KeepaliveWheel(eventLoop: channel.eventLoop)))
        try channel.pipeline.syncOperations.addHandler(events)
        try channel.connect(to: .init(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, events)
    }

    @Test("quiet for the ping interval: .write, again an interval later if nothing was written; a write postpones it")
    func pings() throws {
        let (channel, events) = try connected(ping: .seconds(10), idle: .seconds(100))
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(events.seen.isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(events.seen == [.write])
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        try channel.writeOutbound(ByteBuffer(string: "frame"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(events.seen == [.write], "the write 5 s in moved the next ping to 15 s after it")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(events.seen == [.write, .write])
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(events.seen == [.write, .write, .write], "a session that wrote nothing is told again an interval later")
    }

    @Test("silent for the idle timeout: .read once; a read postpones it; without a ping interval nothing else fires")
    func silence() throws {
        let (channel, events) = try connected(ping: nil, idle: .seconds(30))
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        try channel.writeInbound(ByteBuffer(string: "x"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        #expect(events.seen.isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(events.seen == [.read])
        channel.embeddedEventLoop.advanceTime(by: .seconds(120))
        #expect(events.seen == [.read], "fired once: the session closes")
    }

    @Test("a Change applies at once, counted from the last read and write")
    func change() throws {
        let (channel, events) = try connected(ping: .seconds(1_500), idle: .seconds(3_060))
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))
        channel.pipeline.triggerUserOutboundEvent(KeepaliveHandler.Change(pingInterval: .seconds(5), idleTimeout: .seconds(11)), promise: nil)
        channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        #expect(events.seen == [.write], "5 s after the last write")
        channel.embeddedEventLoop.advanceTime(by: .seconds(6))
        #expect(events.seen == [.write, .write, .read], "11 s after the last read; pinged at 10 s")
    }

    @Test("one wheel for a loop's connections: each told on the tick after its deadline, never before; a closed one is withdrawn; a deadline past a turn waits for its own tick")
    func wheel() throws {
        let loop = EmbeddedEventLoop()
        let wheel = KeepaliveWheel(eventLoop: loop, tick: .seconds(1), slots: 8)
        func connect(ping: TimeAmount?, idle: TimeAmount) throws -> (EmbeddedChannel, Events) {
            let events = Events()
            let channel = EmbeddedChannel(loop: loop)
            try channel.pipeline.syncOperations.addHandler(KeepaliveHandler(pingInterval: ping, idleTimeout: idle, wheel: wheel))
            try channel.pipeline.syncOperations.addHandler(events)
            try channel.connect(to: .init(ipAddress: "127.0.0.1", port: 1)).wait()
            return (channel, events)
        }
        let (_, every3) = try connect(ping: .seconds(3), idle: .seconds(100))
        let (_, silent) = try connect(ping: nil, idle: .milliseconds(2_500))
        let (_, far) = try connect(ping: .seconds(20), idle: .seconds(100))
        let (closed, closedEvents) = try connect(ping: .seconds(3), idle: .seconds(100))
        #expect(wheel.count == 4)
        loop.advanceTime(by: .seconds(1))
        try closed.close().wait()
        #expect(wheel.count == 3, "a closed connection leaves the wheel at once")

        loop.advanceTime(to: .uptimeNanoseconds(2_900_000_000))
        #expect(every3.seen.isEmpty && silent.seen.isEmpty, "nothing before its deadline")
        loop.advanceTime(to: .uptimeNanoseconds(3_000_000_000))
        #expect(every3.seen == [.write])
        #expect(silent.seen == [.read], "2.5 s: told on the tick at 3 s")
        #expect(wheel.count == 2, "the silent one is not filed again: its session closes it")

        loop.advanceTime(to: .uptimeNanoseconds(19_999_000_000))
        #expect(far.seen.isEmpty, "its slot came round at 4 s and 12 s: not due then")
        #expect(every3.seen.count == 6, "3, 6, 9, 12, 15, 18 s")
        loop.advanceTime(to: .uptimeNanoseconds(20_000_000_000))
        #expect(far.seen == [.write])
        #expect(closedEvents.seen.isEmpty)
    }
}
