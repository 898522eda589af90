import HeraldCore
import Logging
import NIOCore
import NIOWebSocket

/// A WebSocket session of the gateway (a device's on the device port, a browser's on the Web
/// Push port), as the connection's events see it: what ``WebSocketSessionEvents`` needs to
/// answer them the same way for both, in each one's words.
protocol WebSocketSessionEnd: AnyObject {
    /// The session is over: nothing more is said to the peer.
    var isSessionClosed: Bool { get }
    /// Nothing was written for a ping interval.
    func sessionIsQuiet()
    /// Says `code` and `message` to the peer (as its protocol can), then closes.
    func close(with code: DeviceErrorCode, _ message: String, reconnectWithinMilliseconds: Int64?)
    /// Forgets the session without a word (the connection failed under it).
    func forgetSession(after error: Error)
    /// The words and numbers each session says its closes with (made when an event needs them).
    var terms: WebSocketSessionEvents.Terms { get }
}

/// A session handler that is a ``WebSocketSessionEnd`` answers these three NIO events here, not
/// with NIO's pass-through defaults: the conformance is all a handler writes.
extension WebSocketSessionEnd where Self: ChannelInboundHandler {
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        WebSocketSessionEvents.userInboundEvent(event, context: context, session: self)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        WebSocketSessionEvents.writabilityChanged(context: context, session: self)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        WebSocketSessionEvents.error(error, context: context, session: self)
    }
}

/// A WebSocket session's handler: how it says something to its peer and how it waits for the
/// store, the same for a device's session and a browser's.
protocol WebSocketSessionHandler: WebSocketSessionEnd, ChannelInboundHandler, DeliverySession, SendableMetatype
where InboundIn == WebSocketFrame, OutboundOut == WebSocketFrame {
    associatedtype Port: SessionPort
    /// The handler's context while it is in a pipeline.
    var context: ChannelHandlerContext? { get }
    var port: Port { get }
    /// The session's state machine: what is in flight, held, acked.
    var session: DeviceSession { get set }
    /// This connection's id in the device's cluster presence.
    var connectionID: Int64 { get }
    /// Who the peer is, as a close for an unmasked frame says it ("a device", "a browser").
    var peerName: String { get }
    /// A text frame's bytes: one message of the session's protocol.
    func receiveText(_ bytes: [UInt8])
    /// A binary or continuation frame, which neither protocol has.
    func receiveNotText(_ opcode: WebSocketOpcode)
    /// The session is over (the peer closed, or the handler closes it): what it held is released.
    func finish()
}

extension WebSocketSessionHandler {
    /// A frame from the peer: control frames are answered here, a text frame goes to the session.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch WebSocketControl.receive(unwrapInboundIn(data), context: context) {
        case .unmasked: close(with: .malformedFrame, "frames from \(peerName) must be masked (RFC 6455 §5.1)", reconnectWithinMilliseconds: nil)
        case .handled: break
        case .peerClosed: finish()
        case .text(let bytes): receiveText(bytes)
        case .notText(let opcode): receiveNotText(opcode)
        }
    }
}

