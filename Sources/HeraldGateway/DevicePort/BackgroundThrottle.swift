import HeraldCore

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

    /// The buckets in use. A full bucket is the same as none, so full ones are forgotten whenever
    /// the table doubles past `minimumPruneSize`: its size follows the devices that used their
    /// budget within the last window, not every device that ever got a background push.
    private struct Table {
        var buckets: [String: Bucket] = [:]
        var pruneAt: Int
    }

    private let budget: Budget
    private let minimumPruneSize: Int
    private let table: Locked<Table>

    public init(budget: Budget, minimumPruneSize: Int = 65_536) {
        self.budget = budget
        self.minimumPruneSize = max(1, minimumPruneSize)
        self.table = Locked(Table(pruneAt: max(1, minimumPruneSize)))
    }

    /// How many buckets are kept (for tests and metrics).
    var count: Int { table.withLock { $0.buckets.count } }

    /// Takes one from the budget of `deviceID`/`topic` if there is one. Otherwise returns the
    /// instant at which the next one becomes available.
    func take(deviceID: String, topic: String, nowMilliseconds now: Int64) -> Int64? {
        let key = deviceID + "\u{0}" + topic
        let cost = budget.windowMilliseconds
        let capacity = Int64(budget.count) * cost
        let refill = Int64(budget.count)
        func refilled(_ bucket: Bucket) -> Bucket {
            let elapsed = max(0, now - bucket.updatedAt)
            return Bucket(units: elapsed >= capacity / refill ? capacity : min(capacity, bucket.units + elapsed * refill), updatedAt: now)
        }
        return table.withLock { table in
            if table.buckets.count >= table.pruneAt {
                table.buckets = table.buckets.filter { refilled($0.value).units < capacity }
                table.pruneAt = max(minimumPruneSize, table.buckets.count * 2)
            }
            var bucket = refilled(table.buckets[key] ?? Bucket(units: capacity, updatedAt: now))
            defer { table.buckets[key] = bucket }
            if bucket.units >= cost {
                bucket.units -= cost
                return nil
            }
            let missing = cost - bucket.units
            return now + (missing + refill - 1) / refill
        }
    }
}
