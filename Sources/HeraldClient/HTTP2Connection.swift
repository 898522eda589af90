import HeraldCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// How the client secures a connection.
public struct ClientTLS: Sendable {
    /// A PEM file of trusted roots (the gateway's development CA); `nil` uses the system's roots.
    public var trustRootsPath: String?
    /// The ALPN protocols offered, in order.
    public var applicationProtocols: [String]
    /// The name sent in SNI and checked against the certificate.
    public var serverName: String?

    public init(trustRootsPath: String? = nil, applicationProtocols: [String] = ["h2"], serverName: String? = nil) {
        self.trustRootsPath = trustRootsPath
        self.applicationProtocols = applicationProtocols
        self.serverName = serverName
    }
}

/// A GOAWAY frame as received.
public struct GoAway: Sendable, Hashable {
    public var lastStreamID: Int
    public var errorCode: Int
    public var debugData: String
}

/// One HTTP/2 connection to an APNs-compatible server (Herald's gateway or Apple's), over TLS or
/// h2c with prior knowledge. Many requests may be in flight at once, one stream each.
public final class HTTP2Connection: Sendable {
    private let channel: Channel
    private let inlineMultiplexer: NIOHTTP2Handler.StreamMultiplexer
    private let observer: ConnectionObserver
    /// The ALPN protocol the server chose (`nil` on h2c).
    public let negotiatedProtocol: String?
    /// `host:port`, sent as `:authority`.
    private let authority: String

    private init(
        channel: Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, observer: ConnectionObserver,
        negotiatedProtocol: String?, authority: String
    ) {
        self.authority = authority
        self.channel = channel
        self.inlineMultiplexer = multiplexer
        self.observer = observer
        self.negotiatedProtocol = negotiatedProtocol
    }

