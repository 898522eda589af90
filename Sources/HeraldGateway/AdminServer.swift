import Foundation
import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// The admin port: `GET /health`, Prometheus `GET /metrics`, and the faults an operator injects
/// (`GET`/`POST`/`DELETE /faults`), over plain HTTP/1.1.
/// Low-rate traffic; kept on NIO's HTTP/1 codec so the gateway needs no second server framework.
final class AdminServer: Sendable {
    let serverChannel: Channel
    var port: Int { serverChannel.localAddress?.port ?? 0 }

    private init(serverChannel: Channel) { self.serverChannel = serverChannel }

    static func bind(
        host: String, port: Int, metrics: GatewayMetrics, store: any HeraldStore, faults: GatewayFaults?, group: EventLoopGroup, logger: Logger
    ) async throws -> AdminServer {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        AdminHandler(metrics: metrics, store: store, faults: faults, logger: logger))
                }
            }
        return AdminServer(serverChannel: try await bootstrap.bind(host: host, port: port).get())
    }

    func close() async { try? await serverChannel.close() }
}

private final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let metrics: GatewayMetrics
    let store: any HeraldStore
    /// `nil` unless the gateway was started with fault injection: `/faults` is then 404.
    let faults: GatewayFaults?
    let logger: Logger
    private var request: HTTPRequestHead?
    private var body: [UInt8] = []

    init(metrics: GatewayMetrics, store: any HeraldStore, faults: GatewayFaults?, logger: Logger) {
        self.metrics = metrics
        self.store = store
        self.faults = faults
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
            body = []
        case .body(var buffer):
            // Admin bodies are a few bytes; more than 64 KiB is not kept (and then not valid JSON).
            if body.count + buffer.readableBytes <= 65_536 { body += buffer.readBytes(length: buffer.readableBytes) ?? [] } else { body = [0] }
        case .end:
            guard let head = request else { return }
            request = nil
            route(head, context: context)
        }
    }

    private func faultsJSON(_ faults: GatewayFaults) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(["faults": faults.pending])) ?? Data(), as: UTF8.self) + "\n"
    }

    private func route(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        if path == "/faults", let faults {
            switch head.method {
            case .GET:
                return send(.ok, faultsJSON(faults), type: "application/json", head: head, context: context)
            case .DELETE:
                faults.clear()
                return send(.ok, faultsJSON(faults), type: "application/json", head: head, context: context)
            case .POST:
                guard let fault = try? JSONReader.decode(GatewayFaults.Fault.self, from: body) else {
                    return send(.badRequest, #"{"error":"the body must be {\"reason\": \"ServiceUnavailable\", \"count\": N, \"topic\": optional}"}"# + "\n",
                                type: "application/json", head: head, context: context)
                }
                if let problem = faults.inject(fault) {
                    return send(.badRequest, #"{"error":"\#(problem)"}"# + "\n", type: "application/json", head: head, context: context)
                }
                logger.notice("fault injected", metadata: ["reason": "\(fault.reason)", "count": "\(fault.count)", "topic": "\(fault.topic ?? "*")"])
                return send(.ok, faultsJSON(faults), type: "application/json", head: head, context: context)
            default:
                return send(.methodNotAllowed, "GET, POST or DELETE\n", type: "text/plain", head: head, context: context)
            }
        }
        if path == "/faults" {
            return send(.notFound, "not found: fault injection is off (start the gateway with --enable-faults to test providers)\n",
                        type: "text/plain", head: head, context: context)
        }
        guard head.method == .GET || head.method == .HEAD else {
            return send(.methodNotAllowed, "only GET\n", type: "text/plain", head: head, context: context)
        }
        switch path {
        case "/health":
            send(.ok, #"{"status":"ok"}"# + "\n", type: "application/json", head: head, context: context)
        case "/metrics":
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let store = self.store, metrics = self.metrics
            context.eventLoop.makeFutureWithTask {
                metrics.heldNotifications.set(Double(try await store.storedNotificationCount()))
            }.whenComplete { result in
                let (handler, context) = loopBound.value
                if case .failure(let error) = result {
                    handler.logger.warning("could not count held notifications", metadata: ["error": "\(error)"])
                }
                handler.send(
                    .ok, String(decoding: metrics.exposition(), as: UTF8.self),
                    type: "text/plain; version=0.0.4; charset=utf-8", head: head, context: context)
            }
        default:
            send(.notFound, faults == nil ? "not found: try /health or /metrics\n" : "not found: try /health, /metrics or /faults\n", type: "text/plain", head: head, context: context)
        }
    }

    private func send(_ status: HTTPResponseStatus, _ text: String, type: String, head: HTTPRequestHead, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: type)
        headers.add(name: "content-length", value: String(buffer.readableBytes))
        let keepAlive = head.isKeepAlive
        if !keepAlive { headers.add(name: "connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD { context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil) }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
