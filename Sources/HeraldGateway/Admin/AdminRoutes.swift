import Foundation
import HeraldCore
import HeraldHTTP
import HeraldStore
import Hummingbird
import Logging
import NIOCore

/// The admin port on Hummingbird 2: `GET /health`, Prometheus `GET /metrics`, the read-only
/// inspection views (`GET /v1/devices`, `/v1/tokens`, `/v1/teams`, `/v1/held`,
/// `/v1/receipts/<apns-id>`, `/v1/feedback?topic=…`; see ``GatewayInspection``), the live feed
/// (`GET /v1/events`, server-sent events), the dashboard pages that show the same
/// (`/dashboard/…`, ``GatewayDashboard``, with their `/assets/`), and the faults an operator
/// injects (`GET`/`POST`/`DELETE /faults`, `/faults/clock`), over plain HTTP/1.1. The gateway
/// runs its router as one of its services (``AdminService``).
struct AdminRoutes: Sendable {
    let metrics: GatewayMetrics
    let store: any GatewayStore
    let health: GatewayHealth
    let storeTimeout: TimeAmount
    let inspection: GatewayInspection
    let environment: PushEnvironment
    let feed: DeliveryFeed
    /// `nil` unless the gateway was started with fault injection: `/faults` is then 404.
    let faults: GatewayFaults?
    let dashboard: GatewayDashboard
    let logger: Logger

