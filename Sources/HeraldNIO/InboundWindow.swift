import NIOCore
import NIOHTTP2

/// Gives back the HTTP/2 flow-control window that received DATA frames use, for the connection
/// and for each open stream, in steps of half the initial 64 KiB window.
///
/// SwiftNIO's `NIOHTTP2Handler` leaves WINDOW_UPDATEs to its stream multiplexer. Herald's provider
/// port and client keep their streams as frames on the connection, without a multiplexer, so each
/// keeps one of these and calls ``consume(_:on:streamOpen:context:)`` for every DATA frame read.
/// Used on the connection's event loop only.
public struct InboundWindow {
    /// A WINDOW_UPDATE is sent once this many bytes were consumed since the last one.
    public static let threshold = 32_768

    private var connection = 0
    private var streams: [HTTP2StreamID: Int] = [:]

    public init() {}

    /// Counts `data` (payload, padding and its length byte, as flow control does) and writes and
    /// flushes the WINDOW_UPDATEs now due on `context`: the connection's always, the stream's
    /// only while `streamOpen` (the frame did not end it and its stream is still wanted).
    public mutating func consume(
        _ data: HTTP2Frame.FramePayload.Data, on id: HTTP2StreamID, streamOpen: Bool, context: ChannelHandlerContext
    ) {
        let length = data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
        guard length > 0 else { return }
        var due = false
        connection += length
        if connection >= Self.threshold {
            context.write(NIOAny(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: connection))), promise: nil)
            connection = 0
            due = true
        }
        if streamOpen && !data.endStream {
            let pending = streams[id, default: 0] + length
            if pending >= Self.threshold {
                context.write(NIOAny(HTTP2Frame(streamID: id, payload: .windowUpdate(windowSizeIncrement: pending))), promise: nil)
                streams[id] = nil
                due = true
            } else {
                streams[id] = pending
            }
        } else {
            streams[id] = nil
        }
        if due { context.flush() }
    }

    /// Forgets a stream that closed.
    public mutating func forget(_ id: HTTP2StreamID) {
        streams[id] = nil
    }
}
