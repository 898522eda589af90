import HeraldClient
import Prometheus

/// The provider service's Prometheus metrics, served on its REST port's `GET /metrics` (with the
/// API token, like every other route but `/health` and `/openapi.json`).
///
/// Labels come from bounded sets: a gateway's unknown reason is counted as `other`, so a hostile
/// gateway cannot grow the label space.
public final class ProviderMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// Registrations now, refreshed on each scrape.
    let registrations: Gauge
    /// How late each scheduled run started after its due instant.
    let scheduleLag: DurationHistogram

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        registrations = registry.makeGauge(descriptor: Self.name("registrations", "", "Device registrations the provider holds"))
        scheduleLag = registry.makeDurationHistogram(
            descriptor: Self.name("schedule_lag", "seconds", "How late a scheduled run started after its due instant"),
            buckets: [.milliseconds(10), .milliseconds(100), .seconds(1), .seconds(10), .seconds(60), .seconds(600), .seconds(3_600)])
        makeExpectedSeries()
    }

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "herald_provider", metricName: metric, unitName: unit, helpText: help)
    }

    /// Counts one push's outcome: `status` 0 for no answer, `reason` `""` for 200, `other` for a
    /// reason APNs does not define.
    func recordPush(_ result: APNsResult) {
        let reason = result.reason.map { $0.isKnown ? $0.rawValue : "other" } ?? ""
        let status = (0...599).contains(result.status) ? String(result.status) : "other"
        pushes(status: status, reason: reason).increment()
    }

    /// Counts one Web Push message's outcome by its push service's status (0: no answer).
    func recordWebPush(status: Int) {
        webPushMessages(status: (0...599).contains(status) ? String(status) : "other").increment()
    }

    /// Counts a send (`api`: POST /v1/sends; `schedule`: a scheduled run).
    func recordSend(origin: String) { sends(origin: origin).increment() }

    /// Counts a request with an Idempotency-Key that joined the send already under way with that
    /// key (a client retrying before its first request was answered).
    func recordJoinedSend() { joinedSends().increment() }

    /// Counts a scheduled run by outcome, and how late it started.
    func recordRun(outcome: String, lateMilliseconds: Int64?) {
        scheduleRuns(outcome: outcome).increment()
        if let late = lateMilliseconds { scheduleLag.record(.milliseconds(max(0, late))) }
    }

    /// The series every dashboard and alerting rule reads, made at 0 before anything is counted
    /// (a series that appears only at its first count hides that count from `increase()`): the
    /// fixed label sets, and a push's and a Web Push message's success.
    private func makeExpectedSeries() {
        _ = pushes(status: "200", reason: "")
        _ = webPushMessages(status: "201")
        for origin in ["api", "schedule"] { _ = sends(origin: origin) }
        _ = joinedSends()
        for outcome in ["sent", "missed", "interrupted"] { _ = scheduleRuns(outcome: outcome) }
    }

    // The registry returns the counter it already made for the same name and labels.
    private func pushes(status: String, reason: String) -> Counter {
        registry.makeCounter(
            descriptor: Self.name("pushes", "total", "Pushes sent, by the gateway's status (0: no answer) and reason"),
            labels: [("status", status), ("reason", reason)])
    }

    private func webPushMessages(status: String) -> Counter {
        registry.makeCounter(
            descriptor: Self.name("webpush_messages", "total", "Web Push messages sent, by the push service's status (0: no answer)"),
            labels: [("status", status)])
    }

    private func sends(origin: String) -> Counter {
        registry.makeCounter(descriptor: Self.name("sends", "total", "Sends performed, by origin (api, schedule)"), labels: [("origin", origin)])
    }

    private func joinedSends() -> Counter {
        registry.makeCounter(
            descriptor: Self.name("sends_joined", "total", "Requests answered by the send already under way with their Idempotency-Key"))
    }

    private func scheduleRuns(outcome: String) -> Counter {
        registry.makeCounter(
            descriptor: Self.name("schedule_runs", "total", "Scheduled runs, by outcome (sent, missed, interrupted)"), labels: [("outcome", outcome)])
    }

    /// The Prometheus text exposition.
    public func exposition() -> [UInt8] {
        var buffer = [UInt8]()
        registry.emit(into: &buffer)
        return buffer
    }
}
