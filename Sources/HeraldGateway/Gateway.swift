import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The push gateway: the APNs-compatible provider port (TLS, and h2c for development), the
/// intake that stores accepted notifications, and the admin port. One `Service`: run it in a
/// `ServiceGroup`; graceful shutdown drains the provider port (GOAWAY `{"reason":"Shutdown"}`,
/// 503 `Shutdown` for late streams), then commits everything accepted before it returns.
public final class Gateway: Service, Sendable {
    public let configuration: GatewayConfiguration
    public let store: any HeraldStore
    public let clock: any WallClock
    public let metrics: GatewayMetrics
    private let logger: Logger
    private let group: EventLoopGroup
    private let portsPromise: EventLoopPromise<GatewayPorts>

    public init(
        configuration: GatewayConfiguration, store: any HeraldStore, clock: any WallClock = SystemWallClock(),
        metrics: GatewayMetrics = GatewayMetrics(), eventLoopGroup: EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.group = eventLoopGroup
        self.logger = logger
        self.portsPromise = eventLoopGroup.any().makePromise(of: GatewayPorts.self)
    }

    /// The ports, once every listener is bound. Throws if start-up failed.
    public var ports: GatewayPorts {
        get async throws { try await portsPromise.futureResult.get() }
    }

    public func run() async throws {
        let intake = NotificationIntake(
            store: store, policy: configuration.storePolicy, environment: configuration.environment, clock: clock,
            maximumBatchSize: configuration.maximumBatchSize, metrics: metrics, logger: logger)
        let providerPort = ProviderPort(
            environment: configuration.environment, clock: clock,
            directory: ProviderKeyDirectory(store: store, clock: clock),
            limiter: configuration.tokenRateLimit.map(TokenRateLimiter.init(configuration:)),
            intake: intake, metrics: metrics, logger: logger)

        var listeners: [ProviderListener] = []
        var admin: AdminServer?
        do {
            let tls = try configuration.makeTLSContext()
            let main = try await ProviderListener.bind(
                host: configuration.host, port: configuration.providerPort, tls: tls, providerPort: providerPort, group: group)
            listeners.append(main)
            var ports = GatewayPorts(providerPort: main.port)
            if let h2cPort = configuration.h2cPort {
                // Plaintext is for development on this machine only: never bound beyond loopback.
                let h2c = try await ProviderListener.bind(
                    host: "127.0.0.1", port: h2cPort, tls: nil, providerPort: providerPort, group: group)
                listeners.append(h2c)
                ports.h2cPort = h2c.port
            }
            if let adminPort = configuration.adminPort {
                let server = try await AdminServer.bind(
                    host: configuration.host, port: adminPort, metrics: metrics, store: store, group: group, logger: logger)
                admin = server
                ports.adminPort = server.port
            }
            portsPromise.succeed(ports)
            logger.info("gateway listening", metadata: [
                "environment": "\(configuration.environment)", "provider_port": "\(ports.providerPort)",
                "h2c_port": "\(ports.h2cPort.map(String.init) ?? "-")", "admin_port": "\(ports.adminPort.map(String.init) ?? "-")",
            ])
        } catch {
            portsPromise.fail(error)
            for listener in listeners { try? await listener.serverChannel.close() }
            await admin?.close()
            throw error
        }

        // The intake runs until every listener has drained; then it commits what is left.
        async let intakeFinished: Void = intake.run()
        await waitForGracefulShutdown()
        logger.info("gateway draining")
        await withTaskGroup(of: Void.self) { group in
            for listener in listeners {
                group.addTask { await listener.drain(timeout: self.configuration.drainTimeout) }
            }
        }
        intake.close()
        await intakeFinished
        await admin?.close()
        logger.info("gateway stopped")
    }

    private func waitForGracefulShutdown() async {
        try? await gracefulShutdown()
    }
}
