import HeraldCore
import HeraldNIO
import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// One listening socket of the provider port: over TLS (ALPN `h2`) or, for local development,
/// plaintext h2c with prior knowledge. Keeps its connections so that shutdown can drain them.
final class ProviderPortListener: Sendable {
    let serverChannel: Channel
    private let connections: HTTP2Connections

    var port: Int { serverChannel.localAddress?.port ?? 0 }

    private init(serverChannel: Channel, connections: HTTP2Connections) {
        self.serverChannel = serverChannel
        self.connections = connections
    }

    static func bind(
        host: String, port: Int, tls: ReloadableTLSContext?, providerPort: ProviderPort, group: EventLoopGroup,
        name: String = "provider"
    ) async throws -> ProviderPortListener {
        let connections = HTTP2Connections()
        let metrics = providerPort.metrics
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                let limits = providerPort.limits
                if let refusal = providerPort.connectionsPerAddress.admit(channel) {
                    metrics.recordPeerClosed(port: "provider", reason: refusal.metricReason)
                    return channel.eventLoop.makeFailedFuture(refusal)
                }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if let tls {
                        try sync.addHandler(NIOSSLServerHandler(context: tls.current))
                        try sync.addHandler(ConnectionDeadline(timeout: limits.handshakeTimeout, milestone: .tlsHandshake) {
                            metrics.recordPeerClosed(port: "provider", reason: "handshake_timeout")
                        })
                    }
                    try sync.addHandler(HTTP2FrameGuard(limits, port: "provider", channel: channel, metrics: metrics, logger: providerPort.logger))
                    try sync.addHandler(FlushCoalescingHandler())
                    let connection = ProviderPortConnection(
                        channel: channel, environment: providerPort.environment, idleTimeout: limits.providerIdleTimeout,
                        maximumHeaderListSize: limits.maximumHeaderListSize
                    ) { metrics.recordPeerClosed(port: "provider", reason: "idle_timeout") }
                    try sync.addHandler(NIOHTTP2Handler(
                        mode: .server, connectionConfiguration: connection.connectionConfiguration,
                        streamConfiguration: ProviderPortConnection.streamConfiguration))
                    try sync.addHandler(ProviderPortStream.table(port: providerPort, connection: connection))
                    if tls != nil { try sync.addHandler(ClientCertificateReader(connection: connection, logger: providerPort.logger)) }
                    try sync.addHandler(ConnectionErrorLogger(logger: providerPort.logger))
                    connections.track(connection.http2)
                    metrics.openConnections.increment()
                    metrics.connectionSetup.succeeded(port: name)
                    channel.closeFuture.whenComplete { _ in metrics.openConnections.decrement() }
                }
            }
        let serverChannel = try await bootstrap.bind(host: host, port: port).get()
        try await metrics.connectionSetup.watch(serverChannel, port: name, logger: providerPort.logger)
        return ProviderPortListener(serverChannel: serverChannel, connections: connections)
    }

    /// Stops accepting, tells every connection to go away (`{"reason":"Shutdown"}`), waits until
    /// their open streams are answered (at most `timeout`), then closes them.
    func drain(timeout: TimeAmount) async {
        try? await serverChannel.close()
        await connections.drain(timeout: timeout)
    }
}

/// Reads a provider connection's TLS client certificate when the handshake completes, before any
/// request of the connection is read: a certificate connection needs no provider token, so its
/// stream limit is raised at once.
private final class ClientCertificateReader: ChannelInboundHandler {
    typealias InboundIn = Any
    let connection: ProviderPortConnection
    let logger: Logger
    init(connection: ProviderPortConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event,
           let tls = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
           let peer = tls.peerCertificate {
            do {
                let certificate = try PushCertificate(derEncoded: try peer.toDERBytes())
                connection.clientCertificate = .usable(certificate)
                connection.raiseStreamLimit()
            } catch {
                logger.notice("provider client certificate refused", metadata: [
                    "peer": "\(context.channel.remoteAddress?.description ?? "?")", "why": "\(error)",
                ])
                connection.clientCertificate = .unusable("\(error)")
            }
        }
        context.fireUserInboundEventTriggered(event)
    }
}

/// Logs what goes wrong on a provider connection (TLS failures, HTTP/2 protocol errors): one bad
/// peer is a debug line, never a crash.
private final class ConnectionErrorLogger: ChannelInboundHandler {
    typealias InboundIn = Any
    let logger: Logger
    init(logger: Logger) { self.logger = logger }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        logger.debug("provider connection error", metadata: [
            "peer": "\(context.channel.remoteAddress?.description ?? "?")", "error": "\(error)",
        ])
    }
}
