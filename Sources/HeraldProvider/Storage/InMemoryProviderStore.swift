import Synchronization

/// The provider service's store in memory, for tests and for embedding the service where nothing
/// needs to survive the process. Orders, filters and conflicts are those of ``SQLiteProviderStore`` (strings
/// compare by their UTF-8 bytes, as SQLite's default collation does); nothing survives the process.
public final class InMemoryProviderStore: ProviderStore {
    private struct SendRow {
        var idempotencyKey: String?
        var createdAt: Int64
        var report: SendReport
        var state: SendState
        var fingerprint: String?
        var scheduleID: String?
    }
    private struct RunKey: Hashable {
        var scheduleID: String
        var zone: String
        var dueAt: Int64
    }
    private struct State {
        var registrations: [String: Registration] = [:]
        var badges: [String: Int] = [:]
        var templates: [String: MessageTemplate] = [:]
        var sends: [String: SendRow] = [:]
        /// Idempotency key → send id.
        var sendsByKey: [String: String] = [:]
        var schedules: [String: Schedule] = [:]
        var runs: [RunKey: ScheduleRun] = [:]

        /// Registrations in token order.
        var byToken: [Registration] { registrations.values.sorted { precedes($0.token, $1.token) } }
    }

    /// Thrown where SQLite would refuse a row for its primary key or a unique column.
    public struct Conflict: Error, CustomStringConvertible {
        public let description: String
    }

    private let state = Mutex(State())

    public init() {}

    // MARK: registrations

    public func upsert(_ registrations: [Registration]) async throws {
        state.withLock { s in for r in registrations { s.registrations[r.token] = r } }
    }

    public func badges(keys: [String]) async throws -> [String: Int] {
        state.withLock { s in keys.reduce(into: [:]) { found, key in if let count = s.badges[key] { found[key] = count } } }
    }

    public func setBadges(keys: [String], to value: Int) async throws {
        state.withLock { s in for key in keys { s.badges[key] = value } }
    }

    public func incrementBadges(keys: [String], by increment: Int) async throws -> [String: Int] {
        state.withLock { s in
            Set(keys).reduce(into: [:]) { counts, key in
                let count = BadgeCount.adding(increment, to: s.badges[key] ?? 0)
                s.badges[key] = count
                counts[key] = count
            }
        }
    }

    public func deleteRegistration(_ token: String) async throws -> Bool {
        state.withLock { $0.registrations.removeValue(forKey: token) != nil }
    }

    public func prune(_ token: String, unregisteredAt at: Int64) async throws -> Bool {
        state.withLock { s in
            guard let r = s.registrations[token], r.registeredAt < at else { return false }
            s.registrations[token] = nil
            return true
        }
    }

    public func registration(token: String) async throws -> Registration? {
        state.withLock { $0.registrations[token] }
    }

    public func registrations(for target: SendTarget, zone: String?) async throws -> [Registration]? {
        state.withLock { s in
            func inZone(_ r: Registration) -> Bool { zone == nil || r.timeZone == zone }
            switch target {
            case .token(let token):
                guard let r = s.registrations[token.lowercased()] else { return nil }
                return inZone(r) ? [r] : []
            case .user(let user):
                return s.byToken.filter { $0.userID == user && inZone($0) }
            case .segment(let topic, let tags, let languages):
                let wanted = Set(languages.map { $0.lowercased() }), required = Set(tags)
                return s.byToken.filter {
                    (topic == nil || $0.topic == topic) && inZone($0) && $0.isInSegment(tags: required, languages: wanted)
                }
            }
        }
    }

    public func registrations(_ filter: RegistrationFilter, after: String?, limit: Int) async throws -> [Registration] {
        let language = filter.language?.lowercased()
        return state.withLock { s in
            Array(s.byToken.lazy.filter { r in
                (filter.topic == nil || r.topic == filter.topic) && (filter.user == nil || r.userID == filter.user)
                    && (filter.zone == nil || r.timeZone == filter.zone) && (filter.tag.map(r.tags.contains) ?? true)
                    && (language.map(r.matchesLanguage) ?? true) && (after.map { precedes($0, r.token) } ?? true)
            }.prefix(ProviderStoreLimits.page(limit)))
        }
    }

    public func topics() async throws -> [String] {
        state.withLock { Set($0.registrations.values.map(\.topic)).sorted(by: precedes) }
    }

    public func zones() async throws -> [String] {
        state.withLock { Set($0.registrations.values.map(\.timeZone)).sorted(by: precedes) }
    }

    public func registrationCounts() async throws -> RegistrationCounts {
        state.withLock { s in
            func grouped(_ key: (Registration) -> String) -> [(String, Int)] {
                var counts: [String: Int] = [:]
                for r in s.registrations.values { counts[key(r), default: 0] += 1 }
                return counts.sorted { a, b in a.value != b.value ? a.value > b.value : precedes(a.key, b.key) }.map { ($0.key, $0.value) }
            }
            var counts = RegistrationCounts()
            counts.total = s.registrations.count
            counts.byLanguage = grouped(\.language)
            counts.byZone = grouped(\.timeZone)
            counts.byTopic = grouped(\.topic)
            return counts
        }
    }

    public func registrationCount() async throws -> Int {
        state.withLock { $0.registrations.count }
    }

    // MARK: templates

    public func put(_ template: MessageTemplate) async throws {
        state.withLock { $0.templates[template.id] = template }
    }

    public func template(_ id: String) async throws -> MessageTemplate? {
        state.withLock { $0.templates[id] }
    }

    public func templates(after: String?, limit: Int) async throws -> [MessageTemplate] {
        state.withLock { s in
            Array(s.templates.values.filter { precedes(after ?? "", $0.id) }.sorted { precedes($0.id, $1.id) }.prefix(ProviderStoreLimits.page(limit)))
        }
    }

