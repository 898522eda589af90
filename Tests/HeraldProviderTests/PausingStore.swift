import HeraldCore
import HeraldProvider

/// An in-memory provider store whose operations the test can hold: each call is counted, does
/// its work, and then, while its operation is held, waits for ``release(_:)`` before answering.
/// What a held call answers is what the store held when it was called (a read that returns
/// "late" with an old value, as a slow database would).
final class PausingStore: ProviderStore {
    private let inner = InMemoryProviderStore()
    private let state = Locked<(held: Set<String>, calls: [String: Int], waiting: [String: [CheckedContinuation<Void, Never>]])>(([], [:], [:]))

    func hold(_ operation: String) { state.withLock { _ = $0.held.insert(operation) } }

    func release(_ operation: String) {
        let waiting = state.withLock { s in
            s.held.remove(operation)
            defer { s.waiting[operation] = nil }
            return s.waiting[operation] ?? []
        }
        for continuation in waiting { continuation.resume() }
    }

    func calls(_ operation: String) -> Int { state.withLock { $0.calls[operation] ?? 0 } }

    private func answer<T>(_ operation: String, _ value: T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = state.withLock { s in
                s.calls[operation, default: 0] += 1
                guard s.held.contains(operation) else { return false }
                s.waiting[operation, default: []].append(continuation)
                return true
            }
            if !wait { continuation.resume() }
        }
        return value
    }

    func upsert(_ registrations: [Registration]) async throws { await answer("upsert", try await inner.upsert(registrations)) }
    func deleteRegistration(_ token: String) async throws -> Bool { await answer("deleteRegistration", try await inner.deleteRegistration(token)) }
    func badges(keys: [String]) async throws -> [String: Int] { await answer("badges", try await inner.badges(keys: keys)) }
    func setBadges(keys: [String], to value: Int) async throws { await answer("setBadges", try await inner.setBadges(keys: keys, to: value)) }
    func incrementBadges(keys: [String], by increment: Int) async throws -> [String: Int] {
        await answer("incrementBadges", try await inner.incrementBadges(keys: keys, by: increment))
    }
    func prune(_ token: String, unregisteredAt at: Int64) async throws -> Bool { await answer("prune", try await inner.prune(token, unregisteredAt: at)) }
    func registration(token: String) async throws -> Registration? { await answer("registration", try await inner.registration(token: token)) }
    func registrations(for target: SendTarget, zone: String?) async throws -> [Registration]? {
        await answer("registrationsFor", try await inner.registrations(for: target, zone: zone))
    }
    func registrations(_ filter: RegistrationFilter, after: String?, limit: Int) async throws -> [Registration] {
        await answer("registrations", try await inner.registrations(filter, after: after, limit: limit))
    }
    func topics() async throws -> [String] { await answer("topics", try await inner.topics()) }
    func zones() async throws -> [String] { await answer("zones", try await inner.zones()) }
    func registrationCounts() async throws -> RegistrationCounts { await answer("registrationCounts", try await inner.registrationCounts()) }
    func registrationCount() async throws -> Int { await answer("registrationCount", try await inner.registrationCount()) }
    func put(_ template: MessageTemplate) async throws { await answer("putTemplate", try await inner.put(template)) }
    func template(_ id: String) async throws -> MessageTemplate? { await answer("template", try await inner.template(id)) }
    func templates(after: String?, limit: Int) async throws -> [MessageTemplate] { await answer("templates", try await inner.templates(after: after, limit: limit)) }
    func deleteTemplate(_ id: String) async throws -> Bool { await answer("deleteTemplate", try await inner.deleteTemplate(id)) }
    func save(_ report: SendReport, idempotencyKey: String?) async throws { await answer("saveReport", try await inner.save(report, idempotencyKey: idempotencyKey)) }
    func beginSend(id: String, idempotencyKey: String?, fingerprint: String?, createdAt: Int64) async throws -> Bool {
        await answer("beginSend", try await inner.beginSend(id: id, idempotencyKey: idempotencyKey, fingerprint: fingerprint, createdAt: createdAt))
    }
    func finishSend(_ report: SendReport) async throws { await answer("finishSend", try await inner.finishSend(report)) }
    func markInterrupted(at now: Int64) async throws -> (sends: Int, runs: Int) { await answer("markInterrupted", try await inner.markInterrupted(at: now)) }
    func sendRecord(idempotencyKey: String) async throws -> (state: SendState, fingerprint: String?, report: SendReport)? {
        await answer("sendRecord", try await inner.sendRecord(idempotencyKey: idempotencyKey))
    }
    func sends(after: String?, scheduleID: String?, limit: Int) async throws -> [SendSummary] {
        await answer("sends", try await inner.sends(after: after, scheduleID: scheduleID, limit: limit))
    }
    func sendExists(id: String) async throws -> Bool { await answer("sendExists", try await inner.sendExists(id: id)) }
    func send(id: String) async throws -> SendReport? { await answer("send", try await inner.send(id: id)) }
    func put(_ schedule: Schedule) async throws { await answer("putSchedule", try await inner.put(schedule)) }
    func schedule(_ id: String) async throws -> Schedule? { await answer("schedule", try await inner.schedule(id)) }
    func schedules(state: Schedule.State?) async throws -> [Schedule] { await answer("schedules", try await inner.schedules(state: state)) }
    func save(_ run: ScheduleRun) async throws { await answer("saveRun", try await inner.save(run)) }
    func runs(scheduleID: String) async throws -> [ScheduleRun] { await answer("runs", try await inner.runs(scheduleID: scheduleID)) }
    func lastRuns(scheduleID: String) async throws -> [String: Int64] { await answer("lastRuns", try await inner.lastRuns(scheduleID: scheduleID)) }
}
