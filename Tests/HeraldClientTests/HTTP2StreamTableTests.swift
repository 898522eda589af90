import HeraldNIO
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

/// The one HTTP/2 request table (the APNs port's, the Web Push port's and the client's), frame
/// by frame on an `EmbeddedChannel`: which stream gets which frame, the windows it returns, and
/// how streams end.
@Suite("HTTP/2 request table on an EmbeddedChannel")
struct HTTP2StreamTableTests {
    /// A stream that records what the table tells it.
    final class Recorder: HTTP2TableStream {
        var frames: [String] = []
        var closed: [HTTP2ErrorCode?] = []

        func receive(_ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext) {
            switch payload {
            case .headers(let h): frames.append("headers" + (h.endStream ? " end" : ""))
            case .data(let d): frames.append("data \(d.data.readableBytes)" + (d.endStream ? " end" : ""))
            case .rstStream(let code): frames.append("reset \(code.networkCode)")
            default: frames.append("other")
            }
        }

        func streamClosed(reason: HTTP2ErrorCode?) { closed.append(reason) }
    }

    static func headers(_ id: Int, end: Bool = false) -> HTTP2Frame {
        HTTP2Frame(streamID: HTTP2StreamID(id), payload: .headers(.init(headers: HPACKHeaders([(":method", "POST")]), endStream: end)))
    }

    static func data(_ id: Int, _ count: Int, end: Bool = false) -> HTTP2Frame {
        HTTP2Frame(streamID: HTTP2StreamID(id), payload: .data(.init(data: .byteBuffer(ByteBuffer(repeating: 0, count: count)), endStream: end)))
    }

    /// The WINDOW_UPDATEs written, as (stream, increment).
    static func windowUpdates(_ channel: EmbeddedChannel) throws -> [(Int, Int)] {
        var updates: [(Int, Int)] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
            if case .windowUpdate(let increment) = frame.payload { updates.append((Int(frame.streamID), increment)) }
        }
        return updates
    }

    @Test("a server's table: a stream per first HEADERS, its frames in order, the windows returned, closed by NIO's event or the connection")
    func server() throws {
        var made: [Int: Recorder] = [:]
        var created: [Int] = [], closedIDs: [Int] = []
        let table = HTTP2StreamTable(
            accept: { id in
                let stream = Recorder()
                made[Int(id)] = stream
                return stream
            },
            onStreamCreated: { created.append(Int($0)) }, onStreamClosed: { closedIDs.append(Int($0)) })
        let channel = EmbeddedChannel(handler: table)

        try channel.writeInbound(Self.headers(1))
        try channel.writeInbound(Self.headers(3, end: true))
        try channel.writeInbound(Self.data(1, 20_000))
        try channel.writeInbound(Self.data(1, 20_000))
        #expect(table.count == 2 && made.keys.sorted() == [1, 3])
        #expect(made[1]?.frames == ["headers", "data 20000", "data 20000"] && made[3]?.frames == ["headers end"])
        // 40,000 bytes: past half the initial window, for the connection and for the open stream.
        #expect(try Self.windowUpdates(channel).map { "\($0.0):\($0.1)" } == ["0:40000", "1:40000"])

        // The connection's own frames go on down the pipeline.
        try channel.writeInbound(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: 7), ack: false)))
        #expect(try channel.readInbound(as: HTTP2Frame.self)?.streamID == .rootStream)

        channel.pipeline.fireUserInboundEventTriggered(NIOHTTP2StreamCreatedEvent(streamID: 5, localInitialWindowSize: nil, remoteInitialWindowSize: nil))
        channel.pipeline.fireUserInboundEventTriggered(StreamClosedEvent(streamID: 3, reason: .cancel))
        #expect(created == [5] && closedIDs == [3] && made[3]?.closed == [.cancel] && table.count == 1)
        try channel.writeInbound(HTTP2Frame(streamID: 1, payload: .rstStream(.refusedStream)))
        #expect(made[1]?.frames.last == "reset \(HTTP2ErrorCode.refusedStream.networkCode)")

        _ = try channel.finish()
        #expect(made[1]?.closed == [nil], "the connection's end closes what is open")
        #expect(table.count == 0)
    }

    @Test("a client's table: only streams this side opened; another stream's DATA still returns the connection's window; close and forget")
    func client() throws {
        let table = HTTP2StreamTable()
        let channel = EmbeddedChannel(handler: table)
        let mine = Recorder(), abandoned = Recorder(), done = Recorder()
        table.open(mine, on: 1)
        table.open(abandoned, on: 3)
        table.open(done, on: 5)

        try channel.writeInbound(Self.headers(7))
        try channel.writeInbound(Self.data(7, 40_000))
        #expect(table.count == 3, "a stream the peer opened is not accepted by a client")
        #expect(try Self.windowUpdates(channel).map { "\($0.0):\($0.1)" } == ["0:40000"])

        try channel.writeInbound(Self.data(1, 10, end: true))
        #expect(mine.frames == ["data 10 end"])
        table.close(3)
        table.forget(5)
        #expect(abandoned.closed == [nil] && done.closed.isEmpty && table.count == 1 && table.isOpen(1) && !table.isOpen(5))
        channel.pipeline.fireUserInboundEventTriggered(StreamClosedEvent(streamID: 5, reason: nil))
        #expect(done.closed.isEmpty, "a forgotten stream is not told of its close")
        _ = try channel.finish()
        #expect(mine.closed == [nil])
    }
}
