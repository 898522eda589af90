import HeraldCore
import HeraldStore
import Logging
import NIOCore
import Synchronization

/// How a gateway node takes part in a cluster (`herald gateway --database postgres://… --node-id`).
public struct ClusterConfiguration: Sendable {
    /// This node's id: its hint channel, and what its devices' presence names.
    public var nodeID: String
    /// How long a node counts as alive after its last renewal; a node silent that long is dead
    /// and its devices' presence is reaped by the others.
    public var leaseMilliseconds: Int64 = 10_000
    /// How often the node renews its lease (and reaps dead nodes).
    public var heartbeatMilliseconds: Int64 = 3_000
    /// How often the node reads what is held for its connected devices: what a lost hint
    /// delayed is delivered after one to two of these (the sweep leaves what was stored since
    /// its previous look to the hint, by sequence number, not by any node's clock). Each sweep
    /// reads a window of sequence numbers, what was stored over the two intervals before its
    /// previous look, by primary key: its cost follows the push rate, not the connected devices.
    public var sweepMilliseconds: Int64 = 2_000
    /// How often a sweep reads everything held for the node's devices instead of a window: what
    /// commits more than a sweep interval after it was numbered (an overloaded database) is
    /// delivered by this one. Every connected device's held rows are read (issue 48: 350 ms of
    /// the server's time, on three processes, for 17,000 devices), so it is rare.
    public var fullSweepMilliseconds: Int64 = 60_000
    /// Whether the accepting node hints the node holding the device (off: the sweep alone
    /// delivers across nodes: slower, still correct).
    public var hints = true

    public init(nodeID: String) { self.nodeID = nodeID }
}

/// This gateway's part in a cluster of nodes sharing one ``ClusterStore``.
///
/// - Its lease: renewed every heartbeat; dead nodes (lease ended) are reaped, with the presence
///   of their devices. The live node count divides the per-token rate limit.
/// - Presence: a device's session claims it before loading what is held (so anything committed
///   after that load is hinted here), and releases it when it closes.
/// - Routing: the intake hands it what it stored for devices not connected here; it looks up
///   which node holds each device and sends that node a hint (after the commit, never in it).
///   Hints received are loaded from the store by sequence number and handed to the sessions.
/// - The sweep: every `sweepMilliseconds`, what is held for this node's devices and was stored
///   in the two intervals before the sweep's previous look (every `fullSweepMilliseconds`:
///   everything before it) is handed to their sessions again (they skip what is in flight), so a
///   lost hint, a dead listener or a dead accepting node only delays a delivery.
/// - Fencing: the node counts its lease from the start of its last successful renewal on its own
///   monotonic clock (which a frozen process or a jump of the wall clock does not fool). Once
///   that has run out, before the others can reap it, the node disconnects its devices and
///   refuses new ones (they move to a node that holds a lease), skips its sweep and hints, and
///   says so on `/health`. Renewed, it claims presence again — only where no other node holds
///   the device — for every device still connected to it, closes those that moved, and sweeps.
///   A renewal that finds its record reaped (the others saw the lease end first: a stall, a
///   clock jump) heals the same way.
final class ClusterNode: Sendable {
    let configuration: ClusterConfiguration
    let store: any ClusterStore
    let registry: DeviceRegistry
    private let recorder: DeliveryRecorder
    let clock: any WallClock
    let logger: Logger
    let metrics: GatewayMetrics
    private let limiter: TokenRateLimiter
    private let startedAt: Int64
    private let health: GatewayHealth
    /// The bound on one renewal or presence query.
    let storeTimeout: TimeAmount
    /// Until when this node holds its lease, on the monotonic clock (uptime nanoseconds).
    private let leaseValidUntil = Atomic<Int64>(0)
    private let fenced = Atomic<Bool>(false)
    /// Stored for devices not connected here, waiting to be hinted to their node.
    private let outgoing = BatchQueue<Delivery>(maximumBatchSize: 8_192)
    /// Sequence numbers hinted to this node, waiting to be loaded.
    private let incoming = BatchQueue<Int64>(maximumBatchSize: 8_192)
    /// Broadcasts stored here, by sequence number, waiting to be hinted to every other node.
    let outgoingBroadcasts = BatchQueue<Int64>(maximumBatchSize: 1_024)
    /// The lease renewal in flight: a heartbeat that comes while one runs joins it instead of
    /// starting another (issue 63, suspicion 6: a renewal past its bound went on running on one
    /// of the control lane's two connections, the next queued behind it, and the node fenced
    /// itself while the database had it alive). Given up after a lease.
    private let renewals: SingleFlight<Renewed>
    /// Presence claims under way: a session's release waits for its claim.
    let claims = ClaimsInFlight()
    let hooks: ClusterTestHooks

