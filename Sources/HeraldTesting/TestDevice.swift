import Foundation
import HeraldCore
import HeraldDevice

/// A device runtime's connection in a test: its events are collected as they come, and the test
/// waits for the ones it expects (with a generous real-time bound, so a missing event fails the
/// test instead of hanging it).
public final class TestDevice: Sendable {
    public let connection: DeviceConnection
    private let events = Locked<[DeviceEvent]>([])
    private let consumed = Locked(0)
    private let task: Task<Void, Never>
    private let collector: Task<Void, Never>

    public struct Timeout: Error, CustomStringConvertible {
        public var description: String
    }

    init(connection: DeviceConnection) {
        self.connection = connection
        task = Task { await connection.run() }
        let events = self.events
        collector = Task {
            for await event in connection.events { events.withLock { $0.append(event) } }
        }
    }

    /// Every event so far.
    public var allEvents: [DeviceEvent] { events.withLock { $0 } }

    /// The next event (after those already taken) that `match` accepts; events before it are skipped.
    public func next<T: Sendable>(
        timeout: Duration = .seconds(15), _ what: String = "event", _ match: @escaping (DeviceEvent) -> T?
    ) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let found = events.withLock { events -> T? in
                consumed.withLock { index in
                    while index < events.count {
                        defer { index += 1 }
                        if let value = match(events[index]) { return value }
                    }
                    return nil
                }
            }
            if let found { return found }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw Timeout(description: "no \(what) within \(timeout); events: \(allEvents)")
    }

    /// The token the gateway gives `topic` (next `registered` event for it).
    public func token(for topic: String = "com.example.app") async throws -> DeviceToken {
        try await next("registered \(topic)") { event in
            if case .frame(.registered(topic, let token)) = event { return token }
            return nil
        }
    }

    public func notification() async throws -> DeviceNotification {
        try await next("notification") { event in
            if case .frame(.notification(let n)) = event { return n }
            return nil
        }
    }

    /// Waits `duration` and returns the notifications that arrived meanwhile (none, when testing
    /// that something never arrives).
    public func notifications(arrivingWithin duration: Duration) async throws -> [DeviceNotification] {
        try await Task.sleep(for: duration)
        return events.withLock { events -> [DeviceNotification] in
            consumed.withLock { index in
                defer { index = events.count }
                return events[index...].compactMap { if case .frame(.notification(let n)) = $0 { return n } else { return nil } }
            }
        }
    }

    public func stop() async {
        task.cancel()
        await task.value
        await collector.value
    }
}
