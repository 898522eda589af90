import HeraldCore
import HeraldTesting
@testable import HeraldGateway
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing

/// The bound on handshakes in flight, on a real listening socket: at the bound the listener
/// stops accepting (the kernel keeps the connection in its backlog), and accepts it once a
/// handshake ends.
@Suite("Handshake gate")
struct HandshakeGateTests {
    @Test("the reconnect window of a graceful stop: devices ÷ rate seconds, at most an hour")
    func reconnectWindow() {
        #expect(DeviceRegistry.reconnectWindow(devices: 18_000, rate: 500) == 36_000)
        #expect(DeviceRegistry.reconnectWindow(devices: 10_000_000, rate: 1) == 3_600_000)
        #expect(DeviceRegistry.reconnectWindow(devices: 0, rate: 500) == 0)
        #expect(DeviceRegistry.reconnectWindow(devices: 3, rate: 0) == 3_000)
    }

    @Test("two handshakes in flight at most: the third connection is accepted only once one of them ends")
    func bound() async throws {
        let gate = HandshakeGate(limit: 2, perAddress: 10)
        let releases = Locked<[@Sendable () -> Void]>([])
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 16)
            .childChannelInitializer { channel in
                let release = gate.admit(listener: channel.parent, address: "127.0.0.1")!
                releases.withLock { $0.append(release) }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        var clients: [Channel] = []
        for _ in 0..<3 {
            // The kernel completes the TCP handshake from its backlog whether accepted or not.
            clients.append(try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: server.localAddress!.port!).get())
        }
        try await eventually("two accepted") { releases.withLock { $0.count } == 2 }
        // The third waits in the backlog: nothing accepts it while two are in flight. (A bounded
        // wait is the only way to see that something does not happen.)
        try await Task.sleep(for: .milliseconds(300))
        #expect(releases.withLock { $0.count } == 2 && gate.count == 2)
        releases.withLock { $0[0] }()
        try await eventually("the third accepted once one handshake ended") { releases.withLock { $0.count } == 3 }
        #expect(gate.count == 2)
        for client in clients { try? await client.close() }
        try await server.close()
    }

    @Test("one address holds at most its share of the slots; a release counts once")
    func perAddress() {
        let gate = HandshakeGate(limit: 10, perAddress: 2)
        let first = gate.admit(listener: nil, address: "192.0.2.1")
        let second = gate.admit(listener: nil, address: "192.0.2.1")
        #expect(first != nil && second != nil)
        #expect(gate.admit(listener: nil, address: "192.0.2.1") == nil)
        #expect(gate.admit(listener: nil, address: "192.0.2.2") != nil)
        #expect(gate.count == 3)
        first?()
        first?()
        #expect(gate.count == 2)
        #expect(gate.admit(listener: nil, address: "192.0.2.1") != nil)
    }

    @Test("a connection that sends nothing is closed at the first-bytes deadline; one that speaks is left alone")
    func firstBytes() throws {
        let loop = EmbeddedEventLoop()
        let silent = EmbeddedChannel(handler: ConnectionDeadline(timeout: .seconds(2), milestone: .firstBytes), loop: loop)
        let speaking = EmbeddedChannel(handler: ConnectionDeadline(timeout: .seconds(2), milestone: .firstBytes), loop: loop)
        for channel in [silent, speaking] { try channel.connect(to: SocketAddress(ipAddress: "192.0.2.1", port: 1)).wait() }
        try speaking.writeInbound(ByteBuffer(string: "hello"))
        #expect(try speaking.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "hello"))
        loop.advanceTime(by: .milliseconds(1_999))
        #expect(silent.isActive)
        loop.advanceTime(by: .milliseconds(1))
        #expect(!silent.isActive)
        #expect(speaking.isActive)
        _ = try speaking.finish()
    }
}
