import HeraldCore
import NIOCore
import NIOTLS

/// Closes a connection that has not reached a milestone by a deadline: the end of the TLS
/// handshake (``Milestone/tlsHandshake``), or whatever a later handler declares by sending
/// ``DeadlineMet`` as an outbound user event (a device answering its challenge). A peer that
/// connects and stays silent, or starts TLS and stalls, holds a socket for at most `timeout`.
final class ConnectionDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny

    enum Milestone {
        case tlsHandshake
        /// A later handler sends ``DeadlineMet``.
        case declared
        /// Any bytes at all: a TLS client sends its ClientHello right after connecting, so a
        /// connection that stays silent is a peer holding a socket (and a ``HandshakeGate``
        /// slot), closed long before the handshake's own deadline.
        case firstBytes
    }

    /// Sent outbound by a handler after this one when the milestone is reached.
    struct DeadlineMet {}

    private let timeout: TimeAmount
    private let milestone: Milestone
    private var timer: Scheduled<Void>?
    private let onExpiry: @Sendable () -> Void
    /// Called once, when the milestone is met or the connection ends before it.
    private var onDone: (@Sendable () -> Void)?

    init(timeout: TimeAmount, milestone: Milestone, onExpiry: @escaping @Sendable () -> Void = {}, onDone: (@Sendable () -> Void)? = nil) {
        self.timeout = timeout
        self.milestone = milestone
        self.onExpiry = onExpiry
        self.onDone = onDone
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        let onExpiry = self.onExpiry
        timer = context.eventLoop.scheduleTask(in: timeout) {
            onExpiry()
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        // Removed when the milestone is met, or with the pipeline when the connection ends.
        onDone?()
        onDone = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
        if milestone == .firstBytes { met(context) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Passed on first: the handlers after this one need the event (and this one leaves).
        context.fireUserInboundEventTriggered(event)
        if milestone == .tlsHandshake, let tls = event as? TLSUserEvent, case .handshakeCompleted = tls { met(context) }
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if event is DeadlineMet {
            met(context)
            promise?.succeed()
            return
        }
        context.triggerUserOutboundEvent(event, promise: promise)
    }

    private func met(_ context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

/// Bounds the connections of a port that are between accept and their milestone (a device's
/// welcome): at the bound the listening channel stops accepting (its `autoRead` off) and the
/// kernel's backlog holds the rest; it accepts again as handshakes finish. Under a storm of
/// reconnecting devices the gateway then finishes the handshakes it started at the rate it can,
/// rather than starting so many that each finishes only after its device gave up.
///
/// One address may hold at most `perAddress` of the slots: past that its connections are refused
/// at accept, so that a peer opening silent connections from one address cannot fill the gate
/// and stall every other device's handshake (with a ``ConnectionDeadline`` on the first bytes a
/// silent one holds its slot for a short time only).
final class HandshakeGate: Sendable {
    let limit: Int
    let perAddress: Int
    private struct State {
        var total = 0
        var byAddress: [String: Int] = [:]
    }
    private let state = Locked(State())

    init(limit: Int, perAddress: Int) {
        self.limit = max(1, limit)
        self.perAddress = max(1, perAddress)
    }

    /// A connection from `address` was accepted: counts it, pausing `listener` at the bound, and
    /// returns the release to call once (when its handshake ends, either way); nil, without
    /// counting it, when `address` already has `perAddress` handshakes in flight.
    func admit(listener: Channel?, address: String) -> (@Sendable () -> Void)? {
        let total = state.withLock { state -> Int? in
            let mine = state.byAddress[address, default: 0]
            guard mine < perAddress else { return nil }
            state.byAddress[address] = mine + 1
            state.total += 1
            return state.total
        }
        guard let total else { return nil }
        if total == limit { reconcile(listener) }
        let released = Locked(false)
        return { [state, limit] in
            guard released.withLock({ done in defer { done = true }; return !done }) else { return }
            let total = state.withLock { state -> Int in
                let mine = state.byAddress[address, default: 1] - 1
                state.byAddress[address] = mine > 0 ? mine : nil
                state.total -= 1
                return state.total
            }
            if total == limit - 1 { self.reconcile(listener) }
        }
    }

    /// Sets the listener's reading from the count as it is when the listener's loop runs this:
    /// pauses and resumes decided on other loops may arrive in any order, the last one run
    /// applies the current truth.
    private func reconcile(_ listener: Channel?) {
        guard let listener else { return }
        listener.eventLoop.execute { [state, limit] in
            let open = state.withLock { $0.total } < limit
            listener.setOption(ChannelOptions.autoRead, value: open).whenComplete { _ in }
        }
    }

    var count: Int { state.withLock { $0.total } }
}

/// Counts open connections per IP address on a port and refuses those past a limit: one address
/// cannot take every socket the gateway has.
final class ConnectionsPerAddress: Sendable {
    let limit: Int
    private let counts = Locked([String: Int]())

    init(limit: Int) { self.limit = limit }

    /// Admits `channel` (and forgets it when it closes), or returns false when its address already
    /// has `limit` connections open.
    func admit(_ channel: Channel) -> Bool {
        let address = channel.remoteAddress?.ipAddress ?? "?"
        let admitted = counts.withLock { counts -> Bool in
            let open = counts[address, default: 0]
            guard open < limit else { return false }
            counts[address] = open + 1
            return true
        }
        guard admitted else { return false }
        channel.closeFuture.whenComplete { _ in
            self.counts.withLock { counts in
                let open = (counts[address] ?? 1) - 1
                counts[address] = open > 0 ? open : nil
            }
        }
        return true
    }

    /// Connections open from `address` now.
    func open(from address: String) -> Int { counts.withLock { $0[address] ?? 0 } }
}

/// A connection refused because its address has too many open.
struct TooManyConnectionsFromAddress: Error, CustomStringConvertible {
    var limit: Int
    var description: String { "more than \(limit) connections from one address" }
}

/// A connection refused because its address has too many handshakes under way.
struct TooManyHandshakesFromAddress: Error, CustomStringConvertible {
    var limit: Int
    var description: String { "more than \(limit) handshakes under way from one address" }
}

/// The connections a listener has open, so that shutdown can wait for them and then close what
/// is left. A connection is forgotten when it closes.
final class OpenConnections: Sendable {
    private let channels = Locked([ObjectIdentifier: Channel]())

    /// Keeps `channel` until it closes.
    func track(_ channel: Channel) {
        let id = ObjectIdentifier(channel)
        channels.withLock { $0[id] = channel }
        channel.closeFuture.whenComplete { [channels] _ in channels.withLock { $0[id] = nil } }
    }

    /// Waits (up to `timeout`) for every connection to close, then closes what is left.
    func waitUntilClosed(timeout: TimeAmount) async {
        let deadline = NIODeadline.now() + timeout
        while NIODeadline.now() < deadline {
            if channels.withLock({ $0.isEmpty }) { return }
            try? await Task.sleep(for: .milliseconds(20))
        }
        for channel in channels.withLock({ Array($0.values) }) { try? await channel.close() }
    }
}
