import Foundation
import HeraldCore
import Synchronization

/// Failures an operator asks the gateway to answer on purpose, to see how a provider copes: the
/// next `count` pushes (to one topic, or any) are refused with a 429 or 5xx reason before they
/// are taken, exactly as APNs refuses when it is busy or down. Set on the admin port
/// (`POST /faults`, see docs/provider-api.md); off by default and free when off.
public final class GatewayFaults: Sendable {
    public struct Fault: Sendable, Hashable, Codable {
        /// `ServiceUnavailable`, `InternalServerError`, `Shutdown` or `TooManyRequests`.
        public var reason: String
        /// How many pushes still get it.
        public var count: Int
        /// Only pushes to this topic; all when nil.
        public var topic: String?
        public init(reason: String, count: Int, topic: String? = nil) { (self.reason, self.count, self.topic) = (reason, count, topic) }
    }

    /// The reasons a fault may answer: the ones APNs answers when busy or down.
    public static let allowedReasons: [APNsReason] = [.serviceUnavailable, .internalServerError, .shutdown, .tooManyRequests]

    /// What the gateway's clock is shifted by (a jump of the machine's clock, for chaos tests).
    private let clockOffset = Atomic<Int64>(0)
    /// The largest shift accepted either way: ten years.
    public static let maximumClockOffsetMilliseconds: Int64 = 10 * 366 * 86_400_000

    /// Shifts the gateway's wall clock by `milliseconds` from the machine's (0: none); returns
    /// what is wrong with it instead, if anything.
    public func shiftClock(byMilliseconds milliseconds: Int64) -> String? {
        guard abs(milliseconds) <= Self.maximumClockOffsetMilliseconds else {
            return "offset_ms must be within ±\(Self.maximumClockOffsetMilliseconds)"
        }
        clockOffset.store(milliseconds, ordering: .relaxed)
        return nil
    }

    public var clockOffsetMilliseconds: Int64 { clockOffset.load(ordering: .relaxed) }

    private let armed = Atomic<Int>(0)
    private let faults = Locked<[Fault]>([])

    public init() {}

    /// Adds a fault; returns what is wrong with it instead, if anything.
    public func inject(_ fault: Fault) -> String? {
        guard Self.allowedReasons.contains(where: { $0.rawValue == fault.reason }) else {
            return "reason must be one of \(Self.allowedReasons.map(\.rawValue).joined(separator: ", "))"
        }
        guard fault.count > 0 else { return "count must be 1 or more" }
        faults.withLock { list in
            list.append(fault)
            armed.store(list.count, ordering: .releasing)
        }
        return nil
    }

    public var pending: [Fault] { faults.withLock { $0 } }

    public func clear() {
        faults.withLock { list in
            list.removeAll()
            armed.store(0, ordering: .releasing)
        }
    }

    /// The rejection the next push to `topic` gets, if a fault is armed for it (and counts it).
    func take(topic: String) -> APNsRejection? {
        guard armed.load(ordering: .acquiring) > 0 else { return nil }
        return faults.withLock { list in
            guard let index = list.firstIndex(where: { $0.topic == nil || $0.topic == topic }) else { return nil }
            let reason = APNsReason(rawValue: list[index].reason)
            list[index].count -= 1
            if list[index].count == 0 { list.remove(at: index) }
            armed.store(list.count, ordering: .releasing)
            return APNsRejection(reason)
        }
    }
}

/// The gateway's clock when fault injection is on: the real one, shifted by what an operator set
/// on the admin port (`POST /faults/clock`), to see how a cluster copes with a clock that jumps.
struct ShiftedWallClock: WallClock {
    let base: any WallClock
    let faults: GatewayFaults
    func nowMilliseconds() -> Int64 { base.nowMilliseconds() &+ faults.clockOffsetMilliseconds }
}