    /// Connects; `tls` `nil` means h2c with prior knowledge.
    public static func connect(
        host: String, port: Int, tls: ClientTLS?, group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> HTTP2Connection {
        let sslContext: NIOSSLContext? = try tls.map { tls in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.applicationProtocols = tls.applicationProtocols
            if let roots = tls.trustRootsPath {
                configuration.trustRoots = .file(roots)
            }
            return try NIOSSLContext(configuration: configuration)
        }
        let serverName = tls?.serverName ?? (host.first?.isNumber == true || host.contains(":") ? nil : host)
        let observer = ConnectionObserver()
        let handshake = group.any().makePromise(of: String?.self)
        let multiplexerPromise = group.any().makePromise(of: NIOHTTP2Handler.StreamMultiplexer.self)
        let channel: Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(10))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        if let sslContext {
                            // The waiter goes in before the handshake can start, so it cannot miss it.
                            try sync.addHandlers(
                                try NIOSSLClientHandler(context: sslContext, serverHostname: serverName),
                                HandshakeWaiter(promise: handshake))
                        } else {
                            handshake.succeed(nil)
                        }
                        // HTTP/2 goes in at once too: the server's SETTINGS may follow the handshake
                        // immediately, and must not reach a pipeline that cannot read them.
                        let multiplexer = try sync.configureHTTP2Pipeline(
                            mode: .client, connectionConfiguration: .init(), streamConfiguration: .init()
                        ) { stream in stream.eventLoop.makeSucceededVoidFuture() }
                        try sync.addHandler(observer)
                        multiplexerPromise.succeed(multiplexer)
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            handshake.fail(error)
            multiplexerPromise.fail(error)
            throw error
        }
        let negotiated = try await handshake.futureResult.get()
        if sslContext != nil, negotiated != "h2" {
            try? await channel.close()
            throw HTTP2ConnectionError.noHTTP2(negotiated: negotiated)
        }
        let multiplexer = try await multiplexerPromise.futureResult.get()
        return HTTP2Connection(
            channel: channel, multiplexer: multiplexer, observer: observer, negotiatedProtocol: negotiated,
            authority: "\(host):\(port)")
    }

    /// Sends a request on a new stream and waits for the whole response.
    public func send(_ request: HTTP2Request) async throws -> HTTP2Response {
        let promise = channel.eventLoop.makePromise(of: HTTP2Response.self)
        inlineMultiplexer.createStreamChannel { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(ResponseCollector(promise: promise))
                let headers = self.headers(of: request)
                let endWithHeaders = request.body.isEmpty
                // A write the connection refuses (a stream opened just after the server's GOAWAY
                // arrived, say) must fail the request, or it would wait for an answer forever.
                let written = stream.eventLoop.makePromise(of: Void.self)
                written.futureResult.whenFailure { error in
                    stream.pipeline.fireErrorCaught(error)
                    stream.close(promise: nil)
                }
                stream.write(HTTP2Frame.FramePayload.headers(.init(headers: headers, endStream: endWithHeaders)),
                             promise: endWithHeaders ? written : nil)
                if !endWithHeaders {
                    var buffer = stream.allocator.buffer(capacity: request.body.count)
                    buffer.writeBytes(request.body)
                    stream.write(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(buffer), endStream: true)), promise: written)
                }
                stream.flush()
            }
        }.whenFailure { promise.fail($0) }
        return try await promise.futureResult.get()
    }

    /// Opens a stream and sends only the request's headers, without ending the stream; call
    /// ``PartialRequest/finish(body:)`` to send the body and read the answer.
    public func begin(_ request: HTTP2Request) async throws -> PartialRequest {
        let promise = channel.eventLoop.makePromise(of: HTTP2Response.self)
        let stream = try await inlineMultiplexer.createStreamChannel { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(ResponseCollector(promise: promise))
            }
        }.get()
        let headers = self.headers(of: request)
        try await stream.writeAndFlush(HTTP2Frame.FramePayload.headers(.init(headers: headers, endStream: false))).get()
        return PartialRequest(stream: stream, response: promise.futureResult)
    }

    /// The HEADERS block of a request: pseudo-headers, then the request's headers in order.
    private func headers(of request: HTTP2Request) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: request.method)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":path", value: request.path)
        headers.add(name: ":authority", value: authority)
        for (name, value) in request.headers { headers.add(name: name, value: value) }
        return headers
    }

    /// A request whose headers are sent and whose body is not.
    public struct PartialRequest: Sendable {
        let stream: Channel
        let response: EventLoopFuture<HTTP2Response>
        public func finish(body: [UInt8]) async throws -> HTTP2Response {
            var buffer = stream.allocator.buffer(capacity: body.count)
            buffer.writeBytes(body)
            try await stream.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(buffer), endStream: true))).get()
            return try await response.get()
        }
    }

    /// The latest `SETTINGS_MAX_CONCURRENT_STREAMS` the server announced.
    public var serverMaxConcurrentStreams: Int? { observer.maxConcurrentStreams }

    /// Waits until the server has announced `SETTINGS_MAX_CONCURRENT_STREAMS` == `value`.
    public func waitForServerMaxConcurrentStreams(_ value: Int) async {
        while observer.maxConcurrentStreams != value {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The GOAWAY the server sent, if any.
    public var goAway: GoAway? { observer.goAway }

    /// Waits for the server's GOAWAY.
    public func waitForGoAway() async -> GoAway {
        while true {
            if let goAway = observer.goAway { return goAway }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Sends a PING and waits for its ACK.
    public func ping() async throws {
        let promise = channel.eventLoop.makePromise(of: Void.self)
        let data = HTTP2PingData(withInteger: UInt64.random(in: 1...UInt64.max))
        observer.expectPong(data, promise: promise)
        try await channel.writeAndFlush(HTTP2Frame(streamID: .rootStream, payload: .ping(data, ack: false))).get()
        try await promise.futureResult.get()
    }

    /// Sends a PRIORITY frame for a stream id the client has not used (servers must ignore it).
    public func sendPriority(streamID: Int) async throws {
        let frame = HTTP2Frame(
            streamID: HTTP2StreamID(streamID),
            payload: .priority(.init(exclusive: false, dependency: .rootStream, weight: 16)))
        try await channel.writeAndFlush(frame).get()
    }

    /// Whether the connection is still open.
    public var isActive: Bool { channel.isActive }

    public func close() async {
        try? await channel.close()
    }
}

/// Waits for the TLS handshake's user event, then removes itself.
private final class HandshakeWaiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let promise: EventLoopPromise<String?>
    init(promise: EventLoopPromise<String?>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let negotiated) = event {
            promise.succeed(negotiated)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        promise.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }
}

/// Watches connection-level frames: SETTINGS, GOAWAY, PING acks.
private final class ConnectionObserver: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTP2Frame

    private struct State {
        var maxConcurrentStreams: Int?
        var goAway: GoAway?
        var pongs: [HTTP2PingData: EventLoopPromise<Void>] = [:]
    }
    private let state = NIOLockedValueBox(State())

    var maxConcurrentStreams: Int? { state.withLockedValue { $0.maxConcurrentStreams } }
    var goAway: GoAway? { state.withLockedValue { $0.goAway } }

    func expectPong(_ data: HTTP2PingData, promise: EventLoopPromise<Void>) {
        state.withLockedValue { $0.pongs[data] = promise }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                state.withLockedValue { $0.maxConcurrentStreams = setting.value }
            }
        case .goAway(let lastStreamID, let errorCode, let opaqueData):
            let debug = opaqueData.map { String(buffer: $0) } ?? ""
            state.withLockedValue {
                $0.goAway = GoAway(lastStreamID: Int(lastStreamID), errorCode: Int(errorCode.networkCode), debugData: debug)
            }
        case .ping(let data, ack: true):
            let promise = state.withLockedValue { $0.pongs.removeValue(forKey: data) }
            promise?.succeed()
        default:
            break
        }
        context.fireChannelRead(data)
    }
}

/// Collects one stream's response.
private final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    private let promise: EventLoopPromise<HTTP2Response>
    private var status: Int?
    private var headers: [(name: String, value: String)] = []
    private var body: [UInt8] = []
    private var endedWithHeaders = false
    private var done = false

    init(promise: EventLoopPromise<HTTP2Response>) { self.promise = promise }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            for (name, value, _) in frame.headers {
                if name == ":status" { status = Int(value) } else { headers.append((name, value)) }
            }
            if frame.endStream {
                endedWithHeaders = true
                finish()
            }
        case .data(let frame):
            if case .byteBuffer(let buffer) = frame.data { body.append(contentsOf: buffer.readableBytesView) }
            if frame.endStream { finish() }
        case .rstStream(let code):
            fail(HTTP2StreamReset(errorCode: Int(code.networkCode)))
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(HTTP2StreamReset(errorCode: -1))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        fail(error)
    }

    private func finish() {
        guard !done else { return }
        done = true
        promise.succeed(HTTP2Response(status: status ?? 0, headers: headers, body: body, endedWithHeaders: endedWithHeaders))
    }

    private func fail(_ error: Error) {
        guard !done else { return }
        done = true
        promise.fail(error)
    }
}

/// The server reset the stream (or the connection closed) before answering.
public struct HTTP2StreamReset: Error, Hashable, Sendable {
    /// The RST_STREAM error code, or -1 when the connection closed.
    public var errorCode: Int
}

/// The server did not agree to HTTP/2.
public enum HTTP2ConnectionError: Error, Hashable, Sendable {
    /// ALPN did not select `h2` (the protocol the server chose, if any).
    case noHTTP2(negotiated: String?)
}
