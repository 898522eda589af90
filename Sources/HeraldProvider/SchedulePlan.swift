import Foundation
import HeraldCore

/// The schedules' plan: for every active schedule and every zone it runs in, the next occurrence,
/// in one heap ordered by due instant. The service keeps one alarm for the top of the heap and
/// sleeps until it rings; planning a zone's next occurrence happens when its current one runs.
struct SchedulePlan: Sendable {
    struct Slot: Sendable, Hashable {
        var scheduleID: String
        /// The IANA zone of the occurrence (`""` for a schedule that is one instant for everyone).
        var zone: String
    }
    struct Occurrence: Sendable, Hashable {
        var slot: Slot
        var date: LocalDate?
        var due: Int64
    }
    var heap = DueHeap<Occurrence>()
    /// The due instant each slot waits for; a heap entry with another instant is stale.
    var planned: [Slot: Int64] = [:]
    /// Active schedules.
    var schedules: [String: Schedule] = [:]
    /// The zones registrations are in (where each-registration schedules run).
    var zones: Set<String> = []
    var alarm: ClockAlarm?
    var started = false
    /// Runs in progress per schedule (a schedule finishes only when none is left).
    var running: [String: Int] = [:]

    /// Removes and returns the occurrences due at `now`, skipping stale entries.
    mutating func takeDue(now: Int64) -> [Occurrence] {
        var due: [Occurrence] = []
        while let top = heap.top, top.due <= now {
            heap.pop()
            guard planned[top.payload.slot] == top.due else { continue }
            planned[top.payload.slot] = nil
            due.append(top.payload)
        }
        return due
    }

    /// The soonest live due instant.
    mutating func nextDue() -> Int64? {
        while let top = heap.top, planned[top.payload.slot] != top.due { heap.pop() }
        return heap.top?.due
    }

    mutating func put(_ occurrence: Occurrence) {
        planned[occurrence.slot] = occurrence.due
        heap.push(due: occurrence.due, occurrence)
    }

    func hasSlots(_ scheduleID: String) -> Bool { planned.keys.contains { $0.scheduleID == scheduleID } }
}

/// The schedule changes' turn: the service's storage is asynchronous, so an actor method that
/// reads a schedule, writes it and changes the plan could interleave with another doing the same.
/// Those methods take turns, first come first served (held only on the actor).
struct ScheduleLock: Sendable {
    var held = false
    var waiting: [CheckedContinuation<Void, Never>] = []
}

/// What a schedule's status shows: the schedule, where it stands and what it did.
public struct ScheduleStatus: Sendable, Hashable {
    public var schedule: Schedule
    /// The next occurrence per zone (`""` for everyone).
    public var next: [String: Int64]
    public var runs: [ScheduleRun]
    /// Counts by outcome over every run.
    public var counts: [String: Int] {
        var total: [String: Int] = [:]
        for run in runs { for (key, n) in run.counts { total[key, default: 0] += n } }
        return total
    }
}

extension ProviderService {
    // MARK: the schedule API

    /// Loads the active schedules and plans them: occurrences missed while the service was not
    /// running are sent now if they are at most ``missedSendWindow`` old (only the latest per zone;
    /// earlier ones are recorded as missed), otherwise recorded as missed. Then arms the alarm.
    /// Returns how many late occurrences it started sending and how many it recorded as missed.
    @discardableResult
    public func startSchedules() async throws(ProviderError) -> (late: Int, missed: Int) {
        await lockSchedules()
        defer { unlockSchedules() }
        guard !plan.started else { return (0, 0) }
        var late = 0, missed = 0
        do {
            let now = clock.nowMilliseconds()
            // What a stopped service left half done is never sent again (its due instant stays the
            // zone's last run, so planning resumes after it).
            let interrupted = try await store.markInterrupted(at: now)
            for _ in 0..<interrupted.runs { metrics.recordRun(outcome: "interrupted", lateMilliseconds: nil) }
            // Read first, then planned: a registration in a new zone that arrives while these
            // reads suspend has its zone noted by zoneSeen, which the plan keeps.
            let zones = try await store.zones()
            var loaded: [(schedule: Schedule, last: [String: Int64])] = []
            for schedule in try await store.schedules(state: .active) {
                loaded.append((schedule, try await store.lastRuns(scheduleID: schedule.id)))
            }
            plan.started = true
            plan.zones.formUnion(zones)
            for (schedule, last) in loaded {
                plan.schedules[schedule.id] = schedule
                for zone in self.zones(of: schedule) {
                    let tally = planZone(schedule, zone: zone, after: last[zone] ?? schedule.createdAt - 1, now: now, catchUp: true)
                    late += tally.late
                    missed += tally.missed.count
                    try await recordMissed(tally.missed, of: schedule, zone: zone, now: now)
                }
                finishIfDone(schedule.id)
            }
        } catch { throw ProviderError(.internalFailure, "could not load the schedules: \(error)") }
        armAlarm()
        return (late, missed)
    }

