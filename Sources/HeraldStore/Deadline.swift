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
/// hold the caller past its bound. For cold paths (look-ups, health checks, lease renewals):
/// each call starts two tasks.
public func withDeadline<T: Sendable>(
    _ timeout: TimeAmount, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let waiting = Locked<CheckedContinuation<T, any Error>?>(nil)
    let timer = Locked<Task<Void, Never>?>(nil)
    return try await withCheckedThrowingContinuation { continuation in
        waiting.withLock { $0 = continuation }
        let work = Task {
            let result: Result<T, any Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            waiting.withLock { $0.take() }?.resume(with: result)
            timer.withLock { $0?.cancel() }
        }
        let sleeper = Task {
            try? await Task.sleep(for: .nanoseconds(timeout.nanoseconds))
            guard !Task.isCancelled, let continuation = waiting.withLock({ $0.take() }) else { return }
            continuation.resume(throwing: DeadlineExceeded(timeout: timeout))
            work.cancel()
        }
        timer.withLock { $0 = sleeper }
        // The work may have finished before the timer was stored.
        if waiting.withLock({ $0 == nil }) { sleeper.cancel() }
    }
}
