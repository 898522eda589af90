import NIOCore

/// Tells a quiet connection's session to ping its peer, and a silent one's to close it.
///
/// Every WebSocket session of the gateway (a device's, a browser's) and every Web Push sender's
/// connection has one. It fires NIO's `IdleStateHandler.IdleStateEvent`s — `.write` when nothing
/// was written for `pingInterval` (the session pings), `.read` when nothing was read for
/// `idleTimeout` (the session closes) — from a single timer per connection, due at the earlier
/// of the two, counted on the event loop's clock (so a test drives it). A session changes its
/// connection's bounds with a ``Change`` (a device that asked for a shorter ping interval).
final class KeepaliveHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias InboundOut = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    /// New bounds for this connection, sent as an outbound user event (counted from the last
    /// read and write).
    struct Change: Sendable, Hashable {
        var pingInterval: TimeAmount?
        var idleTimeout: TimeAmount
    }

    /// `nil`: the connection is never pinged (its peer's requests keep it alive, or it closes).
    private var pingInterval: TimeAmount?
    private var idleTimeout: TimeAmount
    private var lastRead = NIODeadline.uptimeNanoseconds(0)
    private var lastWrite = NIODeadline.uptimeNanoseconds(0)
    private var timer: Scheduled<Void>?

    init(pingInterval: TimeAmount?, idleTimeout: TimeAmount) {
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastRead = context.eventLoop.now
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        lastWrite = context.eventLoop.now
        context.write(data, promise: promise)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let change = event as? Change else {
            return context.triggerUserOutboundEvent(event, promise: promise)
        }
        pingInterval = change.pingInterval
        idleTimeout = change.idleTimeout
        if timer != nil { arm(context) }
        promise?.succeed()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard timer == nil else { return }
        let now = context.eventLoop.now
        (lastRead, lastWrite) = (now, now)
        arm(context)
    }

    private func stop() {
        timer?.cancel()
        timer = nil
    }

    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        var due = lastRead + idleTimeout
        if let pingInterval { due = min(due, lastWrite + pingInterval) }
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: due) { [self] in fire(context) }
    }

    private func fire(_ context: ChannelHandlerContext) {
        timer = nil
        let now = context.eventLoop.now
        if now >= lastRead + idleTimeout {
            // The session closes the connection; nothing is armed again.
            context.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.read)
            return
        }
        if let pingInterval, now >= lastWrite + pingInterval {
            // The session's ping passes through `write`; a session that writes nothing is told
            // again an interval later, not at once.
            lastWrite = now
            context.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.write)
        }
        guard context.channel.isActive else { return }
        arm(context)
    }
}
