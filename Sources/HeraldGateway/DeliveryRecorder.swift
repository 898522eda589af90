import HeraldCore
import HeraldStore
import Logging

/// Records what happens to notifications after they are accepted (acks, sends not acked,
/// replacements, drops) in batches: one store transaction per batch, off the sessions' event
/// loops. Losing a batch in a crash loses only receipt detail: a notification not recorded as
/// acked is simply sent again (the device drops the duplicate by apns-id).
final class DeliveryRecorder: Sendable {
    private let queue = BatchQueue<DeliveryEvent>()
    private let store: any HeraldStore
    private let logger: Logger

    init(store: any HeraldStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    func record(_ event: DeliveryEvent) { record(CollectionOfOne(event)) }

    func record(_ events: some Collection<DeliveryEvent>) {
        guard !events.isEmpty else { return }
        if !queue.append(contentsOf: events) {
            logger.warning("delivery events after shutdown were not recorded", metadata: ["count": "\(events.count)"])
        }
    }

    /// ``run()`` returns after writing what was recorded before this call.
    func close() { queue.close() }

    func run() async {
        while let batch = await queue.nextBatch() {
            do { try await store.record(batch) } catch {
                logger.error("could not record deliveries", metadata: ["count": "\(batch.count)", "error": "\(error)"])
            }
        }
    }
}
