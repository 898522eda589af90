import HeraldCore
import HeraldStore
import NIOCore
#if canImport(Glibc)
import Glibc
#endif
import NIOSSL

/// Everything a gateway is started with.
public struct GatewayConfiguration: Sendable {
    /// The cluster this gateway is a node of (its store must be a ``ClusterStore``); `nil` for a
    /// single gateway.
    public var cluster: ClusterConfiguration?
    /// The one environment this gateway runs as.
    public var environment: PushEnvironment = .development
    /// The address the TLS provider, device and feedback ports listen on.
    public var host: String = "0.0.0.0"
    /// The address the admin port listens on: loopback unless the operator names another.
    public var adminHost: String = "127.0.0.1"
    /// Whether the admin port serves `/faults` (refusals injected to test providers). Off unless
    /// the gateway is started for testing; `/faults` then answers 404.
    public var faultInjection = false
    /// Deadlines and bounds on peers (see ``GatewayLimits``).
    public var limits = GatewayLimits()
    /// A secret a device must present in its hello to enroll a new key; `nil` keeps enrollment
    /// open (any device that proves its key enrolls). Devices already enrolled need no secret.
    public var enrollmentSecret: String?
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
    /// The Web Push port (RFC 8030 push endpoints over HTTP/1.1 and HTTP/2, and Mozilla's push
    /// WebSocket for browsers, over TLS); `nil` for none.
    public var webPushPort: Int?
    /// The origin Web Push endpoints are issued under and VAPID tokens must name as `aud`
    /// (`https://push.example.com`, as senders reach the port); `nil`: `https://` and the `Host`
    /// each peer connected to.
    public var webPushOrigin: String?
    /// How often the gateway pings a device whose connection is quiet, at most: the interval of
    /// devices that ask for none, the longest any gets (docs/device-protocol.md, "Keep-alive").
    /// It is also how long a device takes, at most twice over, to notice a node that froze.
    public var devicePingInterval: TimeAmount = .seconds(DeviceKeepalive.defaultIntervalSeconds)
    /// The shortest ping interval a device may ask for (at most ``devicePingInterval``).
    public var devicePingMinimum: TimeAmount = .seconds(DeviceKeepalive.defaultMinimumSeconds)
    /// A device not heard from for this long at the longest ping interval is disconnected; a
    /// connection with a shorter interval gets the same multiple of its own.
    public var deviceIdleTimeout: TimeAmount = .seconds(DeviceKeepalive.defaultIdleTimeoutSeconds)
    /// How often the Web Push port pings a browser's quiet push connection (browsers also ping
    /// their own; Firefox every 30 minutes).
    public var browserPingInterval: TimeAmount = .seconds(30)
    /// A browser or Web Push sender not heard from for this long is disconnected.
    public var browserIdleTimeout: TimeAmount = .seconds(90)
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
    /// The broadcast channel management port (HTTP/2 over TLS, authenticated like the provider
    /// port; Apple's is 2195/2196); `nil` for none, and then broadcasts answer `FeatureNotEnabled`.
    public var channelPort: Int?
    /// The CA (PEM) whose client certificates the feedback port accepts; `nil` trusts none
    /// (`herald gateway` passes its development CA).
    public var feedbackClientCAPath: String?
    /// The CA (PEM) whose push certificates the provider port accepts for certificate
    /// authentication (reference §3); `nil`: token authentication only. `herald gateway` passes
    /// its development CA (`herald keys certificate` issues from it).
    public var providerClientCAPath: String?
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

    /// The provider port's TLS: ALPN `h2`; a client certificate is asked for and, when one is
    /// given, verified against ``providerClientCAPath`` (token connections send none).
    func makeProviderTLSContext() throws -> NIOSSLContext {
        var configuration = try serverTLSConfiguration()
        configuration.applicationProtocols = ["h2"]
        if let caPath = providerClientCAPath {
            configuration.certificateVerification = .optionalVerification
            configuration.trustRoots = .certificates(try TLSFiles.certificates(caPath, what: "client CA (--provider-client-ca)"))
        }
        return try NIOSSLContext(configuration: configuration)
    }

    /// The server certificate and key, TLS 1.2 or later: what every TLS port starts from. Every
    /// error names the file, and a key that is not the certificate's says so.
    private func serverTLSConfiguration() throws -> TLSConfiguration {
        let (certificates, key) = try tls.load()
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        // TLS 1.2 with forward secrecy and AEAD only; TLS 1.3's suites are all AEAD.
        configuration.cipherSuites = Self.tls12CipherSuites
        return configuration
    }
}

