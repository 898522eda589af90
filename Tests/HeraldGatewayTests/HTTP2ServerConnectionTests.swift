import HeraldCore
@testable import HeraldGateway
import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

/// The life of an HTTP/2 server connection, shared by the provider port and the Web Push port:
/// its decisions without a channel, then its frames on an EmbeddedChannel at fixed instants.
@Suite("HTTP/2 server connection")
struct HTTP2ServerConnectionTests {
    typealias Machine = HTTP2ConnectionStateMachine

    @Test("idle: the timer runs only while no stream is open, and fires GOAWAY IdleTimeout once")
    func idleDecisions() {
        var m = Machine()
        #expect(m.started() == .armIdleTimer)
        #expect(m.streamOpened() == .cancelIdleTimer)
        #expect(m.streamOpened() == .none)
        #expect(m.idleTimerFired() == .none, "a stream opened as the timer rang keeps the connection")
        #expect(m.streamClosed() == .none)
        #expect(m.streamClosed() == .armIdleTimer)
        #expect(m.streamClosed() == .none, "a close without an open is ignored")
        #expect(m.openStreams == 0)
        #expect(m.idleTimerFired() == .goAwayAndClose(reason: "IdleTimeout"))
        #expect(m.isDraining)
        #expect(m.idleTimerFired() == .none && m.refuse(reason: "X") == .none && m.beginDraining() == .none)
    }

    @Test("drain: GOAWAY Shutdown, then drained when the last open stream closes; once")
    func drainDecisions() {
        var m = Machine()
        _ = m.streamOpened()
        _ = m.streamOpened()
        #expect(m.beginDraining() == .sendShutdownGoAway)
        #expect(m.beginDraining() == .none)
        #expect(m.streamClosed() == .none)
        #expect(m.streamClosed() == .drained)
        #expect(m.idleTimerFired() == .none, "a draining connection never idles out")
        var empty = Machine()
        #expect(empty.beginDraining() == .sendShutdownGoAwayDrained)
        var refused = Machine()
        _ = refused.streamOpened()
        #expect(refused.refuse(reason: "BadCertificateEnvironment") == .goAwayAndClose(reason: "BadCertificateEnvironment"))
        #expect(refused.refuse(reason: "BadCertificateEnvironment") == .none)
        #expect(refused.streamClosed() == .none, "going away: closed once the GOAWAY is written, not by its streams")
    }

    /// The GOAWAY frames written so far: (error code, debug data).
    func goAways(_ channel: EmbeddedChannel) throws -> [(HTTP2ErrorCode, String)] {
        var frames: [(HTTP2ErrorCode, String)] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
            if case .goAway(_, let code, let debug) = frame.payload {
                frames.append((code, debug.map { String(buffer: $0) } ?? ""))
            }
        }
        return frames
    }

    @Test("on a channel: no stream for the idle bound sends GOAWAY IdleTimeout and closes; an open stream keeps it")
    func idleOnAChannel() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        let closedForIdle = Locked(0)
        let connection = HTTP2ServerConnection(channel: channel, idleTimeout: .seconds(60)) { closedForIdle.withLock { $0 += 1 } }
        connection.start()
        connection.streamCreated(1)
        loop.advanceTime(by: .seconds(120))
        #expect(try goAways(channel).isEmpty && channel.isActive)
        connection.streamClosed(1)
        loop.advanceTime(by: .seconds(59))
        #expect(try goAways(channel).isEmpty)
        loop.advanceTime(by: .seconds(1))
        let sent = try goAways(channel)
        #expect(sent.map(\.0) == [.noError] && sent.map(\.1) == [#"{"reason":"IdleTimeout"}"#])
        #expect(closedForIdle.withLock { $0 } == 1)
        #expect(!channel.isActive, "closed once the GOAWAY was written")
    }

    @Test("on a channel: a shutdown sends GOAWAY Shutdown, waits for the open stream, then the close writes a last GOAWAY")
    func drainOnAChannel() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        let connection = HTTP2ServerConnection(channel: channel, idleTimeout: .seconds(60))
        connection.start()
        connection.streamCreated(1)
        let drained = connection.beginDraining()
        #expect(connection.isDraining)
        #expect(try goAways(channel).map(\.1) == [#"{"reason":"Shutdown"}"#])
        let done = Locked(false)
        drained.whenComplete { _ in done.withLock { $0 = true } }
        loop.run()
        #expect(!done.withLock { $0 }, "the open stream is answered first")
        loop.advanceTime(by: .seconds(3600))
        #expect(!done.withLock { $0 } && channel.isActive, "no idle close while draining")
        connection.streamClosed(1)
        #expect(done.withLock { $0 })
        _ = connection.close()
        loop.run()
        #expect(try goAways(channel).map(\.1) == [#"{"reason":"Shutdown"}"#])
        #expect(!channel.isActive)
    }
}
