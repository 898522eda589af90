import HeraldCore
import Synchronization
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value in a D-Bus message (the subset of the type system the notification interface uses).
indirect enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// Elements of one type, named by its signature (needed for an empty array).
    case array(element: String, [DBusValue])
    /// `a{…}`: entries with keys of `key` and values of `value` signature.
    case dictionary(key: String, value: String, [DBusValue: DBusValue])
    case variant(DBusValue)
    case structure([DBusValue])

    var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int32: "i"
        case .uint32: "u"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .variant: "v"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    var stringValue: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }

    var uint32Value: UInt32? { if case .uint32(let u) = self { u } else { nil } }
}

/// Splits what the bus sends into messages: bytes arrive in any pieces; each whole message is
/// read (one that does not decode is skipped); a header that cannot start a message, or one that
/// announces more than ``DBusMessage/maximumLength``, ends the stream (`nil`). Holds at most one
/// message's bytes. Public for the fuzz target `dbus-stream`.
public struct DBusStream: Sendable {
    private var pending: [UInt8] = []
    private var broken = false

    public init() {}

    /// The messages completed by `bytes`, or `nil` once the stream is not D-Bus.
    mutating func append(_ bytes: [UInt8]) -> [DBusMessage]? {
        guard !broken else { return nil }
        pending += bytes
        var messages: [DBusMessage] = []
        while pending.count >= 16 {
            guard let length = DBusMessage.length(ofMessageStartingWith: pending[0..<16]) else {
                broken = true
                pending = []
                return nil
            }
            guard pending.count >= length else { break }
            let message = Array(pending[0..<length])
            pending.removeFirst(length)
            if let decoded = try? DBusMessage.decode(message) { messages.append(decoded) }
        }
        return messages
    }

    /// For the fuzz target: feeds `bytes` in pieces of `pieceSize`, returns how many messages were read.
    public static func count(_ bytes: [UInt8], pieceSize: Int) -> Int {
        var stream = DBusStream()
        var count = 0
        var index = 0
        while index < bytes.count {
            let end = min(bytes.count, index + max(1, pieceSize))
            guard let messages = stream.append(Array(bytes[index..<end])) else { return count }
            count += messages.count
            index = end
        }
        return count
    }
}

/// A connection to the D-Bus session bus: authenticated as this user (`EXTERNAL`), method calls
/// answered by serial, signals matching a rule handed to `onSignal` on the connection's reading
/// thread. One connection both sends notifications and hears their signals, as servers such as
/// dunst address `ActionInvoked` to the connection that called `Notify`.
final class SessionBus: Sendable {
    private let descriptor: Int32
    private let state = Locked((serial: UInt32(0), pending: [UInt32: CheckedContinuation<DBusMessage, any Error>](), closed: false))
    private let writing = Mutex(())
    private let onSignal: @Sendable (DBusMessage) -> Void
    /// Method calls addressed to this connection (a service it serves); answered with
    /// ``reply(to:_:)`` or ``replyError(to:name:_:)``.
    private let onMethodCall: (@Sendable (DBusMessage) -> Void)?
    /// The objects this connection exports: standard interfaces are answered here, and a call
    /// no handler serves gets UnknownObject or UnknownMethod (never silence).
    private let objects: DBusObjects

    /// Connects to the session bus named by `DBUS_SESSION_BUS_ADDRESS` (else `$XDG_RUNTIME_DIR/bus`).
    init(
        objects: DBusObjects = DBusObjects(), onSignal: @escaping @Sendable (DBusMessage) -> Void = { _ in },
        onMethodCall: (@Sendable (DBusMessage) -> Void)? = nil
    ) throws {
        self.objects = objects
        self.onSignal = onSignal
        self.onMethodCall = onMethodCall
        let environment = ProcessInfo.processInfo.environment
        let addresses = environment["DBUS_SESSION_BUS_ADDRESS"]
            ?? environment["XDG_RUNTIME_DIR"].map { "unix:path=\($0)/bus" }
            ?? "unix:path=/run/user/\(getuid())/bus"
        var lastError = DBusError("no usable address in \(addresses)")
        var connected: Int32?
        for address in addresses.split(separator: ";") {
            do {
                connected = try Self.connect(String(address))
                break
            } catch {
                lastError = error
            }
        }
        guard let descriptor = connected else { throw lastError }
        self.descriptor = descriptor
        do {
            try authenticate()
        } catch {
            Glibc.close(descriptor)
            throw error
        }
        let thread = Thread { [self] in readMessages() }
        thread.name = "herald-session-bus"
        thread.start()
    }

