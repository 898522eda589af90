import Foundation
import HeraldCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The agent's local socket: a Unix domain socket where apps written in any language use the
/// device runtime with JSON messages, one per line (`docs/device-agent.md`). Each connection is
/// one app process (after `hello`) or a tool driving the user and the device.
public final class AgentSocket: Sendable {
    public let path: String
    private let channel: Channel
    /// The longest message accepted.
    public static let maximumLineLength = 1 << 20

    private init(path: String, channel: Channel) {
        self.path = path
        self.channel = channel
    }

    /// Listens at `path` (an existing socket file there is replaced) for `runtime`.
    public static func start(
        path: String, runtime: DeviceRuntime, group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> AgentSocket {
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .childChannelInitializer { channel in
                let (lines, continuation) = AsyncStream.makeStream(of: String.self)
                let session = AgentSession(runtime: runtime, channel: channel)
                Task { await session.run(lines) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder()))
                    try channel.pipeline.syncOperations.addHandler(LineForwarder(continuation: continuation))
                }
            }
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
        return AgentSocket(path: path, channel: channel)
    }

    public func close() async {
        try? await channel.close()
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Splits the stream into lines (`\n`, an optional `\r` before it dropped).
struct LineDecoder: ByteToMessageDecoder {
    typealias InboundOut = String

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > AgentSocket.maximumLineLength { throw AgentLineTooLong() }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        var line = buffer.readString(length: length) ?? ""
        buffer.moveReaderIndex(forwardBy: 1)
        if line.hasSuffix("\r") { line.removeLast() }
        context.fireChannelRead(Self.wrapInboundOut(line))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}

struct AgentLineTooLong: Error, CustomStringConvertible {
    var description: String { "a message longer than \(AgentSocket.maximumLineLength) bytes" }
}

final class LineForwarder: ChannelInboundHandler, Sendable {
    typealias InboundIn = String
    let continuation: AsyncStream<String>.Continuation

    init(continuation: AsyncStream<String>.Continuation) { self.continuation = continuation }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        continuation.yield(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        continuation.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        let message = #"{"ok":false,"error":"\#(error) — closing"}"# + "\n"
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: message)), promise: nil)
        context.close(promise: nil)
    }
}
