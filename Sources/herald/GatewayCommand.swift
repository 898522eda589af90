import ArgumentParser
import Foundation
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldStoreSQLite
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// `herald gateway`: runs the gateway (`run`, the default) or watches a running one (`watch`).
struct GatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway",
        abstract: "Run the push gateway (the default: herald gateway run), follow a running one live (herald gateway watch), or ask it whether it is healthy (herald gateway health).",
        discussion: """
            `herald gateway --data-dir DIR …` is `herald gateway run --data-dir DIR …`; see `herald gateway run --help` for its options.

            Example: herald gateway --data-dir ./herald-data --provider-port 2197 --device-port 2198 --admin-port 9090
            """,
        subcommands: [GatewayRunCommand.self, GatewayWatchCommand.self, GatewayHealthCommand.self],
        defaultSubcommand: GatewayRunCommand.self)
}

struct GatewayRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the push gateway: the APNs-compatible provider port on an embedded SQLite store.",
        discussion: """
            On start-up the gateway prints one JSON line with the ports it listens on, e.g.
              {"admin_port":9090,"ca":"DIR/tls/ca.pem","device_port":2198,"h2c_port":8080,"provider_port":2197,...}
            Port 0 lets the system choose. Without --tls-cert/--tls-key it creates a development CA and a
            server certificate for localhost, 127.0.0.1 and ::1 in DIR/tls (kept across restarts); give clients
            the CA, e.g. `curl --cacert DIR/tls/ca.pem`. SIGTERM or SIGINT drains and stops it gracefully;
            SIGHUP reads the TLS certificate and key files again for new connections.
            `herald gateway watch --admin http://127.0.0.1:9090` follows what happens to notifications live.

            Example: herald gateway run --data-dir ./herald-data --provider-port 2197 --device-port 2198 --admin-port 9090
            """
    )

    @OptionGroup var data: DataDirectoryOptions

    @Option(help: "The TLS provider port (HTTP/2, ALPN h2). 0 picks a free port.")
    var providerPort: Int = 2197

    @Option(help: "A plaintext HTTP/2 (h2c, prior knowledge) port for local development, bound to 127.0.0.1 only.")
    var h2cPort: Int?

    @Option(help: "The admin port: GET /health, Prometheus GET /metrics, read-only views GET /v1/… and the live feed GET /v1/events (docs/inspection.md), and /faults with --enable-faults.")
    var adminPort: Int?

    @Option(help: "The address the admin port listens on. It has no authentication: keep it on loopback unless a firewall guards it.")
    var adminHost: String = "127.0.0.1"

    @Flag(help: "For testing providers only: the admin port's POST /faults makes the next pushes fail with 429/5xx. Without it /faults answers 404.")
    var enableFaults = false

    @Option(help: ArgumentHelp("A file holding a secret that new devices must present to enroll (herald device run --enrollment-secret-file). Without it enrollment is open; enrolled devices need no secret.", valueName: "FILE"))
    var enrollmentSecretFile: String?

    @Option(help: ArgumentHelp("Seconds a provider connection may stay without a stream before GOAWAY IdleTimeout.", valueName: "SECONDS"))
    var providerIdleTimeout: Int = 3600

    @Option(help: "Open provider connections allowed from one IP address.")
    var providerConnectionsPerAddress: Int = GatewayLimits().providerConnectionsPerAddress

    @Option(help: "Open device connections allowed from one IP address.")
    var deviceConnectionsPerAddress: Int = GatewayLimits().deviceConnectionsPerAddress

    @Option(help: ArgumentHelp(
        "Device handshakes under way at once from one IP address; past it the address's new connections are closed at accept.",
        valueName: "COUNT"))
    var deviceHandshakesPerAddress: Int = GatewayLimits().deviceHandshakesInFlightPerAddress

    @Option(help: ArgumentHelp(
        "Device handshakes a second this gateway can finish: at a graceful stop, devices are asked to come back at random within (connected devices / this) seconds.",
        valueName: "PER-SECOND"))
    var deviceReconnectRate: Int = GatewayLimits().deviceReconnectRate

    @Option(help: ArgumentHelp("Seconds a peer has to finish the TLS handshake (and a device to answer the challenge).", valueName: "SECONDS"))
    var handshakeTimeout: Int = 10

    @Option(help: "The device port: one WebSocket over TLS per device (docs/device-protocol.md). 0 picks a free port.")
    var devicePort: Int?

    @Option(help: "The Web Push port (docs/web-push.md): RFC 8030 push endpoints over HTTP/1.1 and HTTP/2, and Mozilla's push WebSocket for browsers (point Firefox's dom.push.serverURL at wss://HOST:PORT/), over TLS. 0 picks a free port.")
    var webpushPort: Int?

    @Option(help: ArgumentHelp("The origin Web Push endpoints are issued under and VAPID tokens must name as aud (https://push.example.com, as senders reach the port). Default: https:// and the Host each peer connected to.", valueName: "URL"))
    var webpushOrigin: String?

    @Option(help: "The broadcast channel management port (HTTP/2 over TLS, authenticated like the provider port, Apple's 2195/2196): creating, reading, listing and deleting channels. Broadcasts need it. 0 picks a free port.")
    var channelPort: Int?

    @Option(help: "The legacy binary feedback port (TLS with an app's client certificate, Apple's retired Feedback Service format).")
    var feedbackPort: Int?

    @Option(help: ArgumentHelp("The CA (PEM) whose client certificates the feedback port accepts. Default: the development CA (see `herald feedback certificate`).", valueName: "PEM"))
    var feedbackClientCa: String?

    @Option(help: ArgumentHelp("The CA (PEM) whose push certificates the provider port accepts (certificate authentication). Default: the development CA (see `herald keys certificate`); with --tls-cert, none unless given.", valueName: "PEM"))
    var providerClientCa: String?

    @Option(help: ArgumentHelp("Seconds of quiet after which the gateway pings a device, at most: devices may ask for less (down to --device-ping-minimum). A device notices a frozen node within twice this.", valueName: "SECONDS"))
    var devicePingInterval: Int = Int(DeviceKeepalive.defaultIntervalSeconds)

    @Option(help: ArgumentHelp("The shortest ping interval a device may ask for (a device whose network drops idle connections sooner learns to ask).", valueName: "SECONDS"))
    var devicePingMinimum: Int = Int(DeviceKeepalive.defaultMinimumSeconds)

    @Option(help: ArgumentHelp("Seconds without a word from a device pinged every --device-ping-interval after which it is disconnected (the same multiple of a shorter interval for devices that asked for one).", valueName: "SECONDS"))
    var deviceIdleTimeout: Int = Int(DeviceKeepalive.defaultIdleTimeoutSeconds)

    @Option(help: ArgumentHelp("Milliseconds the store has to commit a push (or answer a key look-up) before the provider is answered 503 ServiceUnavailable; /health then reports the store.", valueName: "MS"))
    var storeTimeout: Int = 5_000

    @Option(help: "Background pushes per device and app per hour (Apple advises 2-3); over budget only the newest is held. 0 turns throttling off.")
    var backgroundPerHour: Int = 3

    @Option(help: ArgumentHelp("Days without a connection after which a device's tokens are reported in the feedback list.", valueName: "DAYS"))
    var inactivityDays: Int = 30

    @Option(help: ArgumentHelp("Days the receipts of finished notifications are kept.", valueName: "DAYS"))
    var receiptDays: Int = 7

    @Option(help: "The address the provider, device and feedback ports listen on: loopback unless you open it (::1 for IPv6 loopback; :: for every address, IPv4 and IPv6; 0.0.0.0 for every IPv4 address; or one interface's address, with --tls-cert/--tls-key naming that host: the development certificate is for localhost, 127.0.0.1 and ::1 only).")
    var host: String = "127.0.0.1"

    @Option(help: "The environment this gateway runs as: development (the sandbox) or production.")
    var environment: PushEnvironment = .development

    @Option(help: ArgumentHelp("The server certificate chain (PEM). Needs --tls-key.", valueName: "PEM"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("The server certificate's private key (PEM). Needs --tls-cert.", valueName: "PEM"))
    var tlsKey: String?

    @Option(help: "Pushes one device token may receive in a burst before 429 TooManyRequests; 0 turns the limit off.")
    var tokenBurst: Int = TokenRateLimiter.Configuration.default.burst

    @Option(help: "Pushes per second one device token may receive over time.")
    var tokenRate: Double = TokenRateLimiter.Configuration.default.perSecond

    @Option(help: "How many notifications are kept per offline device and app (1 = Apple's policy: the newest).")
    var offlineQueue: Int = 1

    @Option(help: "full: every commit reaches the disk before 200 (survives power loss); normal: survives a crash of the process only.")
    var durability: SQLiteStore.Durability = .full

    @Option(help: ArgumentHelp("This node's name in a cluster (with --database): a-z, 0-9, '-' and '_', at most 40. Give each node its own, and the same one again when it restarts. Default: the host name.", valueName: "NAME"))
    var nodeId: String?

    @Option(help: "Cluster: seconds without a lease renewal after which a node counts as dead and its devices' presence is reaped.")
    var nodeLease: Int = 10

    @Option(help: "Cluster: milliseconds between sweeps of what is held for this node's devices (delivers what a lost hint delayed).")
    var clusterSweep: Int = 2_000

    @Option(help: "Cluster: milliseconds between sweeps that read everything held for this node's devices; the sweeps between read only what was stored over their last two intervals.")
    var clusterFullSweep: Int = 60_000

    @Option(help: "Cluster: hint the node holding a device when a push for it is stored (on), or rely on the sweep alone (off: slower, still correct).")
    var crossNodeHints: Switch = .on

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @OptionGroup var logging: LogFormatOption
    @OptionGroup var tracing: TracingOptions

    @OptionGroup var configuration: ConfigurationOptions

    func validate() throws {
        if (tlsCert == nil) != (tlsKey == nil) {
            throw ValidationError("give both --tls-cert and --tls-key, or neither (a development certificate is then created)")
        }
        for (name, port) in [("--provider-port", providerPort), ("--h2c-port", h2cPort ?? 0), ("--admin-port", adminPort ?? 0), ("--device-port", devicePort ?? 0), ("--feedback-port", feedbackPort ?? 0), ("--channel-port", channelPort ?? 0), ("--webpush-port", webpushPort ?? 0)]
        where !(0...65535).contains(port) {
            throw ValidationError("\(name) must be between 0 and 65535, not \(port)")
        }
        if feedbackPort != nil && feedbackClientCa == nil && tlsCert != nil {
            throw ValidationError("with --tls-cert, the feedback port needs --feedback-client-ca (the CA of the apps' client certificates)")
        }
        if !(1...86_400).contains(devicePingInterval) || deviceIdleTimeout <= devicePingInterval || deviceIdleTimeout > 172_800 {
            throw ValidationError("--device-ping-interval must be from 1 to 86400 and --device-idle-timeout greater than it (at most 172800)")
        }
        if !(1...86_400).contains(devicePingMinimum) { throw ValidationError("--device-ping-minimum must be from 1 to 86400 seconds") }
        if !(100...600_000).contains(storeTimeout) { throw ValidationError("--store-timeout must be from 100 to 600000 milliseconds") }
        if !(0...1_000_000).contains(backgroundPerHour) { throw ValidationError("--background-per-hour must be from 0 (throttling off) to 1000000") }
        if !(1...3650).contains(inactivityDays) || !(1...3650).contains(receiptDays) {
            throw ValidationError("--inactivity-days and --receipt-days must be from 1 to 3650")
        }
        if !(1...100_000).contains(offlineQueue) { throw ValidationError("--offline-queue must be from 1 to 100000") }
        if !(1...86_400 * 7).contains(providerIdleTimeout) { throw ValidationError("--provider-idle-timeout must be from 1 to 604800 seconds") }
        if !(1...100_000).contains(deviceHandshakesPerAddress) { throw ValidationError("--device-handshakes-per-address must be from 1 to 100000") }
        if !(1...1_000_000).contains(deviceReconnectRate) { throw ValidationError("--device-reconnect-rate must be from 1 to 1000000 a second") }
        if !(1...600).contains(handshakeTimeout) { throw ValidationError("--handshake-timeout must be from 1 to 600 seconds") }
        if providerConnectionsPerAddress < 1 || deviceConnectionsPerAddress < 1 {
            throw ValidationError("--provider-connections-per-address and --device-connections-per-address must be at least 1")
        }
        if !(0...1_000_000_000).contains(tokenBurst) || !(tokenRate > 0 && tokenRate <= 1_000_000) {
            throw ValidationError("--token-burst must be from 0 to 1000000000 and --token-rate greater than 0 and at most 1000000")
        }
        if data.dataDirectoryArgument == nil {
            throw ValidationError("give --data-dir DIR: the gateway keeps its TLS files (and, without --database, its SQLite store) there")
        }
        if data.databaseURL == nil && nodeId != nil {
            throw ValidationError("--node-id names a node of a cluster: give --database postgres://USER@HOST:PORT/DB too")
        }
        if let problem = NodeID.problem(resolvedNodeID) { throw ValidationError("--node-id \(resolvedNodeID): \(problem)") }
        if !(2...3_600).contains(nodeLease) { throw ValidationError("--node-lease must be from 2 to 3600 seconds") }
        if !(100...600_000).contains(clusterSweep) { throw ValidationError("--cluster-sweep must be from 100 to 600000 milliseconds") }
        if !(clusterSweep...86_400_000).contains(clusterFullSweep) {
            throw ValidationError("--cluster-full-sweep must be from --cluster-sweep (\(clusterSweep)) to 86400000 milliseconds")
        }
        if Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// `--token-burst` and `--token-rate` as the limiter takes them (nil: no limit).
    var tokenRateLimit: TokenRateLimiter.Configuration? {
        tokenBurst == 0 ? nil : .init(burst: tokenBurst, perSecond: tokenRate)
    }

    /// The settings SIGHUP applies while the gateway runs; any other change needs a restart.
    static let reloadable: Set<String> = ["log-level", "token-burst", "token-rate"]

    func run() async throws {
        AllocatorTuning.applyForServer()
        logging.logFormat.bootstrap(traced: tracing.otlpEndpoint != nil)
        let tracer = try tracing.start(serviceName: "herald-gateway")
        ProcessLogLevel.level = Logger.Level(rawValue: logLevel) ?? .info
        let logger = Logger(label: "herald.gateway")

        try data.lockForGateway()
        let opened = try await data.openStore(durability: durability, logger: logger)
        let clock = SystemWallClock()
        let (tls, caPath) = try tlsFiles(clock: clock)
        let configuration = try gatewayConfiguration(tls: tls, caPath: caPath, opened: opened)
        let gateway = Gateway(configuration: configuration, store: opened.store, clock: clock, logger: logger)
        // SIGHUP: the settings and the TLS files are read again (docs/operations.md).
        let started = try? Settings.layer(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        let reloads = Task {
            var running = started
            for await _ in await UnixSignalsSequence(trapping: .sighup) {
                running = Self.reload(gateway: gateway, running: running, logger: logger)
            }
        }
        defer { reloads.cancel() }
        // One ServiceGroup for the whole process, shut down in reverse order: the gateway's parts
        // (the admin port last of them) drain and commit first, then checkpointing stops, the
        // trace exporter last, so that it flushes what the others recorded.
        var services: [any Service] = (tracer.map { [$0] } ?? []) + [HeapReturner(interval: .seconds(10))]
        if case .sqlite(let sqlite) = opened { services.append(SQLiteCheckpointer(store: sqlite, logger: logger)) }
        do { services += try await gateway.services() } catch {
            throw Self.startFailure(error)
        }
        let group = ServiceGroup(configuration: .init(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        async let running: Void = group.run()
        do {
            let ports = try await gateway.ports
            let announcement = StartupLine(
                provider_port: ports.providerPort, h2c_port: ports.h2cPort, admin_port: ports.adminPort,
                device_port: ports.devicePort, webpush_port: ports.webPushPort, feedback_port: ports.feedbackPort, channel_port: ports.channelPort,
                ca: caPath, environment: environment.rawValue, database: opened.location,
                node: configuration.cluster?.nodeID)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
            printLineFlushed(String(decoding: try encoder.encode(announcement), as: UTF8.self))
            if let caPath { printError("herald: development CA for clients (curl --cacert): \(caPath)") }
        } catch {
            _ = try? await running
            throw Self.startFailure(error)
        }
        try await running
        logger.info("gateway stopped")
    }

    /// Says why the gateway could not start (a port in use names its flag); the exit status is 1.
    private static func startFailure(_ error: Error) -> ExitCode {
        if let error = error as? GatewayListenError {
            let flag = "--\(error.listener)-port"
            printError("herald: \(error) (\(flag) \(error.port))" + (error.isAddressInUse ? "; stop what holds it, or choose another \(flag) (0 lets the system choose)" : ""))
        } else {
            printError("herald: the gateway could not start: \(error)")
        }
        return ExitCode.failure
    }

    /// The TLS certificate and key: the operator's, or the development CA's in the data directory
    /// (then `caPath` is that CA, for clients).
    private func tlsFiles(clock: SystemWallClock) throws -> (GatewayConfiguration.TLSFiles, caPath: String?) {
        let tls: GatewayConfiguration.TLSFiles
        var caPath: String?
        if let tlsCert, let tlsKey {
            tls = .init(certificateChainPath: tlsCert, privateKeyPath: tlsKey)
        } else {
            let certificates = try DevelopmentCertificates.loadOrCreate(in: data.dataDirectory, clock: clock)
            tls = .init(certificateChainPath: certificates.serverCertificatePath, privateKeyPath: certificates.serverKeyPath)
            caPath = certificates.caCertificatePath
        }
        if let warning = tls.expiryWarning(nowMilliseconds: clock.nowMilliseconds()) {
            printError("herald: warning: " + warning)
        }
        return (tls, caPath)
    }

    /// The gateway's configuration from the flags.
    private func gatewayConfiguration(tls: GatewayConfiguration.TLSFiles, caPath: String?, opened: OpenedStore) throws -> GatewayConfiguration {
        var configuration = GatewayConfiguration(tls: tls)
        configuration.environment = environment
        configuration.host = host
        configuration.providerPort = providerPort
        configuration.h2cPort = h2cPort
        configuration.adminPort = adminPort
        configuration.adminHost = adminHost
        configuration.faultInjection = enableFaults
        configuration.enrollmentSecret = try enrollmentSecretFile.map(EnrollmentSecret.read)
        configuration.limits.providerIdleTimeout = .seconds(Int64(providerIdleTimeout))
        configuration.limits.handshakeTimeout = .seconds(Int64(handshakeTimeout))
        configuration.limits.deviceHelloTimeout = .seconds(Int64(handshakeTimeout))
        configuration.limits.providerConnectionsPerAddress = providerConnectionsPerAddress
        configuration.limits.deviceConnectionsPerAddress = deviceConnectionsPerAddress
        configuration.limits.deviceReconnectRate = deviceReconnectRate
        configuration.limits.deviceHandshakesInFlightPerAddress = deviceHandshakesPerAddress
        configuration.tokenRateLimit = tokenRateLimit
        configuration.storePolicy = StorePolicy(maximumPerApp: offlineQueue)
        configuration.devicePort = devicePort
        configuration.webPushPort = webpushPort
        if let webpushOrigin {
            guard let origin = VAPIDSigner.origin(of: webpushOrigin), origin.hasPrefix("https://") else {
                throw ValidationError("--webpush-origin must be an https:// origin, such as https://push.example.com")
            }
            configuration.webPushOrigin = origin
        }
        configuration.feedbackPort = feedbackPort
        configuration.channelPort = channelPort
        configuration.feedbackClientCAPath = feedbackClientCa ?? caPath
        configuration.providerClientCAPath = providerClientCa ?? caPath
        configuration.devicePingInterval = .seconds(Int64(devicePingInterval))
        configuration.deviceIdleTimeout = .seconds(Int64(deviceIdleTimeout))
        configuration.devicePingMinimum = .seconds(Int64(devicePingMinimum))
        configuration.limits.storeTimeout = .milliseconds(Int64(storeTimeout))
        configuration.backgroundBudget = backgroundPerHour == 0 ? nil : .init(count: backgroundPerHour, windowMilliseconds: 3_600_000)
        configuration.inactivityPeriodMilliseconds = Int64(inactivityDays) * 86_400_000
        configuration.receiptRetentionMilliseconds = Int64(receiptDays) * 86_400_000
        if case .postgres = opened {
            var cluster = ClusterConfiguration(nodeID: resolvedNodeID)
            cluster.leaseMilliseconds = Int64(nodeLease) * 1_000
            cluster.heartbeatMilliseconds = max(500, cluster.leaseMilliseconds / 3)
            cluster.sweepMilliseconds = Int64(clusterSweep)
            cluster.fullSweepMilliseconds = Int64(clusterFullSweep)
            cluster.hints = crossNodeHints == .on
            configuration.cluster = cluster
        }
        return configuration
    }

    /// The start-up line; `null` for ports that are off.
    private struct StartupLine: Encodable {
        var provider_port: Int
        var h2c_port: Int?
        var admin_port: Int?
        var device_port: Int?
        var webpush_port: Int?
        var feedback_port: Int?
        var channel_port: Int?
        var ca: String?
        var environment: String
        var database: String
        var node: String?

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(provider_port, forKey: .provider_port)
            try c.encode(h2c_port, forKey: .h2c_port)
            try c.encode(admin_port, forKey: .admin_port)
            try c.encode(device_port, forKey: .device_port)
            try c.encode(webpush_port, forKey: .webpush_port)
            try c.encode(feedback_port, forKey: .feedback_port)
            try c.encode(channel_port, forKey: .channel_port)
            try c.encode(ca, forKey: .ca)
            try c.encode(environment, forKey: .environment)
            try c.encode(database, forKey: .database)
            try c.encode(node, forKey: .node)
        }
        enum CodingKeys: String, CodingKey { case provider_port, h2c_port, admin_port, device_port, webpush_port, feedback_port, channel_port, ca, environment, database, node }
    }
}

extension GatewayRunCommand {
    /// The node id: `--node-id`, or the host name made into one.
    var resolvedNodeID: String {
        if let nodeId { return nodeId }
        let host = ProcessInfo.processInfo.hostName.lowercased().map { c -> Character in
            c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == "_") ? c : "-"
        }
        let name = String(host.prefix(NodeID.maximumLength))
        return name.isEmpty ? "node" : name
    }
}

/// `on` or `off`, for flags that switch a behaviour.
enum Switch: String, ExpressibleByArgument, CaseIterable {
    case on, off
}

