import NIOCore
import NIOWebSocket

/// The WebSocket control frames every session of the gateway handles the same way (a Herald
/// device's on the device port, a browser's on the Web Push port): pings it sends when quiet,
/// pings it answers, the closing handshake either side starts. RFC 6455 §5.5.
enum WebSocketControl {
    /// Pings the peer (its pong keeps the connection's read side alive).
    static func ping(_ context: ChannelHandlerContext) {
        let frame = WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(capacity: 0))
        context.writeAndFlush(NIOAny(frame), promise: nil)
    }

    /// Sends a close frame with `code`, then closes the connection once it is written.
    static func close(_ context: ChannelHandlerContext, code: WebSocketErrorCode) {
        var reason = context.channel.allocator.buffer(capacity: 2)
        reason.write(webSocketErrorCode: code)
        closeAfter(WebSocketFrame(fin: true, opcode: .connectionClose, data: reason), context)
    }

    /// What became of a frame from the peer.
    enum Outcome {
        /// A text frame's bytes, unmasked: the session reads them.
        case text([UInt8])
        /// Another data frame (binary, continuation): the session's protocol has none.
        case notText(WebSocketOpcode)
        /// A frame without a mask, which a client must never send (RFC 6455 §5.1).
        case unmasked
        /// A ping (answered with its pong) or a pong.
        case handled
        /// The peer closes: its close frame was echoed and the connection is closing.
        case peerClosed
    }

    /// Handles the control frames; unmasks a text frame for the session.
    static func receive(_ frame: WebSocketFrame, context: ChannelHandlerContext) -> Outcome {
        guard frame.maskKey != nil else { return .unmasked }
        switch frame.opcode {
        case .ping:
            var data = frame.unmaskedData
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: data.readSlice(length: data.readableBytes) ?? data)
            context.writeAndFlush(NIOAny(pong), promise: nil)
            return .handled
        case .pong:
            return .handled
        case .connectionClose:
            var data = frame.unmaskedData
            let code = data.readSlice(length: min(2, data.readableBytes)) ?? context.channel.allocator.buffer(capacity: 0)
            closeAfter(WebSocketFrame(fin: true, opcode: .connectionClose, data: code), context)
            return .peerClosed
        case .text:
            var data = frame.unmaskedData
            return .text(data.readBytes(length: data.readableBytes) ?? [])
        default:
            return .notText(frame.opcode)
        }
    }

    private static func closeAfter(_ frame: WebSocketFrame, _ context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(NIOAny(frame)).whenComplete { _ in channel.close(promise: nil) }
    }
}
