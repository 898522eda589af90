import HeraldCore
import NIOCore
import NIOHTTP2

/// The state of one provider connection: its token-authentication state machine, its streams,
/// and whether it is draining. Confined to the connection's event loop (its streams share it).
/// `@unchecked Sendable`: it is only touched on `channel.eventLoop`.
final class ProviderConnection: NIOHTTP2StreamDelegate, @unchecked Sendable {
    /// Streams allowed at once before the first provider token is accepted (reference §3).
    static let streamsBeforeAuthentication = 1
    /// Streams allowed at once afterwards (the value observed from APNs in 2021).
    static let streamsAfterAuthentication = 1000

    var authorization: ProviderConnectionAuthorization
    /// Generates the `apns-id`s and `apns-unique-id`s of this connection's answers.
    var ids = APNsID.FastGenerator()
    private(set) var isDraining = false
    private var activeStreams = 0
    private var drained: EventLoopPromise<Void>?
    let channel: Channel

    init(channel: Channel, environment: APNsEnvironment) {
        self.channel = channel
        self.authorization = ProviderConnectionAuthorization(environment: environment)
    }

    /// The HTTP/2 settings the gateway opens a provider connection with.
    static var initialSettings: HTTP2Settings {
        [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: streamsBeforeAuthentication),
            HTTP2Setting(parameter: .headerTableSize, value: 4096),
            HTTP2Setting(parameter: .initialWindowSize, value: 65535),
            HTTP2Setting(parameter: .maxFrameSize, value: 16384),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 8000),
        ]
    }

    /// After the first accepted provider token: allow many concurrent streams.
    func raiseStreamLimit() {
        let settings = HTTP2Frame(
            streamID: .rootStream,
            payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: Self.streamsAfterAuthentication)])))
        channel.writeAndFlush(settings, promise: nil)
    }

    func streamCreated(_ id: HTTP2StreamID, channel: Channel) { activeStreams += 1 }

    func streamClosed(_ id: HTTP2StreamID, channel: Channel) {
        activeStreams -= 1
        if isDraining && activeStreams == 0 { drained?.succeed() }
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
        channel.writeAndFlush(shutdownGoAway(), promise: nil)
        if activeStreams == 0 { promise.succeed() }
        return promise.futureResult
    }

    /// Closes the connection after a last GOAWAY, once everything written before it (the last
    /// answers) has reached the socket.
    func close() -> EventLoopFuture<Void> {
        let channel = self.channel
        return channel.writeAndFlush(shutdownGoAway())
            .flatMapError { _ in channel.eventLoop.makeSucceededVoidFuture() }
            .flatMap { channel.close() }
    }

    private func shutdownGoAway() -> HTTP2Frame {
        var debug = channel.allocator.buffer(capacity: 24)
        debug.writeString(#"{"reason":"Shutdown"}"#)
        return HTTP2Frame(
            streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: debug))
    }
}
