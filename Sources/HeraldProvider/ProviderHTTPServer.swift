import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// The provider service's REST API over HTTP/1.1 (JSON in and out), described by
/// ``ProviderOpenAPI/document`` and served at `/openapi.json`.
public final class ProviderHTTPServer: Sendable {
    public let port: Int
    private let channel: Channel
    /// Requests being answered, so that shutting down can let them finish.
    private let requests: WorkTracker

    private init(port: Int, channel: Channel, requests: WorkTracker) {
        self.port = port
        self.channel = channel
        self.requests = requests
    }

    /// Starts the REST API. Every `/v1/…` request needs `Authorization: Bearer <apiToken>`;
    /// `/openapi.json` and `/health` are public. A connection silent for `idleTimeout` is closed.
    public static func start(
        service: ProviderService, host: String = "127.0.0.1", port: Int, apiToken: String,
        idleTimeout: TimeAmount = .seconds(60), group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> ProviderHTTPServer {
        let router = ProviderRouter(service: service, apiToken: apiToken)
        let requests = WorkTracker()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(IdleStateHandler(readTimeout: idleTimeout))
                    try sync.configureHTTPServerPipeline(withErrorHandling: true)
                    try sync.addHandler(ProviderHTTPHandler(router: router, requests: requests))
                }
            }
            .bind(host: host, port: port).get()
        return ProviderHTTPServer(port: channel.localAddress?.port ?? port, channel: channel, requests: requests)
    }

    /// Stops accepting connections, then waits for the requests being answered (a send finishes
    /// and records its report).
    public func close() async {
        try? await channel.close()
        await requests.settle()
    }
}

/// Collects a request and hands it to the router; answers in order, one at a time per
/// connection (NIO's pipelining handler holds the next request until this one is answered). A body over ``maximumBody`` is answered
/// 413 and the connection closed; a connection silent for the idle timeout is closed.
final class ProviderHTTPHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let router: ProviderRouter
    let requests: WorkTracker
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false
    /// The largest request body the REST API reads: 1 MiB.
    static let maximumBody = 1 << 20

    init(router: ProviderRouter, requests: WorkTracker) {
        self.router = router
        self.requests = requests
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { return context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = []
            tooLarge = h.headers.first(name: "content-length").flatMap { Int($0) }.map { $0 > Self.maximumBody } ?? false
        case .body(var buffer):
            if tooLarge { return }
            if body.count + buffer.readableBytes <= Self.maximumBody { body += buffer.readBytes(length: buffer.readableBytes) ?? [] } else {
                tooLarge = true
                body = []
            }
        case .end:
            guard let head else { return }
            self.head = nil
            let request = ProviderRouter.Request(
                method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name.lowercased(), $0.value) }, body: body)
            body = []
            let keepAlive = head.isKeepAlive && !tooLarge
            let refuse = tooLarge
            let channel = context.channel
            let router = self.router
            requests.spawn {
                let response = refuse
                    ? ProviderRouter.error(ProviderError(413, "the body is larger than \(Self.maximumBody) bytes"))
                    : await router.handle(request)
                var headers = HTTPHeaders()
                headers.add(name: "content-type", value: response.contentType)
                headers.add(name: "content-length", value: String(response.body.count))
                for (name, value) in response.headers { headers.add(name: name, value: value) }
                if !keepAlive { headers.add(name: "connection", value: "close") }
                let responseHead = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: response.status), headers: headers)
                channel.write(HTTPServerResponsePart.head(responseHead), promise: nil)
                channel.write(HTTPServerResponsePart.body(.byteBuffer(channel.allocator.buffer(bytes: response.body))), promise: nil)
                let done = channel.eventLoop.makePromise(of: Void.self)
                channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: done)
                if !keepAlive { done.futureResult.whenComplete { _ in channel.close(promise: nil) } }
            }
        }
    }
}

/// Maps HTTP requests to the service.
struct ProviderRouter: Sendable {
    struct Request: Sendable {
        var method: String
        var uri: String
        var headers: [(String, String)]
        var body: [UInt8]
        func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
        /// A query parameter's value, percent-decoded (the last one given).
        func query(_ name: String) -> String? { parameters.last { $0.name == name }?.value }

