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
    private let logger: Logger
    private let group: EventLoopGroup
    private let portsPromise: EventLoopPromise<GatewayPorts>
    private let tls = GatewayTLS()

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
    public func reloadTLS() throws -> Int { try tls.reload() }

    /// The per-token rate limits of the provider port and the Web Push port.
    private let limiters: (apns: TokenRateLimiter, webPush: TokenRateLimiter)

    /// The per-token rate limit now (nil: none).
    public var tokenRateLimit: TokenRateLimiter.Configuration? { limiters.apns.configuration }

    /// Replaces the per-token rate limit of the provider and Web Push ports while the gateway
    /// runs (SIGHUP): the pushes that come next are counted against it.
    public func reloadTokenRateLimit(_ limit: TokenRateLimiter.Configuration?) {
        limiters.apns.reconfigure(limit)
        limiters.webPush.reconfigure(limit)
    }

    /// Binds one listener, saying which port failed if it cannot.
    private func listening<Listener>(_ name: String, host: String, port: Int, _ bind: () async throws -> Listener) async throws -> Listener {
        do { return try await bind() } catch { throw GatewayListenError(listener: name, host: host, port: port, underlying: error) }
    }

    public func run() async throws {
        let registry = DeviceRegistry()
        let health = GatewayHealth()
        let feed = DeliveryFeed()
        let recorder = DeliveryRecorder(store: store, logger: logger, writeTimeout: configuration.limits.storeTimeout * 2)
        let limiter = limiters.apns
        var cluster: ClusterNode?
        if let clusterConfiguration = configuration.cluster {
            guard let clusterStore = store as? any ClusterStore else {
                let error = GatewayClusterError(description: "a cluster node needs a store that several nodes share (PostgreSQL)")
                portsPromise.fail(error)
                throw error
            }
            let node = ClusterNode(
                configuration: clusterConfiguration, store: clusterStore, registry: registry, recorder: recorder,
                limiter: limiter, clock: clock, health: health, storeTimeout: configuration.limits.storeTimeout,
                metrics: metrics, logger: logger)
            do { try await node.join() } catch {
                portsPromise.fail(error)
                throw error
            }
            cluster = node
        }
        let intake = NotificationIntake(
            store: store, policy: configuration.storePolicy, environment: configuration.environment, clock: clock,
            maximumBatchSize: configuration.maximumBatchSize, highWater: configuration.limits.intakeHighWater,
            storeTimeout: configuration.limits.storeTimeout, health: health, registry: registry, recorder: recorder, feed: feed, cluster: cluster,
            metrics: metrics, logger: logger)
        var providerPort = APNsPort(
            environment: configuration.environment, clock: clock,
            directory: ProviderKeyDirectory(store: store, clock: clock),
            limiter: limiter,
            intake: intake, store: store, inactivityPeriodMilliseconds: configuration.inactivityPeriodMilliseconds,
            metrics: metrics, logger: logger, faults: faults, limits: configuration.limits,
            connectionsPerAddress: ConnectionsPerAddress(limit: configuration.limits.providerConnectionsPerAddress), feed: feed)
        if configuration.channelPort != nil { providerPort.broadcaster = Broadcaster(store: store, intake: intake) }
        let webPushSubscriptions = WebPushSubscriptions(store: store, storeTimeout: configuration.limits.storeTimeout)
        let webPushPort = WebPushPort(
            environment: configuration.environment, clock: clock, store: store, intake: intake, registry: registry, recorder: recorder,
            subscriptions: webPushSubscriptions,
            limiter: limiters.webPush, publicOrigin: configuration.webPushOrigin,
            pingInterval: configuration.devicePingInterval, idleTimeout: configuration.deviceIdleTimeout, metrics: metrics, logger: logger,
            limits: configuration.limits, connectionsPerAddress: ConnectionsPerAddress(limit: configuration.limits.deviceConnectionsPerAddress),
            feed: feed, cluster: cluster)
        let webPushEndpoints = configuration.webPushPort.map { _ in
            WebPushEndpoints(publicOrigin: configuration.webPushOrigin, subscriptions: webPushSubscriptions, origins: webPushPort.origins)
        }
        let devicePort = DevicePort(
            environment: configuration.environment, clock: clock, store: store, registry: registry, recorder: recorder,
            backgroundThrottle: configuration.backgroundBudget.map { BackgroundThrottle(budget: $0) },
            pingInterval: configuration.devicePingInterval, idleTimeout: configuration.deviceIdleTimeout,
            lowPriorityDelay: configuration.lowPriorityDelay, metrics: metrics, logger: logger, limits: configuration.limits,
            connectionsPerAddress: ConnectionsPerAddress(limit: configuration.limits.deviceConnectionsPerAddress),
            enrollmentSecret: configuration.enrollmentSecret, feed: feed, cluster: cluster, webPush: webPushEndpoints)

        var listeners: [APNsPortListener] = []
        var deviceListener: DeviceListener?
        var webPushListener: WebPushListener?
        var feedbackListener: LegacyFeedbackListener?
        var admin: AdminServer?
        do {
            let tls = self.tls.add(try ReloadableTLSContext { [configuration] in try configuration.makeProviderTLSContext() })
            let main = try await listening("provider", host: configuration.host, port: configuration.providerPort) {
                try await APNsPortListener.bind(host: configuration.host, port: configuration.providerPort, tls: tls, providerPort: providerPort, group: group)
            }
            listeners.append(main)
            var ports = GatewayPorts(providerPort: main.port)
            if let h2cPort = configuration.h2cPort {
                // Plaintext is for development on this machine only: never bound beyond loopback.
                let h2c = try await listening("h2c", host: "127.0.0.1", port: h2cPort) {
                    try await APNsPortListener.bind(host: "127.0.0.1", port: h2cPort, tls: nil, providerPort: providerPort, group: group, name: "h2c")
                }
                listeners.append(h2c)
                ports.h2cPort = h2c.port
            }
            if let port = configuration.devicePort {
                let deviceTLS = self.tls.add(try ReloadableTLSContext { [configuration] in try configuration.makeTLSContext(applicationProtocols: ["http/1.1"]) })
                let listener = try await listening("device", host: configuration.host, port: port) {
                    try await DeviceListener.bind(host: configuration.host, port: port, tls: deviceTLS, devicePort: devicePort, group: group)
                }
                deviceListener = listener
                ports.devicePort = listener.port
            }
            if let port = configuration.webPushPort {
                let webPushTLS = self.tls.add(try ReloadableTLSContext { [configuration] in try configuration.makeTLSContext(applicationProtocols: ["h2", "http/1.1"]) })
                let listener = try await listening("webpush", host: configuration.host, port: port) {
                    try await WebPushListener.bind(host: configuration.host, port: port, tls: webPushTLS, webPushPort: webPushPort, group: group)
                }
                webPushListener = listener
                ports.webPushPort = listener.port
                webPushEndpoints?.bound(port: listener.port)
            }
            if let port = configuration.channelPort {
                var channelsPort = providerPort
                channelsPort.role = .channels
                let listener = try await listening("channel", host: configuration.host, port: port) {
                    try await APNsPortListener.bind(host: configuration.host, port: port, tls: tls, providerPort: channelsPort, group: group, name: "channels")
                }
                listeners.append(listener)
                ports.channelPort = listener.port
            }
            if let port = configuration.feedbackPort {
                let feedbackTLS = self.tls.add(try ReloadableTLSContext { [configuration] in try configuration.makeFeedbackTLSContext() })
                let listener = try await listening("feedback", host: configuration.host, port: port) {
                    try await LegacyFeedbackListener.bind(
                        host: configuration.host, port: port, tls: feedbackTLS,
                        context: .init(
                            store: store, clock: clock, environment: configuration.environment,
                            inactivityMilliseconds: configuration.inactivityPeriodMilliseconds, logger: logger),
                        handshakeTimeout: configuration.limits.handshakeTimeout, group: group)
                }
                feedbackListener = listener
                ports.feedbackPort = listener.port
            }
            if let adminPort = configuration.adminPort {
                let inspection = GatewayInspection(store: store, connectedDevices: { [registry] in registry.connectedDeviceIDs() })
                let routes = AdminRoutes(
                    metrics: metrics, store: store, health: health, storeTimeout: configuration.limits.storeTimeout,
                    inspection: inspection, environment: configuration.environment, feed: feed,
                    faults: configuration.faultInjection ? faults : nil,
                    dashboard: GatewayDashboard(
                        inspection: inspection, store: store, environment: configuration.environment, nodeID: configuration.cluster?.nodeID,
                        devicePort: ports.devicePort, connectedDevices: { [registry] in registry.connectedDeviceIDs().count }),
                    logger: logger)
                let server = try await listening("admin", host: configuration.adminHost, port: adminPort) {
                    try await AdminServer.bind(routes, host: configuration.adminHost, port: adminPort, logger: logger)
                }
                admin = server
                ports.adminPort = server.port
            }
            portsPromise.succeed(ports)
            logger.info("gateway listening", metadata: [
                "environment": "\(configuration.environment)", "provider_port": "\(ports.providerPort)",
                "h2c_port": "\(ports.h2cPort.map(String.init) ?? "-")", "admin_port": "\(ports.adminPort.map(String.init) ?? "-")",
                "device_port": "\(ports.devicePort.map(String.init) ?? "-")",
                "webpush_port": "\(ports.webPushPort.map(String.init) ?? "-")",
            ])
        } catch {
            portsPromise.fail(error)
            for listener in listeners { try? await listener.serverChannel.close() }
            await deviceListener?.close()
            await webPushListener?.close()
            await feedbackListener?.close()
            await admin?.close()
            throw error
        }

        // The parts in start order; graceful shutdown stops them in reverse, each after the one
        // before it has returned (GatewayPart.swift): devices and feedback stop being accepted,
        // the provider ports drain, the intake commits what is left and hands it to devices
        // still connected, devices are disconnected, the recorder writes the last acks, the
        // node leaves its cluster, the sweeper stops, the admin port closes last.
        let drainTimeout = configuration.drainTimeout
        let reconnectRate = configuration.limits.deviceReconnectRate
        let (providerListeners, devices, feedback, adminServer) = (listeners, deviceListener, feedbackListener, admin)
        let webPush = webPushListener
        var parts: [GatewayPart] = [
            GatewayPart("admin port", stop: { await adminServer?.close() }),
            GatewayPart("sweeper", work: { await self.sweep() }, cancelsWork: true),
        ]
        if let cluster {
            parts.append(GatewayPart("cluster membership", stop: { await cluster.leave() }))
        }
        parts.append(GatewayPart("delivery recorder", work: { await recorder.run() }, stop: { recorder.close() }))
        if let cluster {
            parts.append(GatewayPart("cluster loops", work: { await cluster.run() }, cancelsWork: true))
        }
        parts += [
            GatewayPart("device sessions", stop: {
                registry.closeAllForShutdown(reconnectRate: reconnectRate)
                await devices?.waitForConnectionsToClose(timeout: .seconds(2))
                await webPush?.waitForConnectionsToClose(timeout: .seconds(2))
            }),
            GatewayPart("intake", work: { await intake.run() }, stop: { intake.close() }),
            GatewayPart("provider ports", stop: {
                // The Web Push port takes no new pushes nor browsers; its open requests are
                // answered by the intake's close (503 Shutdown) or its last commit.
                await webPush?.close()
                await withTaskGroup(of: Void.self) { group in
                    for listener in providerListeners {
                        group.addTask { await listener.drain(timeout: drainTimeout) }
                    }
                }
            }),
            GatewayPart("device and feedback listeners", stop: {
                self.logger.info("gateway draining")
                await devices?.close()
                await feedback?.close()
            }),
        ]
        for index in parts.indices { parts[index].logger = logger }
        let lifecycle = ServiceGroup(configuration: .init(services: parts, logger: logger))
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

    /// Marks expired notifications and deletes old receipts, every `sweepInterval`.
    private func sweep() async {
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
