import HeraldCore
import HeraldNIO
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// The Web Push port's HTTP/1.1 requests: reads a head and a body of at most 4096 bytes, has
/// ``WebPushExchange`` answer, writes the answer. A body declared too large is refused from the
/// head, and the connection closed after the answer (its body is never read).
final class WebPushHTTP1Handler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let exchange: WebPushExchange
    private var head: HTTPRequestHead?
    private var received = WebPushRequest(method: "", path: "", headers: [], host: nil, declaredLength: nil, body: [], bodyLength: 0)
    private var answeredEarly = false

    init(port: WebPushPort) { exchange = WebPushExchange(port: port) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            received = WebPushRequest(
                method: head.method.rawValue, path: head.uri, headers: head.headers.map { (name: $0.name.lowercased(), value: $0.value) },
                host: head.headers.first(name: "host"), declaredLength: Self.declaredLength(head), body: [], bodyLength: 0)
            answeredEarly = false
            if let answer = exchange.answerFromHead(declaredLength: received.declaredLength) {
                answeredEarly = true
                write(answer, version: head.version, context: context, close: true)
            }
        case .body(var chunk):
            guard !answeredEarly else { return }
            received.appendBody(&chunk)
        case .end:
            guard let head, !answeredEarly else { return }
            self.head = nil
            let request = received
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            exchange.answer(request, on: context.eventLoop).whenSuccess { answer in
                let (handler, context) = bound.value
                handler.write(answer, version: head.version, context: context, close: false)
            }
        }
    }

    private static func declaredLength(_ head: HTTPRequestHead) -> Int? {
        head.headers.first(name: "content-length").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    private func write(_ answer: WebPushAnswer, version: HTTPVersion, context: ChannelHandlerContext, close: Bool) {
        var headers = HTTPHeaders(answer.headers)
        headers.add(name: "content-length", value: String(answer.body.count))
        if close { headers.add(name: "connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: answer.status), headers: headers))), promise: nil)
        if !answer.body.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: answer.body.count)
            buffer.writeBytes(answer.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if close { channel.close(promise: nil) }
        }
    }
}

/// One HTTP/2 request on the Web Push port, in the connection's ``HTTP2StreamTable``
/// (``table(port:)``; no child channel per stream: as on the APNs port, that was most of the
/// event loop's time): collects the stream's head and body, has ``WebPushExchange`` answer, and
/// writes HEADERS (and DATA) on the stream while it is open.
final class WebPushStream: HTTP2TableStream {
    private let id: HTTP2StreamID
    private let exchange: WebPushExchange
    private var request = WebPushRequest(method: "", path: "", headers: [], host: nil, declaredLength: nil, body: [], bodyLength: 0)
    private var sawHeaders = false
    /// Answered (from the head, or once complete): what else arrives is dropped.
    private var answered = false
    /// Reset or closed: an answer that comes later is not written.
    private var isClosed = false

    init(id: HTTP2StreamID, exchange: WebPushExchange) {
        self.id = id
        self.exchange = exchange
    }

    /// The request table of one Web Push connection over HTTP/2.
    /// The request table of one connection: a stream made at each first HEADERS, the
    /// connection told how many are open (its idle timer and drain).
    static func table(port: WebPushPort, connection: HTTP2ServerConnection) -> HTTP2StreamTable {
        let exchange = WebPushExchange(port: port)
        return HTTP2StreamTable(
            accept: { id in WebPushStream(id: id, exchange: exchange) },
            onStreamCreated: { connection.streamCreated($0) }, onStreamClosed: { connection.streamClosed($0) })
    }

    func receive(_ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext) {
        guard !answered else { return }
        switch payload {
        case .headers(let headers):
            if !sawHeaders {
                sawHeaders = true
                read(headers.headers)
                if let answer = exchange.answerFromHead(declaredLength: request.declaredLength) {
                    answered = true
                    return write(answer, context: context)
                }
            }
            if headers.endStream { complete(context: context) }
        case .data(let data):
            if case .byteBuffer(var buffer) = data.data { request.appendBody(&buffer) }
            if data.endStream { complete(context: context) }
        default:
            break
        }
    }

    func streamClosed(reason: HTTP2ErrorCode?) { isClosed = true }

    private func read(_ headers: HPACKHeaders) {
        for (name, value, _) in headers {
            switch name {
            case ":method": request.method = value
            case ":path": request.path = value
            case ":authority": request.host = value
            case "content-length": request.declaredLength = Int(value)
            default:
                if !name.hasPrefix(":") { request.headers.append((name: name, value: value)) }
            }
        }
    }

    private func complete(context: ChannelHandlerContext) {
        answered = true
        // HTTP/2 frames the body: a request may leave its length out.
        if request.declaredLength == nil { request.declaredLength = request.bodyLength }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        exchange.answer(request, on: context.eventLoop).whenSuccess { answer in
            let (stream, context) = bound.value
            // A stream reset or closed meanwhile gets nothing.
            guard !stream.isClosed else { return }
            stream.write(answer, context: context)
        }
    }

    private func write(_ answer: WebPushAnswer, context: ChannelHandlerContext) {
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(answer.status))
        for (name, value) in answer.headers {
            headers.add(name: name, value: value, indexing: name == "location" || name == "link" ? .nonIndexable : .indexable)
        }
        if answer.body.isEmpty {
            context.writeAndFlush(NIOAny(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers, endStream: true)))), promise: nil)
            return
        }
        headers.add(name: "content-length", value: String(answer.body.count))
        var buffer = context.channel.allocator.buffer(capacity: answer.body.count)
        buffer.writeBytes(answer.body)
        context.write(NIOAny(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers)))), promise: nil)
        context.writeAndFlush(NIOAny(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(buffer), endStream: true)))), promise: nil)
    }
}
