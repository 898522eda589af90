import Foundation
import HTTPTypes
import HeraldCore
import HeraldHTTP
import HeraldProvider
import HeraldProviderAPI
import Hummingbird
import Logging
import NIOCore
import OpenAPIHummingbird
import OpenAPIRuntime
import ServiceLifecycle

/// The provider service's REST API: Hummingbird 2 serving the operations generated from
/// `openapi.yaml` (``ProviderAPI``), behind middleware for the error shape, the bearer token and
/// the body limit; `/health`, `/metrics` and the spec (`/openapi.yaml`, `/openapi.json`) beside them.
public enum ProviderHTTP {
    /// The largest request body the REST API reads: 1 MiB.
    public static let maximumBody = 1 << 20

    static let unauthorized = ProviderError(
        .unauthenticated, "every /v1 request and /metrics need the header Authorization: Bearer <token> (the token is in the provider's api-token file)")

    /// The router: every `/v1/…` request and `/metrics` need `Authorization: Bearer <apiToken>`;
    /// `/health` and the spec are public.
    public static func router(service: ProviderService, apiToken: String) throws -> Router<BasicRequestContext> {
        let router = Router()
        // Traced (Traces): a server span per request, in the trace of its `traceparent`.
        if Traces.isEnabled { router.add(middleware: TracingMiddleware()) }
        router.add(middleware: ErrorShapeMiddleware())
        router.add(middleware: BearerTokenMiddleware(apiToken: apiToken))
        router.add(middleware: BodyLimitMiddleware(maximum: maximumBody))
        router.get("health") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        router.get("openapi.json") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.json)))
        }
        router.get("openapi.yaml") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
        }
        router.get("metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(bytes: try await service.metricsExposition() + ProcessMetrics.exposition(component: "provider"))))
        }
        ProviderDashboard(service: service, apiToken: apiToken).register(on: router)
        try ProviderAPI(service: service).registerHandlers(
            on: router, configuration: Configuration(dateTranscoder: ProviderAPI.dates, jsonEncodingOptions: [.sortedKeys, .withoutEscapingSlashes]),
            middlewares: [SpecCheck()])
        return router
    }

    /// The REST API as a service of a ServiceGroup: it stops accepting at graceful shutdown and
    /// lets the requests under way finish (a send completes and records its report). A connection
    /// silent for `idleTimeout` is closed.
    public static func application(
        service: ProviderService, host: String = "127.0.0.1", port: Int, apiToken: String, idleTimeout: TimeAmount = .seconds(60),
        logger: Logger = Logger(label: "herald.provider.http"), onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws -> some ApplicationProtocol {
        RunningHTTPServer.application(
            router: try router(service: service, apiToken: apiToken), host: host, port: port, idleTimeout: idleTimeout,
            serverName: "herald-provider", logger: logger, onServerRunning: onServerRunning)
    }
}

/// The REST API started on its own (for tests and tools that need the port): ``start(service:host:port:apiToken:idleTimeout:)``
/// returns once it listens; ``close()`` shuts it down gracefully.
public final class ProviderHTTPServer: Sendable {
    private let server: RunningHTTPServer
    public var port: Int { server.port }

    private init(server: RunningHTTPServer) { self.server = server }

    public static func start(
        service: ProviderService, host: String = "127.0.0.1", port: Int, apiToken: String, idleTimeout: TimeAmount = .seconds(60)
    ) async throws -> ProviderHTTPServer {
        ProviderHTTPServer(server: try await RunningHTTPServer.start(
            router: try ProviderHTTP.router(service: service, apiToken: apiToken), host: host, port: port, idleTimeout: idleTimeout,
            serverName: "herald-provider", logger: Logger(label: "herald.provider.http")))
    }

    /// Stops accepting connections, then waits for the requests being answered.
    public func close() async { await server.close() }
}

