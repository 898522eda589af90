import HeraldCore
import Synchronization

/// A live feed of what happens to notifications — refused, accepted, sent to a device, acked —
/// for someone debugging a provider: the admin port's `GET /v1/events` (server-sent events) and
/// `herald gateway watch`.
///
/// Costs one atomic load per event while nobody watches. A watcher takes its events in batches;
/// one that reads too slowly loses events (counted, and told so) rather than making the gateway
/// buffer without bound.
final class DeliveryFeed: Sendable {
    /// One thing that happened. Fields that do not apply are absent from the JSON.
    struct Event: Encodable, Sendable {
        enum Kind: String, Encodable, Sendable {
            /// The provider port answered with an error.
            case refused
            /// Committed to the store (answered 200): `outcome` says what became of it.
            case accepted
            /// Written on a device's connection.
            case sent
            /// The device acknowledged it.
            case acked
            /// Events this watcher lost because it read too slowly (`count`).
            case dropped
        }
        var event: Kind
        var at: Int64
        /// `webpush` for Web Push traffic (the Web Push port, browsers); absent for APNs.
        var `protocol`: String?
        var apnsId: String?
        var topic: String?
        var token: String?
        var device: String?
        /// `accepted`: stored (the device is offline), delivering (it is connected) or discarded
        /// (already expired).
        var outcome: String?
        var status: Int?
        var reason: String?
        /// `refused`: why, when the gateway knows more than the reason says (which of the key id,
        /// team or key is wrong behind an `InvalidProviderToken`).
        var why: String?
        var count: Int?
    }

    /// A watcher: what it wants, and what waits to be written to it. Its writer (the admin
    /// port's `/v1/events` response) waits on ``wakes`` and then ``take()``s what piled up.
    final class Subscriber: Sendable {
        let topic: String?
        /// One element whenever events wait (several offers between two takes wake it once);
        /// finished when the feed closes.
        let wakes: AsyncStream<Void>
        private let wake: AsyncStream<Void>.Continuation
        private let pending = Locked((events: [Event](), dropped: 0))
        /// Events held for a watcher between two takes, at most.
        static let maximumPending = 10_000

        init(topic: String?) {
            self.topic = topic
            (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }

        func offer(_ event: Event) {
            if let topic, event.topic != topic { return }
            let held = pending.withLock { p -> Bool in
                if p.events.count >= Self.maximumPending {
                    p.dropped += 1
                    return false
                }
                p.events.append(event)
                return true
            }
            if held { wake.yield() }
        }

        /// What waits, and how many events were lost since the last take.
        func take() -> (events: [Event], dropped: Int) {
            pending.withLock { p in
                defer { p = ([], 0) }
                return (p.events, p.dropped)
            }
        }

        func finish() { wake.finish() }
    }

    private let watchers = Atomic<Int>(0)
    private let subscribers = Locked([ObjectIdentifier: Subscriber]())

    /// Whether anybody watches (checked before an event is even made).
    var isWatched: Bool { watchers.load(ordering: .relaxed) > 0 }

    func publish(_ make: () -> Event) {
        guard isWatched else { return }
        let event = make()
        for subscriber in subscribers.withLock({ Array($0.values) }) { subscriber.offer(event) }
    }

    func subscribe(_ subscriber: Subscriber) {
        subscribers.withLock { $0[ObjectIdentifier(subscriber)] = subscriber }
        watchers.add(1, ordering: .relaxed)
    }

    func unsubscribe(_ subscriber: Subscriber) {
        let removed = subscribers.withLock { $0.removeValue(forKey: ObjectIdentifier(subscriber)) != nil }
        if removed { watchers.subtract(1, ordering: .relaxed) }
        subscriber.finish()
    }

    /// Ends every watcher's stream (the admin port is closing).
    func closeAll() {
        for subscriber in subscribers.withLock({ Array($0.values) }) { unsubscribe(subscriber) }
    }
}