    /// `unix:path=/run/user/0/bus` or `unix:abstract=/tmp/dbus-XXXX` (`,guid=…` ignored).
    private static func connect(_ address: String) throws(DBusError) -> Int32 {
        guard address.hasPrefix("unix:") else { throw DBusError("only unix: bus addresses are supported, not \(address)") }
        var path: [UInt8]?
        for pair in address.dropFirst(5).split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let value = Array((String(parts[1]).removingPercentEncoding ?? String(parts[1])).utf8)
            if parts[0] == "path" { path = value }
            if parts[0] == "abstract" { path = [0] + value }
        }
        guard let path, !path.isEmpty else { throw DBusError("the bus address \(address) names no socket") }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: socketAddress.sun_path)
        guard path.count < capacity else { throw DBusError("the bus socket path is too long") }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
        }
        #if canImport(Glibc)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let descriptor = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw DBusError("cannot make a socket: errno \(errno)") }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let result = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, length) }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw DBusError("cannot connect to the session bus at \(address): \(String(cString: strerror(code)))")
        }
        return descriptor
    }

    private func writeAll(_ bytes: [UInt8]) throws(DBusError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw DBusError("the session bus closed the connection") }
            sent += n
        }
    }

    /// Reads up to `count` bytes, blocking; empty at the end of the stream.
    private func readSome(_ count: Int) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, count, 0) }
            if n < 0, errno == EINTR { continue }
            return n > 0 ? Array(buffer[0..<n]) : []
        }
    }

    /// SASL `EXTERNAL` with this process's uid, then `BEGIN`, then `Hello`.
    private func authenticate() throws {
        let uid = Array(String(getuid()).utf8).map { String(format: "%02x", $0) }.joined()
        try writeAll([0] + Array("AUTH EXTERNAL \(uid)\r\n".utf8))
        var line: [UInt8] = []
        while !line.suffix(2).elementsEqual([13, 10]) {
            let byte = readSome(1)
            guard let b = byte.first, line.count < 512 else { throw DBusError("the session bus did not answer the authentication") }
            line.append(b)
        }
        guard line.starts(with: Array("OK ".utf8)) else {
            throw DBusError("the session bus refused authentication: \(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        try writeAll(Array("BEGIN\r\n".utf8))
    }

    private func readMessages() {
        var stream = DBusStream()
        while true {
            let chunk = readSome(65_536)
            if chunk.isEmpty { break }
            guard let messages = stream.append(chunk) else {
                // Not D-Bus: nothing more from this connection is trusted.
                shutdown(descriptor, Int32(SHUT_RDWR))
                break
            }
            for message in messages { dispatch(message) }
        }
        let waiting = state.withLock { state in
            defer { state.pending = [:]; state.closed = true }
            return Array(state.pending.values)
        }
        for continuation in waiting { continuation.resume(throwing: DBusError("the session bus closed the connection")) }
        Glibc.close(descriptor)
    }

    private func dispatch(_ message: DBusMessage) {
        switch message.kind {
        case .methodReturn, .error:
            guard let serial = message.replySerial, let continuation = state.withLock({ $0.pending.removeValue(forKey: serial) }) else { return }
            if message.kind == .error {
                let detail = message.body.first?.stringValue.map { ": \($0)" } ?? ""
                continuation.resume(throwing: DBusError("\(message.errorName ?? "error")\(detail)"))
            } else {
                continuation.resume(returning: message)
            }
        case .signal: onSignal(message)
        case .methodCall:
            if let standard = objects.answer(message, machineID: DBusObjects.machineID) { return answer(standard, to: message) }
            guard let onMethodCall else { return answer(objects.unknown(message), to: message) }
            onMethodCall(message)
        }
    }

    /// Answers `call` as ``DBusObjects`` said.
    func answer(_ answer: DBusObjects.Answer, to call: DBusMessage) {
        switch answer {
        case .reply(let body): reply(to: call, body)
        case .error(let name, let message): replyError(to: call, name: name, message)
        }
    }

    private func nextSerial() -> UInt32? {
        state.withLock { state in
            guard !state.closed else { return nil }
            state.serial &+= 1
            if state.serial == 0 { state.serial = 1 }
            return state.serial
        }
    }

    private func write(_ message: DBusMessage) {
        var message = message
        guard let serial = nextSerial() else { return }
        message.serial = serial
        try? writing.withLock { _ in try writeAll(message.encoded()) }
    }

    /// Answers a method call (unless its caller asked for no answer).
    func reply(to call: DBusMessage, _ body: [DBusValue] = []) {
        guard call.flags & DBusMessage.noReplyExpected == 0 else { return }
        var message = DBusMessage(kind: .methodReturn)
        message.replySerial = call.serial
        message.destination = call.sender
        message.body = body
        write(message)
    }

    /// Answers a method call with a D-Bus error.
    func replyError(to call: DBusMessage, name: String, _ text: String) {
        guard call.flags & DBusMessage.noReplyExpected == 0 else { return }
        var message = DBusMessage(kind: .error)
        message.replySerial = call.serial
        message.destination = call.sender
        message.errorName = name
        message.body = [.string(text)]
        write(message)
    }

    /// Calls a method without waiting for an answer (`NoReply` methods).
    func send(destination: String, path: String, interface: String, member: String, _ body: [DBusValue] = []) {
        var message = DBusMessage(kind: .methodCall)
        message.flags = DBusMessage.noReplyExpected
        message.destination = destination
        message.path = path
        message.interface = interface
        message.member = member
        message.body = body
        write(message)
    }

    /// Asks the bus for a well-known name; fails unless this connection became its primary owner.
    func requestName(_ name: String) async throws {
        // Flags 4: DBUS_NAME_FLAG_DO_NOT_QUEUE. Answer 1: DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER.
        let answer = try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "RequestName",
            [.string(name), .uint32(4)])
        guard answer.body.first?.uint32Value == 1 else { throw DBusError("another process owns \(name) on the session bus") }
    }

    /// Calls a method and waits for its answer (up to `timeout`).
    func call(
        destination: String, path: String, interface: String, member: String, _ body: [DBusValue] = [], timeout: Duration = .seconds(10)
    ) async throws -> DBusMessage {
        try await withCheckedThrowingContinuation { continuation in
            let serial: UInt32? = state.withLock { state in
                guard !state.closed else { return nil }
                state.serial &+= 1
                if state.serial == 0 { state.serial = 1 }
                state.pending[state.serial] = continuation
                return state.serial
            }
            guard let serial else { return continuation.resume(throwing: DBusError("the session bus connection is closed")) }
            var message = DBusMessage(kind: .methodCall)
            message.serial = serial
            message.destination = destination
            message.path = path
            message.interface = interface
            message.member = member
            message.body = body
            do {
                try writing.withLock { _ in try writeAll(message.encoded()) }
            } catch {
                if let waiting = state.withLock({ $0.pending.removeValue(forKey: serial) }) { waiting.resume(throwing: error) }
                return
            }
            Task { [state] in
                try? await Task.sleep(for: timeout)
                if let waiting = state.withLock({ $0.pending.removeValue(forKey: serial) }) {
                    waiting.resume(throwing: DBusError("\(interface).\(member) was not answered within \(timeout)"))
                }
            }
        }
    }

    /// `Hello` (every connection's first call) and the match rule for the signals wanted, if any.
    func start(match rule: String?) async throws {
        _ = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "Hello")
        guard let rule else { return }
        _ = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "AddMatch",
                           [.string(rule)])
    }

    func close() {
        shutdown(descriptor, Int32(SHUT_RDWR))
    }
}