/// Every error as `{"error": "…"}` with its status: the service's refusals (``ProviderError``),
/// what the generated decoding refuses (400 naming the field), the router's (404, 413), and an
/// unexpected error as a 500 that names it.
struct ErrorShapeMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let (status, message) = Self.describe(error, request: request)
            if status >= 500 { context.logger.error("\(request.method) \(request.uri.path): \(message)") }
            var headers: HTTPFields = [.contentType: "application/json"]
            if status == 401 { headers[.wwwAuthenticate] = #"Bearer realm="herald""# }
            if status == 413 { headers[.connection] = "close" }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes]
            let body = try encoder.encode(["error": message])
            return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
    }

    static func describe(_ error: any Error, request: Request) -> (Int, String) {
        switch error {
        case let error as ProviderError:
            return (error.kind.httpStatus, error.message)
        case let error as ServerError:
            if let underlying = error.underlyingError as? ProviderError { return (underlying.kind.httpStatus, underlying.message) }
            if let decoding = error.underlyingError as? DecodingError {
                return (400, ProviderAPIErrors.describe(decoding))
            }
            let status = Int(error.httpStatus.code)
            if status == 415 { return (415, "the body must be JSON (Content-Type: application/json)") }
            return (status, status >= 500 ? "\(error.causeDescription): \(error.underlyingError)" : "\(error.causeDescription)")
        case let error as HTTPError:
            switch error.status {
            case .notFound: return (404, "no route \(request.method) \(request.uri.path) (see /openapi.json)")
            case .contentTooLarge: return (413, "the body is larger than \(ProviderHTTP.maximumBody) bytes")
            default: return (Int(error.status.code), error.body ?? error.status.reasonPhrase)
            }
        default:
            return (500, "\(error)")
        }
    }
}

/// `Authorization: Bearer <token>` on every `/v1/…` request and `/metrics`, compared in constant time.
struct BearerTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let apiToken: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if path.hasPrefix("/v1/") || path == "/v1" || path == "/metrics" {
            guard let header = request.headers[.authorization], header.count > 7, header.prefix(7).lowercased() == "bearer ",
                  SecretComparison.equal(header.dropFirst(7).trimmingCharacters(in: .whitespaces), apiToken) else {
                throw ProviderHTTP.unauthorized
            }
        }
        return try await next(request, context)
    }
}

/// Reads a request's body whole, up to `maximum` bytes (413 beyond, before reading it when its
/// Content-Length says so). A JSON body sent without a Content-Type, or with curl's default for
/// `-d` (`application/x-www-form-urlencoded`), is read as JSON, as the API always did.
struct BodyLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let maximum: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > maximum {
            throw HTTPError(.contentTooLarge)
        }
        var request = request
        let body = try await request.collectBody(upTo: maximum)
        let type = request.headers[.contentType]?.lowercased()
        if body.readableBytes > 0, type == nil || type?.hasPrefix("application/x-www-form-urlencoded") == true {
            var head = request.head
            head.headerFields[.contentType] = "application/json"
            request = Request(head: head, body: .init(buffer: body))
        }
        return try await next(request, context)
    }
}

/// Checks each request against the spec before the generated code decodes it
/// (``ProviderSpec``): query parameters the operation does not take, values and bodies its
/// schemas do not allow, and bodies that are not strict JSON are refused with a 400 naming the
/// field and what it must be.
struct SpecCheck: ServerMiddleware {
    let spec = ProviderSpec.current

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        if let query = request.path.flatMap(QueryString.query(of:)) {
            let pairs: [(name: String, value: String)]
            do { pairs = try QueryString.pairs(query) } catch { throw ProviderError(.invalid, error.description) }
            try spec.checkQuery(operationID, pairs)
        }
        guard let body, spec.operations[operationID]?.body != nil else { return try await next(request, body, metadata) }
        // The body is already whole and at most ProviderHTTP.maximumBody (BodyLimitMiddleware).
        let bytes = try await [UInt8](collecting: body, upTo: ProviderHTTP.maximumBody)
        try spec.checkBody(operationID, bytes)
        // An operation whose body is optional, called without one: no body, not an empty document.
        if bytes.isEmpty, spec.operations[operationID]?.bodyRequired == false { return try await next(request, nil, metadata) }
        return try await next(request, HTTPBody(bytes), metadata)
    }
}

extension ProviderError.Kind {
    /// The HTTP status the provider API answers this failure with (docs/provider-api.md).
    var httpStatus: Int {
        switch self {
        case .invalid: 400
        case .unauthenticated: 401
        case .forbidden: 403
        case .notFound: 404
        case .conflict: 409
        case .notJSON: 415
        case .keyReused: 422
        case .internalFailure: 500
        case .notSupported: 501
        case .gatewayFailed: 502
        }
    }
}
