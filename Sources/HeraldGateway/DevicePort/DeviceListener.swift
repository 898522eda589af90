import HeraldCore
import HeraldDashboard
import HeraldHTTP
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// The device port: WebSocket over TLS at ``DeviceProtocol/path``, one connection per device.
/// Builds each connection's pipeline; the listener is a ``BoundListener``.
enum DeviceListener {
    /// The receive buffer each device connection keeps (heaptrack, issue 48: 2,064 bytes a
    /// connection with NIO's default, the largest single allocation Herald chooses).
    static let receiveBufferBytes = 512

    static func bind(host: String, port: Int, tls: ReloadableTLSContext, devicePort: DevicePort, group: EventLoopGroup, keepalive: KeepaliveWheels) async throws -> BoundListener {
        let connections = OpenConnections()
        let gate = HandshakeGate(limit: devicePort.limits.deviceHandshakesInFlight, perAddress: devicePort.limits.deviceHandshakesInFlightPerAddress)
        let pageResponder = DevicePortPage.router().buildResponder()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Large buffers (NIO SSL's) are resident only where written: 35 -> 32.5 KiB per idle device.
            .childChannelOption(.allocator, value: .lazyLargePages)
            // Each connection keeps its receive buffer for good (NIO pools it per channel): 2 KiB
            // by default, though a device sends a few hundred bytes at a time (acks, pongs). A
            // larger read takes more reads of this size in the same wake-up.
            .childChannelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: receiveBufferBytes))
            // A device that does not read: past the high mark the session is closed (slow reader).
            .childChannelOption(.writeBufferWaterMark, value: .init(
                low: devicePort.limits.deviceOutboundBytes / 2, high: devicePort.limits.deviceOutboundBytes))
            .childChannelInitializer { channel in
                let limits = devicePort.limits, metrics = devicePort.metrics
                if let refusal = devicePort.connectionsPerAddress.admit(channel) {
                    metrics.recordPeerClosed(port: "device", reason: refusal.metricReason)
                    return channel.eventLoop.makeFailedFuture(refusal)
                }
                let upgrader = NIOWebSocketServerUpgrader(
                    maxFrameSize: DeviceProtocol.maximumFrameSize, automaticErrorHandling: false,
                    shouldUpgrade: { channel, head in
                        channel.eventLoop.makeSucceededFuture(QueryString.path(of: head.uri) == DeviceProtocol.path ? HTTPHeaders() : nil)
                    },
                    upgradePipelineHandler: { channel, head in
                        channel.eventLoop.makeCompletedFuture {
                            let sync = channel.pipeline.syncOperations
                            let http = try sync.context(handlerType: ResponderHandler.self)
                            sync.removeHandler(context: http, promise: nil)
                            try WebSocketWriteCoalescer.insert(in: sync)
                            try sync.addHandler(NIOWebSocketFrameAggregator(
                                minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64,
                                maxAccumulatedFrameSize: DeviceProtocol.maximumFrameSize))
                            try sync.addHandler(KeepaliveHandler(
                                pingInterval: devicePort.keepalive.interval, idleTimeout: devicePort.keepalive.idleTimeout,
                                wheel: keepalive.wheel(on: channel.eventLoop)))
                            try sync.addHandler(DeviceSessionHandler(port: devicePort, host: head.headers.first(name: "host")))
                        }
                    })
                guard let release = gate.admit(listener: channel.parent, address: channel.remoteAddress?.ipAddress ?? "?") else {
                    metrics.recordPeerClosed(port: "device", reason: "per_address_handshakes")
                    return channel.eventLoop.makeFailedFuture(TooManyHandshakesFromAddress(limit: limits.deviceHandshakesInFlightPerAddress))
                }
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    // TLS, the upgrade and the answer to the challenge, all within the deadline.
                    try sync.addHandler(ConnectionDeadline(
                        timeout: limits.deviceHelloTimeout, milestone: .declared,
                        onExpiry: { metrics.recordPeerClosed(port: "device", reason: "hello_timeout") },
                        onDone: release))
                    try sync.addHandler(ConnectionDeadline(
                        timeout: limits.deviceFirstBytesTimeout, milestone: .firstBytes,
                        onExpiry: { metrics.recordPeerClosed(port: "device", reason: "silent_after_accept") }))
                    try sync.addHandler(NIOSSLServerHandler(context: tls.current))
                    try sync.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }), withErrorHandling: true)
                    try sync.addHandler(ResponderHandler(responder: pageResponder, logger: devicePort.logger))
                    connections.track(channel)
                    metrics.connectionSetup.succeeded(port: "device")
                }
            }
        return try await BoundListener.bind(
            bootstrap, host: host, port: port, name: "device", connections: connections, metrics: devicePort.metrics, logger: devicePort.logger)
    }
}

/// What the device port answers to plain HTTP requests (anything but the WebSocket upgrade): the
/// browser device's page at `/` and its assets (``BrowserDevice``), 404 for anything else. Served
/// by ``ResponderHandler`` at the end of the device port's pipeline.
enum DevicePortPage {
    /// Rendered once: the page reads nothing from the server.
    private static let page = BrowserDevice.page()

    static func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: NotFound())
        router.get("/") { _, _ in WebResponse.page(.ok, page) }
        WebResponse.registerAssets(on: router)
        return router
    }

    struct NotFound<Context: RequestContext>: RouterMiddleware {
        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            do {
                return try await next(request, context)
            } catch let error as HTTPError where error.status == .notFound {
                return WebResponse.text(.notFound, "This is Herald's device port: open a WebSocket at \(DeviceProtocol.path) (see docs/device-protocol.md), or / for a device in this browser.")
            }
        }
    }
}
