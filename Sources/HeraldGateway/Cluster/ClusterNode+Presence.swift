import HeraldCore
import HeraldStore
import Logging
import NIOCore

// A node's presence: its claims as devices connect, their release, a late claim withdrawn, the
// heal after a lapse of the lease and the repair at each full sweep (issue 63).
extension ClusterNode {
    /// After a lapse: claims presence again for the devices still connected here (not those
    /// another node holds now: those are closed here), then offers what is held for them.
    /// Returns whether the claims were made; one that failed is made again at the next heartbeat
    /// (``HealSchedule``).
    func heal() async -> Bool {
        let claims = registry.presenceClaims()
        let store = self.store, node = nodeID, now = clock.nowMilliseconds()
        do {
            var elsewhere = Set<String>()
            if !claims.isEmpty {
                elsewhere = try await withDeadline(storeTimeout) {
                    try await store.reclaimPresence(node: node, devices: claims, atMilliseconds: now)
                }
            }
            metrics.clusterPresenceReclaimed.increment(by: Int64(claims.count - elsewhere.count))
            logger.warning("presence claimed again after a lapse of this node's lease", metadata: [
                "node": "\(nodeID)", "devices": "\(claims.count - elsewhere.count)", "moved_elsewhere": "\(elsewhere.count)",
            ])
            if !elsewhere.isEmpty {
                registry.close(deviceIDs: elsewhere, code: .replaced, "this device's connection moved to another gateway node")
            }
            return await sweepOnce(seqAbove: 0, seqAtMost: .max)
        } catch {
            // The next heartbeat heals again (the renewal that re-inserted the record said
            // `continued` only once); meanwhile the sweep of whichever node the devices reach delivers.
            logger.error("could not claim presence again after a lapse of the lease; again at the next heartbeat", metadata: ["error": "\(error)"])
            return false
        }
    }


    /// Records that this node holds the device's connection now. A claim that lands after its
    /// session closed (queued behind a recovering pool while the device moved to another node)
    /// is withdrawn at once: the device's presence goes back to whoever the claim replaced,
    /// unless a newer claim has replaced it since (issue 63, suspicion 3: the late claim once
    /// stayed, or was released, and the node really holding the device had no presence).
    ///
    /// While the late claim stood, pushes for the device were hinted here and found no session;
    /// their sequence numbers may be older than the holder's next sweep window by the time the
    /// claim is withdrawn (a partition healing delivers the claim many seconds late). So the
    /// withdrawal hands everything held for the device to its holder at once (the timing-chaos
    /// run lost 47 pushes to this gap until the full sweep, past its 45 s bound).
    func claim(deviceID: String, connection: Int64) async throws {
        // The session's release waits for this to return (see ``release(deviceID:connection:)``).
        let key = ClaimsInFlight.Key(deviceID: deviceID, connection: connection)
        claims.begin(key)
        defer { claims.end(key) }
        let previous = try await store.claimPresence(
            deviceID: deviceID, node: nodeID, connection: connection, atMilliseconds: clock.nowMilliseconds())
        await hooks.claimCommitted?()
        if let previous, previous.node != nodeID {
            logger.debug("device moved here from another node", metadata: ["device": "\(deviceID)", "from": "\(previous.node)"])
        }
        guard !registry.holds(deviceID: deviceID, connection: connection) else { return }
        // The holder the claim replaced, if it still holds the device: another node (which
        // releases its own claim when its session closes), or a newer connection to this node.
        let holder = previous.flatMap { $0.node != nodeID || registry.holds(deviceID: deviceID, connection: $0.connection) ? $0 : nil }
        metrics.clusterClaimsWithdrawn.increment()
        logger.info("a presence claim landed after its session closed: withdrawn", metadata: [
            "device": "\(deviceID)", "restored": "\(holder?.node ?? "none")",
        ])
        let store = self.store, node = nodeID
        let withdrawn = await retrying("withdraw a late presence claim", deviceID: deviceID) {
            try await store.withdrawClaim(deviceID: deviceID, node: node, connection: connection, restoring: holder)
        }
        if withdrawn, let holder { await handOver(deviceID: deviceID, to: holder.node) }
    }

    /// Offers everything held for the device to the node that holds it now: here, to its
    /// session; elsewhere, by a hint naming each sequence number (its sessions skip what is in
    /// flight). One that fails leaves them to that node's full sweep.
    func handOver(deviceID: String, to holder: String) async {
        let store = self.store, now = clock.nowMilliseconds()
        do {
            let held = try await withDeadline(storeTimeout) { try await store.pendingDeliveries(forDevice: deviceID, nowMilliseconds: now) }
            guard !held.isEmpty else { return }
            if holder == nodeID {
                _ = registry.deliver(held)
            } else {
                try await withDeadline(storeTimeout) { try await store.sendHints([holder: held.map(\.seq)]) }
                metrics.clusterHintsSent.increment(by: Int64(held.count))
            }
            logger.info("what was held for a device under a withdrawn claim was handed to its holder", metadata: [
                "device": "\(deviceID)", "holder": "\(holder)", "count": "\(held.count)",
            ])
        } catch {
            logger.warning("could not hand a device's held notifications to its holder (its full sweep delivers them)", metadata: [
                "device": "\(deviceID)", "holder": "\(holder)", "error": "\(error)",
            ])
        }
    }

