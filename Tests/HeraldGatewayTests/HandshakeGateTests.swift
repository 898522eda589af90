import HeraldCore
import HeraldTesting
@testable import HeraldGateway
import NIOCore
import NIOPosix
import Testing

/// The bound on handshakes in flight, on a real listening socket: at the bound the listener
/// stops accepting (the kernel keeps the connection in its backlog), and accepts it once a
/// handshake ends.
@Suite("Handshake gate")
struct HandshakeGateTests {
    @Test("two handshakes in flight at most: the third connection is accepted only once one of them ends")
    func bound() async throws {
        let gate = HandshakeGate(limit: 2)
        let releases = Locked<[@Sendable () -> Void]>([])
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 16)
            .childChannelInitializer { channel in
                let release = gate.admit(listener: channel.parent)
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
}
