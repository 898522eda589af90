import Foundation
import HeraldCore
import NIOCore
import NIOPosix

/// A client of the device agent's socket, as an app in another language would be: sends one
/// JSON object per line and collects every line that comes back (answers and callbacks).
public final class AgentClient: Sendable {
    private let channel: Channel
    private let received: Locked<[[String: JSONValue]]>
    private let nextID = Locked(0)

    public struct Timeout: Error, CustomStringConvertible { public var description: String }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received: Locked<[[String: JSONValue]]>
        let pending = Locked<[UInt8]>([])
        init(_ received: Locked<[[String: JSONValue]]>) { self.received = received }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            let complete = pending.withLock { pending -> [[UInt8]] in
                pending += bytes
                var out: [[UInt8]] = []
                while let newline = pending.firstIndex(of: 10) {
                    out.append(Array(pending[..<newline]))
                    pending.removeFirst(newline + 1)
                }
                return out
            }
            for line in complete {
                if case .object(let object)? = try? JSONReader.parse(line) {
                    received.withLock { $0.append(object) }
                }
            }
        }
    }

    private init(channel: Channel, received: Locked<[[String: JSONValue]]>) {
        self.channel = channel
        self.received = received
    }

    public static func connect(path: String) async throws -> AgentClient {
        let received = Locked<[[String: JSONValue]]>([])
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Collector(received)) }
            }
            .connect(unixDomainSocketPath: path).get()
        return AgentClient(channel: channel, received: received)
    }

    /// Every line received so far.
    public var all: [[String: JSONValue]] { received.withLock { $0 } }

    /// Writes a raw line.
    public func write(line: String) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(string: line + "\n")).get()
    }

    /// Sends a message with a fresh `id` and returns the answer to it.
    @discardableResult
    public func request(_ message: [String: JSONValue]) async throws -> [String: JSONValue] {
        let id = nextID.withLock { $0 += 1; return $0 }
        var message = message
        message["id"] = .int(Int64(id))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try await write(line: String(decoding: try encoder.encode(JSONValue.object(message)), as: UTF8.self))
        return try await first("the answer to \(message)") { $0["id"] == .int(Int64(id)) }
    }

    /// The first line received (ever) that matches, waiting for it up to a generous real-time bound.
    public func first(_ what: String, timeout: Duration = .seconds(15), _ match: @escaping ([String: JSONValue]) -> Bool) async throws -> [String: JSONValue] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = all.first(where: match) { return found }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw Timeout(description: "no \(what) within \(timeout); received: \(all)")
    }

    /// The first callback of an event kind whose notification id (if given) matches.
    public func event(_ name: String, notification id: String? = nil) async throws -> [String: JSONValue] {
        try await first("event \(name)") { line in
            guard line["event"] == .string(name) else { return false }
            guard let id else { return true }
            if case .object(let n)? = line["notification"] { return n["id"] == .string(id) }
            return false
        }
    }

    public func close() async { try? await channel.close() }

    /// Closes the write side only, as `socat` does at the end of its input; answers still arrive.
    public func closeWrite() async throws { try await channel.close(mode: .output) }

    /// Waits until the agent closes the connection.
    public func waitUntilClosed(timeout: Duration = .seconds(15)) async throws {
        let deadline = ContinuousClock.now + timeout
        while channel.isActive {
            guard ContinuousClock.now < deadline else { throw Timeout(description: "the agent did not close within \(timeout)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
