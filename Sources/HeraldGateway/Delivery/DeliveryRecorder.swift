import HeraldCore
import HeraldStore
import Logging
import NIOCore

/// Records what happens to notifications after they are accepted (acks, sends not acked,
/// replacements, drops) in batches: one store transaction per batch, off the sessions' event
/// loops. Losing a batch in a crash loses only receipt detail: a notification not recorded as
/// acked is simply sent again (the device drops the duplicate by apns-id).
final class DeliveryRecorder: Sendable {
    /// At most 4,096 events per store transaction.
    private let queue = BatchQueue<DeliveryEvent>(maximumBatchSize: 4_096)
    private let store: any GatewayStore
    private let logger: Logger
    /// How long one batch's write may take before it counts as failed (a write that hangs —
    /// seen on a connection caught in a database failover — must not stop recording, nor
    /// whatever waits on ``waitUntilRecorded()``).
    private let writeTimeout: TimeAmount
    /// Events appended and events written so far, and who waits for the written count.
    private let progress = Locked(Progress())

    private struct Progress {
        var appended = 0
        var written = 0
        var waiters: [(target: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// `writeTimeout`: the gateway gives twice its store bound (`--store-timeout`), as the intake does a commit.
    init(store: any GatewayStore, logger: Logger, writeTimeout: TimeAmount = .seconds(10)) {
        self.store = store
        self.logger = logger
        self.writeTimeout = writeTimeout
    }

    func record(_ event: DeliveryEvent) { record(CollectionOfOne(event)) }

    func record(_ events: some Collection<DeliveryEvent>) {
        guard !events.isEmpty else { return }
        progress.withLock { $0.appended += events.count }
        if !queue.append(contentsOf: events) {
            advance(by: events.count)
            logger.warning("delivery events after shutdown were not recorded", metadata: ["count": "\(events.count)"])
        }
    }

    /// Returns once every event recorded before the call has been written (or failed to be).
    func waitUntilRecorded() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = progress.withLock { progress -> Bool in
                if progress.written >= progress.appended { return true }
                progress.waiters.append((progress.appended, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func advance(by count: Int) {
        let ready = progress.withLock { progress -> [CheckedContinuation<Void, Never>] in
            progress.written += count
            let written = progress.written
            let ready = progress.waiters.filter { $0.target <= written }.map(\.continuation)
            progress.waiters.removeAll { $0.target <= written }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// ``run()`` returns after writing what was recorded before this call.
    func close() { queue.close() }

    func run() async {
        while let batch = await queue.nextBatch() {
            do { try await withDeadline(writeTimeout) { [store] in try await store.record(batch) } } catch {
                logger.error("could not record deliveries", metadata: ["count": "\(batch.count)", "error": "\(error)"])
            }
            advance(by: batch.count)
        }
    }
}
