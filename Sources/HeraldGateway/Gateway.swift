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
    public let store: any GatewayStore
    public let clock: any WallClock
    public let metrics: GatewayMetrics
    /// Refusals an operator asks for on purpose, to test providers (admin port `POST /faults`).
    public let faults = GatewayFaults()
    let logger: Logger
    let group: EventLoopGroup
    let portsPromise: EventLoopPromise<GatewayPorts>
    let tls = GatewayTLS()

    public init(
        configuration: GatewayConfiguration, store: any GatewayStore, clock: any WallClock = SystemWallClock(),
        metrics: GatewayMetrics = GatewayMetrics(), eventLoopGroup: EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        // With fault injection on, the admin port can make the clock jump (POST /faults/clock).
        self.clock = configuration.faultInjection ? ShiftedWallClock(base: clock, faults: faults) : clock
        self.metrics = metrics
        self.group = eventLoopGroup
        self.logger = logger
        self.portsPromise = eventLoopGroup.any().makePromise(of: GatewayPorts.self)
        self.limiters = (TokenRateLimiter(configuration: configuration.tokenRateLimit), TokenRateLimiter(configuration: configuration.tokenRateLimit))
    }

    /// The ports, once every listener is bound. Throws if start-up failed.
    public var ports: GatewayPorts {
        get async throws { try await portsPromise.futureResult.get() }
    }

    /// Reads the TLS certificate, key and client CA files again and installs them on every TLS port
    /// for the connections that come next (open ones keep theirs). When any file does not make a
    /// context, nothing changes and the error says why. Returns how many contexts were replaced.
    @discardableResult
    public func reloadTLS() throws -> Int {
        let count = try tls.reload()
        metrics.recordCertificate(configuration.tls)
        return count
    }

    /// The per-token rate limits of the provider port and the Web Push port.
    let limiters: (apns: TokenRateLimiter, webPush: TokenRateLimiter)

    /// The per-token rate limit now (nil: none).
    public var tokenRateLimit: TokenRateLimiter.Configuration? { limiters.apns.configuration }

    /// Replaces the per-token rate limit of the provider and Web Push ports while the gateway
    /// runs (SIGHUP): the pushes that come next are counted against it.
    public func reloadTokenRateLimit(_ limit: TokenRateLimiter.Configuration?) {
        limiters.apns.reconfigure(limit)
        limiters.webPush.reconfigure(limit)
    }

    /// Binds one listener, saying which port failed if it cannot.
    func listening<Listener>(_ name: String, host: String, port: Int, _ bind: () async throws -> Listener) async throws -> Listener {
        do { return try await bind() } catch { throw GatewayListenError(listener: name, host: host, port: port, underlying: error) }
    }

    /// Runs the gateway in a `ServiceGroup` of its own: ``services()`` until the group this
    /// gateway runs in (or a signal) shuts it down gracefully. The `herald gateway` command puts
    /// ``services()`` in its one group instead.
    public func run() async throws {
        let lifecycle = ServiceGroup(configuration: .init(services: try await services(), logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await lifecycle.run() }
            // The gateway's own graceful shutdown (from the group it runs in) starts its parts'.
            tasks.addTask {
                try? await gracefulShutdown()
                await lifecycle.triggerGracefulShutdown()
            }
            try await tasks.waitForAll()
        }
        logger.info("gateway stopped")
    }

    /// Binds every port and returns the gateway's parts in start order, to be run as services of
    /// one `ServiceGroup` whose graceful shutdown stops them in reverse order, each after the one
    /// before it has returned (GatewayPart.swift): devices and feedback stop being accepted, the
    /// provider ports drain, the intake commits what is left and hands it to devices still
    /// connected, devices are disconnected, the recorder writes the last acks, the node leaves
    /// its cluster, the sweeper stops, the admin port (a Hummingbird application, the first
    /// service) closes last. ``ports`` is known once the admin port listens too.
    public func services() async throws -> [any Service] {
        let core: Core
        do { core = try await assemble() } catch {
            portsPromise.fail(error)
            throw error
        }
        let listeners: Listeners
        do { listeners = try await bind(core) } catch {
            portsPromise.fail(error)
            throw error
        }
        let ports = listeners.ports
        metrics.recordCertificate(configuration.tls)
        let admin: (any Service)?
        if let adminPort = configuration.adminPort {
            admin = adminService(core, port: adminPort, devicePort: ports.devicePort) { [self] bound in
                var all = ports
                all.adminPort = bound
                announce(all)
            }
        } else {
            admin = nil
            announce(ports)
        }
        return (admin.map { [$0] } ?? []) + parts(core, listeners)
    }

    /// The ports are known: ``ports`` answers, and the log says them.
    private func announce(_ ports: GatewayPorts) {
        portsPromise.succeed(ports)
        logger.info("gateway listening", metadata: [
            "environment": "\(configuration.environment)", "provider_port": "\(ports.providerPort)",
            "h2c_port": "\(ports.h2cPort.map(String.init) ?? "-")", "admin_port": "\(ports.adminPort.map(String.init) ?? "-")",
            "device_port": "\(ports.devicePort.map(String.init) ?? "-")",
            "webpush_port": "\(ports.webPushPort.map(String.init) ?? "-")",
        ])
    }

    /// Marks expired notifications and deletes old receipts, every `sweepInterval`.
    func sweep() async {
        let interval = Duration.nanoseconds(configuration.sweepInterval.nanoseconds)
        while !Task.isCancelled {
            let now = clock.nowMilliseconds()
            do {
                // Bounded, and ended by shutdown even when the store does not answer (a
                // connection caught in a database failover once held a stopping gateway forever).
                let (store, retention) = (self.store, configuration.receiptRetentionMilliseconds)
                _ = try await withDeadline(max(.seconds(60), configuration.limits.storeTimeout * 2)) {
                    try await store.sweep(nowMilliseconds: now, retainFinishedUntil: now - retention)
                }
            } catch is CancellationError {
                break
            } catch {
                logger.error("sweep failed", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }

}

/// A cluster node was configured over a store that cannot be shared.
public struct GatewayClusterError: Error, CustomStringConvertible {
    public var description: String
}
