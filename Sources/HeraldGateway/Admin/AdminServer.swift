import Foundation
import HeraldCore
import HeraldDashboard
import HeraldStore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// The admin port: `GET /health`, Prometheus `GET /metrics`, the read-only inspection views
/// (`GET /v1/devices`, `/v1/tokens`, `/v1/teams`, `/v1/held`, `/v1/receipts/<apns-id>`,
/// `/v1/feedback?topic=…`; see ``GatewayInspection``), the dashboard pages that show the same
/// (`/dashboard/…`, ``GatewayDashboard``, with their `/assets/`), and the faults an operator
/// injects (`GET`/`POST`/`DELETE /faults`), over plain HTTP/1.1.
/// Low-rate traffic; kept on NIO's HTTP/1 codec so the gateway needs no second server framework.
final class AdminServer: Sendable {
    let serverChannel: Channel
    var port: Int { serverChannel.localAddress?.port ?? 0 }

    private init(serverChannel: Channel) { self.serverChannel = serverChannel }

    static func bind(
        host: String, port: Int, metrics: GatewayMetrics, store: any GatewayStore, health: GatewayHealth, storeTimeout: TimeAmount,
        inspection: GatewayInspection, environment: APNsEnvironment,
        feed: DeliveryFeed, faults: GatewayFaults?, dashboard: GatewayDashboard, group: EventLoopGroup, logger: Logger
    ) async throws -> AdminServer {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        AdminHandler(
                            metrics: metrics, store: store, health: health, storeTimeout: storeTimeout, inspection: inspection, environment: environment, feed: feed, faults: faults,
                            dashboard: dashboard, logger: logger))
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
    let store: any GatewayStore
    let health: GatewayHealth
    let storeTimeout: TimeAmount
    let inspection: GatewayInspection
    let environment: APNsEnvironment
    let feed: DeliveryFeed
    /// This connection's subscription to the live feed, once it asked for `/v1/events`.
    private var watching: DeliveryFeed.Subscriber?
    /// `nil` unless the gateway was started with fault injection: `/faults` is then 404.
    let faults: GatewayFaults?
    let dashboard: GatewayDashboard
    let logger: Logger
    private var request: HTTPRequestHead?
    private var body: [UInt8] = []