    /// Forgets the device's presence here (its session closed), retried until it is done: a
    /// release lost to a restarting database left presence naming this node for a device it no
    /// longer has.
    func release(deviceID: String, connection: Int64) {
        Task { await releaseNow(deviceID: deviceID, connection: connection) }
    }

    /// The release, after the connection's claim has returned: a claim that committed over a
    /// newer connection's row (its statement queued behind a lock) and was released before it
    /// returned deleted that row, where its withdrawal would have restored it, and the device
    /// stayed connected with no presence (the timing-chaos run: 132 pushes answered 200 held
    /// until the device's next connection). Once the claim has returned, a late one has been
    /// withdrawn and the release finds nothing of its own.
    func releaseNow(deviceID: String, connection: Int64) async {
        await claims.wait(for: ClaimsInFlight.Key(deviceID: deviceID, connection: connection))
        let store = self.store, node = nodeID
        await retrying("release a device's presence", deviceID: deviceID) {
            try await store.releasePresence(deviceID: deviceID, node: node, connection: connection)
        }
    }

    /// Runs a presence write until it succeeds (bounded each time, one heartbeat apart), for at
    /// most a lease: past that, a node that cannot write has lost its lease and its presence is
    /// reaped by the others, or a reclaim repairs it. Returns whether the write was made.
    @discardableResult
    private func retrying(_ what: String, deviceID: String, _ write: @escaping @Sendable () async throws -> Void) async -> Bool {
        let attempts = max(2, Int(configuration.leaseMilliseconds / max(1, configuration.heartbeatMilliseconds)) + 1)
        for attempt in 1...attempts {
            do {
                try await withDeadline(storeTimeout, write)
                return true
            } catch {
                if attempt == attempts || Task.isCancelled {
                    logger.warning("could not \(what); the device's next connection or a reclaim repairs it", metadata: [
                        "device": "\(deviceID)", "error": "\(error)", "attempts": "\(attempt)",
                    ])
                    return false
                }
                try? await Task.sleep(for: .milliseconds(configuration.heartbeatMilliseconds))
            }
        }
        return false
    }

    /// Claims presence, where no node holds it, for every device connected here (at each full
    /// sweep): a release that ran after a newer claim of this node's had replaced another
    /// node's (the device connected twice) leaves the device with no presence, and its pushes
    /// with no route but its next connection. A device another node holds is left there.
    func repairPresence() async {
        let claims = registry.presenceClaims()
        guard !claims.isEmpty else { return }
        let store = self.store, node = nodeID, now = clock.nowMilliseconds()
        do {
            _ = try await withDeadline(storeTimeout) {
                try await store.reclaimPresence(node: node, devices: claims, atMilliseconds: now)
            }
        } catch {
            logger.warning("could not check this node's devices' presence (again at the next full sweep)", metadata: ["error": "\(error)"])
        }
    }
}

/// When a node claims its devices' presence again (``ClusterNode``'s heal): after a renewal that
/// found its record reaped, after a lapse of its lease, and at every renewal after a heal that
/// failed until one succeeds. A reaped record is re-inserted by the renewal that finds it gone, so
/// that renewal is the only one to say so: a heal that failed there was once never tried again,
/// and the node's connected devices stayed without presence (issue 63, suspicion 4).
struct HealSchedule: Sendable {
    private(set) var pending = false

    /// A renewal succeeded: whether to heal now.
    mutating func renewed(continued: Bool, wasFenced: Bool) -> Bool {
        if !continued || wasFenced { pending = true }
        return pending
    }

    /// The heal ran: done, or to be tried at the next renewal.
    mutating func healed(_ succeeded: Bool) { pending = !succeeded }
}

/// The presence claims a node has in flight, so that a session's release waits for its claim
/// to return (``ClusterNode/releaseNow(deviceID:connection:)``).
final class ClaimsInFlight: Sendable {
    struct Key: Hashable, Sendable {
        var deviceID: String
        var connection: Int64
    }

    private let waiting = Locked([Key: [CheckedContinuation<Void, Never>]]())

    func begin(_ key: Key) { waiting.withLock { $0[key] = $0[key] ?? [] } }

    func end(_ key: Key) {
        for waiter in waiting.withLock({ $0.removeValue(forKey: key) }) ?? [] { waiter.resume() }
    }

    /// Returns once no claim for `key` is in flight.
    func wait(for key: Key) async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = waiting.withLock { waiting -> Bool in
                guard waiting[key] != nil else { return true }
                waiting[key]!.append(waiter)
                return false
            }
            if now { waiter.resume() }
        }
    }

    /// How many releases wait for `key`'s claim (tests' barrier).
    func waiters(for key: Key) -> Int { waiting.withLock { $0[key]?.count ?? 0 } }
}

/// Points where a test holds a node between two steps, to force an interleaving.
struct ClusterTestHooks: Sendable {
    /// After a presence claim has committed and before it returns.
    var claimCommitted: (@Sendable () async -> Void)?
    /// As a lease renewal starts, before its query.
    var renewalStarted: (@Sendable () async -> Void)?
}
