import NIOCore

/// Tells a quiet connection's session to ping its peer, and a silent one's to close it.
///
/// Every WebSocket session of the gateway (a device's, a browser's) and every Web Push sender's
/// connection has one. It fires NIO's `IdleStateHandler.IdleStateEvent`s — `.write` when nothing
/// was written for `pingInterval` (the session pings), `.read` when nothing was read for
/// `idleTimeout` (the session closes) — from one deadline per connection, the earlier of the two,
/// filed in its event loop's ``KeepaliveWheel`` and counted on the loop's clock (so a test drives
/// it), kept to the wheel's tick: never early, at most a second late. A session changes its
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
    private let wheel: KeepaliveWheel
    /// Set while the connection is active: what the wheel's tick works on.
    private var context: ChannelHandlerContext?
    /// Where the wheel filed this handler; only the wheel changes it.
    var wheelPlace: KeepaliveWheel.Place?

    /// - Parameter wheel: the wheel of the event loop the connection runs on.
    init(pingInterval: TimeAmount?, idleTimeout: TimeAmount, wheel: KeepaliveWheel) {
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
        self.wheel = wheel
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
        if self.context != nil { arm() }
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
        guard self.context == nil else { return }
        self.context = context
        let now = context.eventLoop.now
        (lastRead, lastWrite) = (now, now)
        arm()
    }

    private func stop() {
        wheel.withdraw(self)
        context = nil
    }

    private func arm() {
        var due = lastRead + idleTimeout
        if let pingInterval { due = min(due, lastWrite + pingInterval) }
        wheel.file(self, due: due)
    }

    /// Called by the wheel once the deadline it was filed with has passed.
    func keepaliveDue() {
        guard let context else { return }
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
        guard self.context != nil, context.channel.isActive else { return }
        arm()
    }
}
