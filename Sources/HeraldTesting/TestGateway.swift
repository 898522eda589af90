import Crypto
import Foundation
import HeraldClient
import HeraldCore
import HeraldDevice
import HeraldGateway
import HeraldStore
import Logging
import NIOCore
import ServiceLifecycle

/// A gateway running in process on ports the system chose, with a test clock, a store, and
/// development certificates in a temporary directory. Stop it with ``stop()``.
public final class TestGateway: Sendable {
    public let gateway: Gateway
    public let ports: GatewayPorts
    public let clock: SimulatedAlarmClock
    public let store: any GatewayStore
    public let certificates: DevelopmentCertificates
    public let directory: String
    private let group: ServiceGroup
    private let task: Task<Void, Error>

    /// Starts a gateway. `configure` adjusts the configuration (ports are always 0).
    public static func start(
        store: (any GatewayStore)? = nil, clock: SimulatedAlarmClock = SimulatedAlarmClock(),
        environment: PushEnvironment = .development, h2c: Bool = true, admin: Bool = true,
        configure: (inout GatewayConfiguration) -> Void = { _ in }
    ) async throws -> TestGateway {
        let directory = try TemporaryDirectory.make(prefix: "herald-gateway")
        let certificates = try DevelopmentCertificates.loadOrCreate(in: directory, clock: SystemWallClock())
        var configuration = GatewayConfiguration(tls: .init(
            certificateChainPath: certificates.serverCertificatePath, privateKeyPath: certificates.serverKeyPath))
        configuration.environment = environment
        configuration.host = "127.0.0.1"
        configuration.providerPort = 0
        configuration.h2cPort = h2c ? 0 : nil
        configuration.adminPort = admin ? 0 : nil
        configuration.devicePort = 0
        configuration.feedbackPort = 0
        configuration.feedbackClientCAPath = certificates.caCertificatePath
        configuration.providerClientCAPath = certificates.caCertificatePath
        configuration.drainTimeout = .seconds(5)
        configure(&configuration)
        let store = store ?? InMemoryStore()
        var logger = Logger(label: "herald.test")
        logger.logLevel = ProcessInfo.processInfo.environment["HERALD_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        let gateway = Gateway(configuration: configuration, store: store, clock: clock, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [gateway], logger: logger))
        let task = Task { try await group.run() }
        let ports: GatewayPorts
        do { ports = try await gateway.ports } catch {
            task.cancel()
            throw error
        }
        return TestGateway(
            gateway: gateway, ports: ports, clock: clock, store: store, certificates: certificates,
            directory: directory, group: group, task: task)
    }

    private init(
        gateway: Gateway, ports: GatewayPorts, clock: SimulatedAlarmClock, store: any GatewayStore,
        certificates: DevelopmentCertificates, directory: String, group: ServiceGroup, task: Task<Void, Error>
    ) {
        self.gateway = gateway
        self.ports = ports
        self.clock = clock
        self.store = store
        self.certificates = certificates
        self.directory = directory
        self.group = group
        self.task = task
    }

    /// Begins graceful shutdown without waiting for it.
    public func beginShutdown() async { await group.triggerGracefulShutdown() }

    /// Shuts down gracefully and waits until the gateway has stopped.
    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A TLS connection to the provider port, trusting the development CA.
    public func connect(applicationProtocols: [String] = ["h2"]) async throws -> HTTP2Connection {
        try await HTTP2Connection.connect(
            host: "127.0.0.1", port: ports.providerPort,
            tls: ClientTLS(trustRootsPath: certificates.caCertificatePath, applicationProtocols: applicationProtocols,
                           serverName: "localhost"))
    }

    /// An h2c connection to the development port.
    public func connectH2C() async throws -> HTTP2Connection {
        try await HTTP2Connection.connect(host: "127.0.0.1", port: ports.h2cPort!, tls: nil)
    }

    /// A device connected to the device port (its connection runs until ``TestDevice/stop()``).
    public func startDevice(
        identity: DeviceIdentity = DeviceIdentity(), topics: [String] = ["com.example.app"],
        knownTokens: [String: DeviceToken] = [:]
    ) throws -> TestDevice {
        TestDevice(connection: try makeDeviceConnection(identity: identity, topics: topics, knownTokens: knownTokens))
    }

    /// A device connection to the device port, not yet running (for a ``DeviceRuntime`` to follow).
    public func makeDeviceConnection(
        identity: DeviceIdentity = DeviceIdentity(), topics: [String] = ["com.example.app"],
        knownTokens: [String: DeviceToken] = [:]
    ) throws -> DeviceConnection {
        let tls = try DeviceTLS.makeContext(trustRootsPath: certificates.caCertificatePath)
        var logger = Logger(label: "herald.test.device")
        logger.logLevel = ProcessInfo.processInfo.environment["HERALD_TEST_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        return DeviceConnection(
            identity: identity,
            configuration: .init(
                host: "localhost", port: ports.devicePort!, tls: tls, topics: topics, knownTokens: knownTokens,
                backoff: ReconnectBackoff(initialMilliseconds: 50, maximumMilliseconds: 500)),
            logger: logger)
    }

    // MARK: fixtures

    /// Registers a new provider key for `team` owning `topics`; returns a signer for it.
    @discardableResult
    public func makeKey(
        team: String = "TEAM000001", topics: [String] = ["com.example.app"], environment: PushEnvironment? = nil,
        keyID: String? = nil
    ) async throws -> ProviderTokenSigner {
        let privateKey = P256.Signing.PrivateKey()
        let id = keyID ?? KeyID.random().value
        try await store.registerKey(
            ProviderKey(keyID: id, teamID: team, publicKey: privateKey.publicKey, environment: environment),
            topics: topics, atMilliseconds: clock.nowMilliseconds())
        return ProviderTokenSigner(keyID: id, teamID: team, privateKey: privateKey)
    }

    /// Registers a token for an app on a device that is not connected.
    public func makeToken(topic: String = "com.example.app", environment: PushEnvironment? = nil) async throws -> DeviceToken {
        let token = DeviceToken.random()
        try await store.registerToken(TokenRegistration(
            token: token, scope: TokenScope(stored: topic), environment: environment ?? gateway.configuration.environment,
            createdAtMilliseconds: clock.nowMilliseconds()))
        return token
    }

    /// A bearer value signed now by the test clock.
    public func bearer(_ signer: ProviderTokenSigner, ageSeconds: Int64 = 0) throws -> String {
        "bearer " + (try signer.token(issuedAt: clock.nowSeconds() - ageSeconds))
    }
}

/// Temporary directories for tests and fixtures: all of one test process's under one root,
/// removed when the process exits (a crashed run leaves only its own root behind).
public enum TemporaryDirectory {
    /// `$TMPDIR/herald-tests-<pid>`, made on first use.
    public static let root: String = {
        let path = (NSTemporaryDirectory() as NSString).appendingPathComponent("herald-tests-\(getpid())")
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: TemporaryDirectory.root) }
        return path
    }()

    public static func make(prefix: String) throws -> String {
        let path = (root as NSString).appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

extension HTTP2Request {
    /// A push as a well-behaved provider sends it.
    public static func push(
        token: DeviceToken, authorization: String?, topic: String? = "com.example.app", pushType: String? = "alert",
        payload: String = #"{"aps":{"alert":"hi"}}"#, extraHeaders: [(name: String, value: String)] = []
    ) -> HTTP2Request {
        pushRaw(path: "/3/device/\(token.hex)", authorization: authorization, topic: topic, pushType: pushType,
                payload: Array(payload.utf8), extraHeaders: extraHeaders)
    }

    public static func pushRaw(
        method: String = "POST", path: String, authorization: String?, topic: String? = "com.example.app",
        pushType: String? = "alert", payload: [UInt8], extraHeaders: [(name: String, value: String)] = []
    ) -> HTTP2Request {
        var headers: [(name: String, value: String)] = []
        if let authorization { headers.append(("authorization", authorization)) }
        if let topic { headers.append(("apns-topic", topic)) }
        if let pushType { headers.append(("apns-push-type", pushType)) }
        headers.append(contentsOf: extraHeaders)
        return HTTP2Request(method: method, path: path, headers: headers, body: payload)
    }
}
