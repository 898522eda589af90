import HeraldCore
import HeraldNIO
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// A GOAWAY frame as received.
public struct GoAway: Sendable, Hashable {
    public var lastStreamID: Int
    public var errorCode: Int
    public var debugData: String
}

/// One HTTP/2 connection to an APNs-compatible server (Herald's gateway or Apple's), over TLS or
/// h2c with prior knowledge. Many requests may be in flight at once, one stream each.
///
/// Streams are frames on the connection, not channels: an ``HTTP2StreamTable`` after SwiftNIO's
/// HTTP/2 handler (the one request table the gateway's ports use too) gathers each answer and
/// returns the flow-control window the answers used; a ``RequestStarter`` numbers the streams and
/// writes their frames. Creating a child channel per request (SwiftNIO's stream
/// multiplexer) was most of the client's CPU per push.
public final class HTTP2Connection: Sendable {
    private let channel: Channel
    private let streams: NIOLoopBound<RequestStarter>
    private let observer: ConnectionObserver
    /// The ALPN protocol the server chose (`nil` on h2c).
    public let negotiatedProtocol: String?

    private init(channel: Channel, streams: NIOLoopBound<RequestStarter>, observer: ConnectionObserver, negotiatedProtocol: String?) {
        self.channel = channel
        self.streams = streams
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
            if let chain = tls.certificateChainPath, let key = tls.privateKeyPath {
                configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(chain).map { .certificate($0) }
                configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            }
            return try NIOSSLContext(configuration: configuration)
        }
        let serverName = tls?.serverName ?? HostName.serverName(host)
        let observer = ConnectionObserver()
        let authority = HostName.authority(host, port: port)
        let host = HostName.unbracketed(host)
        let handshake = group.any().makePromise(of: String?.self)
        let tablePromise = group.any().makePromise(of: NIOLoopBound<RequestStarter>.self)
        let channel: Channel
        do {
            channel = try await ClientBootstrap(group: group)
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
                        // Requests are started by tasks outside the event loop, each flushing the
                        // connection: coalesced, the requests started in one loop iteration go out
                        // in one TLS record and one system call.
                        try sync.addHandler(FlushCoalescingHandler())
                        // HTTP/2 goes in at once too: the server's SETTINGS may follow the handshake
                        // immediately, and must not reach a pipeline that cannot read them.
                        try sync.addHandler(NIOHTTP2Handler(mode: .client))
                        let table = HTTP2StreamTable()
                        let starter = RequestStarter(authority: authority, table: table)
                        try sync.addHandlers(table, starter, observer)
                        tablePromise.succeed(NIOLoopBound(starter, eventLoop: channel.eventLoop))
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            handshake.fail(error)
            tablePromise.fail(error)
            throw error
        }
        let negotiated = try await handshake.futureResult.get()
        if sslContext != nil, negotiated != "h2" {
            try? await channel.close()
            throw HTTP2ConnectionError.noHTTP2(negotiated: negotiated)
        }
        let streams = try await tablePromise.futureResult.get()
        return HTTP2Connection(channel: channel, streams: streams, observer: observer, negotiatedProtocol: negotiated)
    }

    /// Sends a request on a new stream and waits for the whole response.
    public func send(_ request: HTTP2Request) async throws -> HTTP2Response {
        let answer = channel.eventLoop.makePromise(of: HTTP2Response.self)
        let streams = self.streams
        channel.eventLoop.execute {
            streams.value.start(request, sendingBody: true, answer: answer, opened: nil)
        }
        return try await answer.futureResult.get()
    }

    /// Opens a stream and sends only the request's headers, without ending the stream; call
    /// ``PartialRequest/finish(body:)`` to send the body and read the answer.
    public func begin(_ request: HTTP2Request) async throws -> PartialRequest {
        let answer = channel.eventLoop.makePromise(of: HTTP2Response.self)
        let opened = channel.eventLoop.makePromise(of: HTTP2StreamID.self)
        let streams = self.streams
        channel.eventLoop.execute {
            streams.value.start(request, sendingBody: false, answer: answer, opened: opened)
        }
        let id = try await opened.futureResult.get()
        return PartialRequest(streams: streams, streamID: id, response: answer.futureResult)
    }

    /// A request whose headers are sent and whose body is not.
    public struct PartialRequest: Sendable {
        let streams: NIOLoopBound<RequestStarter>
        let streamID: HTTP2StreamID
        let response: EventLoopFuture<HTTP2Response>
        public func finish(body: [UInt8]) async throws -> HTTP2Response {
            let written = response.eventLoop.makePromise(of: Void.self)
            let (streams, id) = (self.streams, streamID)
            response.eventLoop.execute { streams.value.finish(id, body: body, written: written) }
            try await written.futureResult.get()
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

/// Starts the requests of one connection; used on the connection's event loop only.
///
/// It numbers new streams (odd ids, rising), adds each to the connection's ``HTTP2StreamTable``
/// as a ``ClientStream`` and writes its HEADERS and DATA. The table (before it in the pipeline)
/// hands each response's frames to its stream and returns the window they used; frames of the
/// connection itself (SETTINGS, PING, GOAWAY) go on to the ``ConnectionObserver``.
final class RequestStarter: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let authority: String
    private let table: HTTP2StreamTable
    private var context: ChannelHandlerContext?
    private var nextStreamID: Int32 = 1
    private var closed = false

    init(authority: String, table: HTTP2StreamTable) {
        self.authority = authority
        self.table = table
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        context.fireChannelInactive()
    }

    /// Opens a stream: HEADERS, then the body when `sendingBody` (an empty body ends the stream
    /// with the HEADERS). `opened` learns the stream's id once its HEADERS are written.
    func start(_ request: HTTP2Request, sendingBody: Bool, answer: EventLoopPromise<HTTP2Response>, opened: EventLoopPromise<HTTP2StreamID>?) {
        guard let context, !closed else {
            opened?.fail(ChannelError.ioOnClosedChannel)
            answer.fail(ChannelError.ioOnClosedChannel)
            return
        }
        guard nextStreamID > 0 else {
            // 2^30 requests on one connection: the ids are spent; a new connection is needed.
            opened?.fail(HTTP2ConnectionError.streamIDsExhausted)
            answer.fail(HTTP2ConnectionError.streamIDsExhausted)
            return
        }
        let id = HTTP2StreamID(nextStreamID)
        nextStreamID = nextStreamID <= Int32.max - 2 ? nextStreamID + 2 : -1
        table.open(ClientStream(answer: answer), on: id)
        let endWithHeaders = sendingBody && request.body.isEmpty
        let headersWritten = context.eventLoop.makePromise(of: Void.self)
        // A write the connection refuses (a stream opened after the server's GOAWAY, say) must fail
        // the request, or it would wait for an answer forever.
        headersWritten.futureResult.assumeIsolated().whenComplete { result in
            switch result {
            case .success: opened?.succeed(id)
            case .failure(let error):
                opened?.fail(error)
                self.fail(id, answer, error)
            }
        }
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers(of: request), endStream: endWithHeaders)))),
                      promise: headersWritten)
        if sendingBody && !endWithHeaders { writeBody(request.body, on: id, answer: answer, context: context, written: nil) }
        context.flush()
    }

    /// Sends the body of a stream opened by `start(…, sendingBody: false, …)`.
    func finish(_ id: HTTP2StreamID, body: [UInt8], written: EventLoopPromise<Void>) {
        guard let context, !closed else { return written.fail(ChannelError.ioOnClosedChannel) }
        writeBody(body, on: id, answer: nil, context: context, written: written)
        context.flush()
    }

    private func writeBody(
        _ body: [UInt8], on id: HTTP2StreamID, answer: EventLoopPromise<HTTP2Response>?, context: ChannelHandlerContext,
        written: EventLoopPromise<Void>?
    ) {
        var buffer = context.channel.allocator.buffer(capacity: body.count)
        buffer.writeBytes(body)
        let promise = written ?? context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.assumeIsolated().whenFailure { error in self.fail(id, answer, error) }
        context.write(wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(buffer), endStream: true)))),
                      promise: promise)
    }

    /// A stream whose frames could not be written: its request fails (with the write's error
    /// when its promise is at hand, else as a reset stream).
    private func fail(_ id: HTTP2StreamID, _ answer: EventLoopPromise<HTTP2Response>?, _ error: Error) {
        if let answer {
            table.forget(id)
            answer.fail(error)
        } else {
            table.close(id)
        }
    }

    /// The HEADERS block of a request: pseudo-headers, then the request's headers in order.
    private func headers(of request: HTTP2Request) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(4 + request.headers.count)
        headers.add(name: ":method", value: request.method)
        headers.add(name: ":scheme", value: "https")
        // Values that differ on every request (a device's path, a notification's id) are sent as
        // literals without indexing: entering them in the HPACK tables would only evict the values
        // that repeat (authorization, topic) and cost both sides an insertion per request.
        headers.add(name: ":path", value: request.path, indexing: .nonIndexable)
        headers.add(name: ":authority", value: authority)
        for (name, value) in request.headers {
            headers.add(name: name, value: value, indexing: name == "apns-id" ? .nonIndexable : .indexable)
        }
        return headers
    }
}

