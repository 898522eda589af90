import HeraldCore

import Synchronization

/// The per-token rate limit of the provider port (`429 TooManyRequests`): a token bucket per
/// device token that holds `burst` pushes and refills at `perSecond`. Time comes from the caller.
///
/// Without a configuration it limits nothing (`--token-burst 0`), at the cost of one atomic
/// load a push. ``reconfigure(_:)`` changes it while the gateway runs (SIGHUP): buckets are
/// kept, and refill and cap at the new figures from the next push on.
public final class TokenRateLimiter: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// Pushes a token may receive in a burst.
        public var burst: Int
        /// Pushes per second a token may receive over time.
        public var perSecond: Double
        public init(burst: Int, perSecond: Double) {
            self.burst = burst
            self.perSecond = perSecond
        }
        /// 100 in a burst, then 10 a second. APNs publishes no figure; this keeps runaway loops
        /// from filling a device's queue while leaving real traffic alone.
        public static let `default` = Configuration(burst: 100, perSecond: 10)
    }

    private struct Bucket {
        var tokens: Double
        var updatedAtMilliseconds: Int64
    }

    private struct State {
        var buckets: [DeviceToken: Bucket] = [:]
        var lastSweepMilliseconds: Int64 = 0
        /// The nodes the limit is divided among: in a cluster each node enforces 1/n of it, so a
        /// token's pushes spread over n nodes get the configured limit in all (docs/cluster.md).
        var share = 1
        var configuration: Configuration?
    }

    private let state = Locked(State())
    /// Whether a limit is configured: read without the lock on every push.
    private let isLimiting = Atomic<Bool>(false)

    public init(configuration: Configuration?) {
        reconfigure(configuration)
    }

    /// The limit now (nil: none).
    public var configuration: Configuration? { state.withLock { $0.configuration } }

    /// Replaces the limit (nil: none; every bucket is then forgotten).
    public func reconfigure(_ configuration: Configuration?) {
        if let configuration { precondition(configuration.burst >= 1 && configuration.perSecond > 0) }
        state.withLock { state in
            state.configuration = configuration
            if configuration == nil { state.buckets = [:] }
        }
        isLimiting.store(configuration != nil, ordering: .relaxed)
    }

    /// Divides the limit among `nodes` live gateway nodes.
    public func setShare(_ nodes: Int) {
        state.withLock { $0.share = max(1, nodes) }
    }

    /// Takes one push from the token's bucket. Returns `false` when the bucket is empty.
    public func allow(_ token: DeviceToken, nowMilliseconds: Int64) -> Bool {
        guard isLimiting.load(ordering: .relaxed) else { return true }
        return state.withLock { state in
            guard let configuration = state.configuration else { return true }
            let nodes = Double(state.share)
            let burst = max(1, Double(configuration.burst) / nodes)
            let rate = configuration.perSecond / nodes / 1000
            var bucket = state.buckets[token] ?? Bucket(tokens: burst, updatedAtMilliseconds: nowMilliseconds)
            let elapsed = max(0, nowMilliseconds - bucket.updatedAtMilliseconds)
            bucket.tokens = min(burst, bucket.tokens + Double(elapsed) * rate)
            bucket.updatedAtMilliseconds = nowMilliseconds
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            state.buckets[token] = bucket
            // Forget buckets that have refilled completely, once a minute, so memory follows
            // the number of recently active tokens rather than all tokens ever seen.
            // (and at once when a flood of distinct tokens has made the table large).
            let sinceSweep = nowMilliseconds - state.lastSweepMilliseconds
            if sinceSweep > 60_000 || (state.buckets.count > 1_000_000 && sinceSweep > 1_000) {
                let fullAfter = Int64(burst / rate)
                state.buckets = state.buckets.filter { nowMilliseconds - $0.value.updatedAtMilliseconds < fullAfter }
                state.lastSweepMilliseconds = nowMilliseconds
            }
            return allowed
        }
    }
}
