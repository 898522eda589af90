import Foundation
import HeraldCore
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
            // An app that closes its write side (`printf … | socat - UNIX-CONNECT:…`) still gets
            // an answer to every request it sent before: the session closes after answering.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                let (lines, continuation) = AsyncStream.makeStream(of: String.self)
                let backpressure = LineBackpressure(channel: channel)
                let session = AgentSession(runtime: runtime, channel: channel)
                Task { await session.run(lines, backpressure: backpressure) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder()))
                    try channel.pipeline.syncOperations.addHandler(LineForwarder(continuation: continuation, backpressure: backpressure))
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

/// Bounds what an agent connection can make the device hold: past ``high`` lines waiting for the
/// session, or while the answers written to it are not being read (the channel is not writable),
/// the socket stops being read — a client that floods waits; it cannot make the runtime buffer
/// lines or answers without end.
final class LineBackpressure: Sendable {
    static let high = 64, low = 16
    private let channel: Channel
    private let state = Locked((waiting: 0, queueFull: false, unwritable: false, reading: true))

    init(channel: Channel) { self.channel = channel }

    /// A line was handed to the session.
    func queued() {
        update { state in
            state.waiting += 1
            if state.waiting >= Self.high { state.queueFull = true }
        }
    }

    /// The session took a line.
    func taken() {
        update { state in
            state.waiting -= 1
            if state.waiting <= Self.low { state.queueFull = false }
        }
    }

    /// The channel's writability changed.
    func writable(_ writable: Bool) {
        update { $0.unwritable = !writable }
    }

    private func update(_ change: (inout (waiting: Int, queueFull: Bool, unwritable: Bool, reading: Bool)) -> Void) {
        let read = state.withLock { state -> Bool? in
            change(&state)
            let shouldRead = !state.queueFull && !state.unwritable
            guard shouldRead != state.reading else { return nil }
            state.reading = shouldRead
            return shouldRead
        }
        if let read { _ = channel.setOption(ChannelOptions.autoRead, value: read) }
    }
}

final class LineForwarder: ChannelInboundHandler, Sendable {
    typealias InboundIn = String
    let continuation: AsyncStream<String>.Continuation
    let backpressure: LineBackpressure

    init(continuation: AsyncStream<String>.Continuation, backpressure: LineBackpressure) {
        self.continuation = continuation
        self.backpressure = backpressure
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        backpressure.queued()
        continuation.yield(unwrapInboundIn(data))
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        backpressure.writable(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        continuation.finish()
        context.fireChannelInactive()
    }

    /// The app closed its write side: no more requests; the session answers those it has, then closes.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed? = event as? ChannelEvent { continuation.finish() }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        let message = #"{"ok":false,"error":"\#(error) — closing"}"# + "\n"
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: message)), promise: nil)
        context.close(promise: nil)
    }
}
