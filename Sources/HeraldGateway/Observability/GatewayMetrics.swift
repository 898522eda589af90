import HeraldCore
import Prometheus
import Synchronization

/// The gateway's Prometheus metrics, served on the admin port's `/metrics`.
public final class GatewayMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// Pushes answered 200.
    let acceptedPushes: Counter
    /// Notifications written to the store for offline devices.
    let storedNotifications: Counter
    let batches: Counter
    let batchedNotifications: Counter
    /// Provider connections open now.
    let openConnections: Gauge
    /// Notifications held in the store, refreshed on each scrape.
    let heldNotifications: Gauge
    /// Devices with an authenticated connection now.
    let connectedDevices: Gauge
    /// Notifications sent on device connections (including repeats after a reconnect).
    let deviceDeliveries: Counter
    let lateOffers: Counter
    let lateOfferLongest: Gauge
    /// The longest wait of a late offer so far, in milliseconds (the gauge's value).
    private let lateOfferLongestMilliseconds = Atomic<Int64>(0)
    /// Notifications acknowledged by devices.
    let deviceAcks: Counter
    /// How long the store took to commit one batch of accepted pushes.
    let intakeCommitSeconds = LatencyHistogram(
        name: "herald_intake_commit_seconds", help: "Time to commit one batch of accepted pushes to the store")
    /// From a push handed to the intake to its answer back on its connection's event loop: the
    /// wait for its batch's turn, the commit, and the hop back (the commit alone is
    /// ``intakeCommitSeconds``; what a provider measures beyond this is the network and HTTP/2).
    let intakeAnswerSeconds = LatencyHistogram(
        name: "herald_intake_answer_seconds", help: "Time from a push handed to the intake to its answer on its connection (batch wait, commit, hop back)")
    /// From a notification written on a device's connection to the device's ack of it.
    let deviceAckSeconds = LatencyHistogram(
        name: "herald_device_ack_seconds", help: "Time from a notification written on a device connection to the device's ack of it")
    /// Live gateway nodes of the cluster, as this node last counted them (1 without a cluster).
    let clusterNodes: Gauge
    /// Hints sent to other nodes, and received from them (notifications, not messages).
    let clusterHintsSent: Counter
    let clusterHintsReceived: Counter
    /// Notifications the cluster sweep handed to this node's devices again.
    let clusterSwept: Counter
    /// Pushes answered 503 because a commit outlived the store's bound.
    let storeTimeouts: Counter
    /// 1 while this node's cluster lease has lapsed (its devices disconnected, new ones refused).
    let clusterLeaseLost: Gauge
    /// Times this node found its presence gone (its lease had lapsed) and claimed its devices again.
    let clusterPresenceReclaimed: Counter
    let clusterClaimsWithdrawn: Counter
    /// The end of the server certificate's validity (its notAfter, Unix seconds), set at start and
    /// at each SIGHUP: alerting rules compare it with `time()`.
    let certificateExpiry: Gauge
    /// Browsers connected to the Web Push port now (Mozilla's push protocol, after `hello`).
    let connectedUserAgents: Gauge
    let webPushDeliveries: Counter
    let webPushAcks: Counter
    /// Web Push requests answered 201: kept apart so the hot path takes no lock.
    private let webPushCreated: Counter
    /// The counters with labels known only when they are first counted (a status, a reason, a
    /// port), by metric and labels.
    private let labelledCounters = Locked([String: Counter]())
    /// Requests answered 200: kept apart so the hot path takes no lock.
    private let okResponses: Counter
    /// Connections accepted but not set up, by port (`/health` names a port that fails them all).
    public let connectionSetup: ConnectionSetupWatch

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        connectionSetup = ConnectionSetupWatch { port in
            registry.makeCounter(
                descriptor: Self.name("connection_setup_failures", "total", "Connections accepted but not set up (a socket option or pipeline failed), by port"),
                labels: [("port", port)])
        }
        acceptedPushes = registry.makeCounter(
            descriptor: Self.name("pushes_accepted", "total", "Pushes answered 200 on the provider port"))
        storedNotifications = registry.makeCounter(
            descriptor: Self.name("notifications_stored", "total", "Notifications stored (held until their device acks them, they expire or are replaced)"))
        batches = registry.makeCounter(
            descriptor: Self.name("intake_batches", "total", "Store transactions committed by the intake"))
        batchedNotifications = registry.makeCounter(
            descriptor: Self.name("intake_notifications", "total", "Notifications committed by the intake (over batches: the mean batch size)"))
        openConnections = registry.makeGauge(
            descriptor: Self.name("provider_connections", "open", "Provider connections open now"))
        heldNotifications = registry.makeGauge(
            descriptor: Self.name("notifications", "held", "Notifications held in the store for offline devices"))
        connectedDevices = registry.makeGauge(
            descriptor: Self.name("devices", "connected", "Devices with an authenticated connection now"))
        lateOffers = registry.makeCounter(
            descriptor: Self.name("late_offers", "total", "Alerts held for a device connected here and offered to it only past the late-offer bound, 10 s (a lost hint, a skipped sweep)"))
        lateOfferLongest = registry.makeGauge(
            descriptor: Self.name("late_offer_longest", "seconds", "The longest an alert held for a connected device waited before it was offered, of the late ones"))
        deviceDeliveries = registry.makeCounter(
            descriptor: Self.name("device_deliveries", "total", "Notifications sent on device connections"))
        deviceAcks = registry.makeCounter(
            descriptor: Self.name("device_acks", "total", "Notifications acknowledged by devices"))
        clusterNodes = registry.makeGauge(
            descriptor: Self.name("cluster_nodes", "live", "Live gateway nodes in the cluster, as this node last counted them"))
        clusterHintsSent = registry.makeCounter(
            descriptor: Self.name("cluster_hints_sent", "total", "Notifications hinted to the node holding their device"))
        clusterHintsReceived = registry.makeCounter(
            descriptor: Self.name("cluster_hints_received", "total", "Notifications hinted to this node by other nodes"))
        clusterSwept = registry.makeCounter(
            descriptor: Self.name("cluster_swept", "total", "Held notifications the cluster sweep handed to this node's devices again"))
        storeTimeouts = registry.makeCounter(
            descriptor: Self.name("store_timeouts", "total", "Pushes answered 503 because the store did not commit within --store-timeout"))
        clusterLeaseLost = registry.makeGauge(
            descriptor: Self.name("cluster_lease", "lost", "1 while this node's cluster lease has lapsed (devices disconnected, new ones refused)"))
        clusterPresenceReclaimed = registry.makeCounter(
            descriptor: Self.name("cluster_presence_reclaimed", "total", "Devices whose presence this node claimed again after its lease had lapsed or its rows were reaped"))
        clusterClaimsWithdrawn = registry.makeCounter(
            descriptor: Self.name("cluster_claims_withdrawn", "total", "Presence claims that landed after their session had closed, withdrawn"))
        certificateExpiry = registry.makeGauge(
            descriptor: Self.name("tls_certificate_expiry", "timestamp_seconds", "When the server certificate the TLS ports serve stops being valid (notAfter), Unix seconds; read at start and at each SIGHUP"))
        connectedUserAgents = registry.makeGauge(
            descriptor: Self.name("webpush_user_agents", "connected", "Browsers connected to the Web Push port now"))
        webPushDeliveries = registry.makeCounter(
            descriptor: Self.name("webpush_deliveries", "total", "Web Push messages sent on browser connections"))
        webPushAcks = registry.makeCounter(
            descriptor: Self.name("webpush_acks", "total", "Web Push messages acknowledged by browsers"))
        webPushCreated = registry.makeCounter(
            descriptor: Self.name("webpush_requests", "total", Self.webPushRequestsHelp), labels: [("status", "201")])
        okResponses = registry.makeCounter(
            descriptor: Self.name("provider_requests", "total", Self.providerRequestsHelp), labels: [("status", "200"), ("reason", "")])
    }

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "herald", metricName: metric, unitName: unit, helpText: help)
    }

    /// Reads the end of `tls`'s server certificate into ``certificateExpiry`` (left as it was when
    /// the file cannot be read: loading it reports that).
    func recordCertificate(_ tls: GatewayConfiguration.TLSFiles) {
        guard let end = tls.leafCertificate()?.notValidAfter.timeIntervalSince1970 else { return }
        certificateExpiry.set(end.rounded(.down))
    }

    /// Counts an offer past the late-offer bound, and keeps the longest wait.
    func recordLateOffer(waitedMilliseconds waited: Int64) {
        lateOffers.increment()
        let longest = lateOfferLongestMilliseconds.max(waited, ordering: .relaxed).newValue
        lateOfferLongest.set(Double(longest) / 1_000)
    }

    /// Counts one answered provider request by status and reason (`""` for 200).
    func recordResponse(status: Int, reason: APNsReason?) {
        guard let reason else { return okResponses.increment() }
        counter("provider_requests", Self.providerRequestsHelp, [("status", String(status)), ("reason", reason.rawValue)]).increment()
    }

    /// Counts one answered Web Push port request by status (201 and 202: accepted messages).
    func recordWebPushResponse(status: Int) {
        if status == 201 { return webPushCreated.increment() }
        counter("webpush_requests", Self.webPushRequestsHelp, [("status", String(status))]).increment()
    }

    /// Counts a peer the gateway closed for a bound (`reason` from a fixed set: handshake_timeout,
    /// per_address_limit, idle_timeout, flood, hello_timeout, slow_reader).
    func recordPeerClosed(port: String, reason: String) {
        counter("peers_closed", "Connections the gateway closed for a deadline or bound, by port and reason",
                [("port", port), ("reason", reason)]).increment()
    }

    private static let providerRequestsHelp = "Provider requests answered, by status and reason"
    private static let webPushRequestsHelp = "Web Push port requests answered, by status"

    /// The counter `herald_<metric>_total` with `labels`, made the first time it is counted.
    private func counter(_ metric: String, _ help: String, _ labels: [(String, String)]) -> Counter {
        var key = metric
        for (name, value) in labels { key += "|" + name + "=" + value }
        return labelledCounters.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = registry.makeCounter(descriptor: Self.name(metric, "total", help), labels: labels)
            counters[key] = made
            return made
        }
    }

    func recordBatch(size: Int, commit: Duration) {
        intakeCommitSeconds.record(commit)
        batches.increment()
        batchedNotifications.increment(by: Int64(size))
    }

    /// The Prometheus text exposition.
    public func exposition() -> [UInt8] {
        var buffer = [UInt8]()
        registry.emit(into: &buffer)
        intakeCommitSeconds.emit(into: &buffer)
        intakeAnswerSeconds.emit(into: &buffer)
        deviceAckSeconds.emit(into: &buffer)
        return buffer
    }
}

