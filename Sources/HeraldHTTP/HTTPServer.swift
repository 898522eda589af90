import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// A Hummingbird HTTP/1.1 server started on its own: ``start(router:host:port:idleTimeout:serverName:logger:)``
/// returns once it listens (with the port the OS chose for port 0); ``close()`` stops accepting
/// and lets the requests under way finish. The admin port and the provider service's API run
/// this way.
public final class RunningHTTPServer: Sendable {
    public let port: Int
    private let group: ServiceGroup
    private let running: Task<Void, Error>

    private init(port: Int, group: ServiceGroup, running: Task<Void, Error>) {
        (self.port, self.group, self.running) = (port, group, running)
    }

    /// Thrown when the server stopped before it listened without saying why.
    public struct NotListening: Error, CustomStringConvertible {
        public var description: String
    }

    public static func start(
        router: Router<BasicRequestContext>, host: String, port: Int, idleTimeout: TimeAmount = .seconds(60),
        serverName: String, logger: Logger
    ) async throws -> RunningHTTPServer {
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let application = application(
            router: router, host: host, port: port, idleTimeout: idleTimeout, serverName: serverName, logger: logger,
            onServerRunning: { bound in
                portSink.yield(bound)
                portSink.finish()
            })
        var groupLogger = logger
        groupLogger.logLevel = .critical
        let group = ServiceGroup(configuration: .init(services: [application], logger: groupLogger))
        let running = Task {
            defer { portSink.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else {
            // It stopped before listening: its error says why (such as the port in use).
            try await running.value
            throw NotListening(description: "the HTTP server stopped before listening on \(host):\(port)")
        }
        return RunningHTTPServer(port: bound, group: group, running: running)
    }

    /// The HTTP/1.1 application every Herald surface runs: `idleTimeout` for silent connections,
    /// the address reused, request logs only from warnings up; `onServerRunning` gets the bound port.
    public static func application(
        router: Router<BasicRequestContext>, host: String, port: Int, idleTimeout: TimeAmount, serverName: String, logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void
    ) -> some ApplicationProtocol {
        var quiet = logger
        if quiet.logLevel < .warning { quiet.logLevel = .warning }
        return Application(
            router: router,
            server: .http1(configuration: .init(idleTimeout: idleTimeout)),
            configuration: .init(address: .hostname(host, port: port), serverName: serverName, reuseAddress: true),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
            logger: quiet)
    }

    /// Stops accepting connections, then waits for the requests being answered.
    public func close() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }
}
