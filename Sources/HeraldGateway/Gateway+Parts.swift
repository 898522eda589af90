import HeraldCore
import HeraldHTTP
import HeraldStore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// How ``Gateway/services()`` builds a running gateway, one step per function: the core and the
/// ports' settings (``assemble()``), the listeners (``bind(_:)``), the admin application
/// (``adminService(_:port:devicePort:onListening:)``) and the parts in start order
/// (``parts(_:_:)``).
extension Gateway {
    /// What every port shares: the registry of connected sessions, the intake and the recorder,
    /// and each port's settings.
    struct Core {
        let registry: DeviceRegistry
        let health: GatewayHealth
        let feed: DeliveryFeed
        let recorder: DeliveryRecorder
        let intake: NotificationIntake
        let cluster: ClusterNode?
        let providerPort: ProviderPort
        let devicePort: DevicePort
        let webPushPort: WebPushPort
        let webPushEndpoints: WebPushEndpoints?
    }

    /// The listeners bound, and their ports.
    struct Listeners {
        var provider: [ProviderPortListener] = []
        var device: BoundListener?
        var webPush: BoundListener?
        var feedback: LegacyFeedbackListener?
        var ports = GatewayPorts(providerPort: 0)

        /// Closes every listener bound so far (start-up failed).
        func closeAll() async {
            for listener in provider { try? await listener.serverChannel.close() }
            await device?.close()
            await webPush?.close()
            await feedback?.close()
        }
    }

    /// The core (joined to its cluster when it is a node) and each port's settings.
    func assemble() async throws -> Core {
        let registry = DeviceRegistry()
        let health = GatewayHealth()
        let feed = DeliveryFeed()
        let recorder = DeliveryRecorder(store: store, logger: logger, writeTimeout: configuration.limits.storeTimeout * 2)
        let cluster = try await joinCluster(registry: registry, recorder: recorder, health: health)
        let limits = configuration.limits
        // Every port's connections together, within the process's descriptors.
        let budget = ConnectionBudget.forThisProcess()
        logger.info("connections: at most \(budget.limit) on all ports together (the descriptor limit less a reserve)")
        let intake = NotificationIntake(
            store: store, policy: configuration.storePolicy, environment: configuration.environment, clock: clock,
            maximumBatchSize: configuration.maximumBatchSize, highWater: limits.intakeHighWater,
            storeTimeout: limits.storeTimeout, health: health, registry: registry, recorder: recorder, feed: feed, cluster: cluster,
            metrics: metrics, logger: logger)
        var providerPort = ProviderPort(
            environment: configuration.environment, clock: clock,
            directory: ProviderKeyDirectory(store: store, clock: clock),
            limiter: limiters.apns,
            intake: intake, store: store, inactivityPeriodMilliseconds: configuration.inactivityPeriodMilliseconds,
            metrics: metrics, logger: logger, faults: faults, limits: limits,
            connectionsPerAddress: ConnectionsPerAddress(limit: limits.providerConnectionsPerAddress, budget: budget), feed: feed)
        if configuration.channelPort != nil {
            providerPort.broadcaster = Broadcaster(
                store: store, policy: configuration.storePolicy, registry: registry, cluster: cluster,
                storeTimeout: limits.storeTimeout, feed: feed)
        }
        let webPushSubscriptions = WebPushSubscriptions(store: store, storeTimeout: limits.storeTimeout)
        let sessionCore = SessionCore(
            environment: configuration.environment, clock: clock, store: store, registry: registry, recorder: recorder,
            metrics: metrics, logger: logger, limits: limits, feed: feed, cluster: cluster)
        let webPushPort = WebPushPort(
            core: sessionCore, intake: intake, subscriptions: webPushSubscriptions,
            limiter: limiters.webPush, publicOrigin: configuration.webPushOrigin,
            pingInterval: configuration.browserPingInterval, idleTimeout: configuration.browserIdleTimeout,
            connectionsPerAddress: ConnectionsPerAddress(limit: limits.deviceConnectionsPerAddress, budget: budget))
        let webPushEndpoints = configuration.webPushPort.map { [configuration] _ in
            WebPushEndpoints(publicOrigin: configuration.webPushOrigin, subscriptions: webPushSubscriptions, origins: webPushPort.origins)
        }
        let devicePort = DevicePort(
            core: sessionCore,
            backgroundThrottle: configuration.backgroundBudget.map { BackgroundThrottle(budget: $0) },
            keepalive: DeviceKeepalive(
                interval: configuration.devicePingInterval, minimum: configuration.devicePingMinimum,
                idleTimeout: configuration.deviceIdleTimeout),
            lowPriorityDelay: configuration.lowPriorityDelay,
            connectionsPerAddress: ConnectionsPerAddress(limit: limits.deviceConnectionsPerAddress, budget: budget),
            enrollmentSecret: configuration.enrollmentSecret, webPush: webPushEndpoints)
        return Core(
            registry: registry, health: health, feed: feed, recorder: recorder, intake: intake, cluster: cluster,
            providerPort: providerPort, devicePort: devicePort, webPushPort: webPushPort, webPushEndpoints: webPushEndpoints)
    }

