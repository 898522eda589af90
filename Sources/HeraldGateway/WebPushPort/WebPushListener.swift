import HeraldCore
import HeraldNIO
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import NIOWebSocket

/// The Web Push port: TLS with ALPN `h2` and `http/1.1`. Application servers push over either
/// (most use HTTP/1.1); browsers open Mozilla's push WebSocket at `/` with an HTTP/1.1 upgrade.
///
/// Raw SwiftNIO, as the APNs port: the acceptance path is measured against the APNs port's
/// (`scripts/bench.sh`), and the WebSocket shares the connection's pipeline. Builds each
/// connection's pipeline; the listener is a ``BoundListener``.
enum WebPushListener {
    static func bind(host: String, port: Int, tls: ReloadableTLSContext, webPushPort: WebPushPort, group: EventLoopGroup, keepalive: KeepaliveWheels) async throws -> BoundListener {
        let connections = OpenConnections(), http2 = HTTP2Connections()
        let limits = webPushPort.limits, metrics = webPushPort.metrics
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            // A browser that does not read: past the high mark its session is closed.
            .childChannelOption(.writeBufferWaterMark, value: .init(low: limits.deviceOutboundBytes / 2, high: limits.deviceOutboundBytes))
            .childChannelInitializer { channel in
                if let refusal = webPushPort.connectionsPerAddress.admit(channel) {
                    metrics.recordPeerClosed(port: "webpush", reason: refusal.metricReason)
                    return channel.eventLoop.makeFailedFuture(refusal)
                }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: tls.current))
                    try sync.addHandler(ConnectionDeadline(timeout: limits.handshakeTimeout, milestone: .tlsHandshake) {
                        metrics.recordPeerClosed(port: "webpush", reason: "handshake_timeout")
                    })
                    try sync.addHandler(ApplicationProtocolNegotiationHandler { result, channel in
                        channel.eventLoop.makeCompletedFuture {
                            switch result {
                            case .negotiated("h2"): try configureHTTP2(channel, webPushPort, keepalive.wheel(on: channel.eventLoop), http2)
                            default: try configureHTTP1(channel, webPushPort, keepalive.wheel(on: channel.eventLoop))
                            }
                        }
                    })
                    connections.track(channel)
                    metrics.connectionSetup.succeeded(port: "webpush")
                }
            }
        return try await BoundListener.bind(
            bootstrap, host: host, port: port, name: "webpush", connections: connections, http2: http2, metrics: metrics,
            logger: webPushPort.logger)
    }

    private static func configureHTTP2(_ channel: Channel, _ port: WebPushPort, _ wheel: KeepaliveWheel, _ connections: HTTP2Connections) throws {
        let sync = channel.pipeline.syncOperations
        // A peer silent for the idle bound (a stream open and nothing read) is closed; one with
        // no stream for it gets GOAWAY `IdleTimeout` first (``HTTP2ServerConnection``).
        try sync.addHandler(KeepaliveHandler(pingInterval: nil, idleTimeout: port.idleTimeout, wheel: wheel))
        try sync.addHandler(IdleCloser(metrics: port.metrics))
        // The provider port's defences (issue 63): resets of streams in progress and control-frame
        // floods counted, and any GOAWAY for an error closes the connection once written.
        try sync.addHandler(HTTP2FrameGuard(port.limits, port: "webpush", channel: channel, metrics: port.metrics, logger: port.logger))
        // The answers of one intake batch go out in one TLS record and one system call.
        try sync.addHandler(FlushCoalescingHandler())
        var connection = HTTP2FrameGuard.connectionConfiguration(settings: [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),
            HTTP2Setting(parameter: .maxHeaderListSize, value: port.limits.maximumHeaderListSize),
        ])
        connection.maximumRecentlyResetStreams = 100
        try sync.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: connection, streamConfiguration: .init()))
        let server = HTTP2ServerConnection(channel: channel, idleTimeout: port.idleTimeout) {
            port.metrics.recordPeerClosed(port: "webpush", reason: "idle_timeout")
        }
        try sync.addHandler(WebPushStream.table(port: port, connection: server))
        connections.track(server)
    }

    private static func configureHTTP1(_ channel: Channel, _ port: WebPushPort, _ wheel: KeepaliveWheel) throws {
        let sync = channel.pipeline.syncOperations
        // One idle bound for the connection, a sender's or (after the upgrade) a browser's, whose
        // session pings it when it has written nothing for a ping interval.
        try sync.addHandler(KeepaliveHandler(pingInterval: port.pingInterval, idleTimeout: port.idleTimeout, wheel: wheel))
        try sync.addHandler(IdleCloser(metrics: port.metrics))
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: BrowserPushProtocol.maximumMessageBytes, automaticErrorHandling: false,
            shouldUpgrade: { channel, head in
                guard QueryString.path(of: head.uri) == "/" else { return channel.eventLoop.makeSucceededFuture(nil) }
                var headers = HTTPHeaders()
                // Echo the protocol's subprotocol when offered (Firefox offers it).
                let offered = head.headers[canonicalForm: "sec-websocket-protocol"]
                if offered.contains(where: { $0.lowercased() == BrowserPushProtocol.subprotocol }) {
                    headers.add(name: "Sec-WebSocket-Protocol", value: BrowserPushProtocol.subprotocol)
                }
                return channel.eventLoop.makeSucceededFuture(headers)
            },
            upgradePipelineHandler: { channel, head in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    let http = try sync.context(handlerType: WebPushHTTP1Handler.self)
                    sync.removeHandler(context: http, promise: nil)
                    try WebSocketWriteCoalescer.insert(in: sync)
                    guard let origin = port.origin(host: head.headers.first(name: "host")) else {
                        throw WebPushUpgradeError.noHost
                    }
                    try sync.addHandler(NIOWebSocketFrameAggregator(
                        minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64,
                        maxAccumulatedFrameSize: BrowserPushProtocol.maximumMessageBytes))
                    try sync.addHandler(BrowserPushSessionHandler(port: port, origin: origin))
                }
            })
        try sync.configureHTTPServerPipeline(
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }), withErrorHandling: true)
        try sync.addHandler(WebPushHTTP1Handler(port: port))
    }
}

enum WebPushUpgradeError: Error { case noHost }

/// Closes a connection nothing was read from for the idle bound; passes every other event on
/// (a browser's session pings on the write-idle one).
private final class IdleCloser: ChannelInboundHandler {
    typealias InboundIn = Any
    let metrics: GatewayMetrics
    init(metrics: GatewayMetrics) { self.metrics = metrics }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case IdleStateHandler.IdleStateEvent.read = event {
            metrics.recordPeerClosed(port: "webpush", reason: "idle_timeout")
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
