import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1

/// Answers HTTP/1 requests that arrive on a raw SwiftNIO pipeline with a Hummingbird router: for
/// a port whose main protocol is not HTTP/1 (the device port, where a request that is not the
/// WebSocket upgrade asks for the browser device's page). Bodies up to `maximumBody` bytes are
/// read (more: 413); each connection answers one request and is closed.
public final class ResponderHandler: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPServerRequestPart
    public typealias OutboundOut = HTTPServerResponsePart

    private let responder: RouterResponder<BasicRequestContext>
    private let logger: Logger
    private let maximumBody: Int
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    private var tooLarge = false

    /// `responder`: built once (`router.buildResponder()`) and shared by every connection.
    public init(responder: RouterResponder<BasicRequestContext>, logger: Logger, maximumBody: Int = 16_384) {
        self.responder = responder
        self.logger = logger
        self.maximumBody = maximumBody
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body(var buffer):
            guard !tooLarge else { return }
            if (body?.readableBytes ?? 0) + buffer.readableBytes > maximumBody {
                tooLarge = true
                body = nil
            } else if body == nil {
                body = buffer
            } else {
                body!.writeBuffer(&buffer)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            answer(head, context: context)
        }
    }

    private func answer(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let channel = context.channel
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        if tooLarge {
            return write(Response(status: .contentTooLarge), body: ByteBuffer(), head: head, loopBound: loopBound)
        }
        var fields = HTTPFields()
        for (name, value) in head.headers { if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) } }
        let request = Request(
            head: HTTPRequest(method: HTTPRequest.Method(head.method.rawValue) ?? .get, scheme: nil, authority: head.headers.first(name: "host"),
                              path: head.uri, headerFields: fields),
            body: RequestBody(buffer: body ?? ByteBuffer()))
        let requestContext = BasicRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        let responder = self.responder
        context.eventLoop.makeFutureWithTask { () -> (Response, ByteBuffer) in
            let response: Response
            do {
                response = try await responder.respond(to: request, context: requestContext)
            } catch let error as any HTTPResponseError {
                response = try error.response(from: request, context: requestContext)
            }
            let sink = Collector.Sink()
            try await response.body.write(Collector(sink: sink))
            return (response, sink.buffer)
        }.whenComplete { result in
            let (handler, _) = loopBound.value
            switch result {
            case .success(let (response, body)):
                handler.write(response, body: body, head: head, loopBound: loopBound)
            case .failure(let error):
                handler.logger.error("could not answer \(head.method) \(head.uri): \(error)")
                handler.write(Response(status: .internalServerError), body: ByteBuffer(), head: head, loopBound: loopBound)
            }
        }
    }

    private func write(_ response: Response, body: ByteBuffer, head: HTTPRequestHead,
                       loopBound: NIOLoopBound<(ResponderHandler, ChannelHandlerContext)>) {
        let context = loopBound.value.1
        var headers = HTTPHeaders()
        for field in response.headers where field.name != .contentLength && field.name != .connection {
            headers.add(name: field.name.rawName, value: field.value)
        }
        headers.add(name: "content-length", value: String(body.readableBytes))
        headers.add(name: "connection", value: "close")
        let status = HTTPResponseStatus(statusCode: response.status.code, reasonPhrase: response.status.reasonPhrase)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD, body.readableBytes > 0 { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Collects a response body whole (pages of a few KiB) into its sink.
    private struct Collector: ResponseBodyWriter {
        final class Sink { var buffer = ByteBuffer() }
        let sink: Sink
        mutating func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            sink.buffer.writeBuffer(&buffer)
        }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
