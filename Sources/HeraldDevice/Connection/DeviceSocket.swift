import HeraldCore
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// One WebSocket connection to a gateway's device port: frames in (as an async sequence) and
/// frames out. The protocol logic is ``DeviceConnection``'s.
public final class DeviceSocket: Sendable {
    public enum Event: Sendable {
        case frame(DeviceServerFrame)
        /// A frame from the gateway that could not be parsed.
        case malformed(String)
        /// Nothing came from the gateway for too long (a frozen node, a dead connection that TCP
        /// does not report); the connection is closed next.
        case timedOut(String)
        /// The connection closed (by either side).
        case closed
    }

    public let channel: Channel
    public let events: AsyncStream<Event>

    private init(channel: Channel, events: AsyncStream<Event>) {
        self.channel = channel
        self.events = events
    }

    /// Closes the connection when nothing is read from the gateway for `interval` (counted from
    /// now): ``DeviceConnection`` sets it from the ping interval the gateway's welcome announces.
    /// Until then the bound is the connect timeout, which covers TLS, the upgrade and the challenge.
    public func expectTraffic(within interval: TimeAmount) {
        let channel = self.channel
        channel.eventLoop.execute {
            guard let handler = try? channel.pipeline.syncOperations.handler(type: SilenceTimeoutHandler.self),
                  let context = try? channel.pipeline.syncOperations.context(handler: handler) else { return }
            handler.setTimeout(interval, context: context)
        }
    }

    /// Connects (TLS unless `tls` is nil) and upgrades to a WebSocket at ``DeviceProtocol/path``.
    /// `acknowledgeOnReceipt`: ack each notification as soon as it is read (once per read burst);
    /// otherwise the caller acks with ``acknowledge(_:)`` once it has handled it.
    ///
    /// `localAddress`: the source address to connect from (a load generator spreads connections
    /// over several loopback addresses, since one address pair has ~28,000 ports).
    public static func connect(
        host: String, port: Int, tls: NIOSSLContext?, serverHostname: String? = nil,
        group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton, timeout: TimeAmount = .seconds(10),
        acknowledgeOnReceipt: Bool = true, localAddress: SocketAddress? = nil
    ) async throws -> DeviceSocket {
        try await connect(
            path: DeviceProtocol.path, host: host, port: port, tls: tls, serverHostname: serverHostname, group: group,
            timeout: timeout, acknowledgeOnReceipt: acknowledgeOnReceipt, localAddress: localAddress)
    }

    /// Connects to another path (tests of the gateway's refusal).
    public static func connectForTesting(path: String, host: String, port: Int, tls: NIOSSLContext?) async throws -> DeviceSocket {
        try await connect(
            path: path, host: host, port: port, tls: tls, serverHostname: nil, group: MultiThreadedEventLoopGroup.singleton,
            timeout: .seconds(10), acknowledgeOnReceipt: true, localAddress: nil)
    }

