import HeraldCore
import HeraldStore
import HeraldNIO
import NIOCore
import NIOHPACK
import NIOHTTP2
import Tracing

/// The streams of one provider connection, after SwiftNIO's HTTP/2 handler: it gives each stream's
/// frames to its ``APNsPortStream`` (made at the stream's first HEADERS), forgets a stream when
/// NIO reports it closed, tells the ``APNsPortConnection`` how many are open, and returns the
/// flow-control window that request bodies use, for the connection and for each stream (NIO's
/// handler leaves that to a multiplexer, and there is none: a child channel per request was the
/// larger part of the provider port's event-loop time).
final class APNsPortStreamTable: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let port: APNsPort
    private let connection: APNsPortConnection
    private var streams: [HTTP2StreamID: APNsPortStream] = [:]
    private var window = InboundWindow()

    init(port: APNsPort, connection: APNsPortConnection) {
        self.port = port
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let id = frame.streamID
        guard id != .rootStream else { return context.fireChannelRead(data) }
        switch frame.payload {
        case .headers:
            let stream: APNsPortStream
            if let open = streams[id] {
                stream = open
            } else {
                stream = APNsPortStream(id: id, port: port, connection: connection)
                streams[id] = stream
            }
            stream.receive(frame.payload, context: context)
        case .data(let data):
            window.consume(data, on: id, streamOpen: streams[id] != nil, context: context)
            streams[id]?.receive(frame.payload, context: context)
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let created = event as? NIOHTTP2StreamCreatedEvent {
            connection.streamCreated(created.streamID)
        } else if let closed = event as? StreamClosedEvent {
            streams.removeValue(forKey: closed.streamID)?.isClosed = true
            window.forget(closed.streamID)
            connection.streamClosed(closed.streamID)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        for stream in streams.values { stream.isClosed = true }
        streams.removeAll()
        context.fireChannelInactive()
    }
}
