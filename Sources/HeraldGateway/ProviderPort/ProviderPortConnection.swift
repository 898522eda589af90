import HeraldCore
import NIOCore
import NIOHTTP2

/// The state of one provider connection: its token-authentication state machine and its client
/// certificate; its life (streams, idle, drain) is its ``HTTP2ServerConnection``'s. Confined to
/// the connection's event loop (its streams share it). `@unchecked Sendable`: it is only touched
/// on `channel.eventLoop`.
final class ProviderPortConnection: @unchecked Sendable {
    /// Streams allowed at once before the first provider token is accepted (reference §3).
    static let streamsBeforeAuthentication = 1
    /// Streams allowed at once afterwards (the value observed from APNs in 2021).
    static let streamsAfterAuthentication = 1000

    var authorization: APNsConnectionAuthorization
    /// What the connection's TLS client certificate says; `.none` for token connections.
    var clientCertificate: ClientCertificate = .none

    /// A provider connection's client certificate, read once its TLS handshake completes.
    enum ClientCertificate {
        case none
        case usable(PushCertificate)
        /// Verified by TLS against the client CA, but not a push certificate Herald can use.
        case unusable(String)
    }
    /// Generates the `apns-id`s and `apns-unique-id`s of this connection's answers.
    var ids = NotificationID.FastGenerator()
    /// Its streams, idle timer and drain.
    let http2: HTTP2ServerConnection
    var channel: Channel { http2.channel }
    private let maximumHeaderListSize: Int

    init(
        channel: Channel, environment: PushEnvironment, idleTimeout: TimeAmount = .seconds(3600),
        maximumHeaderListSize: Int = 8_000, onIdleClose: @escaping @Sendable () -> Void = {}
    ) {
        self.http2 = HTTP2ServerConnection(channel: channel, idleTimeout: idleTimeout, onIdleClose: onIdleClose)
        self.authorization = APNsConnectionAuthorization(environment: environment)
        self.maximumHeaderListSize = maximumHeaderListSize
    }

    /// Whether the connection takes no more requests (a shutdown or a refusal under way).
    var isDraining: Bool { http2.isDraining }

    /// The HTTP/2 settings the gateway opens a provider connection with (documented in
    /// docs/provider-api.md): one stream until a provider token is accepted, a 4 KiB HPACK table,
    /// 64 KiB windows, 16 KiB frames, and a bounded header list.
    var initialSettings: HTTP2Settings {
        [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: Self.streamsBeforeAuthentication),
            HTTP2Setting(parameter: .headerTableSize, value: 4096),
            HTTP2Setting(parameter: .initialWindowSize, value: 65535),
            HTTP2Setting(parameter: .maxFrameSize, value: 16384),
            HTTP2Setting(parameter: .maxHeaderListSize, value: maximumHeaderListSize),
        ]
    }

    /// NIO's connection settings: Herald's own ``HTTP2FrameGuard`` counts resets and control
    /// frames (it can tell a reset of an answered stream from a Rapid Reset), so NIO's counters
    /// are set so wide they never fire; NIO still bounds CONTINUATION sequences, empty DATA frames
    /// and control frames buffered for a peer that does not read.
    var connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration {
        HTTP2FrameGuard.connectionConfiguration(settings: initialSettings)
    }

    static var streamConfiguration: NIOHTTP2Handler.StreamConfiguration {
        var configuration = NIOHTTP2Handler.StreamConfiguration()
        configuration.streamResetFrameRateLimit.maximumCount = 1_000
        configuration.streamResetFrameRateLimit.windowLength = .microseconds(1)
        return configuration
    }

    /// After the first accepted provider token: allow many concurrent streams.
    func raiseStreamLimit() {
        let settings = HTTP2Frame(
            streamID: .rootStream,
            payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: Self.streamsAfterAuthentication)])))
        channel.writeAndFlush(settings, promise: nil)
    }

    /// Refuses the rest of the connection: GOAWAY with `{"reason":…}`, then close.
    func goAwayAndClose(reason: String) { http2.goAwayAndClose(reason: reason) }
}
