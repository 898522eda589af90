import Logging
import NIOCore
import NIOPosix

/// A listener the gateway bound: its server channel and the connections it accepted and still
/// has open. The device port and the Web Push port are each one (``DeviceListener``,
/// ``WebPushListener`` build their pipelines); shutdown stops accepting, then waits for the
/// connections to close.
final class BoundListener: Sendable {
    let serverChannel: Channel
    let connections: OpenConnections

    var port: Int { serverChannel.localAddress?.port ?? 0 }

    private init(serverChannel: Channel, connections: OpenConnections) {
        self.serverChannel = serverChannel
        self.connections = connections
    }

    /// Binds `bootstrap` (whose child initializer tracks its connections in `connections`) and
    /// watches the connections it accepts but cannot set up, counted under `name`.
    static func bind(
        _ bootstrap: ServerBootstrap, host: String, port: Int, name: String, connections: OpenConnections,
        metrics: GatewayMetrics, logger: Logger
    ) async throws -> BoundListener {
        let serverChannel = try await bootstrap.bind(host: host, port: port).get()
        try await metrics.connectionSetup.watch(serverChannel, port: name, logger: logger)
        return BoundListener(serverChannel: serverChannel, connections: connections)
    }

    /// Stops accepting. Sessions are closed by the registry (with a `shutdown` frame for devices).
    func close() async {
        try? await serverChannel.close()
    }

    /// Waits (up to `timeout`) for every connection to close, then closes what is left.
    func waitForConnectionsToClose(timeout: TimeAmount) async {
        await connections.waitUntilClosed(timeout: timeout)
    }
}