    private static func connect(
        path: String, host: String, port: Int, tls: NIOSSLContext?, serverHostname: String?,
        group: EventLoopGroup, timeout: TimeAmount, acknowledgeOnReceipt: Bool, localAddress: SocketAddress?
    ) async throws -> DeviceSocket {
        let host = HostName.unbracketed(host)
        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        let upgraded = group.any().makePromise(of: Void.self)
        var bootstrap = ClientBootstrap(group: group)
        if let localAddress { bootstrap = bootstrap.bind(to: localAddress) }
        bootstrap = bootstrap
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(SilenceTimeoutHandler(timeout: timeout) { bound in
                        let message = "nothing from the gateway for \(bound.nanoseconds / 1_000_000) ms: the connection is dead or the node is stalled"
                        // Before the upgrade the connect fails with it; after, the session ends with it.
                        upgraded.fail(DeviceError(message))
                        continuation.yield(.timedOut(message))
                    })
                    if let tls {
                        let hostname = serverHostname ?? HostName.serverName(host)
                        try sync.addHandler(NIOSSLClientHandler(context: tls, serverHostname: hostname))
                    }
                    let request = UpgradeRequestHandler(path: path, host: host, port: port, upgraded: upgraded)
                    let upgrader = NIOWebSocketClientUpgrader(
                        maxFrameSize: DeviceProtocol.maximumFrameSize, automaticErrorHandling: true,
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                let sync = channel.pipeline.syncOperations
                                try sync.addHandler(NIOWebSocketFrameAggregator(
                                    minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64,
                                    maxAccumulatedFrameSize: DeviceProtocol.maximumFrameSize))
                                try sync.addHandler(DeviceSocketHandler(continuation: continuation, acknowledgeOnReceipt: acknowledgeOnReceipt))
                            }
                        })
                    try sync.addHTTPClientHandlers(
                        leftOverBytesStrategy: .forwardBytes,
                        withClientUpgrade: (upgraders: [upgrader], completionHandler: { context in
                            context.pipeline.syncOperations.removeHandler(request, promise: nil)
                            upgraded.succeed(())
                        }))
                    try sync.addHandler(request)
                }
            }
        let channel: Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            upgraded.fail(error)
            continuation.finish()
            throw error
        }
        channel.closeFuture.whenComplete { _ in
            upgraded.fail(DeviceError("the gateway closed the connection before the WebSocket upgrade"))
            continuation.yield(.closed)
            continuation.finish()
        }
        do {
            try await upgraded.futureResult.get()
        } catch {
            channel.close(promise: nil)
            throw error
        }
        return DeviceSocket(channel: channel, events: events)
    }

    /// Sends a frame (masked, as a client must).
    public func send(_ frame: DeviceClientFrame) {
        let bytes = frame.encoded()
        let channel = self.channel
        channel.eventLoop.execute {
            let frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: channel.allocator.webSocketPayload(bytes))
            channel.writeAndFlush(frame, promise: nil)
        }
    }

    /// Acks notifications the caller has handled: one ack frame per 1,024 ids.
    public func acknowledge(_ ids: [NotificationID]) {
        guard !ids.isEmpty else { return }
        let channel = self.channel
        channel.eventLoop.execute {
            var start = ids.startIndex
            while start < ids.endIndex {
                let end = min(start + DeviceProtocol.maximumAcksPerFrame, ids.endIndex)
                let bytes = DeviceClientFrame.ack(ids: Array(ids[start..<end])).encoded()
                channel.write(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: channel.allocator.webSocketPayload(bytes)), promise: nil)
                start = end
            }
            channel.flush()
        }
    }

    /// Sends raw bytes as one text frame (for tests of malformed frames).
    public func sendRaw(text bytes: [UInt8]) {
        let channel = self.channel
        channel.eventLoop.execute {
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: channel.allocator.webSocketPayload(bytes)), promise: nil)
        }
    }

    /// Closes with a WebSocket close frame.
    public func close() async {
        let channel = self.channel
        let closeFrame = channel.eventLoop.submit {
            var buffer = channel.allocator.buffer(capacity: 2)
            buffer.write(webSocketErrorCode: .normalClosure)
            return channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: buffer))
        }
        _ = try? await closeFrame.get().get()
        try? await channel.close()
    }
}

/// Sends the upgrade request once the connection is up; fails the upgrade on any other answer.
private final class UpgradeRequestHandler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let path: String
    private let host: String
    private let port: Int
    private let upgraded: EventLoopPromise<Void>

    init(path: String, host: String, port: Int, upgraded: EventLoopPromise<Void>) {
        self.path = path
        self.host = host
        self.port = port
        self.upgraded = upgraded
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: HostName.authority(host, port: port))
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let response) = unwrapInboundIn(data) {
            upgraded.fail(DeviceError("the gateway answered HTTP \(response.status.code) instead of upgrading to a WebSocket"))
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        upgraded.fail(error)
        context.close(promise: nil)
    }
}

/// Turns WebSocket frames into ``DeviceSocket/Event``s; answers pings; acks every notification
/// it has handed on (the device runtime drops repeats by apns-id).
private final class DeviceSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let continuation: AsyncStream<DeviceSocket.Event>.Continuation
    private let acknowledgeOnReceipt: Bool
    /// Notifications read since the last ack: acked together once the read burst ends.
    private var unacked: [NotificationID] = []

    init(continuation: AsyncStream<DeviceSocket.Event>.Continuation, acknowledgeOnReceipt: Bool) {
        self.continuation = continuation
        self.acknowledgeOnReceipt = acknowledgeOnReceipt
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if !unacked.isEmpty {
            // One ack frame per read burst (and per 1024 ids), rather than one per notification.
            var start = unacked.startIndex
            while start < unacked.endIndex {
                let end = min(start + DeviceProtocol.maximumAcksPerFrame, unacked.endIndex)
                let bytes = DeviceClientFrame.ack(ids: Array(unacked[start..<end])).encoded()
                let payload = context.channel.allocator.webSocketPayload(bytes)
                context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: payload)), promise: nil)
                start = end
            }
            unacked.removeAll(keepingCapacity: true)
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            var data = frame.unmaskedData
            let bytes = data.readBytes(length: data.readableBytes) ?? []
            switch DeviceServerFrame.decode(bytes) {
            case .success(let decoded):
                if acknowledgeOnReceipt, case .notification(let n) = decoded { unacked.append(n.apnsID) }
                continuation.yield(.frame(decoded))
            case .failure(let error): continuation.yield(.malformed(error.message))
            }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        continuation.yield(.malformed("\(error)"))
        context.close(promise: nil)
    }
}