    /// A renewal's answer, and when it started on this node's monotonic clock (the lease counts
    /// from there, whichever heartbeat waited for it).
    private struct Renewed: Sendable {
        var renewal: LeaseRenewal
        var started: NIODeadline
    }

    init(
        configuration: ClusterConfiguration, store: any ClusterStore, registry: DeviceRegistry, recorder: DeliveryRecorder,
        limiter: TokenRateLimiter, clock: any WallClock, health: GatewayHealth, storeTimeout: TimeAmount,
        metrics: GatewayMetrics, logger: Logger, hooks: ClusterTestHooks = .init()
    ) {
        self.hooks = hooks
        self.health = health
        self.storeTimeout = storeTimeout
        self.configuration = configuration
        self.store = store
        self.registry = registry
        self.recorder = recorder
        self.limiter = limiter
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.startedAt = clock.nowMilliseconds()
        self.renewals = SingleFlight(abandonAfter: .milliseconds(configuration.leaseMilliseconds))
    }

    var nodeID: String { configuration.nodeID }

    /// Joins the cluster: a restart under the same id forgets the presence its previous process
    /// left (those connections are gone), then takes the lease.
    func join() async throws {
        let now = clock.nowMilliseconds()
        if let previous = try await store.liveNodes(nowMilliseconds: now).first(where: { $0.nodeID == nodeID }) {
            // A restart after a crash looks the same as a second process under this id; only
            // the operator can tell them apart.
            logger.warning("this node id still had a live lease: taking it over (a restart after a crash); if another gateway runs with this --node-id, give each node its own", metadata: [
                "node": "\(nodeID)", "lease_until_ms": "\(previous.leaseUntilMilliseconds)",
            ])
        }
        try await store.endLease(node: nodeID)
        try await renew()
    }

    /// Leaves the cluster (graceful shutdown): its devices' presence goes with it.
    func leave() async {
        do { try await store.endLease(node: nodeID) } catch {
            logger.warning("could not end this node's lease; the others reap it when it runs out", metadata: ["error": "\(error)"])
        }
    }

    /// Whether this node's lease has lapsed (its devices were disconnected; new ones are refused).
    var isFenced: Bool { fenced.load(ordering: .relaxed) }

    /// Renews the lease, reaps dead nodes and counts live ones, in one transaction whose
    /// statements go out back to back (bounded). Returns whether the node's record was still
    /// there (see ``ClusterStore/renewLease(node:startedAtMilliseconds:untilMilliseconds:nowMilliseconds:)``).
    @discardableResult
    private func renew() async throws -> Bool {
        let store = self.store, node = nodeID, from = startedAt, lease = configuration.leaseMilliseconds, clock = self.clock, hooks = self.hooks
        let bound = TimeAmount.milliseconds(max(500, configuration.heartbeatMilliseconds))
        let renewed = try await renewals.run(within: bound) {
            let started = NIODeadline.now()
            let now = clock.nowMilliseconds()
            await hooks.renewalStarted?()
            let renewal = try await store.renewLease(node: node, startedAtMilliseconds: from, untilMilliseconds: now + lease, nowMilliseconds: now)
            return Renewed(renewal: renewal, started: started)
        }
        let renewal = renewed.renewal
        leaseValidUntil.store(Int64(clamping: (renewed.started + .milliseconds(lease)).uptimeNanoseconds), ordering: .relaxed)
        if !renewal.reaped.isEmpty { logger.warning("nodes whose lease ran out were removed", metadata: ["nodes": "\(renewal.reaped)"]) }
        limiter.setShare(max(1, renewal.liveNodes))
        metrics.clusterNodes.set(Double(renewal.liveNodes))
        return renewal.continued
    }