extension WebSocketSessionHandler {
    /// Writes one text frame (and flushes it unless more follow at once).
    func sendText(_ bytes: [UInt8], flush: Bool = true) {
        guard let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        let out = wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer))
        if flush { context.writeAndFlush(out, promise: nil) } else { context.write(out, promise: nil) }
    }

    /// Runs store work off the event loop, then continues on it (unless the session closed meanwhile).
    func run<T: Sendable>(
        _ work: @escaping @Sendable () async throws -> T,
        then next: @escaping (Self, Result<T, Error>) -> Void
    ) {
        guard let context else { return }
        let bound = NIOLoopBound((self, next), eventLoop: context.eventLoop)
        context.eventLoop.makeFutureWithTask(work).whenComplete { result in
            let (handler, next) = bound.value
            if handler.isSessionClosed { return }
            next(handler, result)
        }
    }

    /// Once the peer is welcomed: it is where pushes for `deviceID` find it, its presence is
    /// claimed in the cluster (first: whatever is committed after the load below is then hinted
    /// here), and what the store holds for it is loaded and offered. A store that fails closes
    /// the session with `closing` (logged as `failure`).
    func startDelivering(deviceID: String, context: ChannelHandlerContext, failure: Logger.Message, closing: String) {
        port.registry.register(deviceID: deviceID, session: .init(
            id: ObjectIdentifier(context.channel), connection: connectionID,
            handler: NIOLoopBound<any DeliverySession>(self, eventLoop: context.eventLoop)))
        let store = port.store, cluster = port.cluster, connection = connectionID
        let now = port.clock.nowMilliseconds()
        run({
            try await cluster?.claim(deviceID: deviceID, connection: connection)
            return try await store.pendingDeliveries(forDevice: deviceID, nowMilliseconds: now)
        }) { handler, result in
            switch result {
            case .failure(let error):
                handler.port.logger.error(failure, metadata: ["error": "\(error)"])
                handler.close(with: .internalError, closing)
            case .success(let stored):
                guard let deliveries = handler.session.loaded(stored, nowMilliseconds: handler.port.clock.nowMilliseconds()) else { return }
                for delivery in deliveries { handler.offer(delivery) }
                handler.flushIfNeeded()
            }
        }
    }
}

/// What both WebSocket sessions do alike when their ``KeepaliveHandler`` fires, the peer stops
/// reading, or its framing is wrong.
enum WebSocketSessionEvents {
    struct Terms {
        /// The close message when nothing was heard for the idle timeout.
        var silent: String
        /// The close message when the peer stopped reading what is queued for it.
        var notReading: String
        /// The largest frame the peer may send.
        var maximumFrameBytes: Int
        /// The close message for framing NIO refused.
        var badFraming: (NIOWebSocketError) -> String
        /// Counts a peer closed for not reading.
        var countSlowReader: () -> Void
    }

    /// The keepalive's events: ping when quiet, close when silent; others pass on.
    static func userInboundEvent(_ event: Any, context: ChannelHandlerContext, session: some WebSocketSessionEnd) {
        guard let idle = event as? IdleStateHandler.IdleStateEvent else {
            return context.fireUserInboundEventTriggered(event)
        }
        switch idle {
        case .read:
            session.close(with: .idleTimeout, session.terms.silent, reconnectWithinMilliseconds: nil)
        case .write, .all:
            session.sessionIsQuiet()
            // Devices and browsers answer WebSocket pings themselves; the pong keeps the read side alive.
            WebSocketControl.ping(context)
        }
    }

    /// A peer that does not read is closed: what was queued for it stays held for its next connection.
    static func writabilityChanged(context: ChannelHandlerContext, session: some WebSocketSessionEnd) {
        if !context.channel.isWritable && !session.isSessionClosed {
            session.terms.countSlowReader()
            session.close(with: .slowConsumer, session.terms.notReading, reconnectWithinMilliseconds: nil)
        }
        context.fireChannelWritabilityChanged()
    }

    /// Frames too large or badly framed close with the protocol's error; anything else ends the
    /// connection without a word.
    static func error(_ error: Error, context: ChannelHandlerContext, session: some WebSocketSessionEnd) {
        switch error {
        case NIOWebSocketError.invalidFrameLength, is NIOWebSocketFrameAggregator.Error:
            session.close(with: .frameTooLarge, "frames are limited to \(session.terms.maximumFrameBytes) bytes", reconnectWithinMilliseconds: nil)
        case let error as NIOWebSocketError:
            session.close(with: .malformedFrame, session.terms.badFraming(error), reconnectWithinMilliseconds: nil)
        default:
            session.forgetSession(after: error)
            context.close(promise: nil)
        }
    }
}
