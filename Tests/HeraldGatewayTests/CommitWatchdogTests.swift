import HeraldCore
import NIOCore
import Testing

@testable import HeraldGateway

@Suite("The intake's commit watchdog")
struct CommitWatchdogTests {
    /// Collects what the watchdog hands over, and lets a test wait for the n-th.
    private final class Handed: Sendable {
        private struct State {
            var batches: [[Int]] = []
            var waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?
        }

        private let state = Locked(State())

        func append(_ batch: [Int]) {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.batches.append(batch)
                guard let waiter = state.waiter, state.batches.count >= waiter.count else { return nil }
                state.waiter = nil
                return waiter.continuation
            }
            waiter?.resume()
        }

        func wait(for count: Int) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.batches.count >= count { return true }
                    state.waiter = (count, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }

        var batches: [[Int]] { state.withLock { $0.batches } }
    }

    @Test("a commit past the bound is handed over once, at its deadline; one that returned in time never is")
    func overdueOnce() async throws {
        let watchdog = CommitWatchdog<Int>(bound: .milliseconds(50))
        let handed = Handed()
        let running = Task { await watchdog.run { handed.append($0.batch) } }
        // In time: begun and ended long before its deadline (its start is now).
        watchdog.begin([1])
        #expect(watchdog.end() == false)
        // Begun a second before now: overdue at once.
        watchdog.begin([2, 3], at: .now() - .seconds(1))
        await handed.wait(for: 1)
        #expect(watchdog.end() == true, "the commit that returns learns its batch was answered already")
        // Overdue at its deadline, 50 ms on; handed over once however long it stays stuck.
        let started = NIODeadline.now()
        watchdog.begin([4])
        await handed.wait(for: 2)
        #expect(NIODeadline.now() - started >= .milliseconds(50))
        #expect(watchdog.end() == true)
        running.cancel()
        await running.value
        #expect(handed.batches == [[2, 3], [4]])
    }

    @Test("a watchdog with nothing to watch waits without waking, and stops when cancelled")
    func idleStops() async {
        let watchdog = CommitWatchdog<Int>(bound: .seconds(60))
        let running = Task { await watchdog.run { _ in Issue.record("nothing was overdue") } }
        watchdog.begin([1])
        #expect(watchdog.end() == false)
        running.cancel()
        await running.value
        // Cancelled before it ever ran: it returns at once too.
        let never = Task { await watchdog.run { _ in } }
        never.cancel()
        await never.value
    }

    @Test("a commit that returns between being marked overdue and being handed over leaves no stall behind (issue 63, suspicion 1)")
    func stallEndsWithItsCommit() async {
        // The health the intake gives the watchdog: the stall's start, or nil.
        let health = GatewayHealth()
        let watchdog = CommitWatchdog<Int>(bound: .milliseconds(10)) { since in
            if let since { health.storeStalled(since: since) } else { health.storeAnswered() }
        }
        let handed = Handed()
        let sawStall = Locked(false)
        // The interleaving forced: the commit returns after the watchdog marked it overdue and
        // before the handover runs (the handover is where the stall was once set).
        let running = Task {
            await watchdog.run { overdue in
                sawStall.withLock { $0 = health.isStoreStalled }
                #expect(watchdog.end() == true, "the commit learns it was answered already")
                handed.append(overdue.batch)
            }
        }
        watchdog.begin([1], at: .now() - .seconds(1))
        await handed.wait(for: 1)
        #expect(sawStall.withLock { $0 }, "the stall is visible as soon as the commit is marked overdue")
        #expect(!health.isStoreStalled, "no commit is in flight: nothing may refuse pushes")
        // A later stuck commit still reports, and its return clears it.
        watchdog.begin([2], at: .now() - .seconds(1))
        await handed.wait(for: 2)
        running.cancel()
        await running.value
        #expect(!health.isStoreStalled)
        // Stuck until after the handover: stalled meanwhile, cleared by its return.
        let later = Handed()
        watchdog.begin([3], at: .now() - .seconds(1))
        let late = Task { await watchdog.run { later.append($0.batch) } }
        await later.wait(for: 1)
        #expect(health.isStoreStalled)
        #expect(watchdog.end() == true)
        #expect(!health.isStoreStalled)
        late.cancel()
        await late.value
    }
}
