import NIOCore

/// The keepalive deadlines of one event loop's connections, kept to the tick (a second): one
/// timer for the loop where there was one per connection.
///
/// A ``KeepaliveHandler`` files itself under the tick its deadline falls in, rounded up (never
/// early, at most a tick late), and is told when that tick has passed. Filing, moving and
/// withdrawing a handler take constant time; a tick costs what is due in it. The loop's timer is
/// set for the next tick that holds anything, and not at all while nothing is filed.
///
/// Why: with one NIO timer per connection, each ping paid two operations on the loop's heap of
/// scheduled tasks (thousands deep, each swap retaining a task), and woke the loop on its own.
/// Here the pings that fall in one second go out in one wake-up, and their pongs come back
/// together (docs/benchmarks.md, "A timer per loop, not per connection").
///
/// Confined to its event loop, like the handlers it holds.
final class KeepaliveWheel {
    let eventLoop: EventLoop
    private let tickNanoseconds: Int64
    /// Slot `t % slots.count` holds the handlers due at tick `t`, and those due a whole number of
    /// turns later (they stay until their tick comes round).
    private var slots: [[KeepaliveHandler]]
    /// The first tick not yet run.
    private var nextTick: Int64 = 0
    private var filed = 0
    private var timer: Scheduled<Void>?
    private var timerTick: Int64 = .max
    /// Set while a tick tells its handlers: what they file then is timed once they are done.
    private var running = false

    /// Where a filed handler is: its slot, its index there, and the tick it is due at.
    struct Place {
        var slot: Int
        var index: Int
        var tick: Int64
    }

    /// - Parameters:
    ///   - tick: how finely deadlines are kept.
    ///   - slots: ticks in one turn; a deadline further out waits in its slot for a turn or more.
    init(eventLoop: EventLoop, tick: TimeAmount = .seconds(1), slots: Int = 4_096) {
        precondition(tick.nanoseconds > 0 && slots > 0)
        self.eventLoop = eventLoop
        self.tickNanoseconds = tick.nanoseconds
        self.slots = Array(repeating: [], count: slots)
    }

    /// Handlers filed (for tests).
    var count: Int { filed }

    /// Files `handler` to be told at its deadline, moving it if it was filed already.
    func file(_ handler: KeepaliveHandler, due deadline: NIODeadline) {
        eventLoop.assertInEventLoop()
        withdraw(handler)
        if filed == 0, timer == nil { nextTick = max(nextTick, tick(atOrAfter: eventLoop.now)) }
        let due = max(tick(atOrAfter: deadline), nextTick)
        let slot = Int(due % Int64(slots.count))
        handler.wheelPlace = .init(slot: slot, index: slots[slot].count, tick: due)
        slots[slot].append(handler)
        filed += 1
        if !running, due < timerTick { setTimer(for: due) }
    }

    /// Takes `handler` out, if it is filed.
    func withdraw(_ handler: KeepaliveHandler) {
        eventLoop.assertInEventLoop()
        guard let place = handler.wheelPlace else { return }
        remove(handler, at: place)
    }

    /// Takes `handler` out of its slot: the slot's last handler moves into its place.
    private func remove(_ handler: KeepaliveHandler, at place: Place) {
        handler.wheelPlace = nil
        let last = slots[place.slot].removeLast()
        if last !== handler {
            slots[place.slot][place.index] = last
            last.wheelPlace?.index = place.index
        }
        filed -= 1
    }

    private func tick(atOrAfter deadline: NIODeadline) -> Int64 {
        let nanoseconds = Int64(clamping: deadline.uptimeNanoseconds)
        return nanoseconds / tickNanoseconds + (nanoseconds % tickNanoseconds == 0 ? 0 : 1)
    }

    private func setTimer(for tick: Int64) {
        timer?.cancel()
        timerTick = tick
        let (deadline, overflow) = tick.multipliedReportingOverflow(by: tickNanoseconds)
        timer = eventLoop.assumeIsolated().scheduleTask(deadline: .uptimeNanoseconds(UInt64(overflow ? .max : deadline))) { [self] in
            run()
        }
    }

    /// Runs every tick that has passed: takes out what is due in them, then tells each.
    private func run() {
        timer = nil
        timerTick = .max
        let now = eventLoop.now.uptimeNanoseconds
        let passed = Int64(clamping: now) / tickNanoseconds
        var due: [KeepaliveHandler] = []
        if nextTick <= passed {
            // One turn at most: a slot visited once gives up everything due by `passed`.
            let end = min(passed, nextTick + Int64(slots.count) - 1)
            var tick = nextTick
            while tick <= end {
                takeDue(slot: Int(tick % Int64(slots.count)), by: passed, into: &due)
                tick += 1
            }
            nextTick = passed + 1
        }
        running = true
        for handler in due { handler.keepaliveDue() }
        running = false
        if filed > 0, let next = nextOccupiedTick() { setTimer(for: next) }
    }

    private func takeDue(slot: Int, by passed: Int64, into due: inout [KeepaliveHandler]) {
        // From the end, so that the handler moved into a taken one's place was looked at already.
        var index = slots[slot].count - 1
        while index >= 0 {
            let handler = slots[slot][index]
            if let place = handler.wheelPlace, place.tick <= passed {
                remove(handler, at: place)
                due.append(handler)
            }
            index -= 1
        }
    }

    /// The first tick from `nextTick` whose slot holds a handler (due then or a turn later).
    private func nextOccupiedTick() -> Int64? {
        var tick = nextTick
        for _ in 0..<slots.count {
            if !slots[Int(tick % Int64(slots.count))].isEmpty { return tick }
            tick += 1
        }
        return nil
    }
}

/// One ``KeepaliveWheel`` for each event loop of a group, made on the loop when first asked for.
final class KeepaliveWheels: Sendable {
    private let wheels: [ObjectIdentifier: NIOLoopBoundBox<KeepaliveWheel?>]

    init(group: EventLoopGroup) {
        var wheels: [ObjectIdentifier: NIOLoopBoundBox<KeepaliveWheel?>] = [:]
        for loop in group.makeIterator() {
            wheels[ObjectIdentifier(loop)] = .makeEmptyBox(valueType: KeepaliveWheel.self, eventLoop: loop)
        }
        self.wheels = wheels
    }

    /// The wheel of `loop`, called on it. A loop outside the group gets a wheel of its own.
    func wheel(on loop: EventLoop) -> KeepaliveWheel {
        guard let box = wheels[ObjectIdentifier(loop)] else { return KeepaliveWheel(eventLoop: loop) }
        if let wheel = box.value { return wheel }
        let wheel = KeepaliveWheel(eventLoop: loop)
        box.value = wheel
        return wheel
    }
}
