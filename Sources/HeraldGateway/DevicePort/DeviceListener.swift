import HeraldCore
import HeraldDashboard
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// The device port: WebSocket over TLS at ``DeviceProtocol/path``, one connection per device.
final class DeviceListener: Sendable {
    let serverChannel: Channel
    private let connections: Locked<[ObjectIdentifier: Channel]>

    var port: Int { serverChannel.localAddress?.port ?? 0 }

    private init(serverChannel: Channel, connections: Locked<[ObjectIdentifier: Channel]>) {
        self.serverChannel = serverChannel
        self.connections = connections
    }

    static func bind(host: String, port: Int, tls: NIOSSLContext, devicePort: DevicePort, group: EventLoopGroup) async throws -> DeviceListener {
        let connections = Locked([ObjectIdentifier: Channel]())
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // Large buffers (NIO SSL's) are resident only where written: 35 -> 32.5 KiB per idle device.
            .childChannelOption(.allocator, value: .lazyLargePages)
            // A device that does not read: past the high mark the session is closed (slow reader).
            .childChannelOption(.writeBufferWaterMark, value: .init(
                low: devicePort.limits.deviceOutboundBytes / 2, high: devicePort.limits.deviceOutboundBytes))
            .childChannelInitializer { channel in
                let limits = devicePort.limits, metrics = devicePort.metrics
                guard devicePort.connectionsPerAddress.admit(channel) else {
                    metrics.recordPeerClosed(port: "device", reason: "per_address_limit")
                    return channel.eventLoop.makeFailedFuture(TooManyConnectionsFromAddress(limit: limits.deviceConnectionsPerAddress))
                }
                let upgrader = NIOWebSocketServerUpgrader(
                    maxFrameSize: DeviceProtocol.maximumFrameSize, automaticErrorHandling: false,
                    shouldUpgrade: { channel, head in
                        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
                        return channel.eventLoop.makeSucceededFuture(path == DeviceProtocol.path ? HTTPHeaders() : nil)
                    },
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            let sync = channel.pipeline.syncOperations
                            let http = try sync.context(handlerType: DevicePortHTTPHandler.self)
                            sync.removeHandler(context: http, promise: nil)
                            try sync.addHandler(NIOWebSocketFrameAggregator(
                                minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64,
                                maxAccumulatedFrameSize: DeviceProtocol.maximumFrameSize))
                            try sync.addHandler(IdleStateHandler(
                                readTimeout: devicePort.idleTimeout, writeTimeout: devicePort.pingInterval))
                            try sync.addHandler(DeviceSessionHandler(port: devicePort))
                        }
                    })
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    // TLS, the upgrade and the answer to the challenge, all within the deadline.
                    try sync.addHandler(ConnectionDeadline(timeout: limits.deviceHelloTimeout, milestone: .declared) {
                        metrics.recordPeerClosed(port: "device", reason: "hello_timeout")
                    })
                    try sync.addHandler(NIOSSLServerHandler(context: tls))
                    try sync.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }), withErrorHandling: true)
                    try sync.addHandler(DevicePortHTTPHandler())
                    let id = ObjectIdentifier(channel)
                    connections.withLock { $0[id] = channel }
                    channel.closeFuture.whenComplete { _ in connections.withLock { $0[id] = nil } }
                }
            }
        let serverChannel = try await bootstrap.bind(host: host, port: port).get()
        return DeviceListener(serverChannel: serverChannel, connections: connections)
    }

    /// Stops accepting; closes connections that never became device sessions. Sessions are
    /// closed by the registry with a `shutdown` error frame.
    func close() async {
        try? await serverChannel.close()
    }

    /// Waits (up to `timeout`) for every connection to close, then closes what is left.
    func waitForConnectionsToClose(timeout: TimeAmount) async {
        let deadline = NIODeadline.now() + timeout
        while NIODeadline.now() < deadline {
            if connections.withLock({ $0.isEmpty }) { return }
            try? await Task.sleep(for: .milliseconds(20))
        }
        for channel in connections.withLock({ Array($0.values) }) { try? await channel.close() }
    }
}

/// Answers plain HTTP requests on the device port (anything but the WebSocket upgrade): the
/// browser device's page at `/` and its assets (``BrowserDevice``), 404 for anything else.
/// Each connection answers one request and is closed.
private final class DevicePortHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Rendered once: the page reads nothing from the server.
    private static let devicePage = BrowserDevice.page()
    private var head: HTTPRequestHead?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            let path = head.map { $0.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? $0.uri } ?? ""
            let method = head?.method
            if method == .GET || method == .HEAD, path == "/" {
                return respond(.ok, Self.devicePage, type: "text/html; charset=utf-8", context: context)
            }
            if method == .GET || method == .HEAD, path.hasPrefix("/assets/"),
               let asset = DashboardAssets.asset(named: String(path.dropFirst("/assets/".count))) {
                return respond(.ok, asset.body, type: asset.contentType, context: context)
            }
            respond(.notFound, "This is Herald's device port: open a WebSocket at \(DeviceProtocol.path) (see docs/device-protocol.md), or / for a device in this browser.\n",
                    type: "text/plain; charset=utf-8", context: context)
        }
    }

    private func respond(_ status: HTTPResponseStatus, _ body: String, type: String, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(DashboardAssets.securityHeaders)
        headers.add(name: "content-type", value: type)
        headers.add(name: "content-length", value: String(body.utf8.count))
        headers.add(name: "connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        if head?.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
