import HeraldCore

/// A completion handler the runtime gives an app: the app must call it once, within its time
/// limit. Called in time, the runtime goes on with the value; not called by the deadline, the
/// runtime goes on with its fallback and reports a contract violation (as iOS does when an app
/// never calls a handler); called again or too late, the call is reported and ignored.
public final class CallbackHandler<Value: Sendable>: Sendable {
    public enum Outcome: Sendable {
        case answered(Value)
        case timedOut(fallback: Value)
    }

    private struct State {
        var done = false
        var alarm: ClockAlarm?
    }
    private let state = Locked(State())
    private let then: @Sendable (Outcome) -> Void
    private let misuse: @Sendable (String) -> Void
    /// What the handler is for, in the violation reports ("the action handler of …").
    public let purpose: String

    init(
        purpose: String, clock: AlarmClock, limitMilliseconds: Int64, fallback: Value,
        misuse: @escaping @Sendable (String) -> Void, then: @escaping @Sendable (Outcome) -> Void
    ) {
        self.purpose = purpose
        self.then = then
        self.misuse = misuse
        // The alarm holds the handler until it rings or the handler is answered (which cancels
        // it): an app that drops the handler without calling it is still caught.
        let alarm = clock.setAlarm(at: clock.nowMilliseconds() + limitMilliseconds) {
            self.finish(.timedOut(fallback: fallback), late: nil)
        }
        state.withLock { $0.alarm = alarm }
    }

    /// Answers.
    public func callAsFunction(_ value: Value) { finish(.answered(value), late: "\(purpose) was called more than once, or after its time ran out") }

    private func finish(_ outcome: Outcome, late: String?) {
        let (first, alarm) = state.withLock { s -> (Bool, ClockAlarm?) in
            defer { s.done = true; s.alarm = nil }
            return (!s.done, s.alarm)
        }
        guard first else {
            if let late { misuse(late) }
            return
        }
        alarm?.cancel()
        then(outcome)
    }

    /// Whether it has been answered or has timed out.
    public var isDone: Bool { state.withLock { $0.done } }
}

extension CallbackHandler where Value == Void {
    public func callAsFunction() { self(()) }
}
