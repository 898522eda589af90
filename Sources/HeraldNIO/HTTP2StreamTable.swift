import NIOCore
import NIOHTTP2

/// One stream of an ``HTTP2StreamTable``: a request the gateway answers (the APNs port's, the Web
/// Push port's) or a request the client sent. Called on the connection's event loop.
public protocol HTTP2TableStream: AnyObject {
    /// A HEADERS or DATA frame of this stream (for DATA, the flow-control window is already
    /// returned), or its RST_STREAM.
    func receive(_ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext)
    /// The stream is over: NIO closed it (`reason`: the error code of a reset or GOAWAY, `nil`
    /// for a clean end), or the connection went away. Nothing more arrives for it.
    func streamClosed(reason: HTTP2ErrorCode?)
}

/// The streams of one HTTP/2 connection, kept as frames on the connection after SwiftNIO's
/// `NIOHTTP2Handler` (no child channel per stream: a child channel per request was the larger
/// part of the provider port's event-loop time). The one request table of Herald's HTTP/2
/// endpoints: the APNs port, the Web Push port and the client.
///
/// It hands each stream's HEADERS, DATA and RST_STREAM frames to its ``HTTP2TableStream`` —
/// one the peer opens is made by `accept` at its first frame (a server's table); one this side
/// opens is added with ``open(_:on:)`` (a client's) — returns the flow-control window request
/// and response bodies use (``InboundWindow``), forgets a stream when NIO reports it closed,
/// and closes every stream when the connection goes. Frames of the connection itself (SETTINGS,
/// PING, GOAWAY) go on down the pipeline. `onStreamCreated` and `onStreamClosed` let the
/// connection count its open streams.
public final class HTTP2StreamTable: ChannelInboundHandler {
    public typealias InboundIn = HTTP2Frame
    public typealias InboundOut = HTTP2Frame
    public typealias OutboundOut = HTTP2Frame

    private var streams: [HTTP2StreamID: any HTTP2TableStream] = [:]
    private var window = InboundWindow()
    private let accept: ((HTTP2StreamID) -> any HTTP2TableStream)?
    private let onStreamCreated: ((HTTP2StreamID) -> Void)?
    private let onStreamClosed: ((HTTP2StreamID) -> Void)?

    /// - Parameters:
    ///   - accept: makes the stream a peer opens, at its first HEADERS (`nil`: frames of a stream
    ///     this side did not open are dropped, as a client drops them).
    public init(
        accept: ((HTTP2StreamID) -> any HTTP2TableStream)? = nil,
        onStreamCreated: ((HTTP2StreamID) -> Void)? = nil, onStreamClosed: ((HTTP2StreamID) -> Void)? = nil
    ) {
        self.accept = accept
        self.onStreamCreated = onStreamCreated
        self.onStreamClosed = onStreamClosed
    }

    /// How many streams are open.
    public var count: Int { streams.count }

    /// Adds a stream this side opened (its HEADERS are being written on `id`).
    public func open(_ stream: any HTTP2TableStream, on id: HTTP2StreamID) {
        streams[id] = stream
    }

    /// Whether `id` is still open (not answered and closed, not reset).
    public func isOpen(_ id: HTTP2StreamID) -> Bool { streams[id] != nil }

    /// Forgets a stream before NIO closes it (its owner is done with it): what else arrives for
    /// it is dropped, and it is not told of the close.
    public func forget(_ id: HTTP2StreamID) {
        streams.removeValue(forKey: id)
        window.forget(id)
    }

    /// Ends a stream this side gave up on (its frames could not be written): it is told it closed.
    public func close(_ id: HTTP2StreamID) {
        window.forget(id)
        streams.removeValue(forKey: id)?.streamClosed(reason: nil)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let id = frame.streamID
        guard id != .rootStream else { return context.fireChannelRead(data) }
        switch frame.payload {
        case .headers:
            if let open = streams[id] {
                open.receive(frame.payload, context: context)
            } else if let accept {
                let stream = accept(id)
                streams[id] = stream
                stream.receive(frame.payload, context: context)
            }
        case .data(let data):
            let stream = streams[id]
            window.consume(data, on: id, streamOpen: stream != nil, context: context)
            stream?.receive(frame.payload, context: context)
        case .rstStream:
            streams[id]?.receive(frame.payload, context: context)
        default:
            break
        }
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let created = event as? NIOHTTP2StreamCreatedEvent {
            onStreamCreated?(created.streamID)
        } else if let closed = event as? StreamClosedEvent {
            window.forget(closed.streamID)
            streams.removeValue(forKey: closed.streamID)?.streamClosed(reason: closed.reason)
            onStreamClosed?(closed.streamID)
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        closeAll()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        closeAll()
        context.fireChannelInactive()
    }

    private func closeAll() {
        let open = streams
        streams.removeAll()
        for stream in open.values { stream.streamClosed(reason: nil) }
    }
}
