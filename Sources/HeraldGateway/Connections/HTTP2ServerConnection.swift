import HeraldCore
import NIOCore
import NIOHTTP2

/// One HTTP/2 server connection's life on its channel, for both HTTP/2 ports (the provider port
/// and the Web Push port): the idle timer (no stream for the idle bound: GOAWAY
/// `{"reason":"IdleTimeout"}`, as APNs sends, then close), a refusal (GOAWAY with its reason,
/// then close), and the graceful shutdown's drain (GOAWAY `{"reason":"Shutdown"}`, the open
/// streams answered, then close). The decisions are ``HTTP2ConnectionStateMachine``'s.
/// Confined to the channel's event loop; `@unchecked Sendable`: it is only touched there.
final class HTTP2ServerConnection: @unchecked Sendable {
    let channel: Channel
    private var state = HTTP2ConnectionStateMachine()
    private let idleTimeout: TimeAmount
    private var idleTimer: Scheduled<Void>?
    private var drained: EventLoopPromise<Void>?
    private let onIdleClose: @Sendable () -> Void

    init(channel: Channel, idleTimeout: TimeAmount, onIdleClose: @escaping @Sendable () -> Void = {}) {
        self.channel = channel
        self.idleTimeout = idleTimeout
        self.onIdleClose = onIdleClose
    }

    /// Whether the connection takes no more requests (a shutdown or a refusal under way).
    var isDraining: Bool { state.isDraining }

    /// The connection is set up: the idle timer starts.
    func start() { perform(state.started()) }

    /// A stream opened (its ``HTTP2StreamTable`` reports NIO's events).
    func streamCreated(_ id: HTTP2StreamID) { perform(state.streamOpened()) }

    /// A stream closed, answered or reset.
    func streamClosed(_ id: HTTP2StreamID) { perform(state.streamClosed()) }

    /// Refuses the rest of the connection: GOAWAY with `{"reason":…}` (as APNs sends
    /// BadCertificateEnvironment), then closes it once what was written before has gone.
    func goAwayAndClose(reason: String) { perform(state.refuse(reason: reason)) }

    /// Sends GOAWAY with `{"reason":"Shutdown"}` and returns a future that completes when no
    /// stream is left open. Streams the peer opens after the GOAWAY are refused by NIO's HTTP/2
    /// state machine with RST_STREAM `REFUSED_STREAM`, which tells the client the request was not
    /// processed and may be retried on a new connection.
    func beginDraining() -> EventLoopFuture<Void> {
        if let drained { return drained.futureResult }
        let promise = channel.eventLoop.makePromise(of: Void.self)
        drained = promise
        let action = state.beginDraining()
        // Already going away for a reason of its own: done when the channel is.
        if action == .none { channel.closeFuture.whenComplete { _ in promise.succeed() } }
        perform(action)
        return promise.futureResult
    }

    /// Closes the connection after a last GOAWAY, once everything written before it (the last
    /// answers) has reached the socket.
    func close() -> EventLoopFuture<Void> {
        let channel = self.channel
        idleTimer?.cancel()
        return channel.writeAndFlush(goAway(reason: "Shutdown"))
            .flatMapError { _ in channel.eventLoop.makeSucceededVoidFuture() }
            .flatMap { channel.close() }
            .flatMapError { _ in channel.eventLoop.makeSucceededVoidFuture() }
    }

    private func perform(_ action: HTTP2ConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .armIdleTimer:
            idleTimer?.cancel()
            idleTimer = channel.eventLoop.assumeIsolated().scheduleTask(in: idleTimeout) { [self] in
                idleTimer = nil
                let next = state.idleTimerFired()
                if case .goAwayAndClose = next { onIdleClose() }
                perform(next)
            }
        case .cancelIdleTimer:
            idleTimer?.cancel()
            idleTimer = nil
        case .goAwayAndClose(let reason):
            idleTimer?.cancel()
            idleTimer = nil
            let channel = self.channel
            channel.writeAndFlush(goAway(reason: reason))
                .flatMapError { _ in channel.eventLoop.makeSucceededVoidFuture() }
                .whenComplete { _ in channel.close(promise: nil) }
        case .sendShutdownGoAway, .sendShutdownGoAwayDrained:
            idleTimer?.cancel()
            idleTimer = nil
            channel.writeAndFlush(goAway(reason: "Shutdown"), promise: nil)
            if action == .sendShutdownGoAwayDrained { drained?.succeed() }
        case .drained:
            drained?.succeed()
        }
    }

    /// GOAWAY `NO_ERROR` with APNs's JSON reason as debug data (opaque to HTTP/2; a client logs it).
    private func goAway(reason: String) -> HTTP2Frame {
        var debug = channel.allocator.buffer(capacity: 32)
        debug.writeString(#"{"reason":"\#(reason)"}"#)
        return HTTP2Frame(
            streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: debug))
    }
}

/// The HTTP/2 connections a listener has open, so that a graceful shutdown can drain them.
final class HTTP2Connections: Sendable {
    private let connections = Locked([ObjectIdentifier: HTTP2ServerConnection]())

    /// Keeps `connection` until its channel closes, and starts its idle timer.
    func track(_ connection: HTTP2ServerConnection) {
        let id = ObjectIdentifier(connection.channel)
        connections.withLock { $0[id] = connection }
        connection.channel.closeFuture.whenComplete { [connections] _ in connections.withLock { $0[id] = nil } }
        connection.start()
    }

    /// Tells every connection to go away (`{"reason":"Shutdown"}`), waits until their open
    /// streams are answered (at most `timeout`), then closes them.
    func drain(timeout: TimeAmount) async {
        let open = connections.withLock { Array($0.values) }
        await withTaskGroup(of: Void.self) { group in
            for connection in open {
                group.addTask {
                    let loop = connection.channel.eventLoop
                    let drained = loop.flatSubmit { connection.beginDraining() }
                    let deadline = loop.scheduleTask(in: timeout) {}
                    _ = try? await drained.or(deadline.futureResult).get()
                    deadline.cancel()
                    try? await loop.flatSubmit { connection.close() }.get()
                }
            }
        }
    }
}

extension EventLoopFuture {
    /// Completes when either future does.
    fileprivate func or<Other: Sendable>(_ other: EventLoopFuture<Other>) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        self.whenComplete { _ in promise.succeed() }
        other.hop(to: eventLoop).whenComplete { _ in promise.succeed() }
        return promise.futureResult
    }
}
