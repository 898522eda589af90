import HeraldCore
import NIOCore
import NIOTLS

/// Counts open connections per IP address on a port and refuses those past a limit: one address
/// cannot take every socket the gateway has; and, through the ``ConnectionBudget`` every port
/// shares, refuses any connection past what the process's descriptors allow.
final class ConnectionsPerAddress: Sendable {
    let limit: Int
    let budget: ConnectionBudget
    private let counts = Locked([String: Int]())

    init(limit: Int, budget: ConnectionBudget) {
        self.limit = limit
        self.budget = budget
    }

    /// Admits `channel` (and forgets it when it closes), or says why not: the ports hold all the
    /// connections the descriptors allow, or its address already has `limit` open.
    func admit(_ channel: Channel) -> ConnectionRefusal? {
        guard budget.take() else { return .descriptors(limit: budget.limit) }
        let address = channel.remoteAddress?.ipAddress ?? "?"
        let admitted = counts.withLock { counts -> Bool in
            let open = counts[address, default: 0]
            guard open < limit else { return false }
            counts[address] = open + 1
            return true
        }
        guard admitted else {
            budget.give()
            return .fromAddress(limit: limit)
        }
        channel.closeFuture.whenComplete { _ in
            self.budget.give()
            self.counts.withLock { counts in
                let open = (counts[address] ?? 1) - 1
                counts[address] = open > 0 ? open : nil
            }
        }
        return nil
    }

    /// Connections open from `address` now.
    func open(from address: String) -> Int { counts.withLock { $0[address] ?? 0 } }
}

/// A connection refused at accept: its address has too many open, or the gateway holds as many
/// as its descriptors allow.
struct ConnectionRefusal: DeliberateRefusal, CustomStringConvertible {
    /// The `reason` label of `herald_peers_closed_total`.
    var metricReason: String
    var description: String

    static func fromAddress(limit: Int) -> Self {
        Self(metricReason: "per_address_limit", description: "more than \(limit) connections from one address")
    }

    static func descriptors(limit: Int) -> Self {
        Self(metricReason: "descriptor_limit",
             description: "the gateway holds \(limit) connections, all its descriptor limit allows (ulimit -n, less a reserve)")
    }
}
