import HeraldCore
import HeraldStore
import NIOCore
import NIOSSL

/// Everything a gateway is started with.
public struct GatewayConfiguration: Sendable {
    /// The one environment this gateway runs as.
    public var environment: APNsEnvironment = .development
    /// The address the TLS provider port (and the admin port) listen on.
    public var host: String = "0.0.0.0"
    /// The TLS provider port; 0 lets the system choose.
    public var providerPort: Int = 2197
    /// The server certificate chain and key for the provider port.
    public var tls: TLSFiles
    /// The plaintext h2c port for local development (bound to 127.0.0.1 only); `nil` for none.
    public var h2cPort: Int?
    /// The admin port (`/health`, `/metrics`); `nil` for none.
    public var adminPort: Int?
    /// The per-token rate limit; `nil` turns it off.
    public var tokenRateLimit: TokenRateLimiter.Configuration? = .default
    /// Store-and-forward for offline devices.
    public var storePolicy: StorePolicy = .default
    /// The most notifications committed in one store transaction.
    public var maximumBatchSize: Int = 1024
    /// The device port (WebSocket over TLS); `nil` for none.
    public var devicePort: Int?
    /// How often the gateway pings a device whose connection is quiet.
    public var devicePingInterval: TimeAmount = .seconds(30)
    /// A device not heard from for this long is disconnected.
    public var deviceIdleTimeout: TimeAmount = .seconds(90)
    /// How long priority 5 and 1 notifications may wait to be sent to a device together.
    public var lowPriorityDelay: TimeAmount = .milliseconds(100)
    /// The budget of background pushes per device and app; `nil` turns throttling off.
    public var backgroundBudget: BackgroundThrottle.Budget? = .default
    /// A device not connected for this long has its tokens reported in the feedback list.
    public var inactivityPeriodMilliseconds: Int64 = 30 * 24 * 3600 * 1000
    /// How long receipts of finished notifications are kept.
    public var receiptRetentionMilliseconds: Int64 = 7 * 24 * 3600 * 1000
    /// How often expired notifications are marked and old receipts deleted.
    public var sweepInterval: TimeAmount = .seconds(5)
    /// The legacy binary feedback port (TLS with client certificates, reference §7); `nil` for none.
    public var feedbackPort: Int?
    /// The CA (PEM) whose client certificates the feedback port accepts; `nil` trusts none
    /// (`herald gateway` passes its development CA).
    public var feedbackClientCAPath: String?
    /// How long shutdown waits for open streams to be answered.
    public var drainTimeout: TimeAmount = .seconds(10)

    /// PEM files: the server certificate (followed by its chain) and its private key.
    public struct TLSFiles: Sendable, Hashable {
        public var certificateChainPath: String
        public var privateKeyPath: String
        public init(certificateChainPath: String, privateKeyPath: String) {
            self.certificateChainPath = certificateChainPath
            self.privateKeyPath = privateKeyPath
        }
    }

    public init(tls: TLSFiles) { self.tls = tls }

    /// The TLS context of the provider port: TLS 1.2 or later, ALPN `h2` only (a client that
    /// offers `http/1.1,h2` is given h2).
    func makeTLSContext(applicationProtocols: [String] = ["h2"]) throws -> NIOSSLContext {
        var configuration = try serverTLSConfiguration()
        configuration.applicationProtocols = applicationProtocols
        return try NIOSSLContext(configuration: configuration)
    }

    /// The server certificate and key, TLS 1.2 or later: what every TLS port starts from.
    private func serverTLSConfiguration() throws -> TLSConfiguration {
        let chain = try NIOSSLCertificate.fromPEMFile(tls.certificateChainPath).map { NIOSSLCertificateSource.certificate($0) }
        let key = try NIOSSLPrivateKey(file: tls.privateKeyPath, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }
}

extension GatewayConfiguration {
    /// The feedback port's TLS: client certificates required, verified against `feedbackClientCAPath`.
    func makeFeedbackTLSContext() throws -> NIOSSLContext {
        guard let caPath = feedbackClientCAPath else {
            throw GatewayConfigurationError("the feedback port needs a CA for client certificates (feedbackClientCAPath)")
        }
        var configuration = try serverTLSConfiguration()
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caPath))
        return try NIOSSLContext(configuration: configuration)
    }
}

/// A configuration that cannot work, in words.
public struct GatewayConfigurationError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// The ports a running gateway listens on (what `herald gateway` prints as one JSON line).
public struct GatewayPorts: Sendable, Hashable, Codable {
    public var providerPort: Int
    public var h2cPort: Int?
    public var adminPort: Int?
    public var devicePort: Int?
    public var feedbackPort: Int?

    enum CodingKeys: String, CodingKey {
        case providerPort = "provider_port"
        case h2cPort = "h2c_port"
        case adminPort = "admin_port"
        case devicePort = "device_port"
        case feedbackPort = "feedback_port"
    }
}
