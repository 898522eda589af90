import NIOCore

/// Turns the flushes of one event-loop iteration into one.
///
/// HTTP/2 flushes the whole connection every time one stream flushes. Outside a read (where
/// SwiftNIO HTTP/2 already holds flushes until the read completes) every request a client starts
/// and every answer a server writes when its work completes would flush through HTTP/2 and TLS on
/// its own: one TLS record and one system call each. Placed between the HTTP/2 handler and TLS (or
/// the socket), this handler lets the first flush of an iteration schedule a single real flush at
/// the iteration's end and drops the rest; writes pass through untouched.
///
/// The gateway's provider port answers pushes through it, and `HeraldClient`'s connections send
/// requests through it.
public final class FlushCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = NIOAny
    public typealias OutboundOut = NIOAny

    private var flushScheduled = false

    public init() {}

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
    }

    public func flush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        context.eventLoop.assumeIsolated().execute {
            self.flushScheduled = false
            context.flush()
        }
    }
}