    /// Waits for the schedule changes' turn (see ``ScheduleLock``); ``unlockSchedules()`` passes it on.
    func lockSchedules() async {
        guard scheduleLock.held else {
            scheduleLock.held = true
            return
        }
        await withCheckedContinuation { scheduleLock.waiting.append($0) }
    }

    func unlockSchedules() {
        if scheduleLock.waiting.isEmpty { scheduleLock.held = false } else { scheduleLock.waiting.removeFirst().resume() }
    }

    /// Creates a schedule. An `id` already used returns the existing schedule when it is the same
    /// request (a retried create), and is refused (409) otherwise.
    public func schedule(_ timing: ScheduleTiming, send: SendRequest, id: String? = nil) async throws(ProviderError) -> (schedule: Schedule, replayed: Bool) {
        await lockSchedules()
        defer { unlockSchedules() }
        let now = clock.nowMilliseconds()
        var send = send
        send.idempotencyKey = nil
        switch timing {
        case .instant(let at):
            guard at > now - missedSendWindow else { throw ProviderError(.invalid, "\"at\" is in the past; send now with POST /v1/sends") }
        case .wallClock(let rule):
            if let problem = rule.problem { throw ProviderError(.invalid, problem) }
            if let zone = rule.timeZone, rule.next(after: now - 1, createdAt: now, in: TimeZone(identifier: zone)!) == nil {
                throw ProviderError(.invalid, "the schedule never happens: every date it allows has passed")
            }
        }
        do {
            _ = try await checkedTemplate(send.message)
            if let id, let existing = try await store.schedule(id) {
                guard existing.timing == timing, existing.send == send else {
                    throw ProviderError(.conflict, "schedule \"\(id)\" exists with another request; cancel it or use another id")
                }
                return (existing, true)
            }
            let schedule = Schedule(id: id ?? UUID().uuidString.lowercased(), timing: timing, send: send, createdAt: now)
            guard !schedule.id.isEmpty, !schedule.id.contains("/") else { throw ProviderError(.invalid, "a schedule id may not be empty or contain \"/\"") }
            try await store.put(schedule)
            if plan.started {
                plan.schedules[schedule.id] = schedule
                for zone in zones(of: schedule) { _ = planZone(schedule, zone: zone, after: schedule.createdAt - 1, now: now, catchUp: false) }
                armAlarm()
            }
            return (schedule, false)
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// Cancels a schedule: it sends no more (a run already sending finishes).
    public func cancelSchedule(_ id: String) async throws(ProviderError) -> Schedule {
        await lockSchedules()
        defer { unlockSchedules() }
        do {
            guard var schedule = try await store.schedule(id) else { throw ProviderError(.notFound, "no schedule \(id)") }
            guard schedule.state == .active else { return schedule }
            // Out of the plan before the write: no occurrence may start while it is being cancelled.
            let planned = plan.schedules.removeValue(forKey: id)
            let slots = plan.planned.filter { $0.key.scheduleID == id }
            for slot in slots.keys { plan.planned[slot] = nil }
            armAlarm()
            schedule.state = .cancelled
            do { try await store.put(schedule) } catch {
                // Not cancelled after all: the same occurrences go back into the plan.
                if let planned {
                    plan.schedules[id] = planned
                    for (slot, due) in slots { _ = planZone(planned, zone: slot.zone, after: due - 1, now: due - 1, catchUp: false) }
                    armAlarm()
                }
                throw error
            }
            return schedule
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    public func schedules(state: Schedule.State? = nil) async throws(ProviderError) -> [Schedule] {
        do { return try await store.schedules(state: state) } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    public func scheduleStatus(_ id: String) async throws(ProviderError) -> ScheduleStatus {
        do {
            guard let schedule = try await store.schedule(id) else { throw ProviderError(.notFound, "no schedule \(id)") }
            let runs = try await store.runs(scheduleID: id)
            var next: [String: Int64] = [:]
            for (slot, due) in plan.planned where slot.scheduleID == id { next[slot.zone] = due }
            return ScheduleStatus(schedule: schedule, next: next, runs: runs)
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// Stops planning: the alarm is cancelled and no further occurrence starts (runs already
    /// sending finish; ``settle()`` waits for them). ``startSchedules()`` plans again from the
    /// database, as after a restart.
    public func stopSchedules() {
        plan.alarm?.cancel()
        plan = SchedulePlan()
    }

    /// One occurrence ahead: where, when, and to how many registrations it would go now.
    public struct PlannedRun: Sendable, Hashable {
        public var zone: String
        public var localDate: LocalDate?
        public var dueAt: Int64
        public var recipients: Int
    }

    /// A schedule's occurrences in the next `span` milliseconds in every zone it runs in, with
    /// their recipients as registered now — "what will tomorrow morning send?".
    public func planAhead(_ id: String, span: Int64) async throws(ProviderError) -> [PlannedRun] {
        let until = clock.nowMilliseconds() + span
        do {
            guard let schedule = try await store.schedule(id) else { throw ProviderError(.notFound, "no schedule \(id)") }
            guard schedule.state == .active else { return [] }
            let now = clock.nowMilliseconds()
            let zones = schedule.zoneKey == .eachRegistration ? try await store.zones() : self.zones(of: schedule)
            var planned: [PlannedRun] = []
            for zone in zones {
                let timeZone = TimeZone(identifier: zone) ?? TimeZone(identifier: "UTC")!
                var after = now - 1
                var recipients: Int?
                while let next = schedule.timing.next(after: after, createdAt: schedule.createdAt, in: timeZone), next.at < until {
                    if recipients == nil {
                        recipients = ((try? await resolve(schedule.send.target, zone: filterZone(schedule, zone))) ?? []).count
                    }
                    planned.append(PlannedRun(zone: zone, localDate: next.date, dueAt: next.at, recipients: recipients!))
                    after = next.at
                }
            }
            return planned.sorted { ($0.dueAt, $0.zone) < ($1.dueAt, $1.zone) }
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// Waits until the runs the alarm started have finished.
    public nonisolated func settle() async { await work.settle() }

    /// Moves a simulated clock to `instant` alarm by alarm, letting each alarm's runs finish.
    public nonisolated func advance(_ clock: SimulatedAlarmClock, to instant: Int64) async {
        await clock.advance(to: instant, settling: { await self.settle() })
    }

    // MARK: planning

    /// The zones a schedule has occurrences in.
    func zones(of schedule: Schedule) -> [String] {
        switch schedule.zoneKey {
        case .everyone: return [""]
        case .fixed(let zone): return [zone]
        case .eachRegistration: return plan.zones.sorted()
        }
    }

    /// A registration in a zone the plan has not seen: each-registration schedules get a slot there.
    func zoneSeen(_ zone: String) {
        // Noted even before the plan has started: start-up may have read the zones already.
        guard plan.zones.insert(zone).inserted, plan.started else { return }
        let now = clock.nowMilliseconds()
        for schedule in plan.schedules.values where schedule.zoneKey == .eachRegistration {
            _ = planZone(schedule, zone: zone, after: now, now: now, catchUp: false)
        }
        armAlarm()
    }

    /// Plans a schedule's next occurrence in one zone after `after`, without a suspension.
    /// Occurrences already due at `now` are missed ones: with `catchUp`, the latest is sent now if
    /// inside the window; the rest are returned for ``recordMissed(_:of:zone:now:)``.
    private func planZone(_ schedule: Schedule, zone: String, after: Int64, now: Int64, catchUp: Bool) -> (late: Int, missed: [(date: LocalDate?, at: Int64)]) {
        let timeZone = TimeZone(identifier: zone) ?? TimeZone(identifier: "UTC")!
        var after = after
        var overdue: [(date: LocalDate?, at: Int64)] = []
        while let next = schedule.timing.next(after: after, createdAt: schedule.createdAt, in: timeZone) {
            if next.at > now || !catchUp {
                plan.put(.init(slot: .init(scheduleID: schedule.id, zone: zone), date: next.date, due: next.at))
                break
            }
            overdue.append(next)
            after = next.at
        }
        guard let latest = overdue.last else { return (0, []) }
        var missed = Array(overdue.dropLast())
        var late = 0
        if now - latest.at <= missedSendWindow {
            late = 1
            let occurrence = SchedulePlan.Occurrence(slot: .init(scheduleID: schedule.id, zone: zone), date: latest.date, due: latest.at)
            plan.running[schedule.id, default: 0] += 1
            work.spawn { await self.run(occurrence) }
        } else {
            missed.append(latest)
        }
        return (late, missed)
    }

    /// Records missed occurrences as runs, with the recipients they would have reached (read once
    /// for all of them); none when they would have reached nobody.
    private func recordMissed(_ missed: [(date: LocalDate?, at: Int64)], of schedule: Schedule, zone: String, now: Int64) async throws {
        guard !missed.isEmpty else { return }
        let targets = (try? await store.registrations(for: schedule.send.target, zone: filterZone(schedule, zone))?.count) ?? 0
        guard targets > 0 else { return }
        for occurrence in missed {
            try await store.save(ScheduleRun(
                scheduleID: schedule.id, zone: zone, localDate: occurrence.date, dueAt: occurrence.at, startedAt: now, finishedAt: now,
                outcome: .missed, sendID: nil, counts: ["missed": targets]))
            metrics.recordRun(outcome: "missed", lateMilliseconds: nil)
        }
    }

    private func filterZone(_ schedule: Schedule, _ zone: String) -> String? { schedule.zoneKey == .eachRegistration ? zone : nil }

    /// Arms the one alarm for the soonest occurrence (or none).
    func armAlarm() {
        let next = plan.nextDue()
        if plan.alarm?.deadline == next, plan.alarm?.isCancelled == false { return }
        plan.alarm?.cancel()
        plan.alarm = nil
        guard let next else { return }
        plan.alarm = clock.setAlarm(at: next) { [work] in work.spawn { await self.alarmRang() } }
    }

    private func alarmRang() async {
        plan.alarm = nil
        let due = plan.takeDue(now: clock.nowMilliseconds())
        for occurrence in due {
            plan.running[occurrence.slot.scheduleID, default: 0] += 1
            if let schedule = plan.schedules[occurrence.slot.scheduleID] {
                _ = planZone(schedule, zone: occurrence.slot.zone, after: occurrence.due, now: occurrence.due, catchUp: false)
            }
        }
        armAlarm()
        // Every zone due now sends at once: their pushes share the client's connections.
        await withTaskGroup(of: Void.self) { group in
            for occurrence in due { group.addTask { await self.run(occurrence) } }
        }
    }

    /// Sends one occurrence to its zone's targets and records the run.
    private func run(_ occurrence: SchedulePlan.Occurrence) async {
        let id = occurrence.slot.scheduleID
        defer {
            plan.running[id, default: 1] -= 1
            finishIfDone(id)
        }
        guard let schedule = plan.schedules[id] else { return }
        let started = clock.nowMilliseconds()
        var run = ScheduleRun(
            scheduleID: id, zone: occurrence.slot.zone, localDate: occurrence.date, dueAt: occurrence.due, startedAt: started,
            finishedAt: started, outcome: .started, sendID: nil, counts: [:])
        do {
            // Recorded before the first push: a restart finds it started and does not send it again.
            try await store.save(run)
            run.outcome = .sent
            metrics.recordSend(origin: "schedule")
            let targets: [Registration]
            do { targets = try await resolve(schedule.send.target, zone: filterZone(schedule, occurrence.slot.zone)) } catch let e as ProviderError where e.kind == .notFound {
                targets = []  // the token's registration is gone
            }
            var report = try await deliver(schedule.send, to: targets, template: try await checkedTemplate(schedule.send.message))
            report.scheduleID = id
            try await store.save(report, idempotencyKey: nil)
            run.sendID = report.id
            run.counts = report.counts
        } catch {
            run.counts = ["error": 1]
            run.error = "\(error)"
            // Not even recorded as started: nothing was sent.
            if run.outcome == .started { run.outcome = .missed }
        }
        run.finishedAt = clock.nowMilliseconds()
        try? await store.save(run)
        metrics.recordRun(outcome: run.outcome.rawValue, lateMilliseconds: run.outcome == .sent ? run.startedAt - run.dueAt : nil)
    }

    /// Marks a schedule finished when no zone has another occurrence and no run is in progress. A
    /// schedule in each registration's zone also waits until its rule has nothing left even in the
    /// last zone on Earth (UTC−12), since registrations in new zones may still come.
    private func finishIfDone(_ id: String) {
        guard var schedule = plan.schedules[id], plan.running[id, default: 0] == 0, !plan.hasSlots(id) else { return }
        if schedule.zoneKey == .eachRegistration,
           schedule.timing.next(after: clock.nowMilliseconds(), createdAt: schedule.createdAt, in: TimeZone(identifier: "Etc/GMT+12")!) != nil {
            return
        }
        plan.running[id] = nil
        plan.schedules[id] = nil
        schedule.state = .finished
        // Written after the plan has changed, in the schedule changes' turn and only if the
        // schedule is still active (a cancel that came first stays); settle() waits for it.
        work.spawn { [schedule] in await self.storeFinished(schedule) }
    }

    private func storeFinished(_ schedule: Schedule) async {
        await lockSchedules()
        defer { unlockSchedules() }
        guard let stored = try? await store.schedule(schedule.id), stored.state == .active else { return }
        try? await store.put(schedule)
    }
}
