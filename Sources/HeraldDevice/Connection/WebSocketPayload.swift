import NIOCore

extension ByteBufferAllocator {
    /// The most a WebSocket frame header takes (RFC 6455 §5.2): 2 bytes, 8 of extended length
    /// and a client's 4-byte mask.
    static let webSocketHeaderRoom = 14

    /// A WebSocket message's payload with room in front of it for the frame's header.
    ///
    /// NIOWebSocket's encoder writes a masked frame's header into that room when there is some
    /// (masking copies the payload, so the copy is its own); when there is none it writes the
    /// header as a buffer of its own, and SwiftNIO SSL seals each buffer as a TLS record of its
    /// own: two records (two seals here, two opens at the gateway) for every frame. Every text
    /// frame the device sends is made here. (The gateway's unmasked frames are never its own, so
    /// it joins header and payload itself: `WebSocketWriteCoalescer`.)
    func webSocketPayload(_ bytes: some Collection<UInt8>) -> ByteBuffer {
        var buffer = self.buffer(capacity: Self.webSocketHeaderRoom + bytes.count)
        buffer.moveWriterIndex(forwardBy: Self.webSocketHeaderRoom)
        buffer.moveReaderIndex(forwardBy: Self.webSocketHeaderRoom)
        buffer.writeBytes(bytes)
        return buffer
    }
}
