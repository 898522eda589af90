import HeraldCore
import NIOCore
import NIOTLS

/// Closes a connection that has not reached a milestone by a deadline: the end of the TLS
/// handshake (``Milestone/tlsHandshake``), or whatever a later handler declares by sending
/// ``DeadlineMet`` as an outbound user event (a device answering its challenge). A peer that
/// connects and stays silent, or starts TLS and stalls, holds a socket for at most `timeout`.
final class ConnectionDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny

    enum Milestone {
        case tlsHandshake
        /// A later handler sends ``DeadlineMet``.
        case declared
        /// Any bytes at all: a TLS client sends its ClientHello right after connecting, so a
        /// connection that stays silent is a peer holding a socket (and a ``HandshakeGate``
        /// slot), closed long before the handshake's own deadline.
        case firstBytes
    }

    /// Sent outbound by a handler after this one when the milestone is reached.
    struct DeadlineMet {}

    private let timeout: TimeAmount
    private let milestone: Milestone
    private var timer: Scheduled<Void>?
    private let onExpiry: @Sendable () -> Void
    /// Called once, when the milestone is met or the connection ends before it.
    private var onDone: (@Sendable () -> Void)?

    init(timeout: TimeAmount, milestone: Milestone, onExpiry: @escaping @Sendable () -> Void = {}, onDone: (@Sendable () -> Void)? = nil) {
        self.timeout = timeout
        self.milestone = milestone
        self.onExpiry = onExpiry
        self.onDone = onDone
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        let onExpiry = self.onExpiry
        timer = context.eventLoop.scheduleTask(in: timeout) {
            onExpiry()
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        // Removed when the milestone is met, or with the pipeline when the connection ends.
        onDone?()
        onDone = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
        if milestone == .firstBytes { met(context) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Passed on first: the handlers after this one need the event (and this one leaves).
        context.fireUserInboundEventTriggered(event)
        if milestone == .tlsHandshake, let tls = event as? TLSUserEvent, case .handshakeCompleted = tls { met(context) }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if event is DeadlineMet {
            met(context)
            promise?.succeed()
            return
        }
        context.triggerUserOutboundEvent(event, promise: promise)
    }

    private func met(_ context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