    public func deleteTemplate(_ id: String) async throws -> Bool {
        state.withLock { $0.templates.removeValue(forKey: id) != nil }
    }

    // MARK: sends

    public func save(_ report: SendReport, idempotencyKey: String?) async throws {
        try state.withLock { s throws(Conflict) in
            try Self.insert(SendRow(idempotencyKey: idempotencyKey, createdAt: report.createdAt, report: report, state: .done,
                                    fingerprint: nil, scheduleID: report.scheduleID), id: report.id, into: &s)
        }
    }

    public func beginSend(id: String, idempotencyKey: String?, fingerprint: String?, createdAt: Int64) async throws -> Bool {
        try state.withLock { s throws(Conflict) in
            if let idempotencyKey, s.sendsByKey[idempotencyKey] != nil { return false }
            let report = SendReport(id: id, createdAt: createdAt, deliveries: [], pruned: [])
            try Self.insert(SendRow(idempotencyKey: idempotencyKey, createdAt: createdAt, report: report, state: .started,
                                    fingerprint: fingerprint, scheduleID: nil), id: id, into: &s)
            return true
        }
    }

    private static func insert(_ row: SendRow, id: String, into s: inout State) throws(Conflict) {
        guard s.sends[id] == nil else { throw Conflict(description: "a send with id \(id) exists") }
        if let key = row.idempotencyKey {
            guard s.sendsByKey[key] == nil else { throw Conflict(description: "a send holds idempotency key \(key)") }
            s.sendsByKey[key] = id
        }
        s.sends[id] = row
    }

    public func finishSend(_ report: SendReport) async throws {
        state.withLock { s in
            s.sends[report.id]?.report = report
            s.sends[report.id]?.state = .done
        }
    }

    public func markInterrupted(at now: Int64) async throws -> (sends: Int, runs: Int) {
        state.withLock { s in
            var sends = 0, runs = 0
            for (id, row) in s.sends where row.state == .started {
                s.sends[id]?.state = .interrupted
                sends += 1
            }
            for (key, run) in s.runs where run.outcome == .started {
                var run = run
                run.outcome = .interrupted
                run.finishedAt = now
                run.error = "the service stopped while sending this run; it is not sent again (some of its pushes may have gone out)"
                s.runs[key] = run
                runs += 1
            }
            return (sends, runs)
        }
    }

    public func sendRecord(idempotencyKey: String) async throws -> (state: SendState, fingerprint: String?, report: SendReport)? {
        state.withLock { s in
            guard let id = s.sendsByKey[idempotencyKey], let row = s.sends[id] else { return nil }
            return (row.state, row.fingerprint, row.report)
        }
    }

    public func sends(after: String?, scheduleID: String?, limit: Int) async throws -> [SendSummary] {
        state.withLock { s in
            // Newest first: creation time, then id, both descending.
            func newer(_ a: (id: String, createdAt: Int64), than b: (id: String, createdAt: Int64)) -> Bool {
                a.createdAt != b.createdAt ? a.createdAt > b.createdAt : precedes(b.id, a.id)
            }
            var cursor: (id: String, createdAt: Int64)?
            if let after {
                guard let row = s.sends[after] else { return [] }  // as SQL compares with NULL: no rows
                cursor = (after, row.createdAt)
            }
            return Array(s.sends.lazy
                .filter { id, row in
                    (scheduleID == nil || row.scheduleID == scheduleID) && (cursor.map { newer($0, than: (id, row.createdAt)) } ?? true)
                }
                .sorted { newer(($0.key, $0.value.createdAt), than: ($1.key, $1.value.createdAt)) }
                .prefix(ProviderStoreLimits.page(limit))
                .map { id, row in
                    SendSummary(id: id, createdAt: row.createdAt, state: row.state, counts: row.report.counts, scheduleID: row.report.scheduleID)
                })
        }
    }

    public func sendExists(id: String) async throws -> Bool {
        state.withLock { $0.sends[id] != nil }
    }

    public func send(id: String) async throws -> SendReport? {
        state.withLock { $0.sends[id]?.report }
    }

    // MARK: schedules

    public func put(_ schedule: Schedule) async throws {
        state.withLock { $0.schedules[schedule.id] = schedule }
    }

    public func schedule(_ id: String) async throws -> Schedule? {
        state.withLock { $0.schedules[id] }
    }

    public func schedules(state wanted: Schedule.State?) async throws -> [Schedule] {
        state.withLock { s in
            s.schedules.values.filter { wanted == nil || $0.state == wanted }
                .sorted { a, b in a.createdAt != b.createdAt ? a.createdAt < b.createdAt : precedes(a.id, b.id) }
        }
    }

    public func save(_ run: ScheduleRun) async throws {
        state.withLock { $0.runs[RunKey(scheduleID: run.scheduleID, zone: run.zone, dueAt: run.dueAt)] = run }
    }

    public func runs(scheduleID: String) async throws -> [ScheduleRun] {
        state.withLock { s in
            s.runs.values.filter { $0.scheduleID == scheduleID }
                .sorted { a, b in a.dueAt != b.dueAt ? a.dueAt < b.dueAt : precedes(a.zone, b.zone) }
        }
    }

    public func lastRuns(scheduleID: String) async throws -> [String: Int64] {
        state.withLock { s in
            var last: [String: Int64] = [:]
            for run in s.runs.values where run.scheduleID == scheduleID { last[run.zone] = max(last[run.zone] ?? .min, run.dueAt) }
            return last
        }
    }
}

/// SQLite's default (BINARY) collation: UTF-8 bytes compared in order.
private func precedes(_ a: String, _ b: String) -> Bool {
    a.utf8.lexicographicallyPrecedes(b.utf8)
}
