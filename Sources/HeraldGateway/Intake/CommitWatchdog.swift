import HeraldCore
import NIOCore

/// Watches the one batch being committed and hands it over, once, when its commit outlives
/// `bound`: the intake answers it 503 while the commit goes on.
///
/// Whether a commit is stuck (`stalled`, which makes the intake refuse new pushes and `/health`
/// answer 503) is told under the same lock that marks the commit overdue and ends it: set when it
/// is marked, cleared when it returns. It once was set by the handover, after the lock: a commit
/// returning in between cleared the flag first, then the handover set it with no commit in
/// flight, and nothing cleared it again (every push 503 until a restart; issue 63, suspicion 1).
///
/// It wakes only for a deadline: it sleeps until the batch's commit is due, and while nothing is
/// being committed it waits for the next commit to begin. An idle gateway does not wake for it
/// (it once polled four times a second); a busy one wakes about once per `bound`, whatever its
/// batch rate; a stuck commit is caught at its deadline, not up to a poll later.
final class CommitWatchdog<Item: Sendable>: Sendable {
    /// A batch whose commit outlived the bound.
    struct Overdue {
        var batch: [Item]
        var startedAt: NIODeadline
    }

    private struct Committing {
        var batch: [Item]
        var startedAt: NIODeadline
        /// Whether it was handed over as overdue already.
        var overdue = false
    }

    private struct State {
        var current: Committing?
        /// The watchdog, waiting for a commit to begin.
        var waiter: CheckedContinuation<Void, Never>?
        var isStopped = false
    }

    private enum Next { case overdue(Overdue), sleep(TimeAmount), wait }

    private let state = Locked(State())
    let bound: TimeAmount
    /// Told, under the watchdog's lock, when the commit under way becomes overdue (its start) and
    /// when an overdue commit returns (nil).
    private let stalled: @Sendable (NIODeadline?) -> Void

    init(bound: TimeAmount, stalled: @escaping @Sendable (NIODeadline?) -> Void = { _ in }) {
        self.bound = bound
        self.stalled = stalled
    }

    /// A commit of `batch` begins now.
    func begin(_ batch: [Item], at startedAt: NIODeadline = .now()) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.current = Committing(batch: batch, startedAt: startedAt)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// The commit begun last has returned. Returns whether it was handed over as overdue already
    /// (its batch was answered 503).
    func end() -> Bool {
        state.withLock { state in
            defer { state.current = nil }
            let overdue = state.current?.overdue ?? false
            if overdue { stalled(nil) }
            return overdue
        }
    }

    /// Hands each commit that outlives the bound to `overdue`, once, until the task is cancelled.
    func run(_ overdue: (Overdue) -> Void) async {
        await withTaskCancellationHandler {
            while !Task.isCancelled {
                let now = NIODeadline.now()
                let next = state.withLock { state -> Next in
                    guard let current = state.current, !current.overdue else { return .wait }
                    let elapsed = now - current.startedAt
                    guard elapsed >= bound else { return .sleep(bound - elapsed) }
                    state.current?.overdue = true
                    stalled(current.startedAt)
                    return .overdue(Overdue(batch: current.batch, startedAt: current.startedAt))
                }
                switch next {
                case .overdue(let batch): overdue(batch)
                case .sleep(let wait): try? await Task.sleep(for: .nanoseconds(wait.nanoseconds))
                case .wait: await waitForCommit()
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.isStopped = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }

    /// Returns once a commit that is not overdue is under way, or the watchdog is stopped.
    private func waitForCommit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.isStopped || state.current.map({ !$0.overdue }) == true { return true }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
