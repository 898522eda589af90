import Logging
import NIOCore
import NIOPosix

/// A listener the gateway bound: its server channel and the connections it accepted and still
/// has open. The device port and the Web Push port are each one (``DeviceListener``,
/// ``WebPushListener`` build their pipelines); shutdown stops accepting, drains its HTTP/2
/// connections (the Web Push port's), then waits for the connections to close.
final class BoundListener: Sendable {
    let serverChannel: Channel
    let connections: OpenConnections
    /// Its HTTP/2 connections, drained with GOAWAY at shutdown (none on the device port).
    let http2: HTTP2Connections

    var port: Int { serverChannel.localAddress?.port ?? 0 }

    private init(serverChannel: Channel, connections: OpenConnections, http2: HTTP2Connections) {
        self.serverChannel = serverChannel
        self.connections = connections
        self.http2 = http2
    }

    /// Binds `bootstrap` (whose child initializer tracks its connections in `connections`) and
    /// watches the connections it accepts but cannot set up, counted under `name`.
    static func bind(
        _ bootstrap: ServerBootstrap, host: String, port: Int, name: String, connections: OpenConnections,
        http2: HTTP2Connections = HTTP2Connections(), metrics: GatewayMetrics, logger: Logger
    ) async throws -> BoundListener {
        let serverChannel = try await bootstrap.bind(host: host, port: port).get()
        try await metrics.connectionSetup.watch(serverChannel, port: name, logger: logger)
        return BoundListener(serverChannel: serverChannel, connections: connections, http2: http2)
    }

    /// Stops accepting. Sessions are closed by the registry (with a `shutdown` frame for devices).
    func close() async {
        try? await serverChannel.close()
    }

    /// Stops accepting, then drains the HTTP/2 connections: GOAWAY `{"reason":"Shutdown"}`, the
    /// open streams answered (at most `timeout`), then closed.
    func drain(timeout: TimeAmount) async {
        try? await serverChannel.close()
        await http2.drain(timeout: timeout)
    }

    /// Waits (up to `timeout`) for every connection to close, then closes what is left.
    func waitForConnectionsToClose(timeout: TimeAmount) async {
        await connections.waitUntilClosed(timeout: timeout)
    }
}