    /// Admin bodies are a few bytes; more than this is refused.
    static let maximumBody = 65_536

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: AdminRefusals(faultsEnabled: faults != nil))
        if let faults { registerFaults(faults, on: router) }
        router.get("/") { _, _ in WebResponse.redirect("/dashboard", body: "the dashboard is at /dashboard\n") }
        router.get("health") { _, _ in await healthCheck() }
        router.get("metrics") { _, _ in await metricsExposition() }
        router.get("v1/events") { request, _ in watch(request) }
        router.get("v1/**") { request, _ in await inspect(request) }
        router.get("dashboard") { request, _ in await page(request) }
        router.get("dashboard/**") { request, _ in await page(request) }
        WebResponse.registerAssets(on: router)
        return router
    }

    // MARK: faults

    private func registerFaults(_ faults: GatewayFaults, on router: Router<BasicRequestContext>) {
        router.get("faults") { _, _ in WebResponse.json(.ok, Self.faultsJSON(faults)) }
        router.delete("faults") { _, _ in
            faults.clear()
            return WebResponse.json(.ok, Self.faultsJSON(faults))
        }
        router.post("faults") { request, _ in
            guard let body = try? await Self.body(request), let fault = try? JSONReader.decode(GatewayFaults.Fault.self, from: body) else {
                return WebResponse.json(.badRequest, #"{"error":"the body must be {\"reason\": \"ServiceUnavailable\", \"count\": N, \"topic\": optional}"}"# + "\n")
            }
            if let problem = faults.inject(fault) { return WebResponse.json(.badRequest, #"{"error":"\#(problem)"}"# + "\n") }
            logger.notice("fault injected", metadata: ["reason": "\(fault.reason)", "count": "\(fault.count)", "topic": "\(fault.topic ?? "*")"])
            return WebResponse.json(.ok, Self.faultsJSON(faults))
        }
        router.get("faults/clock") { _, _ in WebResponse.json(.ok, #"{"offset_ms":\#(faults.clockOffsetMilliseconds)}"# + "\n") }
        router.post("faults/clock") { request, _ in
            struct Shift: Codable { var offset_ms: Int64 }
            guard let body = try? await Self.body(request), let shift = try? JSONReader.decode(Shift.self, from: body) else {
                return WebResponse.json(.badRequest, #"{"error":"the body must be {\"offset_ms\": N}"}"# + "\n")
            }
            if let problem = faults.shiftClock(byMilliseconds: shift.offset_ms) {
                return WebResponse.json(.badRequest, #"{"error":"\#(problem)"}"# + "\n")
            }
            logger.warning("the gateway's clock was shifted", metadata: ["offset_ms": "\(shift.offset_ms)"])
            return WebResponse.json(.ok, #"{"offset_ms":\#(shift.offset_ms)}"# + "\n")
        }
    }

    private static func body(_ request: Request) async throws -> [UInt8] {
        var request = request
        let buffer = try await request.collectBody(upTo: maximumBody)
        return Array(buffer.readableBytesView)
    }

    private static func faultsJSON(_ faults: GatewayFaults) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(["faults": faults.pending])) ?? Data(), as: UTF8.self) + "\n"
    }

    // MARK: health and metrics

    /// Readiness: 200 `{"status":"ok"}` when this gateway can take pushes, else 503
    /// `{"status":"unavailable","problems":[…]}` (the store does not answer within the bound, at
    /// most 2 s here; a commit is stuck; the node's cluster lease has lapsed).
    private func healthCheck() async -> Response {
        struct Answer: Encodable { var status: String; var problems: [String]? }
        let probe = await health.probeStore(store, within: .nanoseconds(min(storeTimeout.nanoseconds, 2_000_000_000)))
        let problems = health.problems(probe: probe, connectionSetup: metrics.connectionSetup.problems())
        let answer = Answer(status: problems.isEmpty ? "ok" : "unavailable", problems: problems.isEmpty ? nil : problems)
        let body = (try? JSONEncoder().encode(answer)).map { String(decoding: $0, as: UTF8.self) } ?? #"{"status":"unavailable"}"#
        return WebResponse.json(problems.isEmpty ? .ok : .serviceUnavailable, body + "\n")
    }

    private func metricsExposition() async -> Response {
        do {
            metrics.heldNotifications.set(Double(try await store.storedNotificationCount()))
        } catch {
            logger.warning("could not count held notifications", metadata: ["error": "\(error)"])
        }
        return WebResponse.plain(.ok, String(decoding: metrics.exposition() + ProcessMetrics.exposition(component: "gateway"), as: UTF8.self),
                                 type: "text/plain; version=0.0.4; charset=utf-8")
    }

    // MARK: inspection views and pages

    /// A read-only inspection view: JSON, or `{"error": …}` with 400/404/500.
    private func inspect(_ request: Request) async -> Response {
        let target = request.head.path ?? ""
        let view = String(QueryString.path(of: target).dropFirst("/v1/".count))
        let query: GatewayInspection.Query
        do {
            query = try GatewayInspection.parse(path: view, parameters: try Self.parameters(target), environment: environment)
        } catch {
            return WebResponse.json(.init(code: error.status), Self.errorJSON(error.message))
        }
        do {
            return WebResponse.json(.ok, String(decoding: try await inspection.answer(query), as: UTF8.self) + "\n")
        } catch let refusal as GatewayInspection.Refusal {
            return WebResponse.json(.init(code: refusal.status), Self.errorJSON(refusal.message))
        } catch {
            logger.error("inspection failed", metadata: ["view": "\(view)", "error": "\(error)"])
            return WebResponse.json(.internalServerError, Self.errorJSON("the store could not answer: \(error)"))
        }
    }

    /// A dashboard page (HTML), or 404 for a page that does not exist.
    private func page(_ request: Request) async -> Response {
        let target = request.head.path ?? ""
        let path = String(QueryString.path(of: target).dropFirst("/dashboard".count))
        let parameters: [String: String]
        do {
            parameters = try Self.parameters(target)
        } catch {
            return WebResponse.page(.badRequest, dashboard.renderer.renderMessage(title: "Cannot show this", message: error.message, section: ""))
        }
        let host = request.head.authority.map(DashboardHost.name)
        guard let page = await dashboard.page(path, parameters: parameters, host: host) else {
            return WebResponse.page(.notFound, dashboard.renderer.renderMessage(
                title: "No such page", message: "There is no page at /dashboard\(path).", section: ""))
        }
        return WebResponse.page(.init(code: page.status), page.html)
    }

    // MARK: the live feed

    /// `GET /v1/events[?topic=…]`: server-sent events, one `data:` line of JSON per event, until
    /// the watcher closes the connection or the gateway stops.
    private func watch(_ request: Request) -> Response {
        let topic: String?
        do throws(GatewayInspection.Refusal) {
            let parameters = try Self.parameters(request.head.path ?? "")
            if let unknown = parameters.keys.first(where: { $0 != "topic" }) {
                throw GatewayInspection.Refusal(400, "unknown parameter \(unknown); /v1/events takes topic")
            }
            topic = parameters["topic"]
        } catch {
            return WebResponse.json(.badRequest, Self.errorJSON(error.message))
        }
        let feed = self.feed
        let subscriber = DeliveryFeed.Subscriber(topic: topic)
        feed.subscribe(subscriber)
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"], body: ResponseBody { writer in
            defer { feed.unsubscribe(subscriber) }
            try await writer.write(ByteBuffer(string: ": watching\n\n"))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            for await _ in subscriber.wakes {
                let (events, dropped) = subscriber.take()
                var buffer = ByteBuffer()
                buffer.reserveCapacity(events.count * 160 + 64)
                func append(_ event: DeliveryFeed.Event) {
                    guard let json = try? encoder.encode(event) else { return }
                    buffer.writeString("data: ")
                    buffer.writeBytes(json)
                    buffer.writeString("\n\n")
                }
                events.forEach(append)
                // A watcher that does not keep up loses events instead of growing the gateway's buffers.
                if dropped > 0 { append(DeliveryFeed.Event(event: .dropped, at: events.last?.at ?? 0, count: dropped)) }
                if buffer.readableBytes > 0 { try await writer.write(buffer) }
            }
            try await writer.finish(nil)
        })
    }

    // MARK: helpers

    static func errorJSON(_ message: String) -> String {
        String(decoding: (try? JSONEncoder().encode(["error": message])) ?? Data(), as: UTF8.self) + "\n"
    }

    /// The query parameters of a request target (``QueryString``), refusals as the views' 400.
    static func parameters(_ target: String) throws(GatewayInspection.Refusal) -> [String: String] {
        do {
            return try QueryString.parameters(of: target)
        } catch {
            throw GatewayInspection.Refusal(400, error.description)
        }
    }
}

/// What the admin port answers where no route does: 405 for a method other than GET on a known
/// path (`/faults` and `/faults/clock` say which methods they take), 404 naming what exists, and
/// for `/faults` without `--enable-faults` a 404 that says how to turn it on.
struct AdminRefusals<Context: RequestContext>: RouterMiddleware {
    let faultsEnabled: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let path = QueryString.path(of: request.head.path ?? "")
            if path == "/faults" || path == "/faults/clock" {
                guard faultsEnabled else {
                    return WebResponse.plain(.notFound, "not found: fault injection is off (start the gateway with --enable-faults to test providers)\n")
                }
                return WebResponse.plain(.methodNotAllowed, path == "/faults" ? "GET, POST or DELETE\n" : "GET or POST\n")
            }
            guard request.method == .get || request.method == .head else { return WebResponse.plain(.methodNotAllowed, "only GET\n") }
            return WebResponse.plain(.notFound, faultsEnabled
                ? "not found: try /dashboard, /health, /metrics, /v1/devices or /faults\n"
                : "not found: try /dashboard, /health, /metrics or /v1/devices\n")
        }
    }
}
