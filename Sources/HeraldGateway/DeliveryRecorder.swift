import HeraldCore
import HeraldStore
import Logging
import NIOConcurrencyHelpers

/// Records what happens to notifications after they are accepted (acks, sends not acked,
/// replacements, drops) in batches: one store transaction per batch, off the sessions' event
/// loops. Losing a batch in a crash loses only receipt detail: a notification not recorded as
/// acked is simply sent again (the device drops the duplicate by apns-id).
final class DeliveryRecorder: Sendable {
    private struct State {
        var events: [DeliveryEvent] = []
        var waiter: CheckedContinuation<Void, Never>?
        var isClosed = false
    }

    private let state = NIOLockedValueBox(State())
    private let store: any HeraldStore
    private let logger: Logger

    init(store: any HeraldStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    func record(_ event: DeliveryEvent) { record(CollectionOfOne(event)) }

    func record(_ events: some Collection<DeliveryEvent>) {
        guard !events.isEmpty else { return }
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.events.append(contentsOf: events)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// ``run()`` returns after writing what was recorded before this call.
    func close() {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.isClosed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func run() async {
        while true {
            let (batch, closed) = state.withLockedValue { state -> ([DeliveryEvent], Bool) in
                defer { state.events.removeAll(keepingCapacity: true) }
                return (state.events, state.isClosed)
            }
            if !batch.isEmpty {
                do { try await store.record(batch) } catch {
                    logger.error("could not record deliveries", metadata: ["count": "\(batch.count)", "error": "\(error)"])
                }
                continue
            }
            if closed { return }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLockedValue { state -> Bool in
                    if !state.events.isEmpty || state.isClosed { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }
}
