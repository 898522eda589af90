import Foundation
import Synchronization

/// Time for components that act at instants (the device runtime's notification center, the
/// provider's schedules): the current instant, and alarms that call back when the clock reaches
/// an instant. Users arm one alarm for their soonest due time and sleep until it rings (they
/// never poll). ``SystemAlarmClock`` follows the machine's clock; ``SimulatedAlarmClock`` stands
/// still until tests or benchmarks move it.
public protocol AlarmClock: WallClock {
    /// Calls `action` once when the clock reaches `deadline` (milliseconds since 1970), at once
    /// if it has already. Cancelling the returned alarm before it rings means it never rings.
    func setAlarm(at deadline: Int64, _ action: @escaping @Sendable () -> Void) -> ClockAlarm
}

/// An armed alarm of a ``AlarmClock``.
public final class ClockAlarm: Sendable {
    public let deadline: Int64
    private let state = Mutex<(cancelled: Bool, cancel: (@Sendable () -> Void)?)>((false, nil))

    public init(deadline: Int64) { self.deadline = deadline }

    /// Stops the alarm; it will not ring (if it is ringing right now, it finishes).
    public func cancel() {
        let cancel = state.withLock { s -> (@Sendable () -> Void)? in
            s.cancelled = true
            defer { s.cancel = nil }
            return s.cancel
        }
        cancel?()
    }

    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Runs `action` when the alarm is cancelled (at once if it already was).
    public func onCancel(_ action: @escaping @Sendable () -> Void) {
        let already = state.withLock { s -> Bool in
            if !s.cancelled { s.cancel = action }
            return s.cancelled
        }
        if already { action() }
    }
}

/// The machine's clock. An alarm sleeps a task for the remaining time and checks the clock again
/// when it wakes (the wall clock may have been set while it slept).
public struct SystemAlarmClock: AlarmClock {
    private let wall = SystemWallClock()
    public init() {}

    public func nowMilliseconds() -> Int64 { wall.nowMilliseconds() }

    public func setAlarm(at deadline: Int64, _ action: @escaping @Sendable () -> Void) -> ClockAlarm {
        let alarm = ClockAlarm(deadline: deadline)
        let wall = self.wall
        let task = Task {
            while !Task.isCancelled {
                let remaining = deadline - wall.nowMilliseconds()
                if remaining <= 0 { break }
                try? await Task.sleep(for: .milliseconds(remaining))
            }
            if !Task.isCancelled && !alarm.isCancelled { action() }
        }
        alarm.onCancel { task.cancel() }
        return alarm
    }
}

/// A clock that stands still until ``advance(to:)`` moves it. Alarms ring in deadline order
/// during `advance`, each with the clock reading exactly its deadline. Counts what was armed and
/// what rang, so a benchmark can show that the runtime slept between due times.
public final class SimulatedAlarmClock: AlarmClock, Sendable {
    private struct State {
        var now: Int64
        var alarms: [(alarm: ClockAlarm, action: @Sendable () -> Void, sequence: Int)] = []
        var sequence = 0
        var armed = 0
        var rung = 0
    }
    private let state: Mutex<State>

    /// Starts at `startMilliseconds` (by default 2026-11-21T12:00:00Z).
    public init(startMilliseconds: Int64 = 1_795_262_400_000) {
        state = Mutex(State(now: startMilliseconds))
    }

    public func nowMilliseconds() -> Int64 { state.withLock { $0.now } }

    /// How many alarms were armed and how many rang.
    public var alarmCounts: (armed: Int, rung: Int) { state.withLock { ($0.armed, $0.rung) } }

    /// The soonest armed alarm's deadline.
    public var nextAlarm: Int64? {
        state.withLock { s in s.alarms.filter { !$0.alarm.isCancelled }.map(\.alarm.deadline).min() }
    }

    public func setAlarm(at deadline: Int64, _ action: @escaping @Sendable () -> Void) -> ClockAlarm {
        let alarm = ClockAlarm(deadline: deadline)
        let ringNow = state.withLock { s -> Bool in
            s.armed += 1
            if deadline <= s.now { s.rung += 1; return true }
            s.sequence += 1
            s.alarms.append((alarm, action, s.sequence))
            return false
        }
        if ringNow { action() } else {
            alarm.onCancel { [weak self] in self?.state.withLock { s in s.alarms.removeAll { $0.alarm === alarm } } }
        }
        return alarm
    }

    /// Moves the clock forward to `instant`, ringing every alarm due on the way, in order.
    public func advance(to instant: Int64) {
        while true {
            let next = state.withLock { s -> (@Sendable () -> Void)? in
                guard let index = s.alarms.indices.filter({ s.alarms[$0].alarm.deadline <= instant })
                    .min(by: { (s.alarms[$0].alarm.deadline, s.alarms[$0].sequence) < (s.alarms[$1].alarm.deadline, s.alarms[$1].sequence) })
                else {
                    s.now = max(s.now, instant)
                    return nil
                }
                let entry = s.alarms.remove(at: index)
                s.now = max(s.now, entry.alarm.deadline)
                s.rung += 1
                return entry.action
            }
            guard let next else { return }
            next()
        }
    }

    public func advance(milliseconds: Int64) { advance(to: nowMilliseconds() + milliseconds) }
    public func advance(seconds: Int64) { advance(milliseconds: seconds * 1000) }
}

extension SimulatedAlarmClock {
    /// Moves the clock to `instant` alarm by alarm, letting the work each alarm started finish
    /// (`settling`) before the next one rings — how tests and benchmarks drive a component that
    /// acts on alarms.
    public func advance(to instant: Int64, settling settle: () async -> Void) async {
        await settle()
        while let next = nextAlarm, next <= instant {
            advance(to: next)
            await settle()
        }
        advance(to: instant)
        await settle()
    }
}

/// Tasks a component started (from alarms and other callbacks), so that it can wait until they
/// have all finished.
public final class WorkTracker: Sendable {
    private let tasks = Mutex<(next: Int, running: [Int: Task<Void, Never>])>((0, [:]))

    public init() {}

    public func spawn(_ body: @escaping @Sendable () async -> Void) {
        tasks.withLock { state in
            let id = state.next
            state.next += 1
            state.running[id] = Task {
                await body()
                self.tasks.withLock { _ = $0.running.removeValue(forKey: id) }
            }
        }
    }

    /// Returns when no task it started is running (including tasks started while waiting).
    public func settle() async {
        while let task = tasks.withLock({ $0.running.values.first }) { await task.value }
    }
}