extension GatewayConfiguration {
    /// The TLS 1.2 cipher suites every TLS port offers: ECDHE key exchange, AES-GCM or ChaCha20-Poly1305.
    static let tls12CipherSuites = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    /// The feedback port's TLS: client certificates required, verified against `feedbackClientCAPath`.
    func makeFeedbackTLSContext() throws -> NIOSSLContext {
        guard let caPath = feedbackClientCAPath else {
            throw GatewayConfigurationError("the feedback port needs a CA for client certificates (feedbackClientCAPath)")
        }
        var configuration = try serverTLSConfiguration()
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .certificates(try TLSFiles.certificates(caPath, what: "feedback client CA (--feedback-client-ca)"))
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
    public var channelPort: Int?
    public var webPushPort: Int?

    enum CodingKeys: String, CodingKey {
        case providerPort = "provider_port"
        case h2cPort = "h2c_port"
        case adminPort = "admin_port"
        case devicePort = "device_port"
        case feedbackPort = "feedback_port"
        case channelPort = "channel_port"
        case webPushPort = "webpush_port"
    }
}

/// Deadlines and bounds on what one peer may hold: every port closes a peer that is slow, silent
/// or floods. Defaults are documented in docs/provider-api.md and docs/device-protocol.md.
public struct GatewayLimits: Sendable, Hashable {
    /// Time a peer has to complete the TLS handshake on any TLS port.
    public var handshakeTimeout: TimeAmount = .seconds(10)
    /// A provider connection with no open stream for this long gets GOAWAY `{"reason":"IdleTimeout"}`
    /// and is closed.
    public var providerIdleTimeout: TimeAmount = .seconds(3600)
    /// Open provider connections (TLS and h2c) from one IP address.
    public var providerConnectionsPerAddress = 64
    /// Resets of streams still in progress (not yet answered) one provider connection may send in
    /// ``resetWindow``; past it the connection gets GOAWAY `ENHANCE_YOUR_CALM` and is closed. Resets
    /// of streams already answered never count.
    public var inProgressResetsPerWindow = 200
    public var resetWindow: TimeAmount = .seconds(30)
    /// PING, SETTINGS, PRIORITY and WINDOW_UPDATE frames one provider connection may send in
    /// ``controlFrameWindow`` (plus two for every stream it opens there).
    public var controlFramesPerWindow = 1_000
    public var controlFrameWindow: TimeAmount = .seconds(10)
    /// The largest header list a provider request may carry (`SETTINGS_MAX_HEADER_LIST_SIZE`).
    public var maximumHeaderListSize = 8_000
    /// Open device connections from one IP address (devices behind one NAT share it).
    public var deviceConnectionsPerAddress = 2_000
    /// Time a device has, from TCP accept, to complete TLS, upgrade and answer the challenge.
    public var deviceHelloTimeout: TimeAmount = .seconds(10)
    /// Device connections between accept and welcome at once; past it the device port stops
    /// accepting until one finishes (the kernel's backlog holds the rest), so that a reconnect
    /// storm is worked through at the rate the gateway can finish handshakes.
    public var deviceHandshakesInFlight = 128
    /// Of those, at most this many from one IP address; past it the address's new connections
    /// are closed at accept (the device retries on its backoff). Devices behind one NAT share it.
    public var deviceHandshakesInFlightPerAddress = 32
    /// Time a new device connection has to send its first bytes (a TLS ClientHello comes at once).
    public var deviceFirstBytesTimeout: TimeAmount = .seconds(2)
    /// Device handshakes a second the gateway expects to finish when its devices come back after
    /// a graceful stop: the `shutdown` frame asks each device to reconnect at a random moment
    /// within (connected devices ÷ this) seconds, at most an hour, so that they arrive at about
    /// this rate instead of all at once.
    public var deviceReconnectRate = 500
    /// Notifications written to one device and not yet acked; past it the gateway stops sending
    /// (the rest stay held) until acks arrive.
    public var deviceInFlight = 1_000
    /// Bytes queued for a device that does not read; past it the device is disconnected (its
    /// notifications stay held for its next connection).
    public var deviceOutboundBytes = 4 << 20
    /// Apps (active tokens) one device may have, counted by the store across connections and nodes.
    public var topicsPerDevice = 256
    /// Notifications taken and not yet committed; past it the provider port answers 503
    /// `ServiceUnavailable` until the intake catches up.
    public var intakeHighWater = 50_000
    /// A push whose batch the store has not committed within this is answered 503
    /// `ServiceUnavailable` (never 200 later); until that commit returns, new pushes are answered
    /// 503 at once, and `/health` says the store is not answering. Key and topic look-ups on
    /// the provider port are bounded by it too.
    public var storeTimeout: TimeAmount = .seconds(5)
    /// An alert held for a device connected to this node is offered to it within this, or the
    /// gateway says so (`herald_late_offers_total`, the longest wait in
    /// `herald_late_offer_longest_seconds`, a warning): the invariant the chaos runs read after
    /// every phase. A cluster's sweep re-offers what a lost hint left within two sweep intervals.
    public var lateOfferBound: TimeAmount = .seconds(10)

    public init() {}
}

/// A port the gateway could not listen on: which one, where, and why.
public struct GatewayListenError: Error, CustomStringConvertible {
    /// `provider`, `h2c`, `device`, `feedback` or `admin`.
    public var listener: String
    public var host: String
    public var port: Int
    public var underlying: any Error

    /// Whether another socket already holds the address (EADDRINUSE).
    public var isAddressInUse: Bool { (underlying as? IOError)?.errnoCode == EADDRINUSE }

    public var description: String {
        let why = isAddressInUse ? "the address is already in use (another process listens there)" : "\(underlying)"
        return "cannot listen on \(host):\(port) for the \(listener) port: \(why)"
    }
}
