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

    /// The budget in exact integer units: one push costs `windowMilliseconds` units, and
    /// `count` units come back every millisecond (so `count` pushes per window).
    private struct Bucket {
        var units: Int64
        var updatedAt: Int64
    }

    private let budget: Budget
    private let buckets = NIOLockedValueBox([String: Bucket]())

    public init(budget: Budget) { self.budget = budget }

    /// Takes one from the budget of `deviceID`/`topic` if there is one. Otherwise returns the
    /// instant at which the next one becomes available.
    func take(deviceID: String, topic: String, nowMilliseconds now: Int64) -> Int64? {
        let key = deviceID + "\u{0}" + topic
        let cost = budget.windowMilliseconds
        let capacity = Int64(budget.count) * cost
        let refill = Int64(budget.count)
        return buckets.withLockedValue { buckets in
            var bucket = buckets[key] ?? Bucket(units: capacity, updatedAt: now)
            let elapsed = max(0, now - bucket.updatedAt)
            bucket.units = elapsed >= capacity / refill ? capacity : min(capacity, bucket.units + elapsed * refill)
            bucket.updatedAt = now
            defer { buckets[key] = bucket }
            if bucket.units >= cost {
                bucket.units -= cost
                return nil
            }
            let missing = cost - bucket.units
            return now + (missing + refill - 1) / refill
        }
    }
}
