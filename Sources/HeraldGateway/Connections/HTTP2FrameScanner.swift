import NIOCore

/// Finds the HTTP/2 frame headers in one direction of a connection's byte stream, whatever way the
/// bytes are split into buffers, without copying payloads. Used by ``HTTP2FrameGuard`` to see
/// what a peer sends before NIO's HTTP/2 state machine acts on it, and what the gateway answers.
struct HTTP2FrameScanner {
    /// One frame header (RFC 9113 §4.1), and for GOAWAY its error code.
    struct Frame: Equatable {
        var type: UInt8
        var flags: UInt8
        var streamID: UInt32
        var length: Int
        /// GOAWAY only: the error code (the payload's second word), when the payload was seen.
        var goAwayErrorCode: UInt32?

        static let data: UInt8 = 0x0, headers: UInt8 = 0x1, priority: UInt8 = 0x2, rstStream: UInt8 = 0x3
        static let settings: UInt8 = 0x4, ping: UInt8 = 0x6, goAway: UInt8 = 0x7, windowUpdate: UInt8 = 0x8
        static let endStream: UInt8 = 0x1
    }

    /// Bytes of the client connection preface still to skip (`PRI * HTTP/2.0…`, 24 bytes).
    private var prefaceRemaining: Int
    private var header: [UInt8] = []
    private var payloadRemaining = 0
    /// A GOAWAY whose first 8 payload bytes are being collected.
    private var pendingGoAway: Frame?
    private var goAwayBytes: [UInt8] = []

    /// `inbound`: the client's direction, which starts with the 24-byte preface.
    init(inbound: Bool) {
        prefaceRemaining = inbound ? 24 : 0
        header.reserveCapacity(9)
    }

    /// Reads `buffer`'s readable bytes (without moving its reader index) and reports each frame
    /// header as soon as it is complete (a GOAWAY once its error code is known).
    mutating func scan(_ buffer: ByteBuffer, _ frame: (Frame) -> Void) {
        buffer.withUnsafeReadableBytes { bytes in
            var index = 0
            let count = bytes.count
            while index < count {
                if prefaceRemaining > 0 {
                    let skip = min(prefaceRemaining, count - index)
                    prefaceRemaining -= skip
                    index += skip
                    continue
                }
                if payloadRemaining > 0 {
                    let take = min(payloadRemaining, count - index)
                    if var goAway = pendingGoAway {
                        let need = min(8 - goAwayBytes.count, take)
                        goAwayBytes.append(contentsOf: bytes[index..<(index + need)])
                        if goAwayBytes.count == 8 {
                            goAway.goAwayErrorCode = goAwayBytes[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
                            pendingGoAway = nil
                            frame(goAway)
                        }
                    }
                    payloadRemaining -= take
                    index += take
                    continue
                }
                // Frame header: fast path when all nine bytes are here.
                if header.isEmpty, count - index >= 9 {
                    emitHeader(
                        length: Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2]),
                        type: bytes[index + 3], flags: bytes[index + 4],
                        streamID: (UInt32(bytes[index + 5]) << 24 | UInt32(bytes[index + 6]) << 16 | UInt32(bytes[index + 7]) << 8 | UInt32(bytes[index + 8])) & 0x7FFF_FFFF,
                        frame)
                    index += 9
                    continue
                }
                header.append(bytes[index])
                index += 1
                if header.count == 9 {
                    let h = header
                    header.removeAll(keepingCapacity: true)
                    emitHeader(
                        length: Int(h[0]) << 16 | Int(h[1]) << 8 | Int(h[2]), type: h[3], flags: h[4],
                        streamID: (UInt32(h[5]) << 24 | UInt32(h[6]) << 16 | UInt32(h[7]) << 8 | UInt32(h[8])) & 0x7FFF_FFFF,
                        frame)
                }
            }
        }
    }

    private mutating func emitHeader(length: Int, type: UInt8, flags: UInt8, streamID: UInt32, _ frame: (Frame) -> Void) {
        payloadRemaining = length
        let header = Frame(type: type, flags: flags, streamID: streamID, length: length)
        if type == Frame.goAway, length >= 8 {
            pendingGoAway = header
            goAwayBytes.removeAll(keepingCapacity: true)
        } else {
            frame(header)
        }
    }
}
