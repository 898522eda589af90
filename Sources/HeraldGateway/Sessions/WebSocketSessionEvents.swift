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
