import HeraldStore
import NIOCore
import Synchronization

/// Whether this gateway can take pushes now, as `GET /health` on the admin port reports it (a
/// load balancer's readiness check): the intake's store, and in a cluster this node's lease.
///
/// Set by the parts that notice: the intake's commit watchdog when a commit outlives
/// ``GatewayLimits/storeTimeout`` (and again when it returns, under the lock that marked it), the cluster node when its lease lapses (and when it is renewed).
/// `/health` adds a probe of its own (a trivial query, bounded), so an idle gateway whose
/// database went away is reported too.
final class GatewayHealth: Sendable {
    /// When the commit that outlived the bound started (uptime nanoseconds), 0 when none.
    private let storeStalledSince = Atomic<Int64>(0)
    /// Whether this node's cluster lease has lapsed.
    private let leaseLost = Atomic<Bool>(false)
    /// The store probe under way, shared by every `/health` request that arrives meanwhile.
    private let probe = SingleFlight<Void>()

    init() {}

    /// Whether new pushes are answered 503 at once (a commit is stuck past its bound).
    var isStoreStalled: Bool { storeStalledSince.load(ordering: .relaxed) != 0 }

    func storeStalled(since start: NIODeadline) {
        storeStalledSince.store(max(1, Int64(clamping: start.uptimeNanoseconds)), ordering: .relaxed)
    }

    func storeAnswered() {
        if storeStalledSince.load(ordering: .relaxed) != 0 { storeStalledSince.store(0, ordering: .relaxed) }
    }

    var isLeaseLost: Bool { leaseLost.load(ordering: .relaxed) }

    func setLeaseLost(_ lost: Bool) { leaseLost.store(lost, ordering: .relaxed) }

    /// The store's own bounded check (`checkReachable`): nil when it answered within `bound`.
    /// One probe at a time (``SingleFlight``): however often `/health` is polled, the store sees at
    /// most one probe in flight, and a probe slower than its bound is left to finish, not
    /// cancelled (cancelling costs a PostgreSQL pool its connection: under load, the cluster's
    /// two-connection lane lost one at every poll and never caught up).
    func probeStore(_ store: any GatewayStore, within bound: TimeAmount) async -> (any Error)? {
        do {
            try await probe.run(within: bound) { try await store.checkReachable() }
            return nil
        } catch {
            return error
        }
    }

    /// What stops this gateway from taking pushes now, in words; empty when healthy.
    /// `probe` is the result of the store's own bounded check, when one was made.
    /// `connectionSetup` names the ports failing every connection (``ConnectionSetupWatch/problems()``).
    func problems(now: NIODeadline = .now(), probe: (any Error)?, connectionSetup: [String] = []) -> [String] {
        var problems: [String] = connectionSetup
        let since = storeStalledSince.load(ordering: .relaxed)
        if since != 0 {
            let milliseconds = max(0, (Int64(clamping: now.uptimeNanoseconds) - since) / 1_000_000)
            problems.append("a commit to the store has not returned for \(milliseconds) ms: pushes are answered 503 ServiceUnavailable")
        }
        if let probe { problems.append("the store does not answer: \(probe)") }
        if isLeaseLost {
            problems.append("this node's cluster lease has lapsed: its devices were disconnected and new ones are refused until it is renewed")
        }
        return problems
    }
}

