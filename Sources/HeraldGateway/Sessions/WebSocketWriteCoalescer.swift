import NIOCore
import NIOWebSocket

/// Sends what a WebSocket session writes between two flushes as one buffer, so that SwiftNIO SSL
/// seals it as one TLS record (up to ``recordBytes``) instead of one per buffer.
///
/// NIOWebSocket's encoder, which the server upgrader puts in every session's pipeline (and which
/// cannot be removed), writes a frame's header into the payload's buffer only when that buffer
/// is its own. A server's frame's never is (the frame passed down the pipeline still holds it),
/// so every frame went out as two buffers, header and payload, and SwiftNIO SSL seals every
/// buffer as a record of its own: each push to a device was two records, the second 22 bytes
/// of overhead and one seal (and one open on the device) more. Copying them into one costs
/// less. One write between two flushes passes as it is.
final class WebSocketWriteCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// TLS's largest record: a buffer this long goes down without waiting for the flush.
    static let recordBytes = 16_384

    private var first: ByteBuffer?
    private var merged: ByteBuffer?
    private var promises: [EventLoopPromise<Void>] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        if let promise { promises.append(promise) }
        if merged != nil {
            merged!.writeImmutableBuffer(buffer)
        } else if let held = first {
            var joined = context.channel.allocator.buffer(capacity: held.readableBytes + buffer.readableBytes)
            joined.writeImmutableBuffer(held)
            joined.writeImmutableBuffer(buffer)
            first = nil
            merged = joined
        } else {
            first = buffer
        }
        if (merged?.readableBytes ?? 0) >= Self.recordBytes { passDown(context: context) }
    }

    func flush(context: ChannelHandlerContext) {
        passDown(context: context)
        context.flush()
    }

    /// What is held goes down before a close, which fails it, unflushed, as it would have
    /// without this handler.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        passDown(context: context)
        context.close(mode: mode, promise: promise)
    }

    /// The connection is gone: what is held was never flushed.
    func handlerRemoved(context: ChannelHandlerContext) {
        first = nil
        merged = nil
        for promise in promises { promise.fail(ChannelError.ioOnClosedChannel) }
        promises.removeAll()
    }

    private func passDown(context: ChannelHandlerContext) {
        guard let buffer = merged ?? first else { return }
        merged = nil
        first = nil
        let waiting = promises
        promises.removeAll(keepingCapacity: true)
        var promise: EventLoopPromise<Void>?
        if waiting.count == 1 {
            promise = waiting[0]
        } else if !waiting.isEmpty {
            let all = context.eventLoop.makePromise(of: Void.self)
            all.futureResult.whenComplete { result in for each in waiting { each.completeWith(result) } }
            promise = all
        }
        context.write(wrapOutboundOut(buffer), promise: promise)
    }

    /// Puts a coalescer between the encoder the server upgrader added and TLS (called from the
    /// upgrader's `upgradePipelineHandler`).
    static func insert(in pipeline: ChannelPipeline.SynchronousOperations) throws {
        let encoder = try pipeline.context(handlerType: WebSocketFrameEncoder.self)
        try pipeline.addHandler(WebSocketWriteCoalescer(), position: .before(encoder.handler))
    }
}
