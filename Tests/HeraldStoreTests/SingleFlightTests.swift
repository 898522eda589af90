import HeraldCore
import HeraldStore
import NIOCore
import Synchronization
import Testing

/// A probe or renewal slower than its callers' bounds: one in flight, joined, never cancelled at
/// a caller's bound (only past `abandonAfter`).
@Suite("SingleFlight: one operation in flight, callers bounded")
struct SingleFlightTests {
    /// An operation that waits for `release`, counting its starts and how it ended.
    final class Gate: Sendable {
        let starts = Atomic<Int>(0)
        let cancelled = Atomic<Int>(0)
        let release = AsyncStream<Void>.makeStream()

        func operation() async throws -> Int {
            let number = starts.add(1, ordering: .relaxed).newValue
            for await _ in release.stream { break }
            if Task.isCancelled { cancelled.add(1, ordering: .relaxed); throw CancellationError() }
            return number
        }
    }

    @Test("callers past their bound leave the operation running; the next caller joins it and gets its result")
    func joined() async throws {
        let flight = SingleFlight<Int>(abandonAfter: .seconds(30))
        let gate = Gate()
        for _ in 0..<5 {
            await #expect(throws: DeadlineExceeded.self) { try await flight.run(within: .milliseconds(20)) { try await gate.operation() } }
        }
        #expect(gate.starts.load(ordering: .relaxed) == 1, "five callers, one operation")
        async let joined = flight.run(within: .seconds(10)) { try await gate.operation() }
        try await Task.sleep(for: .milliseconds(50))
        gate.release.continuation.yield()
        #expect(try await joined == 1)
        #expect(gate.cancelled.load(ordering: .relaxed) == 0, "never cancelled at a caller's bound")
        // Finished: the next call starts a new one.
        gate.release.continuation.yield()
        #expect(try await flight.run(within: .seconds(10)) { try await gate.operation() } == 2)
    }

    @Test("an operation still running after abandonAfter is cancelled, and the next caller starts afresh")
    func abandoned() async throws {
        let flight = SingleFlight<Int>(abandonAfter: .milliseconds(100))
        let stuck = Gate()
        await #expect(throws: DeadlineExceeded.self) { try await flight.run(within: .seconds(5)) { try await stuck.operation() } }
        // The barrier: the stuck operation has been given up (on a starved machine the caller's
        // own bound may come first; the next caller must still find it abandoned, not join it).
        let deadline = ContinuousClock.now + .seconds(30)
        while flight.isInFlight, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(!flight.isInFlight, "abandoned after abandonAfter")
        let fresh = Gate()
        fresh.release.continuation.yield()
        #expect(try await flight.run(within: .seconds(5)) { try await fresh.operation() } == 1)
        #expect(stuck.starts.load(ordering: .relaxed) == 1)
    }
}

/// `withDeadline` on an operation that never answers (a connection caught in a database failover).
@Suite("withDeadline: bounded, and ended by the caller's cancellation")
struct DeadlineTests {
    @Test("a caller cancelled while the store does not answer returns at once with CancellationError, far before the deadline; the operation is cancelled")
    func cancelledCaller() async throws {
        let gate = SingleFlightTests.Gate()
        let caller = Task { () -> String in
            do {
                _ = try await withDeadline(.seconds(3600)) { try await gate.operation() }
                return "answered"
            } catch is CancellationError {
                return "cancelled"
            } catch {
                return "\(error)"
            }
        }
        // The operation has started (a barrier, not a sleep), then the caller is cancelled.
        while gate.starts.load(ordering: .relaxed) == 0 { await Task.yield() }
        caller.cancel()
        #expect(await caller.value == "cancelled")
        // The abandoned operation was cancelled: released, it sees the cancellation.
        gate.release.continuation.yield()
        while gate.cancelled.load(ordering: .relaxed) == 0 { await Task.yield() }
    }

    @Test("a caller already cancelled returns at once; a deadline passed throws DeadlineExceeded")
    func alreadyCancelledAndDeadline() async throws {
        let gate = SingleFlightTests.Gate()
        let caller = Task { () -> Bool in
            withUnsafeCurrentTask { $0?.cancel() }
            do { _ = try await withDeadline(.seconds(3600)) { try await gate.operation() } } catch is CancellationError { return true } catch {}
            return false
        }
        #expect(await caller.value)
        let slow = SingleFlightTests.Gate()
        await #expect(throws: DeadlineExceeded.self) { try await withDeadline(.milliseconds(20)) { try await slow.operation() } }
        slow.release.continuation.finish()
    }
}