    init(metrics: GatewayMetrics, store: any GatewayStore, health: GatewayHealth, storeTimeout: TimeAmount,
         inspection: GatewayInspection, environment: APNsEnvironment, feed: DeliveryFeed,
         faults: GatewayFaults?, dashboard: GatewayDashboard, logger: Logger) {
        self.health = health
        self.storeTimeout = storeTimeout
        self.feed = feed
        self.dashboard = dashboard
        self.metrics = metrics
        self.store = store
        self.inspection = inspection
        self.environment = environment
        self.faults = faults
        self.logger = logger
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let watching { feed.unsubscribe(watching) }
        watching = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A watcher's connection carries the feed until it closes; it sends nothing more.
        if watching != nil { return }
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
        if path == "/faults/clock", let faults {
            struct Shift: Codable { var offset_ms: Int64 }
            switch head.method {
            case .GET:
                return send(.ok, #"{"offset_ms":\#(faults.clockOffsetMilliseconds)}"# + "\n", type: "application/json", head: head, context: context)
            case .POST:
                guard let shift = try? JSONReader.decode(Shift.self, from: body) else {
                    return send(.badRequest, #"{"error":"the body must be {\"offset_ms\": N}"}"# + "\n", type: "application/json", head: head, context: context)
                }
                if let problem = faults.shiftClock(byMilliseconds: shift.offset_ms) {
                    return send(.badRequest, #"{"error":"\#(problem)"}"# + "\n", type: "application/json", head: head, context: context)
                }
                logger.warning("the gateway's clock was shifted", metadata: ["offset_ms": "\(shift.offset_ms)"])
                return send(.ok, #"{"offset_ms":\#(shift.offset_ms)}"# + "\n", type: "application/json", head: head, context: context)
            default:
                return send(.methodNotAllowed, "GET or POST\n", type: "text/plain", head: head, context: context)
            }
        }
        if path == "/faults" || path == "/faults/clock" {
            return send(.notFound, "not found: fault injection is off (start the gateway with --enable-faults to test providers)\n",
                        type: "text/plain", head: head, context: context)
        }
        guard head.method == .GET || head.method == .HEAD else {
            return send(.methodNotAllowed, "only GET\n", type: "text/plain", head: head, context: context)
        }
        if path == "/v1/events" { return watch(uri: head.uri, head: head, context: context) }
        if path == "/" {
            return send(.seeOther, "the dashboard is at /dashboard\n", type: "text/plain", head: head, context: context, extraHeaders: [("location", "/dashboard")])
        }
        if path == "/dashboard" || path.hasPrefix("/dashboard/") { return page(String(path.dropFirst("/dashboard".count)), uri: head.uri, head: head, context: context) }
        if path.hasPrefix("/assets/") {
            guard let asset = DashboardAssets.asset(named: String(path.dropFirst("/assets/".count))) else {
                return send(.notFound, "no such asset\n", type: "text/plain", head: head, context: context)
            }
            return send(.ok, asset.body, type: asset.contentType, head: head, context: context, extraHeaders: DashboardAssets.securityHeaders)
        }
        if path.hasPrefix("/v1/") { return inspect(String(path.dropFirst(4)), uri: head.uri, head: head, context: context) }
        switch path {
        case "/health":
            healthCheck(head: head, context: context)
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
            send(.notFound, faults == nil ? "not found: try /dashboard, /health, /metrics or /v1/devices\n" : "not found: try /dashboard, /health, /metrics, /v1/devices or /faults\n", type: "text/plain", head: head, context: context)
        }
    }

    /// Readiness: 200 `{"status":"ok"}` when this gateway can take pushes, else 503
    /// `{"status":"unavailable","problems":[…]}` (the store does not answer within the bound, at
    /// most 2 s here; a commit is stuck; the node's cluster lease has lapsed).
    private func healthCheck(head: HTTPRequestHead, context: ChannelHandlerContext) {
        struct Answer: Encodable { var status: String; var problems: [String]? }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let store = self.store, health = self.health
        let bound = TimeAmount.nanoseconds(min(storeTimeout.nanoseconds, 2_000_000_000))
        context.eventLoop.makeFutureWithTask { () -> [String] in
            var probe: (any Error)?
            do { try await withDeadline(bound) { try await store.checkReachable() } } catch { probe = error }
            return health.problems(probe: probe)
        }.whenComplete { result in
            let (handler, context) = loopBound.value
            let problems = (try? result.get()) ?? ["the health check failed"]
            let answer = Answer(status: problems.isEmpty ? "ok" : "unavailable", problems: problems.isEmpty ? nil : problems)
            let body = (try? JSONEncoder().encode(answer)).map { String(decoding: $0, as: UTF8.self) } ?? #"{"status":"unavailable"}"#
            handler.send(problems.isEmpty ? .ok : .serviceUnavailable, body + "\n", type: "application/json", head: head, context: context)
        }
    }

    /// A read-only inspection view: JSON, or `{"error": …}` with 400/404/500.
    private func inspect(_ view: String, uri: String, head: HTTPRequestHead, context: ChannelHandlerContext) {
        let query: GatewayInspection.Query
        do {
            query = try GatewayInspection.parse(path: view, parameters: try Self.parameters(of: uri), environment: environment)
        } catch {
            return send(HTTPResponseStatus(statusCode: error.status), Self.errorJSON(error.message), type: "application/json", head: head, context: context)
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let inspection = self.inspection
        context.eventLoop.makeFutureWithTask { try await inspection.answer(query) }.whenComplete { result in
            let (handler, context) = loopBound.value
            switch result {
            case .success(let body):
                handler.send(.ok, String(decoding: body, as: UTF8.self) + "\n", type: "application/json", head: head, context: context)
            case .failure(let refusal as GatewayInspection.Refusal):
                handler.send(HTTPResponseStatus(statusCode: refusal.status), Self.errorJSON(refusal.message), type: "application/json", head: head, context: context)
            case .failure(let error):
                handler.logger.error("inspection failed", metadata: ["view": "\(view)", "error": "\(error)"])
                handler.send(.internalServerError, Self.errorJSON("the store could not answer: \(error)"), type: "application/json", head: head, context: context)
            }
        }
    }

    /// A dashboard page (HTML), or 404 for a page that does not exist.
    private func page(_ path: String, uri: String, head: HTTPRequestHead, context: ChannelHandlerContext) {
        let parameters: [String: String]
        do {
            parameters = try Self.parameters(of: uri)
        } catch {
            return send(.badRequest, dashboard.renderer.renderMessage(title: "Cannot show this", message: error.message, section: ""),
                        type: "text/html; charset=utf-8", head: head, context: context, extraHeaders: DashboardAssets.securityHeaders)
        }
        let host = head.headers.first(name: "host").map(DashboardHost.name)
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let dashboard = self.dashboard
        context.eventLoop.makeFutureWithTask { await dashboard.page(path, parameters: parameters, host: host) }.whenSuccess { page in
            let (handler, context) = loopBound.value
            guard let page else {
                return handler.send(.notFound, dashboard.renderer.renderMessage(title: "No such page", message: "There is no page at /dashboard\(path).", section: ""),
                                    type: "text/html; charset=utf-8", head: head, context: context, extraHeaders: DashboardAssets.securityHeaders)
            }
            handler.send(HTTPResponseStatus(statusCode: page.status), page.html, type: "text/html; charset=utf-8", head: head, context: context,
                         extraHeaders: DashboardAssets.securityHeaders)
        }
    }

    /// `GET /v1/events[?topic=…]`: server-sent events, one `data:` line of JSON per event, until
    /// the watcher closes the connection.
    private func watch(uri: String, head: HTTPRequestHead, context: ChannelHandlerContext) {
        let topic: String?
        do throws(GatewayInspection.Refusal) {
            let parameters = try Self.parameters(of: uri)
            if let unknown = parameters.keys.first(where: { $0 != "topic" }) {
                throw GatewayInspection.Refusal(400, "unknown parameter \(unknown); /v1/events takes topic")
            }
            topic = parameters["topic"]
        } catch {
            return send(.badRequest, Self.errorJSON(error.message), type: "application/json", head: head, context: context)
        }
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "text/event-stream")
        headers.add(name: "cache-control", value: "no-cache")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: ": watching\n\n")))), promise: nil)
        let channel = context.channel
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        let subscriber = DeliveryFeed.Subscriber(topic: topic, eventLoop: context.eventLoop) { events, dropped in
            guard channel.isActive else { return }
            let context = loopBound.value
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            var lost = dropped
            var buffer = channel.allocator.buffer(capacity: events.count * 160)
            for event in events {
                // A watcher that does not read loses events instead of growing the gateway's buffers.
                guard channel.isWritable, let json = try? encoder.encode(event) else {
                    lost += 1
                    continue
                }
                buffer.writeString("data: ")
                buffer.writeBytes(json)
                buffer.writeString("\n\n")
            }
            if lost > 0, let json = try? encoder.encode(DeliveryFeed.Event(event: .dropped, at: events.last?.at ?? 0, count: lost)) {
                buffer.writeString("data: ")
                buffer.writeBytes(json)
                buffer.writeString("\n\n")
            }
            if buffer.readableBytes > 0 { context.writeAndFlush(NIOAny(HTTPServerResponsePart.body(.byteBuffer(buffer))), promise: nil) }
        }
        watching = subscriber
        feed.subscribe(subscriber)
    }

    static func errorJSON(_ message: String) -> String {
        String(decoding: (try? JSONEncoder().encode(["error": message])) ?? Data(), as: UTF8.self) + "\n"
    }

    /// The query parameters of a request URI, percent-decoded; a parameter given twice is refused.
    static func parameters(of uri: String) throws(GatewayInspection.Refusal) -> [String: String] {
        guard let query = uri.split(separator: "?", maxSplits: 1).dropFirst().first else { return [:] }
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let plus = { (text: Substring) in text.replacingOccurrences(of: "+", with: " ") }
            guard let name = plus(parts[0]).removingPercentEncoding,
                  let value = (parts.count > 1 ? plus(parts[1]) : "").removingPercentEncoding else {
                throw GatewayInspection.Refusal(400, "the query string is not valid percent-encoding")
            }
            guard parameters[name] == nil else { throw GatewayInspection.Refusal(400, "\(name) is given twice") }
            parameters[name] = value
        }
        return parameters
    }

    private func send(
        _ status: HTTPResponseStatus, _ text: String, type: String, head: HTTPRequestHead, context: ChannelHandlerContext,
        extraHeaders: [(String, String)] = []
    ) {
        var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        var headers = HTTPHeaders(extraHeaders)
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
