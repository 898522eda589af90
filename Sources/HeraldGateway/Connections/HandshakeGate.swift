import HeraldCore
import NIOCore
import NIOTLS

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

/// A connection refused because its address has too many handshakes under way.
struct TooManyHandshakesFromAddress: Error, CustomStringConvertible {
    var limit: Int
    var description: String { "more than \(limit) handshakes under way from one address" }
}
