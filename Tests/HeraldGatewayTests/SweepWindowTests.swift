@testable import HeraldGateway
import Testing

/// Which sequence numbers a cluster node's sweep reads at each look: a window of the two intervals
/// before the previous look, and now and then everything.
@Suite("Sweep window")
struct SweepWindowTests {
    @Test("nothing before the first look's numbers; everything at the first looks; then two intervals, each number read twice")
    func windows() {
        var window = SweepWindow(fullEvery: 30)
        #expect(window.look(newest: 0) == nil, "nothing was ever stored")
        #expect(window.look(newest: 100) == nil, "nothing was stored before the previous look")
        #expect(window.look(newest: 250)! == (0, 100), "the first looks read everything before the previous look")
        #expect(window.look(newest: 400)! == (0, 250))
        #expect(window.look(newest: 500)! == (100, 400), "two intervals before the previous look: 101…400")
        #expect(window.look(newest: 500)! == (250, 500))
        #expect(window.look(newest: 700)! == (400, 500), "a quiet interval narrows the window, never skips a number")
        #expect(window.look(newest: 800)! == (500, 700))
    }

    @Test("a range the sweep could not read is read by the next looks, not left to the full sweep (issue 63, suspicion 2)")
    func unreadRanges() {
        var window = SweepWindow(fullEvery: 30)
        for newest: Int64 in [100, 250, 400] { _ = window.look(newest: newest) }
        let failed = window.look(newest: 500)!
        #expect(failed == (100, 400))
        window.unread(failed)
        // The database came back: later looks start at the unread floor until one is read.
        let next = window.look(newest: 600)!
        #expect(next == (100, 500), "the unread 101…250 is read again, with the usual window")
        window.unread(next)
        let third = window.look(newest: 700)!
        #expect(third == (100, 600))
        window.read(third)
        #expect(window.look(newest: 800)! == (500, 700), "read: the window is back to two intervals")
        // Before the fix, the window moved on: the look after a failed one started at 250.
    }

    @Test("a quiet cluster's looks read nothing until the next full look")
    func quiet() {
        var window = SweepWindow(fullEvery: 5)
        var ranges: [String] = []
        for newest: Int64 in [100, 200, 300, 300, 300, 300, 300, 300, 300, 300, 400] {
            ranges.append(window.look(newest: newest).map { "\($0.above)-\($0.atMost)" } ?? "-")
        }
        // Look 0 has nothing before it; 1 and 2 (too few looks for a window), 5 and 10 are full;
        // 3 and 4 read the last numbers twice; 6…9 have no number in their window.
        #expect(ranges == ["-", "0-100", "0-200", "100-300", "200-300", "0-300", "-", "-", "-", "-", "0-300"])
    }

    @Test("every fullEvery-th look reads from 0")
    func fullSweeps() {
        var window = SweepWindow(fullEvery: 4)
        var floors: [Int64] = []
        for look in 1...12 {
            if let range = window.look(newest: Int64(look) * 10) { floors.append(range.above) }
        }
        // The first look has nothing before it; the next two have too few looks for a window;
        // looks 4 and 8 are full.
        #expect(floors == [0, 0, 10, 0, 30, 40, 50, 0, 70, 80, 90])
    }

    @Test("the full sweep's interval in looks, from the two intervals")
    func fullEveryFromIntervals() {
        #expect(SweepWindow(sweepMilliseconds: 2_000, fullSweepMilliseconds: 60_000).fullEvery == 30)
        #expect(SweepWindow(sweepMilliseconds: 2_000, fullSweepMilliseconds: 3_000).fullEvery == 1)
        #expect(SweepWindow(sweepMilliseconds: 5_000, fullSweepMilliseconds: 2_000).fullEvery == 1, "a full interval shorter than a sweep's: every look is full")
        #expect(SweepWindow(sweepMilliseconds: 0, fullSweepMilliseconds: 60_000).fullEvery == 60_000)
    }
}

/// When a cluster node claims its devices' presence again after its record was reaped.
@Suite("Heal schedule")
struct HealScheduleTests {
    @Test("a heal that failed is tried at every renewal until one succeeds (issue 63, suspicion 4)")
    func retried() {
        var schedule = HealSchedule()
        var heal: Bool
        heal = schedule.renewed(continued: true, wasFenced: false)
        #expect(!heal, "a renewal of a live record: nothing to heal")
        // The renewal that finds the record reaped (and re-inserts it) is the only one to say so.
        heal = schedule.renewed(continued: false, wasFenced: false)
        #expect(heal)
        schedule.healed(false)
        heal = schedule.renewed(continued: true, wasFenced: false)
        #expect(heal, "the next renewal says `continued`: heals again all the same")
        schedule.healed(false)
        heal = schedule.renewed(continued: true, wasFenced: false)
        #expect(heal)
        schedule.healed(true)
        heal = schedule.renewed(continued: true, wasFenced: false)
        #expect(!heal, "healed: renewals go back to renewing")
        heal = schedule.renewed(continued: true, wasFenced: true)
        #expect(heal, "a lapse of the lease heals too")
        schedule.healed(true)
        #expect(!schedule.pending)
    }
}
