import HeraldCore
import HeraldStore
import Logging
import NIOCore

/// Collects accepted requests from every connection and hands them to the store in batches: one
/// store transaction per batch, so a commit is not paid per push. A request's answer (200 or a
/// token error) goes out only after the batch holding it has been committed.
///
/// One long-running loop drains the queue; there is no task per request. While a batch is being
/// committed the next one accumulates, so batches grow with load by themselves.
///
/// Waits on the store are bounded (``GatewayLimits/storeTimeout``): a watchdog answers a batch
/// whose commit has not returned within the bound with 503 `ServiceUnavailable`, and everything
/// queued behind it too; until that commit returns, new pushes are answered 503 at once (the
/// stuck commit is the probe) and `/health` says so. A 200 is only ever sent after the commit.
/// A commit that returns after its batch was answered 503 still stored it: those pushes are
/// delivered, and a provider's retry with the same apns-id replaces the held copy.
public final class NotificationIntake: Sendable {
    struct Pending {
        var notification: StoredNotification
        var promise: EventLoopPromise<SubmissionOutcome>
    }

    private let queue: BatchQueue<Pending>
    /// Notifications waiting for a commit past which submissions are refused.
    private let highWater: Int
    private let store: any GatewayStore
    private let policy: StorePolicy
    private let environment: PushEnvironment
    private let clock: any WallClock
    private let logger: Logger
    private let metrics: GatewayMetrics
    /// Where stored notifications go next: the sessions of connected devices.
    private let registry: DeviceRegistry
    private let recorder: DeliveryRecorder
    private let feed: DeliveryFeed
    /// Where stored notifications for devices connected to other nodes go; `nil` for a single gateway.
    private let cluster: ClusterNode?
    private let storeTimeout: TimeAmount
    /// When a commit still has not returned, it is given up (its batch was answered 503 long ago).
    private let abandonAfter: TimeAmount
    private let health: GatewayHealth
    /// Watches the batch being committed.
    private let watchdog: CommitWatchdog<Pending>

    init(
        store: any GatewayStore, policy: StorePolicy, environment: PushEnvironment, clock: any WallClock,
        maximumBatchSize: Int, highWater: Int = 50_000, storeTimeout: TimeAmount = .seconds(5), health: GatewayHealth,
        registry: DeviceRegistry, recorder: DeliveryRecorder,
        feed: DeliveryFeed, cluster: ClusterNode? = nil, metrics: GatewayMetrics, logger: Logger
    ) {
        self.storeTimeout = storeTimeout
        self.watchdog = CommitWatchdog(bound: storeTimeout) { stalledSince in
            if let stalledSince { health.storeStalled(since: stalledSince) } else { health.storeAnswered() }
        }
        self.abandonAfter = .nanoseconds(max(3_000_000_000, 2 * storeTimeout.nanoseconds))
        self.health = health
        self.feed = feed
        self.cluster = cluster
        self.highWater = highWater
        self.registry = registry
        self.recorder = recorder
        self.store = store
        self.policy = policy
        self.environment = environment
        self.clock = clock
        self.queue = BatchQueue(maximumBatchSize: maximumBatchSize)
        self.metrics = metrics
        self.logger = logger
    }

    /// Queues a notification; the future completes on `eventLoop` once its batch is committed.
    /// After ``close()`` it fails with ``IntakeUnavailable/shuttingDown``; with ``highWater``
    /// notifications already waiting (the store has fallen behind), while a commit is stuck past
    /// the store's bound, or when the commit fails, with ``IntakeUnavailable/storeBehind``.
    func submit(_ notification: StoredNotification, on eventLoop: EventLoop) -> EventLoopFuture<SubmissionOutcome> {
        let promise = eventLoop.makePromise(of: SubmissionOutcome.self)
        if health.isStoreStalled {
            promise.fail(IntakeUnavailable.storeBehind)
            return promise.futureResult
        }
        switch queue.append(Pending(notification: notification, promise: promise), limit: highWater) {
        case .accepted: break
        case .full: promise.fail(IntakeUnavailable.storeBehind)
        case .closed: promise.fail(IntakeUnavailable.shuttingDown)
        }
        return promise.futureResult
    }

    /// Refuses new submissions; ``run()`` returns once everything queued has been committed.
    func close() { queue.close() }

