import HeraldCore
import NIOCore
import NIOHTTP2

/// The state of one provider connection: its token-authentication state machine, its streams,
/// and whether it is draining. Confined to the connection's event loop (its streams share it).
/// `@unchecked Sendable`: it is only touched on `channel.eventLoop`.
final class APNsPortConnection: @unchecked Sendable {
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
    private(set) var isDraining = false
    private var activeStreams = 0
    private var drained: EventLoopPromise<Void>?
    let channel: Channel
    private let idleTimeout: TimeAmount
    private let maximumHeaderListSize: Int
    private var idleTimer: Scheduled<Void>?
    private let onIdleClose: @Sendable () -> Void

    init(
        channel: Channel, environment: PushEnvironment, idleTimeout: TimeAmount = .seconds(3600),
        maximumHeaderListSize: Int = 8_000, onIdleClose: @escaping @Sendable () -> Void = {}
    ) {
        self.channel = channel
        self.authorization = APNsConnectionAuthorization(environment: environment)
        self.idleTimeout = idleTimeout
        self.maximumHeaderListSize = maximumHeaderListSize
        self.onIdleClose = onIdleClose
    }

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

    /// Arms the idle timer: a connection with no stream for `idleTimeout` gets GOAWAY
    /// `{"reason":"IdleTimeout"}` (as APNs sends) and is closed.
    func startIdleTimer() {
        idleTimer?.cancel()
        idleTimer = channel.eventLoop.assumeIsolated().scheduleTask(in: idleTimeout) { [self] in
            idleTimer = nil
            guard activeStreams == 0, !isDraining else { return }
            onIdleClose()
            isDraining = true
            let channel = self.channel
            channel.writeAndFlush(goAway(reason: "IdleTimeout"))
                .flatMapError { _ in channel.eventLoop.makeSucceededVoidFuture() }
                .whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// After the first accepted provider token: allow many concurrent streams.
    func raiseStreamLimit() {
        let settings = HTTP2Frame(
            streamID: .rootStream,
            payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: Self.streamsAfterAuthentication)])))
        channel.writeAndFlush(settings, promise: nil)
    }

    /// A stream opened (its ``HTTP2StreamTable`` reports NIO's events).
    func streamCreated(_ id: HTTP2StreamID) {
        activeStreams += 1
        idleTimer?.cancel()
        idleTimer = nil
    }

    /// A stream closed, answered or reset.
    func streamClosed(_ id: HTTP2StreamID) {
        activeStreams -= 1
        if isDraining && activeStreams == 0 { drained?.succeed() }
        if activeStreams == 0 && !isDraining { startIdleTimer() }
    }

    /// Refuses the rest of the connection: GOAWAY with `{"reason":…}` (as APNs sends
    /// BadCertificateEnvironment), then closes it once the answer already written has gone.
    func goAwayAndClose(reason: String) {
        guard !isDraining else { return }
        isDraining = true
        idleTimer?.cancel()
        let channel = self.channel
        channel.writeAndFlush(goAway(reason: reason))
            .flatMapError { _ in channel.eventLoop.makeSucceededVoidFuture() }
            .whenComplete { _ in channel.close(promise: nil) }
    }

    /// Sends GOAWAY with `{"reason":"Shutdown"}` and returns a future that completes when no
    /// stream is left open. Streams already open are answered: those whose request completes from
    /// now on get 503 `Shutdown`. Streams the peer opens after the GOAWAY are refused by NIO's
    /// HTTP/2 state machine with RST_STREAM `REFUSED_STREAM`, which tells the client the request
    /// was not processed and may be retried on a new connection.
    func beginDraining() -> EventLoopFuture<Void> {
        if let drained { return drained.futureResult }
        isDraining = true
        let promise = channel.eventLoop.makePromise(of: Void.self)
        drained = promise
        idleTimer?.cancel()
        channel.writeAndFlush(goAway(reason: "Shutdown"), promise: nil)
        if activeStreams == 0 { promise.succeed() }
        return promise.futureResult
    }

    /// Closes the connection after a last GOAWAY, once everything written before it (the last
    /// answers) has reached the socket.
    func close() -> EventLoopFuture<Void> {
        let channel = self.channel
        return channel.writeAndFlush(goAway(reason: "Shutdown"))
            .flatMapError { _ in channel.eventLoop.makeSucceededVoidFuture() }
            .flatMap { channel.close() }
    }

    /// GOAWAY `NO_ERROR` with APNs's JSON reason as debug data.
    private func goAway(reason: String) -> HTTP2Frame {
        var debug = channel.allocator.buffer(capacity: 32)
        debug.writeString(#"{"reason":"\#(reason)"}"#)
        return HTTP2Frame(
            streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: debug))
    }
}
