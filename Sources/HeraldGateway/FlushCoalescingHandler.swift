import NIOCore

/// Turns the flushes of one event-loop iteration into one.
///
/// Answers to pushes are written when the intake's commit completes, outside any read, so each
/// stream would flush through HTTP/2 and TLS on its own: one TLS record and one system call per
/// answer. Sitting between the HTTP/2 handler and TLS, this handler lets the first flush of an
/// iteration schedule a single real flush at its end and drops the rest.
final class FlushCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var flushScheduled = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        context.eventLoop.assumeIsolated().execute {
            self.flushScheduled = false
            context.flush()
        }
    }
}