    /// Commits batches until closed and drained.
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.watchdog.run { self.answerOverdue($0) } }
            while let batch = await queue.nextBatch() {
                await commit(batch)
            }
            group.cancelAll()
        }
    }

    /// Answers 503 for a commit that outlived the store's bound, and for what waits behind it.
    private func answerOverdue(_ overdue: CommitWatchdog<Pending>.Overdue) {
        // `/health` and new pushes already see the stall: the watchdog said so as it marked it.
        let waiting = queue.takeAll()
        logger.error("the store has not committed a batch within the bound: answering 503 until it returns", metadata: [
            "bound_ms": "\(storeTimeout.nanoseconds / 1_000_000)", "batch": "\(overdue.batch.count)", "queued": "\(waiting.count)",
        ])
        metrics.storeTimeouts.increment(by: Int64(overdue.batch.count + waiting.count))
        // A database that answers behind a pool that does not: the store replaces its pool.
        Task { [store] in await store.recoverConnections() }
        let all = overdue.batch + waiting
        complete(all, with: Array(repeating: .failure(IntakeUnavailable.storeBehind), count: all.count))
    }

    /// Ends the watchdog's view of the batch being committed: whether it answered it already
    /// (and if so, the stall it reported ends with it).
    private func finishCommitting() -> Bool { watchdog.end() }

    private func commit(_ batch: [Pending]) async {
        let now = clock.nowMilliseconds()
        // Measured for the metrics only (a duration, not a time the logic reads).
        let started = ContinuousClock.now
        watchdog.begin(batch)
        do {
            let store = self.store, policy = self.policy, environment = self.environment
            let notifications = batch.map(\.notification)
            // A commit stuck on a connection that will never answer (a database host gone
            // without a word) is abandoned after `abandonAfter`, long after its batch was
            // answered 503, so that what follows is not held behind it.
            let outcomes = try await withDeadline(abandonAfter) {
                try await store.accept(notifications, policy: policy, environment: environment, nowMilliseconds: now)
            }
            let answered = finishCommitting()
            metrics.recordBatch(size: batch.count, commit: ContinuousClock.now - started)
            if answered {
                logger.warning("a batch answered 503 was committed after all: it is delivered; a retry with the same apns-id replaces it", metadata: [
                    "count": "\(batch.count)",
                ])
            } else {
                complete(batch, with: outcomes.map { .success($0) })
            }
            // Before routing: a watcher sees a push accepted before a device session can send it.
            if feed.isWatched { publish(batch, outcomes, now: now) }
            route(batch, outcomes, now: now)
        } catch {
            let answered = finishCommitting()
            logger.error("could not commit a batch of notifications", metadata: ["count": "\(batch.count)", "error": "\(error)"])
            // The store refused or lost the commit (a database restarting, a connection cut):
            // the provider retries, as for a stalled commit (the same apns-id replaces what
            // a commit lost in flight may have stored).
            if !answered { complete(batch, with: Array(repeating: .failure(IntakeUnavailable.storeBehind), count: batch.count)) }
        }
    }

    /// Hands what was stored to connected devices. `apns-expiration: 0` is for a device
    /// connected at this moment only: otherwise it is dropped.
    private func route(_ batch: [Pending], _ outcomes: [SubmissionOutcome], now: Int64) {
        var deliveries: [Delivery] = []
        var dropped: [DeliveryEvent] = []
        var stored = 0
        for (pending, outcome) in zip(batch, outcomes) {
            guard case .stored(let seq, let deviceID, let presence) = outcome else { continue }
            stored += 1
            if let deviceID {
                deliveries.append(Delivery(seq: seq, deviceID: deviceID, notification: pending.notification, presence: presence))
            } else if pending.notification.expiration == .immediately {
                dropped.append(.dropped(seq: seq, atMilliseconds: now))
            }
        }
        if stored > 0 { metrics.storedNotifications.increment(by: Int64(stored)) }
        let offline = registry.deliver(deliveries)
        if let cluster {
            // The device may be connected to another node: the cluster hints it (and drops
            // `apns-expiration: 0` for a device connected nowhere).
            cluster.forward(offline)
        } else {
            for delivery in offline where delivery.notification.expiration == .immediately {
                dropped.append(.dropped(seq: delivery.seq, atMilliseconds: now))
            }
        }
        recorder.record(dropped)
    }

    private func publish(_ batch: [Pending], _ outcomes: [SubmissionOutcome], now: Int64) {
        // A refusal by the token's registration is published by the stream that answers it.
        for (pending, outcome) in zip(batch, outcomes) where !outcome.isRejected {
            feed.publish {
                let n = pending.notification
                var event = DeliveryFeed.Event(event: .accepted, at: now, apnsId: n.id.description, topic: n.bundleID, token: n.token.hex)
                if n.pushType == .webpush { event.protocol = "webpush" }
                switch outcome {
                case .stored(_, let deviceID?, _):
                    event.outcome = "delivering"
                    event.device = deviceID
                case .stored(_, nil, _): event.outcome = "stored"
                case .discarded: event.outcome = "discarded"
                case .rejected: break
                }
                return event
            }
        }
    }

    /// Completes a batch's promises with one hop to each event loop, so that the answers of a
    /// batch are written in one loop iteration (and flushed together, see `FlushCoalescingHandler`).
    private func complete(_ batch: [Pending], with results: [Result<SubmissionOutcome, Error>]) {
        var byLoop: [ObjectIdentifier: (EventLoop, [(EventLoopPromise<SubmissionOutcome>, Result<SubmissionOutcome, Error>)])] = [:]
        for (pending, result) in zip(batch, results) {
            let loop = pending.promise.futureResult.eventLoop
            byLoop[ObjectIdentifier(loop), default: (loop, [])].1.append((pending.promise, result))
        }
        for (loop, items) in byLoop.values {
            loop.execute {
                for (promise, result) in items { promise.completeWith(result) }
            }
        }
    }
}