    /// Disconnects this node's devices and refuses new ones: its lease has lapsed, so the other
    /// nodes may reap its presence at any moment and route their devices' pushes to nobody.
    private func fence() {
        guard !fenced.exchange(true, ordering: .relaxed) else { return }
        health.setLeaseLost(true)
        metrics.clusterLeaseLost.set(Double(1))
        logger.error("this node's cluster lease has lapsed: disconnecting its devices (they move to another node) until it is renewed", metadata: [
            "node": "\(nodeID)", "lease_ms": "\(configuration.leaseMilliseconds)",
        ])
        registry.closeAll(code: .shutdown, "this gateway node lost its cluster lease (it cannot reach the database); connect to another node")
    }

    /// Fences the node as soon as its lease runs out on its own clock: before the others can reap
    /// it. It sleeps until the lease's end and looks again there (a renewal meanwhile has moved
    /// the end: it sleeps on), so an idle node wakes about once a lease, not ten times a second;
    /// before the first renewal and while lapsed it looks every 100 ms (or a tenth of the lease).
    private func watchLease() async {
        let poll = 1_000_000 * max(20, min(100, configuration.leaseMilliseconds / 10))
        while !Task.isCancelled {
            let until = leaseValidUntil.load(ordering: .relaxed)
            let now = Int64(clamping: NIODeadline.now().uptimeNanoseconds)
            if until != 0, now >= until { fence() }
            let wait = until != 0 && now < until ? until - now : poll
            try? await Task.sleep(for: .nanoseconds(wait))
        }
    }

    // MARK: routing

    /// Takes what the intake stored for devices not connected here.
    func forward(_ deliveries: [Delivery]) {
        guard !deliveries.isEmpty else { return }
        if !outgoing.append(contentsOf: deliveries) { dropImmediate(deliveries) }
    }

    /// `apns-expiration: 0` is for a device connected at the moment it is accepted: one
    /// connected nowhere drops it.
    private func dropImmediate(_ deliveries: [Delivery]) {
        let now = clock.nowMilliseconds()
        recorder.record(deliveries.filter { $0.notification.expiration == .immediately }.map { .dropped(seq: $0.seq, atMilliseconds: now) })
    }

    private func sendHints() async {
        while let batch = await outgoing.nextBatch() {
            do {
                // Where each device is. A device the store saw connected to a node in the
                // statement that stored the push is hinted there without a query. One it saw
                // nowhere is looked up now, after the commit: it may have connected since, and
                // its node's load of what is held may have run before this commit (so only a
                // hint reaches it before that node's sweep).
                let unsure = Set(batch.filter { if case .node = $0.presence { false } else { true } }.map(\.deviceID))
                let asked = unsure.isEmpty ? [:] : try await store.presence(deviceIDs: Array(unsure))
                var hints: [String: [Int64]] = [:]
                var nowhere: [Delivery] = []
                for delivery in batch {
                    let node: String?
                    if case .node(let id) = delivery.presence { node = id } else { node = asked[delivery.deviceID] }
                    guard let node else {
                        nowhere.append(delivery)
                        continue
                    }
                    // A device that moved here since the intake looked: hand it over directly.
                    if node == nodeID {
                        let offline = registry.deliver([delivery])
                        nowhere += offline
                    } else if configuration.hints {
                        hints[node, default: []].append(delivery.seq)
                    }
                }
                dropImmediate(nowhere)
                if !hints.isEmpty {
                    try await store.sendHints(hints)
                    metrics.clusterHintsSent.increment(by: Int64(hints.values.reduce(0) { $0 + $1.count }))
                }
            } catch {
                // The notifications are stored: the holding node's sweep delivers them.
                logger.warning("could not hint other nodes", metadata: ["count": "\(batch.count)", "error": "\(error)"])
            }
        }
    }