    /// A cluster node's membership, joined before any port listens; `nil` for a single gateway.
    private func joinCluster(registry: DeviceRegistry, recorder: DeliveryRecorder, health: GatewayHealth) async throws -> ClusterNode? {
        guard let clusterConfiguration = configuration.cluster else { return nil }
        guard let clusterStore = store as? any ClusterStore else {
            throw GatewayClusterError(description: "a cluster node needs a store that several nodes share (PostgreSQL)")
        }
        let node = ClusterNode(
            configuration: clusterConfiguration, store: clusterStore, registry: registry, recorder: recorder,
            limiter: limiters.apns, clock: clock, health: health, storeTimeout: configuration.limits.storeTimeout,
            metrics: metrics, logger: logger)
        try await node.join()
        return node
    }

    /// Binds every configured listener but the admin port's; closes what it bound when one fails.
    func bind(_ core: Core) async throws -> Listeners {
        var bound = Listeners()
        do {
            try await bindProviderPorts(core, into: &bound)
            try await bindDevicePorts(core, into: &bound)
            return bound
        } catch {
            await bound.closeAll()
            throw error
        }
    }

    /// The provider port, the development h2c port and the broadcast channel port.
    private func bindProviderPorts(_ core: Core, into bound: inout Listeners) async throws {
        let (configuration, group) = (self.configuration, self.group)
        let providerPort = core.providerPort
        let tls = self.tls.add(try ReloadableTLSContext { try configuration.makeProviderTLSContext() })
        let main = try await listening("provider", host: configuration.host, port: configuration.providerPort) {
            try await ProviderPortListener.bind(host: configuration.host, port: configuration.providerPort, tls: tls, providerPort: providerPort, group: group)
        }
        bound.provider.append(main)
        bound.ports.providerPort = main.port
        if let h2cPort = configuration.h2cPort {
            // Plaintext is for development on this machine only: never bound beyond loopback.
            let h2c = try await listening("h2c", host: "127.0.0.1", port: h2cPort) {
                try await ProviderPortListener.bind(host: "127.0.0.1", port: h2cPort, tls: nil, providerPort: providerPort, group: group, name: "h2c")
            }
            bound.provider.append(h2c)
            bound.ports.h2cPort = h2c.port
        }
        if let port = configuration.channelPort {
            var channelsPort = providerPort
            channelsPort.role = .channels
            let listener = try await listening("channel", host: configuration.host, port: port) {
                try await ProviderPortListener.bind(host: configuration.host, port: port, tls: tls, providerPort: channelsPort, group: group, name: "channels")
            }
            bound.provider.append(listener)
            bound.ports.channelPort = listener.port
        }
    }

    /// The device port, the Web Push port and the legacy feedback port.
    private func bindDevicePorts(_ core: Core, into bound: inout Listeners) async throws {
        let (configuration, group) = (self.configuration, self.group)
        let (store, clock, logger) = (self.store, self.clock, self.logger)
        // One keepalive timer per event loop for both ports' connections.
        let keepalive = KeepaliveWheels(group: group)
        if let port = configuration.devicePort {
            let devicePort = core.devicePort
            let deviceTLS = tls.add(try ReloadableTLSContext { try configuration.makeTLSContext(applicationProtocols: ["http/1.1"]) })
            let listener = try await listening("device", host: configuration.host, port: port) {
                try await DeviceListener.bind(host: configuration.host, port: port, tls: deviceTLS, devicePort: devicePort, group: group, keepalive: keepalive)
            }
            bound.device = listener
            bound.ports.devicePort = listener.port
        }
        if let port = configuration.webPushPort {
            let webPushPort = core.webPushPort
            let webPushTLS = tls.add(try ReloadableTLSContext { try configuration.makeTLSContext(applicationProtocols: ["h2", "http/1.1"]) })
            let listener = try await listening("webpush", host: configuration.host, port: port) {
                try await WebPushListener.bind(host: configuration.host, port: port, tls: webPushTLS, webPushPort: webPushPort, group: group, keepalive: keepalive)
            }
            bound.webPush = listener
            bound.ports.webPushPort = listener.port
            core.webPushEndpoints?.bound(port: listener.port)
        }
        if let port = configuration.feedbackPort {
            let feedbackTLS = tls.add(try ReloadableTLSContext { try configuration.makeFeedbackTLSContext() })
            let listener = try await listening("feedback", host: configuration.host, port: port) {
                try await LegacyFeedbackListener.bind(
                    host: configuration.host, port: port, tls: feedbackTLS,
                    context: .init(
                        store: store, clock: clock, environment: configuration.environment,
                        inactivityMilliseconds: configuration.inactivityPeriodMilliseconds, logger: logger),
                    handshakeTimeout: configuration.limits.handshakeTimeout,
                    connections: core.providerPort.connectionsPerAddress, group: group)
            }
            bound.feedback = listener
            bound.ports.feedbackPort = listener.port
        }
    }

