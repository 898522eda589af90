import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A request of the agent socket (one generated type an op, `AgentRequest`): its `op` and the type
/// of its answer.
public protocol AgentRequestMessage: Encodable, Sendable {
    associatedtype Answer: Decodable & Sendable
    static var op: String { get }
}

/// What went wrong talking to the device agent.
public enum AgentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The agent refused the request; its reason, as the agent wrote it.
    case refused(op: String, reason: String)
    /// The socket could not be reached (no `herald device run` there, or not allowed).
    case unreachable(path: String, reason: String)
    /// The connection is closed (the agent stopped, or `close()` was called).
    case closed
    /// The agent wrote something this library cannot read (a line past 1 MiB, or not the
    /// message the schema describes).
    case unreadable(String)
    /// An answer or callback did not come in time.
    case timedOut(String)

    public var description: String {
        switch self {
        case .refused(let op, let reason): "the device agent refused \(op): \(reason)"
        case .unreachable(let path, let reason): "cannot reach the device agent at \(path): \(reason) (is `herald device run` running with this --agent-socket?)"
        case .closed: "the connection to the device agent is closed"
        case .unreadable(let what): "the device agent wrote what this library cannot read: \(what)"
        case .timedOut(let what): "timed out waiting for \(what)"
        }
    }
}

/// One connection to `herald device run`'s agent socket: JSON lines both ways
/// (docs/device-agent.md), requests answered by id, callbacks handed to `onCallback`. A thread
/// of its own reads the socket (blocking reads; the library depends on Foundation only).
final class AgentConnection: Sendable {
    /// The agent's bound on one line; the same bound holds for what it writes.
    static let maximumLineLength = 1 << 20

    let path: String
    private let descriptor: Int32
    private let state = Mutex<State>(State())
    private let writeLock = Mutex<Void>(())
    private let onIncoming: @Sendable (Incoming) -> Void

    /// What the reading thread hands on besides answers.
    enum Incoming {
        /// A callback: its `event` and its line.
        case callback(String, Data)
        /// The connection ended.
        case closed
    }

    private struct State {
        var nextID = 1
        var waiting: [Int: CheckedContinuation<Data, any Error>] = [:]
        var closed = false
    }

    /// Connects to the socket at `path`; `onIncoming` gets every line with an `event`, in order,
    /// then the end (on the reading thread: it must not block).
    init(path: String, onIncoming: @escaping @Sendable (Incoming) -> Void) throws(AgentError) {
        self.path = path
        self.onIncoming = onIncoming
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw .unreachable(path: path, reason: "a socket path is 1 to \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        #if canImport(Glibc)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw .unreachable(path: path, reason: String(cString: strerror(errno))) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            closeDescriptor(descriptor)
            throw .unreachable(path: path, reason: reason)
        }
        self.descriptor = descriptor
        let thread = Thread { [self] in readLoop() }
        thread.name = "herald-agent-reader"
        thread.start()
    }

    /// Sends `request` and waits for its answer (refusals thrown as `AgentError.refused`).
    func send<Request: AgentRequestMessage>(_ request: Request) async throws -> Request.Answer {
        let line = try await exchange(Request.op) { id in
            var data = try Self.encoder.encode(Envelope(id: id, request: request))
            data.append(UInt8(ascii: "\n"))
            return data
        }
        do {
            return try JSONDecoder().decode(Request.Answer.self, from: line)
        } catch {
            throw AgentError.unreadable("the answer to \(Request.op): \(error)")
        }
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    private func exchange(_ op: String, _ encode: (Int) throws -> Data) async throws -> Data {
        let id = try state.withLock { state throws(AgentError) -> Int in
            guard !state.closed else { throw .closed }
            defer { state.nextID += 1 }
            return state.nextID
        }
        let data = try encode(id)
        let line: Data = try await withCheckedThrowingContinuation { continuation in
            let registered = state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.waiting[id] = continuation
                return true
            }
            guard registered else { return continuation.resume(throwing: AgentError.closed) }
            do { try write(data) } catch {
                if let waiting = state.withLock({ $0.waiting.removeValue(forKey: id) }) { waiting.resume(throwing: error) }
            }
        }
        let head = try JSONDecoder().decode(Head.self, from: line)
        if head.ok == false { throw AgentError.refused(op: op, reason: head.error ?? "no reason given") }
        return line
    }

    private func write(_ data: Data) throws(AgentError) {
        let failed = writeLock.withLock { _ -> Bool in
            data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Bool in
                var offset = 0
                while offset < raw.count {
                    let written = sendBytes(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                    if written < 0 {
                        if errno == EINTR { continue }
                        return true
                    }
                    offset += written
                }
                return false
            }
        }
        if failed { throw .closed }
    }

    /// What every line has: an answer's `id`, `ok` and `error`, or a callback's `event`.
    private struct Head: Decodable {
        var id: Int?
        var ok: Bool?
        var error: String?
        var event: String?
    }

    private struct Envelope<Request: AgentRequestMessage>: Encodable {
        let id: Int
        let request: Request
        enum Keys: String, CodingKey { case id, op }

        func encode(to encoder: any Encoder) throws {
            try request.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(id, forKey: .id)
            try container.encode(Request.op, forKey: .op)
        }
    }

    private func readLoop() {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        reading: while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            buffer.append(contentsOf: chunk[0..<count])
            var start = 0
            while let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                handle(line: Data(buffer[start..<newline]))
                start = newline + 1
            }
            buffer.removeFirst(start)
            if buffer.count > Self.maximumLineLength { break reading }
        }
        finish()
    }

    private func handle(line: Data) {
        guard let head = try? JSONDecoder().decode(Head.self, from: line) else { return }
        if let event = head.event {
            onIncoming(.callback(event, line))
        } else if let id = head.id, let continuation = state.withLock({ $0.waiting.removeValue(forKey: id) }) {
            continuation.resume(returning: line)
        }
    }

    /// The connection ended (the agent closed it, or `close()`): every request waiting fails.
    private func finish() {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for continuation in waiting { continuation.resume(throwing: AgentError.closed) }
        closeDescriptor(descriptor)
        onIncoming(.closed)
    }

    /// Closes the connection: the agent treats the app as terminated (docs/device-agent.md).
    func close() {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        if first { _ = shutdown(descriptor, Int32(SHUT_RDWR)) }
    }
}

// The system's calls by names the class's own methods do not shadow.
private func closeDescriptor(_ descriptor: Int32) { _ = close(descriptor) }
private func sendBytes(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    send(descriptor, bytes, count, flags)
}
