import NIOCore

/// Closes a connection on which nothing has been read for a while: a gateway node that froze,
/// a machine that vanished, a NAT mapping that was dropped — none of which TCP reports on its
/// own. First in the pipeline (before TLS), so every byte counts as a sign of life.
///
/// Before the gateway's welcome the bound is the handshake's (TLS, upgrade, challenge); after it,
/// ``DeviceSocket/expectTraffic(within:)`` sets it from the ping interval the gateway announced
/// (it writes something at least that often). Times are the event loop's, so a test drives them.
final class SilenceTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var timeout: TimeAmount
    private var lastRead: NIODeadline?
    private var timer: Scheduled<Void>?
    private let onTimeout: (TimeAmount) -> Void

    /// `onTimeout` runs (on the event loop) just before the connection is closed for silence.
    init(timeout: TimeAmount, onTimeout: @escaping (TimeAmount) -> Void) {
        self.timeout = timeout
        self.onTimeout = onTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastRead = context.eventLoop.now
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    /// A new bound, counted from the last read (or from now, if that is later).
    func setTimeout(_ timeout: TimeAmount, context: ChannelHandlerContext) {
        self.timeout = timeout
        lastRead = context.eventLoop.now
        arm(context: context)
    }

    private func start(context: ChannelHandlerContext) {
        guard timer == nil else { return }
        lastRead = context.eventLoop.now
        arm(context: context)
    }

    private func arm(context: ChannelHandlerContext) {
        timer?.cancel()
        let deadline = (lastRead ?? context.eventLoop.now) + timeout
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            let quietSince = lastRead ?? context.eventLoop.now
            if context.eventLoop.now - quietSince >= timeout {
                onTimeout(timeout)
                context.close(promise: nil)
            } else {
                arm(context: context)
            }
        }
    }
}
