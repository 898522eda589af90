import Foundation

/// The gateway's latency histograms as its `/metrics` shows them (cumulative bucket counts by
/// upper bound), read twice around a step to see that step alone (`herald bench delivery`). Read
/// from another process, so bounded by its caller and checked line by line: a line that is not a
/// bucket is skipped.
public struct LatencyHistograms: Sendable {
    /// By metric name: (upper bound in seconds, cumulative count), in the order written; +Inf is `.infinity`.
    public private(set) var buckets: [String: [(bound: Double, count: Int)]] = [:]

    /// The buckets of the Prometheus text exposition's histograms (`NAME_bucket{le="B"} N` lines).
    public init(exposition: String) {
        for line in exposition.split(separator: "\n") where !line.hasPrefix("#") {
            guard let brace = line.firstIndex(of: "{"), line[..<brace].hasSuffix("_bucket"),
                  let open = line.range(of: #"le=""#), let close = line[open.upperBound...].firstIndex(of: "\""),
                  let space = line.lastIndex(of: " "), let count = Int(line[line.index(after: space)...]) else { continue }
            let name = String(line[..<brace].dropLast("_bucket".count))
            let label = line[open.upperBound..<close]
            guard let bound = label == "+Inf" ? Double.infinity : Double(label) else { continue }
            buckets[name, default: []].append((bound, count))
        }
    }

    /// One histogram's values recorded between `earlier` and this reading.
    public struct Step: Sendable {
        public var buckets: [(bound: Double, count: Int)]
        public var count: Int { buckets.last?.count ?? 0 }

        /// The bound (milliseconds, or "∞" / "–") of the bucket that holds quantile `q`.
        public func bound(_ q: Double) -> String {
            guard count > 0 else { return "–" }
            let rank = Double(count) * q
            guard let bucket = buckets.first(where: { Double($0.count) >= rank }), bucket.bound.isFinite else { return "∞" }
            return String(format: "%g", bucket.bound * 1000)
        }
    }

    /// `name`'s counts since `earlier` (a reading of the same gateway before).
    public func since(_ earlier: LatencyHistograms, _ name: String) -> Step {
        let now = buckets[name] ?? []
        let before = earlier.buckets[name] ?? []
        return Step(buckets: now.enumerated().map { index, bucket in
            let (difference, overflow) = bucket.count.subtractingReportingOverflow(index < before.count ? before[index].count : 0)
            return (bucket.bound, overflow ? 0 : difference)
        })
    }
}