/// A Prometheus histogram of latencies (1 ms to 10 s buckets) recorded without a lock: one
/// relaxed atomic add to a bucket and one to the sum. swift-prometheus's histogram takes a lock
/// and walks every bucket per value, which measured about 9% of end-to-end delivery throughput
/// when recorded for every device ack (scripts/bench-delivery.sh); this one does not show.
final class LatencyHistogram: Sendable {
    let name: String
    let help: String
    /// Upper bounds in microseconds; the last bucket (+Inf) is implicit.
    static let bounds: [Int64] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000].map { $0 * 1_000 }
    /// One counter per bucket: 13 bounds and +Inf.
    private let counts = InlineArray<14, Atomic<Int>> { _ in Atomic(0) }
    private let sumMicroseconds = Atomic<Int64>(0)

    init(name: String, help: String) {
        self.name = name
        self.help = help
    }

    func record(microseconds value: Int64) {
        // Clamped to a day: the sum stays meaningful whatever a clock step gives.
        let value = min(max(0, value), 86_400_000_000)
        let index = Self.bounds.firstIndex { value <= $0 } ?? Self.bounds.count
        counts[index].wrappingAdd(1, ordering: .relaxed)
        sumMicroseconds.wrappingAdd(value, ordering: .relaxed)
    }

    func record(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        record(microseconds: overflow ? .max : product &+ attoseconds / 1_000_000_000_000)
    }

    func record(milliseconds value: Int64) {
        let (product, overflow) = value.multipliedReportingOverflow(by: 1_000)
        record(microseconds: overflow ? .max : product)
    }

    /// The Prometheus text format: cumulative buckets, sum (seconds) and count.
    func emit(into buffer: inout [UInt8]) {
        var text = "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        var cumulative = 0
        for (index, bound) in Self.bounds.enumerated() {
            cumulative += counts[index].load(ordering: .relaxed)
            text += "\(name)_bucket{le=\"\(Double(bound) / 1_000_000)\"} \(cumulative)\n"
        }
        cumulative += counts[Self.bounds.count].load(ordering: .relaxed)
        text += "\(name)_bucket{le=\"+Inf\"} \(cumulative)\n"
        text += "\(name)_sum \(Double(sumMicroseconds.load(ordering: .relaxed)) / 1_000_000)\n"
        text += "\(name)_count \(cumulative)\n"
        buffer += text.utf8
    }
}
