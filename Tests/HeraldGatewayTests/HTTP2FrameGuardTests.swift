import NIOCore
import Testing

@testable import HeraldGateway

/// The HTTP/2 frame guard (the provider port's and the Web Push port's) without sockets: frame headers found however bytes are
/// split, resets of answered streams free, resets in progress and control floods counted in windows.
@Suite("HTTP/2 frame guard")
struct HTTP2FrameGuardTests {
    typealias Frame = HTTP2FrameScanner.Frame

    static func header(_ type: UInt8, flags: UInt8 = 0, stream: UInt32, length: Int = 0) -> [UInt8] {
        [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags,
         UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)]
    }

    @Test("frame headers are found whatever the buffer boundaries; GOAWAY reports its error code; the preface is skipped")
    func scanner() {
        var bytes = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        bytes += Self.header(Frame.headers, flags: 0x4, stream: 1, length: 3) + [1, 2, 3]
        bytes += Self.header(Frame.data, flags: Frame.endStream, stream: 1, length: 5) + [0, 0, 0, 0, 0]
        bytes += Self.header(Frame.goAway, stream: 0, length: 10) + [0, 0, 0, 1, 0, 0, 0, 0xB, 9, 9]
        bytes += Self.header(Frame.rstStream, stream: 3, length: 4) + [0, 0, 0, 8]
        let expected = [
            Frame(type: Frame.headers, flags: 0x4, streamID: 1, length: 3),
            Frame(type: Frame.data, flags: Frame.endStream, streamID: 1, length: 5),
            Frame(type: Frame.goAway, flags: 0, streamID: 0, length: 10, goAwayErrorCode: 0xB),
            Frame(type: Frame.rstStream, flags: 0, streamID: 3, length: 4),
        ]
        for chunk in [bytes.count, 1, 2, 5, 9, 10, 13] {
            var scanner = HTTP2FrameScanner(inbound: true)
            var found: [Frame] = []
            var index = 0
            while index < bytes.count {
                let end = min(bytes.count, index + chunk)
                scanner.scan(ByteBuffer(bytes: bytes[index..<end])) { found.append($0) }
                index = end
            }
            #expect(found == expected, "chunks of \(chunk)")
        }
    }

    @Test("resets after the answer never count; resets in progress past the limit are a violation, per window")
    func resets() {
        var clock = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var state = HTTP2FrameGuardState(limits: .init(inProgressResets: 3, resetWindow: .seconds(30), controlFrames: 1000, controlWindow: .seconds(10)))
        // 1,000 streams answered, then reset by the client: all free.
        for n in 0..<1000 {
            let stream = UInt32(2 * n + 1)
            #expect(state.inbound(Frame(type: Frame.headers, flags: 0, streamID: stream, length: 0), now: { clock }) == .pass)
            let closes = state.outbound(Frame(type: Frame.headers, flags: Frame.endStream, streamID: stream, length: 0))
            #expect(!closes)
            #expect(state.inbound(Frame(type: Frame.rstStream, flags: 0, streamID: stream, length: 4), now: { clock }) == .pass)
        }
        #expect(state.inProgress.isEmpty)
        // Streams reset before their answer: the fourth in 30 s is one too many.
        var verdicts: [HTTP2FrameGuardState.Verdict] = []
        for n in 1000..<1004 {
            let stream = UInt32(2 * n + 1)
            _ = state.inbound(Frame(type: Frame.headers, flags: 0, streamID: stream, length: 0), now: { clock })
            verdicts.append(state.inbound(Frame(type: Frame.rstStream, flags: 0, streamID: stream, length: 4), now: { clock }))
        }
        #expect(verdicts.prefix(3).allSatisfy { $0 == .pass })
        #expect(verdicts.last != .pass)
        // A new window starts the count again.
        var fresh = HTTP2FrameGuardState(limits: .init(inProgressResets: 3, resetWindow: .seconds(30), controlFrames: 1000, controlWindow: .seconds(10)))
        for n in 0..<9 {
            let stream = UInt32(2 * n + 1)
            if n % 3 == 0 { clock = clock + .seconds(31) }
            _ = fresh.inbound(Frame(type: Frame.headers, flags: 0, streamID: stream, length: 0), now: { clock })
            #expect(fresh.inbound(Frame(type: Frame.rstStream, flags: 0, streamID: stream, length: 4), now: { clock }) == .pass)
        }
    }

    @Test("control frames: a flood is a violation, two more are allowed per stream opened; a GOAWAY with an error closes")
    func controlFrames() {
        let clock = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var state = HTTP2FrameGuardState(limits: .init(inProgressResets: 200, resetWindow: .seconds(30), controlFrames: 10, controlWindow: .seconds(10)))
        for _ in 0..<10 { #expect(state.inbound(Frame(type: Frame.ping, flags: 0, streamID: 0, length: 8), now: { clock }) == .pass) }
        for n in 0..<5 { _ = state.inbound(Frame(type: Frame.headers, flags: 0, streamID: UInt32(2 * n + 1), length: 0), now: { clock }) }
        for _ in 0..<10 { #expect(state.inbound(Frame(type: Frame.windowUpdate, flags: 0, streamID: 0, length: 4), now: { clock }) == .pass) }
        #expect(state.inbound(Frame(type: Frame.settings, flags: 0, streamID: 0, length: 0), now: { clock }) != .pass)
        let errorGoAway = state.outbound(Frame(type: Frame.goAway, flags: 0, streamID: 0, length: 8, goAwayErrorCode: 0xB))
        let shutdownGoAway = state.outbound(Frame(type: Frame.goAway, flags: 0, streamID: 0, length: 8, goAwayErrorCode: 0))
        #expect(errorGoAway && !shutdownGoAway)
    }
}
