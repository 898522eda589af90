import HeraldCore
import NIOCore

/// Work on the store that did not finish within its bound (``withDeadline(_:_:)``).
public struct DeadlineExceeded: Error, CustomStringConvertible {
    public var timeout: TimeAmount
    public init(timeout: TimeAmount) { self.timeout = timeout }
    public var description: String { "the store did not answer within \(timeout.nanoseconds / 1_000_000) ms" }
}

/// Runs `operation` and returns its result, or throws ``DeadlineExceeded`` once `timeout` has
/// passed, whichever comes first. On the deadline the operation is cancelled but not waited for:
/// a database client that does not honour cancellation (a pool waiting for a connection) cannot
/// hold the caller past its bound, and a caller that is cancelled (shutdown) returns at once with
/// `CancellationError`. For cold paths (look-ups, health checks, lease renewals): each call
/// starts two tasks.
public func withDeadline<T: Sendable>(
    _ timeout: TimeAmount, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let waiting = Locked<CheckedContinuation<T, any Error>?>(nil)
    let timer = Locked<Task<Void, Never>?>(nil)
    let worker = Locked<Task<Void, Never>?>(nil)
    // The caller cancelled (a shutdown): it returns at once with CancellationError, as at the
    // deadline, and the operation is cancelled, not waited for.
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            waiting.withLock { $0 = continuation }
            let work = Task {
                let result: Result<T, any Error>
                do { result = .success(try await operation()) } catch { result = .failure(error) }
                waiting.withLock { $0.take() }?.resume(with: result)
                timer.withLock { $0?.cancel() }
            }
            worker.withLock { $0 = work }
            let sleeper = Task {
                try? await Task.sleep(for: .nanoseconds(timeout.nanoseconds))
                guard !Task.isCancelled, let continuation = waiting.withLock({ $0.take() }) else { return }
                continuation.resume(throwing: DeadlineExceeded(timeout: timeout))
                work.cancel()
            }
            timer.withLock { $0 = sleeper }
            // The work may have finished before the timer was stored; the caller may have been
            // cancelled before the continuation was.
            if waiting.withLock({ $0 == nil }) { sleeper.cancel() }
            if Task.isCancelled, let continuation = waiting.withLock({ $0.take() }) {
                continuation.resume(throwing: CancellationError())
                work.cancel()
                sleeper.cancel()
            }
        }
    } onCancel: {
        waiting.withLock { $0.take() }?.resume(throwing: CancellationError())
        worker.withLock { $0 }?.cancel()
        timer.withLock { $0 }?.cancel()
    }
}

/// One operation at a time, whose callers each wait with a deadline of their own: a caller that
/// gives up (``DeadlineExceeded``) leaves the operation running, and the next caller joins it
/// instead of starting another. For probes and renewals polled on a timer or by clients:
/// however often they are asked for, the store sees at most one in flight. A caller's deadline
/// does not stop its query: ``withDeadline(_:_:)`` returns without waiting, and PostgresNIO
/// (1.33) runs a query to its end whether or not the task awaiting it is cancelled. Without
/// this, a store slower than the bound would be sent one more query at every call, each holding
/// a pooled connection, and get slower still. Only an operation still running after
/// `abandonAfter` is given up (its task cancelled and not waited for, and the next caller starts
/// another): a query stuck on a dead connection (a partition) must not hold every later caller.
public final class SingleFlight<Value: Sendable>: Sendable {
    private let state = Locked<(number: Int, task: Task<Result<Value, any Error>, Never>?)>((0, nil))
    private let abandonAfter: TimeAmount

    public init(abandonAfter: TimeAmount = .seconds(10)) {
        self.abandonAfter = abandonAfter
    }

    /// Whether an operation is under way (one the next caller would join).
    public var isInFlight: Bool { state.withLock { $0.task != nil } }

    /// The result of the operation under way, or of `operation` started now, within `timeout`.
    public func run(within timeout: TimeAmount, _ operation: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let flight = state, abandonAfter = self.abandonAfter
        let shared = flight.withLock { current -> Task<Result<Value, any Error>, Never> in
            if let running = current.task { return running }
            current.number &+= 1
            let number = current.number
            let made = Task { () -> Result<Value, any Error> in
                let result: Result<Value, any Error>
                do { result = .success(try await withDeadline(abandonAfter, operation)) } catch { result = .failure(error) }
                flight.withLock { if $0.number == number { $0.task = nil } }
                return result
            }
            current.task = made
            return made
        }
        // Only the waiter is cancelled on the deadline; awaiting the shared task ignores it.
        return try await withDeadline(timeout) { try await shared.value.get() }
    }
}