        /// The query's parameters in order, percent-decoded (`+` is a space); one that does not
        /// decode keeps its raw text.
        var parameters: [(name: String, value: String)] {
            guard let query = uri.split(separator: "?", maxSplits: 1).dropFirst().first else { return [] }
            return query.split(separator: "&").map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decode(_ text: Substring) -> String {
                    let spaced = text.replacingOccurrences(of: "+", with: " ")
                    return spaced.removingPercentEncoding ?? spaced
                }
                return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
            }
        }

        /// Refuses parameters a route does not take, naming those it does.
        func onlyParameters(_ known: Set<String>) throws {
            if let unknown = parameters.first(where: { !known.contains($0.name) }) {
                throw ProviderError(400, "unknown parameter \(unknown.name)" + (known.isEmpty ? "" : "; this list takes \(known.sorted().joined(separator: ", "))"))
            }
        }

        /// A list's page size: `limit`, 1 to ``ProviderDatabase/maximumPage`` (default 100).
        func limit() throws -> Int {
            guard let text = query("limit") else { return 100 }
            guard let value = Int(text), (1...ProviderDatabase.maximumPage).contains(value) else {
                throw ProviderError(400, "limit must be a number from 1 to \(ProviderDatabase.maximumPage)")
            }
            return value
        }
    }
    struct Response: Sendable {
        var status: Int
        var body: [UInt8]
        var contentType = "application/json"
        var headers: [(String, String)] = []
    }

    let service: ProviderService
    /// The bearer token every `/v1/…` request must carry.
    let apiToken: String

    static func json(_ status: Int, _ value: JSONValue, headers: [(String, String)] = []) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(status: status, body: Array((try? encoder.encode(value)) ?? Data("{}".utf8)), headers: headers)
    }

    /// Whether `Authorization: Bearer <token>` names the API token (compared in constant time).
    func authorized(_ header: String?) -> Bool {
        guard let header, header.count > 7, header.prefix(7).lowercased() == "bearer " else { return false }
        return SecretComparison.equal(header.dropFirst(7).trimmingCharacters(in: .whitespaces), apiToken)
    }

    static func error(_ error: ProviderError) -> Response {
        var response = json(error.status, .object(["error": .string(error.message)]))
        if error.status == 401 { response.headers.append(("www-authenticate", #"Bearer realm="herald""#)) }
        return response
    }

    static let unauthorized = ProviderError(
        401, "every /v1 request and /metrics need the header Authorization: Bearer <token> (the token is in the provider's api-token file)")

    func handle(_ request: Request) async -> Response {
        let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
        let parts = path.split(separator: "/").map(String.init)
        // "/v1/registrations/abc" → ("v1/registrations/{}", "abc"); "/v1/sends/abc/receipts" → ("v1/sends/{}/receipts", "abc")
        if parts.first == "v1", !authorized(request.header("authorization")) { return Self.error(Self.unauthorized) }
        let argument = parts.count >= 3 && parts[0] == "v1" ? parts[2] : ""
        let shape = parts.count >= 3 && parts[0] == "v1" ? ([parts[0], parts[1], "{}"] + parts.dropFirst(3)).joined(separator: "/") : parts.joined(separator: "/")
        do {
            switch (request.method, shape) {
            case ("GET", "openapi.json"):
                return Response(status: 200, body: Array(ProviderOpenAPI.document.utf8))
            case ("GET", "health"):
                return Self.json(200, .object(["status": .string("ok")]))
            case ("GET", "metrics"):
                guard authorized(request.header("authorization")) else { throw Self.unauthorized }
                service.metrics.registrations.set(Double(try service.database.registrationCount()))
                return Response(status: 200, body: service.metrics.exposition(), contentType: "text/plain; version=0.0.4")
            case ("POST", "v1/registrations"):
                let f = JSONFields(try object(request.body))
                let r = try await service.register(
                    token: try Self.required(f, "token", maximumBytes: 200), topic: try Self.required(f, "topic", maximumBytes: 255),
                    language: try Self.required(f, "language", maximumBytes: 64), timeZone: try Self.required(f, "timeZone", maximumBytes: 64),
                    userID: try f.string("userId", maximumBytes: 256), tags: try f.strings("tags", maximumCount: 64, maximumBytes: 64) ?? [])
                return Self.json(200, Self.json(r))
            case ("GET", "v1/registrations"):
                try request.onlyParameters(["topic", "user", "tag", "language", "zone", "after", "limit"])
                let filter = RegistrationFilter(
                    topic: request.query("topic"), user: request.query("user"), tag: request.query("tag"),
                    language: request.query("language"), zone: request.query("zone"))
                let limit = try request.limit()
                let page = try service.database.registrations(filter, after: request.query("after")?.lowercased(), limit: limit)
                return Self.json(200, Self.page(page.map(Self.json), next: page.count == limit ? page.last?.token : nil))
            case ("GET", "v1/registrations/{}"):
                let token = argument
                guard let r = try service.database.registration(token: token.lowercased()) else {
                    throw ProviderError(404, "no registration for token \(token)")
                }
                return Self.json(200, Self.json(r))
            case ("DELETE", "v1/registrations/{}"):
                let token = argument
                try await service.unregister(token: token)
                return Response(status: 204, body: [])
            case ("PUT", "v1/templates/{}"):
                let id = argument
                let o = try object(request.body)
                guard let t = try JSONFields(o).object("translations"), !t.object.isEmpty, t.object.count <= 500 else {
                    throw ProviderError(400, "a template needs \"translations\": {\"en\": {\"body\": …}, …} (1 to 500 languages)")
                }
                var translations: [String: MessageTemplate.Text] = [:]
                for language in t.object.keys {
                    guard let text = try t.object(language) else { throw ProviderError(400, "\"translations.\(language)\" must be an object") }
                    translations[language] = .init(
                        title: try text.string("title", maximumBytes: 4096), subtitle: try text.string("subtitle", maximumBytes: 4096),
                        body: try Self.required(text, "body", maximumBytes: 4096))
                }
                try await service.putTemplate(MessageTemplate(id: id, translations: translations))
                return Self.json(200, .object(["id": .string(id), "languages": .array(translations.keys.sorted().map(JSONValue.string))]))
            case ("GET", "v1/templates"):
                try request.onlyParameters(["after", "limit"])
                let limit = try request.limit()
                let page = try service.database.templates(after: request.query("after"), limit: limit)
                return Self.json(200, Self.page(page.map(Self.json), next: page.count == limit ? page.last?.id : nil))
            case ("GET", "v1/templates/{}"):
                return Self.json(200, Self.json(try await service.template(argument)))
            case ("DELETE", "v1/templates/{}"):
                try await service.deleteTemplate(argument)
                return Response(status: 204, body: [])
            case ("GET", "v1/sends"):
                try request.onlyParameters(["scheduleId", "after", "limit"])
                let limit = try request.limit()
                let after = request.query("after")
                if let after, try !service.database.sendExists(id: after) {
                    throw ProviderError(400, "after must be the id of a send (the previous page's next)")
                }
                let page = try service.database.sends(after: after, scheduleID: request.query("scheduleId"), limit: limit)
                return Self.json(200, Self.page(page.map { s in
                    .object([
                        "id": .string(s.id), "createdAt": .int(s.createdAt), "state": .string(s.state.rawValue),
                        "counts": .object(s.counts.mapValues { .int(Int64($0)) }), "scheduleId": s.scheduleID.map(JSONValue.string) ?? .null,
                    ])
                }, next: page.count == limit ? page.last?.id : nil))
            case ("POST", "v1/sends"):
                let send = try Self.sendRequest(try object(request.body), idempotencyHeader: request.header("idempotency-key"))
                let (report, replayed) = try await service.send(send)
                return Self.json(200, Self.json(report, replayed: replayed), headers: replayed ? [("idempotent-replayed", "true")] : [])
            case ("GET", "v1/sends/{}"):
                let id = argument
                return Self.json(200, Self.json(try await service.report(id: id), replayed: false))
            case ("GET", "v1/sends/{}/receipts"):
                return Self.json(200, Self.receipts(try await service.receipts(sendIDs: [argument])))
            case ("GET", "v1/schedules/{}/plan"):
                var hours = 24.0
                if let text = request.query("hours") {
                    guard let value = Double(text), value > 0, value <= 24 * 366 else {
                        throw ProviderError(400, "hours must be a number of hours ahead, more than 0 and at most a year")
                    }
                    hours = value
                }
                let runs = try await service.planAhead(argument, span: Int64(hours * 3_600_000))
                return Self.json(200, .object(["runs": .array(runs.map { run in
                    .object(["zone": .string(run.zone), "localDate": run.localDate.map { .string($0.description) } ?? .null,
                             "dueAt": .string(Self.iso(run.dueAt)), "recipients": .int(Int64(run.recipients))])
                })]))
            case ("GET", "v1/schedules/{}/receipts"):
                let runs = try await service.scheduleStatus(argument).runs
                return Self.json(200, Self.receipts(try await service.receipts(sendIDs: runs.compactMap(\.sendID))))
            case ("POST", "v1/feedback/{}") where argument == "poll":
                let poll = try await service.pollFeedback()
                return Self.json(200, .object([
                    "read": .int(Int64(poll.read)), "pruned": .array(poll.pruned.map(JSONValue.string)),
                    "errors": .object(poll.errors.mapValues(JSONValue.string)),
                ]))
            case ("POST", "v1/schedules"):
                let o = try object(request.body)
                let send = try Self.sendRequest(o, idempotencyHeader: nil)
                let timing = try Self.timing(o)
                let id = try JSONFields(o).string("id", maximumBytes: 256) ?? request.header("idempotency-key")
                let (schedule, replayed) = try await service.schedule(timing, send: send, id: id)
                return Self.json(replayed ? 200 : 201, Self.json(try await service.scheduleStatus(schedule.id)))
            case ("GET", "v1/schedules"):
                var state: Schedule.State?
                if let wanted = request.query("state") {
                    guard let known = Schedule.State(rawValue: wanted) else { throw ProviderError(400, "state must be active, finished or cancelled") }
                    state = known
                }
                let list = try await service.schedules(state: state)
                var items: [JSONValue] = []
                for schedule in list { items.append(Self.json(try await service.scheduleStatus(schedule.id), runs: false)) }
                return Self.json(200, .object(["schedules": .array(items)]))
            case ("GET", "v1/schedules/{}"):
                return Self.json(200, Self.json(try await service.scheduleStatus(argument)))
            case ("DELETE", "v1/schedules/{}"):
                _ = try await service.cancelSchedule(argument)
                return Self.json(200, Self.json(try await service.scheduleStatus(argument)))
            default:
                return Self.error(ProviderError(404, "no route \(request.method) \(path) (see /openapi.json)"))
            }
        } catch let error as ProviderError {
            return Self.error(error)
        } catch let error as JSONFieldError {
            return Self.error(ProviderError(400, "\(error)"))
        } catch {
            return Self.error(ProviderError(500, "\(error)"))
        }
    }

    private func object(_ body: [UInt8]) throws -> [String: JSONValue] {
        do { return try JSONReader.parseObject(body) } catch {
            throw ProviderError(400, "the body must be a JSON object (RFC 8259): \(error)")
        }
    }

    /// A required, non-empty string field.
    static func required(_ f: JSONFields, _ key: String, maximumBytes: Int) throws -> String {
        let value = try f.requiredString(key, maximumBytes: maximumBytes)
        guard !value.isEmpty else { throw ProviderError(400, "\"\(f.path)\(key)\" is required (a string)") }
        return value
    }

    /// Format arguments: an array of strings or numbers (each written as text).
    static func arguments(_ f: JSONFields, _ key: String) throws -> [String] {
        try (f.array(key, maximumCount: 100) ?? []).map(LocalizedFormat.argument)
    }

    static func sendRequest(_ o: [String: JSONValue], idempotencyHeader: String?) throws -> SendRequest {
        let f = JSONFields(o)
        guard let to = try f.object("to") else {
            throw ProviderError(400, "\"to\" is required: {\"token\": …}, {\"user\": …} or {\"segment\": {\"topic\", \"tags\", \"languages\"}}")
        }
        let target: SendTarget
        if let token = try to.string("token", maximumBytes: 200) {
            target = .token(token)
        } else if let user = try to.string("user", maximumBytes: 256) {
            target = .user(user)
        } else if let segment = try to.object("segment") {
            target = .segment(
                topic: try segment.string("topic", maximumBytes: 255), tags: try segment.strings("tags", maximumCount: 64, maximumBytes: 64) ?? [],
                languages: try segment.strings("languages", maximumCount: 64, maximumBytes: 64) ?? [])
        } else {
            throw ProviderError(400, "\"to\" needs \"token\", \"user\" or \"segment\"")
        }
        let message: SendMessage
        if let t = try f.object("template") {
            message = .template(id: try required(t, "id", maximumBytes: 256), arguments: try arguments(t, "args"))
        } else if let a = try f.object("alert") {
            message = .alert(
                title: try a.string("title", maximumBytes: 4096), subtitle: try a.string("subtitle", maximumBytes: 4096),
                body: try required(a, "body", maximumBytes: 4096))
        } else if let l = try f.object("locKey") {
            message = .deviceLocalized(
                key: try required(l, "key", maximumBytes: 256), arguments: try arguments(l, "args"),
                titleKey: try l.string("titleKey", maximumBytes: 256), titleArguments: try arguments(l, "titleArgs"))
        } else {
            message = .none
        }
        var data: [String: JSONValue] = [:]
        if let d = try f.object("data") {
            guard d.object["aps"] == nil else { throw ProviderError(400, "\"data\" may not hold \"aps\" (use the send's fields)") }
            data = d.object
        }
        let contentAvailable = try f.bool("contentAvailable") ?? false
        let badge = try f.integer("badge", in: 0...Int(Int32.max)), sound = try f.string("sound", maximumBytes: 256)
        if case .none = message, badge == nil, sound == nil, !contentAvailable {
            throw ProviderError(400, "say something: \"template\", \"alert\", \"locKey\", \"badge\", \"sound\" or \"contentAvailable\": true")
        }
        return SendRequest(
            target: target, message: message, badge: badge, sound: sound,
            contentAvailable: contentAvailable, category: try f.string("category", maximumBytes: 256),
            threadID: try f.string("threadId", maximumBytes: 256), data: data,
            pushType: try f.string("pushType", maximumBytes: 64), priority: try f.integer("priority", in: 1...10),
            expiration: try f.int64("expiration", in: 0...Int64(UInt32.max)), collapseID: try f.string("collapseId", maximumBytes: 64),
            idempotencyKey: try idempotencyHeader ?? f.string("idempotencyKey", maximumBytes: 256))
    }

    /// `{"counts": {"delivered": 3, …}, "tokens": {"<token>": "delivered", …}}`.
    static func receipts(_ statuses: [String: String]) -> JSONValue {
        var counts: [String: Int] = [:]
        for status in statuses.values { counts[status, default: 0] += 1 }
        return .object(["counts": .object(counts.mapValues { .int(Int64($0)) }), "tokens": .object(statuses.mapValues(JSONValue.string))])
    }

    static let weekdayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    /// `"at"` (an ISO 8601 instant with its offset) or `"time"` (HH:MM) with `"timeZone"` (absent:
    /// each registration's own), `"repeat"` (once, daily, weekly with `"weekdays"`, monthly with
    /// `"day"`), `"from"` and `"until"` (local dates, inclusive).
    static func timing(_ o: [String: JSONValue]) throws -> ScheduleTiming {
        let f = JSONFields(o)
        if let at = try f.string("at", maximumBytes: 64) {
            guard o["time"] == nil else { throw ProviderError(400, "give \"at\" (an instant) or \"time\" (a wall-clock time), not both") }
            guard let instant = parseInstant(at) else {
                throw ProviderError(400, "\"at\" must be an ISO 8601 instant with its offset, such as 2026-11-22T09:00:00Z or 2026-11-22T09:00:00+01:00")
            }
            return .instant(instant)
        }
        guard let time = try f.string("time", maximumBytes: 64) else {
            throw ProviderError(400, "a schedule needs \"at\" (an instant) or \"time\" (HH:MM, in each registration's zone or in \"timeZone\")")
        }
        let hm = time.split(separator: ":", omittingEmptySubsequences: false)
        guard hm.count == 2, hm[0].count == 2, hm[1].count == 2, let hour = Int(hm[0]), let minute = Int(hm[1]),
              (0...23).contains(hour), (0...59).contains(minute) else {
            throw ProviderError(400, "\"time\" must be HH:MM from 00:00 to 23:59, such as 09:00, not \"\(time)\"")
        }
        func date(_ key: String) throws -> LocalDate? {
            guard let text = try f.string(key, maximumBytes: 64) else { return nil }
            guard let date = LocalDate(text) else { throw ProviderError(400, "\"\(key)\" must be a date YYYY-MM-DD") }
            return date
        }
        let repeats: WallClockRule.Repeat
        switch try f.string("repeat", maximumBytes: 64) ?? "once" {
        case "once": repeats = .once
        case "daily": repeats = .daily
        case "weekly":
            let names = (try f.strings("weekdays", maximumCount: 7, maximumBytes: 16) ?? []).map { $0.lowercased().prefix(3) }
            let days = names.compactMap { name in weekdayNames.firstIndex(of: String(name)).map { $0 + 1 } }
            guard !names.isEmpty, days.count == names.count else {
                throw ProviderError(400, "a weekly schedule needs \"weekdays\", such as [\"mon\", \"wed\", \"fri\"]")
            }
            repeats = .weekly(weekdays: days)
        case "monthly":
            guard let day = try f.integer("day", in: 1...31) else { throw ProviderError(400, "a monthly schedule needs \"day\" (1…31)") }
            repeats = .monthly(day: day)
        case let other:
            throw ProviderError(400, "\"repeat\" must be once, daily, weekly or monthly, not \"\(other)\"")
        }
        return .wallClock(WallClockRule(
            hour: hour, minute: minute, timeZone: try f.string("timeZone", maximumBytes: 64), repeats: repeats, from: try date("from"), until: try date("until")))
    }

    static func parseInstant(_ text: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text).map { Int64($0.timeIntervalSince1970) * 1000 }
    }

    static func iso(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000))
    }

    static func json(_ timing: ScheduleTiming) -> JSONValue {
        switch timing {
        case .instant(let at): return .object(["at": .string(iso(at))])
        case .wallClock(let rule):
            func pad(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
            var o: [String: JSONValue] = [
                "time": .string("\(pad(rule.hour)):\(pad(rule.minute))"),
                "timeZone": rule.timeZone.map(JSONValue.string) ?? .null,
                "from": rule.from.map { .string($0.description) } ?? .null,
                "until": rule.until.map { .string($0.description) } ?? .null,
            ]
            switch rule.repeats {
            case .once: o["repeat"] = .string("once")
            case .daily: o["repeat"] = .string("daily")
            case .weekly(let days):
                o["repeat"] = .string("weekly")
                o["weekdays"] = .array(days.map { .string(weekdayNames[$0 - 1]) })
            case .monthly(let day):
                o["repeat"] = .string("monthly")
                o["day"] = .int(Int64(day))
            }
            return .object(o)
        }
    }

    static func json(_ status: ScheduleStatus, runs: Bool = true) -> JSONValue {
        let s = status.schedule
        var o: [String: JSONValue] = [
            "id": .string(s.id), "state": .string(s.state.rawValue), "createdAt": .string(iso(s.createdAt)),
            "timing": json(s.timing),
            "send": (try? JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(s.send))) ?? .null,
            "next": .object(status.next.mapValues { .string(iso($0)) }),
            "counts": .object(status.counts.mapValues { .int(Int64($0)) }),
            "runCount": .int(Int64(status.runs.count)),
        ]
        if runs {
            o["runs"] = .array(status.runs.map { run in
                .object([
                    "zone": .string(run.zone), "localDate": run.localDate.map { .string($0.description) } ?? .null,
                    "dueAt": .string(iso(run.dueAt)), "startedAt": .int(run.startedAt), "finishedAt": .int(run.finishedAt),
                    "outcome": .string(run.outcome.rawValue), "sendId": run.sendID.map(JSONValue.string) ?? .null,
                    "counts": .object(run.counts.mapValues { .int(Int64($0)) }), "error": run.error.map(JSONValue.string) ?? .null,
                ])
            })
        }
        return .object(o)
    }

    /// A page of a list: `{"items": […], "next": "…"}`, `next` absent on the last page (as the
    /// gateway's inspection lists).
    static func page(_ items: [JSONValue], next: String?) -> JSONValue {
        var o: [String: JSONValue] = ["items": .array(items)]
        if let next { o["next"] = .string(next) }
        return .object(o)
    }

    static func json(_ t: MessageTemplate) -> JSONValue {
        .object([
            "id": .string(t.id), "arguments": .int(Int64(t.argumentCount)),
            "translations": .object(t.translations.mapValues { text in
                var o: [String: JSONValue] = ["body": .string(text.body)]
                if let title = text.title { o["title"] = .string(title) }
                if let subtitle = text.subtitle { o["subtitle"] = .string(subtitle) }
                return .object(o)
            }),
        ])
    }

    static func json(_ r: Registration) -> JSONValue {
        .object([
            "token": .string(r.token), "topic": .string(r.topic), "language": .string(r.language), "timeZone": .string(r.timeZone),
            "userId": r.userID.map(JSONValue.string) ?? .null, "tags": .array(r.tags.map(JSONValue.string)), "registeredAt": .int(r.registeredAt),
        ])
    }

    static func json(_ report: SendReport, replayed: Bool) -> JSONValue {
        .object([
            "id": .string(report.id), "createdAt": .int(report.createdAt), "replayed": .bool(replayed),
            "counts": .object(report.counts.mapValues { .int(Int64($0)) }),
            "pruned": .array(report.pruned.map(JSONValue.string)),
            "scheduleId": report.scheduleID.map(JSONValue.string) ?? .null,
            "deliveries": .array(report.deliveries.map { d in
                .object([
                    "token": .string(d.token), "language": d.language.map(JSONValue.string) ?? .null, "status": .int(Int64(d.status)),
                    "reason": d.reason.map(JSONValue.string) ?? .null, "apnsId": d.apnsID.map(JSONValue.string) ?? .null,
                    "attempts": .int(Int64(d.attempts)), "error": d.error.map(JSONValue.string) ?? .null,
                ])
            }),
        ])
    }
}

/// What the REST API makes of a request body, without a server: the readers `POST /v1/sends` and
/// `POST /v1/schedules` use (for fuzzing and tools). Throws ``ProviderError`` (400) or
/// ``JSONFieldError`` for what the API answers 400.
public enum ProviderRequestBodies {
    public static func send(_ body: [UInt8]) throws -> SendRequest {
        let object: [String: JSONValue]
        do { object = try JSONReader.parseObject(body) } catch { throw ProviderError(400, "\(error)") }
        return try ProviderRouter.sendRequest(object, idempotencyHeader: nil)
    }

    public static func schedule(_ body: [UInt8]) throws -> (SendRequest, ScheduleTiming) {
        let object: [String: JSONValue]
        do { object = try JSONReader.parseObject(body) } catch { throw ProviderError(400, "\(error)") }
        return (try ProviderRouter.sendRequest(object, idempotencyHeader: nil), try ProviderRouter.timing(object))
    }
}