/// One request's response, gathered from its stream's frames; fails when the stream is reset,
/// refused (GOAWAY) or closed with the connection before the response ended.
final class ClientStream: HTTP2TableStream {
    private let answer: EventLoopPromise<HTTP2Response>
    private var status: Int?
    private var headers: [(name: String, value: String)] = []
    private var body: [UInt8] = []
    private var done = false

    init(answer: EventLoopPromise<HTTP2Response>) { self.answer = answer }

    func receive(_ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext) {
        guard !done else { return }
        switch payload {
        case .headers(let frame):
            for (name, value, _) in frame.headers {
                if name == ":status" { status = Int(value) } else { headers.append((name, value)) }
            }
            if frame.endStream { complete(endedWithHeaders: true) }
        case .data(let data):
            if case .byteBuffer(let buffer) = data.data { body.append(contentsOf: buffer.readableBytesView) }
            if data.endStream { complete(endedWithHeaders: false) }
        case .rstStream(let code):
            fail(HTTP2StreamReset(errorCode: Int(code.networkCode)))
        default:
            break
        }
    }

    func streamClosed(reason: HTTP2ErrorCode?) {
        fail(HTTP2StreamReset(errorCode: reason.map { Int($0.networkCode) } ?? -1))
    }

    private func complete(endedWithHeaders: Bool) {
        done = true
        answer.succeed(HTTP2Response(status: status ?? 0, headers: headers, body: body, endedWithHeaders: endedWithHeaders))
    }

    private func fail(_ error: Error) {
        guard !done else { return }
        done = true
        answer.fail(error)
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
    private let state = Locked(State())

    var maxConcurrentStreams: Int? { state.withLock { $0.maxConcurrentStreams } }
    var goAway: GoAway? { state.withLock { $0.goAway } }

    func expectPong(_ data: HTTP2PingData, promise: EventLoopPromise<Void>) {
        state.withLock { $0.pongs[data] = promise }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                state.withLock { $0.maxConcurrentStreams = setting.value }
            }
        case .goAway(let lastStreamID, let errorCode, let opaqueData):
            let debug = opaqueData.map { String(buffer: $0) } ?? ""
            state.withLock {
                $0.goAway = GoAway(lastStreamID: Int(lastStreamID), errorCode: Int(errorCode.networkCode), debugData: debug)
            }
        case .ping(let data, ack: true):
            let promise = state.withLock { $0.pongs.removeValue(forKey: data) }
            promise?.succeed()
        default:
            break
        }
        context.fireChannelRead(data)
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
    /// Every client stream id of the connection is used (2^30 requests); open a new connection.
    case streamIDsExhausted
}
