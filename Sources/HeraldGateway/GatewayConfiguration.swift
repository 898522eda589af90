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
    func makeTLSContext() throws -> NIOSSLContext {
        let chain = try NIOSSLCertificate.fromPEMFile(tls.certificateChainPath).map { NIOSSLCertificateSource.certificate($0) }
        let key = try NIOSSLPrivateKey(file: tls.privateKeyPath, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["h2"]
        return try NIOSSLContext(configuration: configuration)
    }
}

/// The ports a running gateway listens on (what `herald gateway` prints as one JSON line).
public struct GatewayPorts: Sendable, Hashable, Codable {
    public var providerPort: Int
    public var h2cPort: Int?
    public var adminPort: Int?

    enum CodingKeys: String, CodingKey {
        case providerPort = "provider_port"
        case h2cPort = "h2c_port"
        case adminPort = "admin_port"
    }
}
