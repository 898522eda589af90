import HeraldCore
import NIOConcurrencyHelpers

/// Background pushes (`apns-push-type: background`) per device and app: a budget of `count`
/// per `windowMilliseconds`, refilled evenly (a token bucket). Apple advises two or three an hour;
/// the default is 3 per hour. A push over budget is held by the device's session, which keeps only
/// the newest and sends it when the budget allows.
public final class BackgroundThrottle: Sendable {
    public struct Budget: Sendable, Hashable {
        public var count: Int
        public var windowMilliseconds: Int64
        public init(count: Int, windowMilliseconds: Int64) {
            precondition(count > 0 && windowMilliseconds > 0)
            self.count = count
            self.windowMilliseconds = windowMilliseconds
        }
        public static let `default` = Budget(count: 3, windowMilliseconds: 3_600_000)
    }

    private struct Bucket {
        var tokens: Double
        var updatedAt: Int64
    }

    private let budget: Budget
    private let buckets = NIOLockedValueBox([String: Bucket]())

    public init(budget: Budget) { self.budget = budget }

    private var refillPerMillisecond: Double { Double(budget.count) / Double(budget.windowMilliseconds) }

    /// Takes one from the budget of `deviceID`/`topic` if there is one. Otherwise returns the
    /// instant at which the next one becomes available.
    func take(deviceID: String, topic: String, nowMilliseconds now: Int64) -> Int64? {
        let key = deviceID + "\u{0}" + topic
        return buckets.withLockedValue { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: Double(budget.count), updatedAt: now)
            let elapsed = max(0, now - bucket.updatedAt)
            bucket.tokens = min(Double(budget.count), bucket.tokens + Double(elapsed) * refillPerMillisecond)
            bucket.updatedAt = now
            defer { buckets[key] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return now + Int64(((1 - bucket.tokens) / refillPerMillisecond).rounded(.up))
        }
    }
}