    /// The admin port: Hummingbird's application as a service of the gateway's group (it binds
    /// when the group starts it; `onListening` gets the port). At shutdown the live feeds being
    /// watched end first, so that the requests under way can finish.
    func adminService(_ core: Core, port: Int, devicePort: Int?, onListening: @escaping @Sendable (Int) -> Void) -> any Service {
        let (store, configuration, registry) = (self.store, self.configuration, core.registry)
        let inspection = GatewayInspection(store: store, clock: clock, connectedDevices: { registry.connectedDeviceIDs() })
        let routes = AdminRoutes(
            metrics: metrics, store: store, health: core.health, storeTimeout: configuration.limits.storeTimeout,
            inspection: inspection, environment: configuration.environment, feed: core.feed,
            faults: configuration.faultInjection ? faults : nil,
            dashboard: GatewayDashboard(
                inspection: inspection, store: store, environment: configuration.environment, nodeID: configuration.cluster?.nodeID,
                devicePort: devicePort, connectedDevices: { registry.connectedDeviceIDs().count }),
            logger: logger)
        let listening = AdminPortListening()
        return AdminService(
            application: RunningHTTPServer.application(
                router: routes.router(), host: configuration.adminHost, port: port, idleTimeout: .seconds(60),
                serverName: "herald-admin", logger: logger,
                onServerRunning: { port in
                    listening.value.store(true, ordering: .releasing)
                    onListening(port)
                }),
            listening: listening, feed: core.feed, host: configuration.adminHost, port: port, portsPromise: portsPromise)
    }

    /// The parts after the admin port, in start order (see ``services()``).
    func parts(_ core: Core, _ listeners: Listeners) -> [any Service] {
        let drainTimeout = configuration.drainTimeout
        let reconnectRate = configuration.limits.deviceReconnectRate
        let (registry, recorder, intake, cluster) = (core.registry, core.recorder, core.intake, core.cluster)
        let (providerListeners, devices, webPush, feedback) = (listeners.provider, listeners.device, listeners.webPush, listeners.feedback)
        let logger = self.logger
        var parts: [GatewayPart] = [GatewayPart("sweeper", work: { await self.sweep() }, cancelsWork: true)]
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
                // The Web Push port takes no new pushes nor browsers; its HTTP/2 senders get
                // GOAWAY `Shutdown` as providers do, and its open requests are answered by the
                // intake's last commit (or its close: 503 Shutdown).
                await withTaskGroup(of: Void.self) { group in
                    if let webPush { group.addTask { await webPush.drain(timeout: drainTimeout) } }
                    for listener in providerListeners {
                        group.addTask { await listener.drain(timeout: drainTimeout) }
                    }
                }
            }),
            GatewayPart("device and feedback listeners", stop: {
                logger.info("gateway draining")
                await devices?.close()
                await feedback?.close()
            }),
        ]
        for index in parts.indices { parts[index].logger = logger }
        return parts
    }
}

/// Set once the admin port listens: a failure before that is the port's (in use, not allowed)
/// and fails the gateway's `ports` naming the admin port; one after it is the application's own.
final class AdminPortListening: Sendable {
    let value = Atomic<Bool>(false)
}

/// The admin port's Hummingbird application as one of the gateway's services: it binds when the
/// group starts it (a failure to listen fails ``Gateway/ports`` and names the admin port); graceful
/// shutdown ends the live feeds being watched, then lets the requests under way finish.
struct AdminService<Application: Service>: Service {
    let application: Application
    let listening: AdminPortListening
    let feed: DeliveryFeed
    let host: String
    let port: Int
    let portsPromise: EventLoopPromise<GatewayPorts>

    func run() async throws {
        do {
            try await withGracefulShutdownHandler {
                try await application.run()
            } onGracefulShutdown: {
                feed.closeAll()
            }
        } catch where !listening.value.load(ordering: .acquiring) {
            let failure = GatewayListenError(listener: "admin", host: host, port: port, underlying: error)
            portsPromise.fail(failure)
            throw failure
        }
    }
}
