import HeraldCore
import NIOCore
import NIOTLS

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