    private func receiveHints() async {
        while !Task.isCancelled {
            do {
                try await store.receiveHints(node: nodeID, onListening: { [logger, nodeID] in
                    logger.debug("listening for hints", metadata: ["node": "\(nodeID)"])
                }) { [incoming] seqs in
                    _ = incoming.append(contentsOf: seqs)
                }
            } catch {
                if Task.isCancelled { break }
                logger.warning("the hint listener failed; listening again (the sweep delivers meanwhile)", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func loadHints() async {
        while let seqs = await incoming.nextBatch() {
            // Without a lease this node delivers nothing: its devices were sent elsewhere.
            if isFenced { continue }
            do {
                // A broadcast's key is negative: each is read once and handed to its subscribers here.
                let broadcasts = seqs.filter { $0 < 0 }
                try await deliverHinted(broadcasts: broadcasts)
                let deliveries = try await store.heldDeliveries(seqs: seqs.filter { $0 > 0 })
                metrics.clusterHintsReceived.increment(by: Int64(seqs.count))
                // Devices no longer here get theirs from the sweep or their next connection.
                _ = registry.deliver(deliveries)
            } catch {
                logger.warning("could not load hinted notifications (the sweep delivers them)", metadata: ["error": "\(error)"])
            }
        }
    }

    private func sweep() async {
        let limit = 10_000
        var window = SweepWindow(
            sweepMilliseconds: configuration.sweepMilliseconds, fullSweepMilliseconds: configuration.fullSweepMilliseconds)
        var looks = 0
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(configuration.sweepMilliseconds))
            if Task.isCancelled { break }
            if isFenced { continue }
            looks += 1
            if looks % window.fullEvery == 0 { await repairPresence() }
            do {
                let store = self.store
                let newest = try await withDeadline(storeTimeout) { try await store.newestSeq() }
                if let range = window.look(newest: newest) {
                    if await sweepOnce(seqAbove: range.above, seqAtMost: range.atMost, limit: limit) {
                        window.read(range)
                    } else {
                        window.unread(range)
                    }
                }
            } catch {
                logger.warning("the cluster sweep failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Offers what is held for this node's devices with a sequence number above `seqAbove` and
    /// up to `seqAtMost`. Returns whether the range was read.
    @discardableResult
    func sweepOnce(seqAbove: Int64, seqAtMost: Int64, limit: Int = 10_000) async -> Bool {
        let now = clock.nowMilliseconds()
        let store = self.store, node = nodeID
        do {
            // Acks recorded so far must be in the store, or they would be sent again (bounded:
            // a recorder stuck on the store skips this sweep, it does not stop the loop that
            // called it — the heartbeat's heal, which renews the lease).
            try await withDeadline(storeTimeout) { [recorder] in await recorder.waitUntilRecorded() }
            let held = try await withDeadline(storeTimeout) {
                try await store.heldDeliveries(onNode: node, seqAbove: seqAbove, seqAtMost: seqAtMost, nowMilliseconds: now, limit: limit)
            }
            if !held.isEmpty {
                metrics.clusterSwept.increment(by: Int64(held.count))
                _ = registry.deliver(held)
            }
            if seqAbove > 0 {
                let broadcasts = try await withDeadline(storeTimeout) {
                    try await store.broadcasts(seqAbove: seqAbove, seqAtMost: seqAtMost, nowMilliseconds: now)
                }
                for broadcast in broadcasts { metrics.clusterSwept.increment(by: Int64(registry.deliver(broadcast))) }
            }
            return true
        } catch {
            logger.warning("the cluster sweep failed", metadata: ["error": "\(error)"])
            return false
        }
    }

    private func heartbeat() async {
        var healing = HealSchedule()
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(configuration.heartbeatMilliseconds))
            if Task.isCancelled { break }
            do {
                let continued = try await renew()
                let wasFenced = fenced.exchange(false, ordering: .relaxed)
                if wasFenced {
                    health.setLeaseLost(false)
                    metrics.clusterLeaseLost.set(Double(0))
                    logger.warning("this node's cluster lease is renewed: taking devices again", metadata: ["node": "\(nodeID)"])
                }
                if healing.renewed(continued: continued, wasFenced: wasFenced) {
                    healing.healed(await heal())
                }
            } catch {
                // A renewal cut short because the node is stopping is not a failure: an
                // operator's alert on errors must not count every graceful stop.
                if Task.isCancelled { break }
                logger.error("could not renew this node's lease", metadata: ["error": "\(error)"])
                Task { [store] in await store.recoverConnections() }
            }
        }
    }

    /// Runs the node's loops until the task is cancelled; then stops taking hints.
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.sendHints() }
            group.addTask { await self.sendBroadcastHints() }
            group.addTask { await self.loadHints() }
            group.addTask { await self.receiveHints() }
            group.addTask { await self.sweep() }
            group.addTask { await self.heartbeat() }
            group.addTask { await self.watchLease() }
            await withTaskCancellationHandler {
                await group.next()
            } onCancel: {
                self.outgoing.close()
                self.outgoingBroadcasts.close()
                self.incoming.close()
            }
            group.cancelAll()
        }
    }
}
