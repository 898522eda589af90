import Foundation
import HeraldCore
import Tracing
import NIOCore
import NIOPosix

/// The connections of a client and the requests in flight on each.
final class ConnectionPool: Sendable {
    private struct Slot {
        var id: Int
        var connection: HTTP2Connection
        var inFlight = 0
    }
    private struct State {
        var slots: [Slot] = []
        var connecting = 0
        var nextID = 0
        var inFlight = 0
        var peak = 0
        var opened = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var closed = false
    }
    private let state = Locked(State())
    private let configuration: APNsClient.Configuration
    private let group: EventLoopGroup

    /// Streams assumed before the server's SETTINGS arrive (APNs announces 1000; Herald 1000 too).
    static let defaultStreams = 100

    init(configuration: APNsClient.Configuration, group: EventLoopGroup) {
        self.configuration = configuration
        self.group = group
    }

    var inFlight: (now: Int, peak: Int) { state.withLock { ($0.inFlight, $0.peak) } }
    var opened: Int { state.withLock { $0.opened } }

    private enum Step {
        case use(Int, HTTP2Connection)
        case connect
        case wait
        case closed
    }

    func send(_ request: HTTP2Request) async throws -> HTTP2Response {
        let (id, connection) = try await acquire()
        defer { release(id) }
        do {
            return try await connection.send(request)
        } catch {
            retire(id)
            throw error
        }
    }

    private func acquire() async throws -> (Int, HTTP2Connection) {
        while true {
            try Task.checkCancellation()
            let step = state.withLock { s -> Step in
                if s.closed { return .closed }
                // Drop connections that went away or were told to.
                s.slots.removeAll { !$0.connection.isActive || $0.connection.goAway != nil }
                guard s.inFlight < configuration.maximumInFlight else { return .wait }
                let best = s.slots.indices
                    .filter { s.slots[$0].inFlight < (s.slots[$0].connection.serverMaxConcurrentStreams ?? Self.defaultStreams) }
                    .min { s.slots[$0].inFlight < s.slots[$1].inFlight }
                let mayOpen = s.slots.count + s.connecting < configuration.connections
                // An idle connection, or the least busy one when no more may be opened; else open one.
                if let best, s.slots[best].inFlight == 0 || !mayOpen {
                    s.slots[best].inFlight += 1
                    s.inFlight += 1
                    s.peak = max(s.peak, s.inFlight)
                    return .use(s.slots[best].id, s.slots[best].connection)
                }
                if mayOpen {
                    s.connecting += 1
                    return .connect
                }
                return .wait
            }
            switch step {
            case .use(let id, let connection): return (id, connection)
            case .closed: throw CancellationError()
            case .connect:
                do {
                    let connection = try await HTTP2Connection.connect(
                        host: configuration.host, port: configuration.port, tls: configuration.tls, group: group)
                    let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                        s.connecting -= 1
                        s.opened += 1
                        s.slots.append(Slot(id: s.nextID, connection: connection))
                        s.nextID += 1
                        defer { s.waiters.removeAll() }
                        return s.waiters
                    }
                    for waiter in waiters { waiter.resume() }
                } catch {
                    state.withLock { $0.connecting -= 1 }
                    throw error
                }
            case .wait:
                await withCheckedContinuation { continuation in
                    let resumeNow = state.withLock { s -> Bool in
                        // Re-check under the lock: something may have been released meanwhile.
                        if s.closed || s.inFlight < configuration.maximumInFlight && s.slots.contains(where: {
                            $0.inFlight < ($0.connection.serverMaxConcurrentStreams ?? Self.defaultStreams)
                        }) || s.slots.count + s.connecting < configuration.connections { return true }
                        s.waiters.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    private func release(_ id: Int) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let index = s.slots.firstIndex(where: { $0.id == id }) { s.slots[index].inFlight -= 1 }
            s.inFlight -= 1
            return s.waiters.isEmpty ? nil : s.waiters.removeFirst()
        }
        waiter?.resume()
    }

    /// A request failed at the transport: the connection is not used for new requests.
    private func retire(_ id: Int) {
        let retired = state.withLock { s -> HTTP2Connection? in
            guard let index = s.slots.firstIndex(where: { $0.id == id }) else { return nil }
            return s.slots[index].connection
        }
        if let retired, !retired.isActive || retired.goAway != nil {
            state.withLock { s in s.slots.removeAll { $0.id == id } }
        }
    }

    func close() async {
        let (connections, waiters) = state.withLock { s -> ([HTTP2Connection], [CheckedContinuation<Void, Never>]) in
            s.closed = true
            defer { s.slots.removeAll(); s.waiters.removeAll() }
            return (s.slots.map(\.connection), s.waiters)
        }
        for waiter in waiters { waiter.resume() }
        for connection in connections { await connection.close() }
    }
}
