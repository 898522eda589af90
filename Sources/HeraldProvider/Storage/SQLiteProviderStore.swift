import Foundation
import GRDB
import HeraldCore

/// The provider service's store on SQLite (GRDB): `provider.sqlite` in its data directory, or an
/// in-memory SQLite database. Every operation runs through GRDB's async access.
public final class SQLiteProviderStore: ProviderStore {
    private let writer: any DatabaseWriter

    /// Opens (creating if needed) `DIR/provider.sqlite`; `nil` keeps everything in memory.
    public init(directory: String?) throws {
        if let directory {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            writer = try DatabasePool(path: (directory as NSString).appendingPathComponent("provider.sqlite"), configuration: configuration)
        } else {
            writer = try DatabaseQueue()
        }
        try Self.migrator.migrate(writer)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: registrations, templates, sends") { db in
            try db.execute(sql: """
                CREATE TABLE registrations (
                    token TEXT PRIMARY KEY NOT NULL,
                    topic TEXT NOT NULL,
                    language TEXT NOT NULL,
                    time_zone TEXT NOT NULL,
                    user_id TEXT,
                    tags TEXT NOT NULL,
                    registered_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE INDEX registrations_by_user ON registrations(user_id) WHERE user_id IS NOT NULL;
                CREATE INDEX registrations_by_topic ON registrations(topic);
                CREATE TABLE templates (
                    id TEXT PRIMARY KEY NOT NULL,
                    body TEXT NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE sends (
                    id TEXT PRIMARY KEY NOT NULL,
                    idempotency_key TEXT UNIQUE,
                    created_at INTEGER NOT NULL,
                    report TEXT NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v2: schedules and their runs") { db in
            try db.execute(sql: """
                CREATE INDEX registrations_by_zone ON registrations(time_zone);
                CREATE TABLE schedules (
                    id TEXT PRIMARY KEY NOT NULL,
                    created_at INTEGER NOT NULL,
                    state TEXT NOT NULL,
                    body TEXT NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE schedule_runs (
                    schedule_id TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    due_at INTEGER NOT NULL,
                    local_date TEXT,
                    started_at INTEGER NOT NULL,
                    finished_at INTEGER NOT NULL,
                    outcome TEXT NOT NULL,
                    send_id TEXT,
                    counts TEXT NOT NULL,
                    error TEXT,
                    PRIMARY KEY (schedule_id, zone, due_at)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v3: send states and request fingerprints, lists in time order") { db in
            try db.execute(sql: """
                ALTER TABLE sends ADD COLUMN state TEXT NOT NULL DEFAULT 'done';
                ALTER TABLE sends ADD COLUMN request_hash TEXT;
                ALTER TABLE sends ADD COLUMN schedule_id TEXT;
                UPDATE sends SET schedule_id = json_extract(report, '$.scheduleID');
                CREATE INDEX sends_by_time ON sends(created_at, id);
                CREATE INDEX sends_by_schedule ON sends(schedule_id, created_at, id) WHERE schedule_id IS NOT NULL;
                """)
        }
        migrator.registerMigration("v4: Web Push registrations") { db in
            // The subscription (endpoint, keys, url) as JSON; NULL for an APNs token.
            try db.execute(sql: "ALTER TABLE registrations ADD COLUMN web_push TEXT")
        }
        migrator.registerMigration("v5: badge counts") { db in
            try db.execute(sql: "CREATE TABLE badges (key TEXT PRIMARY KEY NOT NULL, count INTEGER NOT NULL) WITHOUT ROWID")
        }
        return migrator
    }

    // MARK: registrations

    public func upsert(_ registrations: [Registration]) async throws {
        try await writer.write { db in
            // INSERT OR REPLACE: the table has no rowid for GRDB's upsert to return.
            for r in registrations { try RegistrationRecord(r).insert(db, onConflict: .replace) }
        }
    }

    public func badges(keys: [String]) async throws -> [String: Int] {
        guard !keys.isEmpty else { return [:] }
        return try await writer.read { db in
            var found: [String: Int] = [:]
            let unique = Array(Set(keys))
            for start in stride(from: 0, to: unique.count, by: 500) {
                let chunk = Array(unique[start..<min(unique.count, start + 500)])
                let rows = try Row.fetchAll(db, sql: "SELECT key, count FROM badges WHERE key IN (\(databaseQuestionMarks(count: chunk.count)))",
                                            arguments: StatementArguments(chunk))
                for row in rows { found[row["key"]] = row["count"] }
            }
            return found
        }
    }

    public func setBadges(keys: [String], to value: Int) async throws {
        try await writer.write { db in
            let statement = try db.cachedStatement(sql: "INSERT INTO badges (key, count) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET count = excluded.count")
            for key in Set(keys) { try statement.execute(arguments: [key, value]) }
        }
    }

    public func incrementBadges(keys: [String], by increment: Int) async throws -> [String: Int] {
        try await writer.write { db in
            let statement = try db.cachedStatement(sql: """
                INSERT INTO badges (key, count) VALUES (?1, min(?2, ?3)) ON CONFLICT(key) DO UPDATE SET count = min(count + ?2, ?3) RETURNING count
                """)
            var counts: [String: Int] = [:]
            for key in Set(keys) {
                counts[key] = try Int.fetchOne(statement, arguments: [key, increment, BadgeCount.maximum]) ?? 0
            }
            return counts
        }
    }

    public func deleteRegistration(_ token: String) async throws -> Bool {
        try await writer.write { db in try RegistrationRecord.deleteOne(db, key: token) }
    }

    public func prune(_ token: String, unregisteredAt at: Int64) async throws -> Bool {
        try await writer.write { db in
            try RegistrationRecord.filter(RegistrationRecord.Columns.token == token && RegistrationRecord.Columns.registeredAt < at).deleteAll(db) > 0
        }
    }

    // The statements of a send's hot path (a token's registration, a send started and finished)
    // are cached: the query interface would build their SQL again for every call, which cost the
    // REST API a tenth of its sends per second.

    private static func registration(_ db: Database, token: String) throws -> Registration? {
        try RegistrationRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM registrations WHERE token = ?"), arguments: [token])?.model
    }

    public func registration(token: String) async throws -> Registration? {
        try await writer.read { db in try Self.registration(db, token: token) }
    }

    private static func registrations(_ db: Database, for target: SendTarget, zone: String?) throws -> [Registration]? {
        func inZone(_ request: QueryInterfaceRequest<RegistrationRecord>) -> QueryInterfaceRequest<RegistrationRecord> {
            (zone.map { request.filter(RegistrationRecord.Columns.timeZone == $0) } ?? request).order(RegistrationRecord.Columns.token)
        }
        switch target {
        case .token(let token):
            guard let registration = try registration(db, token: token.lowercased()) else { return nil }
            return zone == nil || registration.timeZone == zone ? [registration] : []
        case .user(let user):
            return try inZone(RegistrationRecord.filter(RegistrationRecord.Columns.userID == user)).fetchAll(db).map(\.model)
        case .segment(let topic, let tags, let languages):
            let request = topic.map { RegistrationRecord.filter(RegistrationRecord.Columns.topic == $0) } ?? RegistrationRecord.all()
            let wanted = Set(languages.map { $0.lowercased() }), required = Set(tags)
            return try inZone(request).fetchAll(db).map(\.model).filter { $0.isInSegment(tags: required, languages: wanted) }
        }
    }

    public func registrations(for target: SendTarget, zone: String?) async throws -> [Registration]? {
        try await writer.read { db in try Self.registrations(db, for: target, zone: zone) }
    }

    public func registrations(_ filter: RegistrationFilter, after: String?, limit: Int) async throws -> [Registration] {
        var request = RegistrationRecord.all()
        if let topic = filter.topic { request = request.filter(RegistrationRecord.Columns.topic == topic) }
        if let user = filter.user { request = request.filter(RegistrationRecord.Columns.userID == user) }
        if let zone = filter.zone { request = request.filter(RegistrationRecord.Columns.timeZone == zone) }
        if let tag = filter.tag {
            request = request.filter(sql: "EXISTS (SELECT 1 FROM json_each(registrations.tags) WHERE json_each.value = ?)", arguments: [tag])
        }
        if let language = filter.language?.lowercased() {
            request = request.filter(sql: "(lower(language) = ? OR substr(lower(language), 1, ?) = ?)",
                                     arguments: [language, language.count + 1, language + "-"])
        }
        if let after { request = request.filter(RegistrationRecord.Columns.token > after) }
        let page = request.order(RegistrationRecord.Columns.token).limit(ProviderStoreLimits.page(limit))
        return try await writer.read { db in try page.fetchAll(db).map(\.model) }
    }

    public func topics() async throws -> [String] {
        try await writer.read { db in
            try String.fetchAll(db, RegistrationRecord.select(RegistrationRecord.Columns.topic).distinct().order(RegistrationRecord.Columns.topic))
        }
    }

    public func zones() async throws -> [String] {
        try await writer.read { db in
            try String.fetchAll(db, RegistrationRecord.select(RegistrationRecord.Columns.timeZone).distinct().order(RegistrationRecord.Columns.timeZone))
        }
    }

    public func registrationCounts() async throws -> RegistrationCounts {
        try await writer.read { db in
            func grouped(_ column: String) throws -> [(String, Int)] {
                try Row.fetchAll(db, sql: "SELECT \(column) AS value, COUNT(*) AS n FROM \(RegistrationRecord.databaseTableName) GROUP BY \(column) ORDER BY n DESC, value")
                    .map { ($0["value"] as String? ?? "", $0["n"] as Int? ?? 0) }
            }
            var counts = RegistrationCounts()
            counts.total = try RegistrationRecord.fetchCount(db)
            counts.byLanguage = try grouped(RegistrationRecord.Columns.language.name)
            counts.byZone = try grouped(RegistrationRecord.Columns.timeZone.name)
            counts.byTopic = try grouped(RegistrationRecord.Columns.topic.name)
            return counts
        }
    }

    public func registrationCount() async throws -> Int {
        try await writer.read { db in try RegistrationRecord.fetchCount(db) }
    }

    // MARK: templates

    public func put(_ template: MessageTemplate) async throws {
        try await writer.write { db in try TemplateRecord(id: template.id, body: template).save(db) }
    }

    public func template(_ id: String) async throws -> MessageTemplate? {
        try await writer.read { db in try TemplateRecord.fetchOne(db, key: id)?.body }
    }

    public func templates(after: String?, limit: Int) async throws -> [MessageTemplate] {
        let page = TemplateRecord.filter(TemplateRecord.Columns.id > (after ?? "")).order(TemplateRecord.Columns.id).limit(ProviderStoreLimits.page(limit))
        return try await writer.read { db in try page.fetchAll(db).map(\.body) }
    }

    public func deleteTemplate(_ id: String) async throws -> Bool {
        try await writer.write { db in try TemplateRecord.deleteOne(db, key: id) }
    }

    // MARK: sends

    public func save(_ report: SendReport, idempotencyKey: String?) async throws {
        let record = SendRecord(
            id: report.id, idempotencyKey: idempotencyKey, createdAt: report.createdAt, report: report, state: .done, requestHash: nil,
            scheduleID: report.scheduleID)
        try await writer.write { db in try record.insert(db) }
    }

    public func beginSend(id: String, idempotencyKey: String?, fingerprint: String?, createdAt: Int64) async throws -> Bool {
        let record = SendRecord(
            id: id, idempotencyKey: idempotencyKey, createdAt: createdAt, report: SendReport(id: id, createdAt: createdAt, deliveries: [], pruned: []),
            state: .started, requestHash: fingerprint, scheduleID: nil)
        let report = try SendRecord.column(record.report)
        return try await writer.write { db in
            try db.cachedStatement(sql: """
                INSERT INTO sends (id, idempotency_key, created_at, report, state, request_hash) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(idempotency_key) DO NOTHING
                """).execute(arguments: [record.id, record.idempotencyKey, record.createdAt, report, record.state.rawValue, record.requestHash])
            return db.changesCount > 0
        }
    }

    public func finishSend(_ report: SendReport) async throws {
        // The report column as the record type encodes it, in one cached UPDATE.
        let column = try SendRecord.column(report)
        try await writer.write { db in
            try db.cachedStatement(sql: "UPDATE sends SET report = ?, state = ? WHERE id = ?").execute(arguments: [column, SendState.done.rawValue, report.id])
        }
    }

    public func markInterrupted(at now: Int64) async throws -> (sends: Int, runs: Int) {
        try await writer.write { db in
            let sends = try SendRecord.filter(SendRecord.Columns.state == SendState.started.rawValue)
                .updateAll(db, SendRecord.Columns.state.set(to: SendState.interrupted.rawValue))
            let runs = try ScheduleRunRecord.filter(ScheduleRunRecord.Columns.outcome == ScheduleRun.Outcome.started.rawValue).updateAll(
                db, ScheduleRunRecord.Columns.outcome.set(to: ScheduleRun.Outcome.interrupted.rawValue),
                ScheduleRunRecord.Columns.finishedAt.set(to: now),
                ScheduleRunRecord.Columns.error.set(
                    to: "the service stopped while sending this run; it is not sent again (some of its pushes may have gone out)"))
            return (sends, runs)
        }
    }

    public func sendRecord(idempotencyKey: String) async throws -> (state: SendState, fingerprint: String?, report: SendReport)? {
        try await writer.read { db in
            try SendRecord.filter(SendRecord.Columns.idempotencyKey == idempotencyKey).fetchOne(db).map { ($0.state, $0.requestHash, $0.report) }
        }
    }

    public func sends(after: String?, scheduleID: String?, limit: Int) async throws -> [SendSummary] {
        var request = SendRecord.all()
        if let scheduleID { request = request.filter(Column("schedule_id") == scheduleID) }
        if let after { request = request.filter(sql: "(created_at, id) < (SELECT created_at, id FROM sends WHERE id = ?)", arguments: [after]) }
        let page = request.order(Column("created_at").desc, SendRecord.Columns.id.desc).limit(ProviderStoreLimits.page(limit))
        return try await writer.read { db in
            try page.fetchAll(db).map { s in
                SendSummary(id: s.id, createdAt: s.createdAt, state: s.state, counts: s.report.counts, scheduleID: s.report.scheduleID)
            }
        }
    }

    public func sendExists(id: String) async throws -> Bool {
        try await writer.read { db in try SendRecord.exists(db, key: id) }
    }

    public func send(id: String) async throws -> SendReport? {
        try await writer.read { db in try SendRecord.fetchOne(db, key: id)?.report }
    }

    // MARK: schedules

    public func put(_ schedule: Schedule) async throws {
        try await writer.write { db in try ScheduleRecord(schedule).save(db) }
    }

    public func schedule(_ id: String) async throws -> Schedule? {
        try await writer.read { db in try ScheduleRecord.fetchOne(db, key: id)?.body }
    }

    public func schedules(state: Schedule.State?) async throws -> [Schedule] {
        let ordered = ScheduleRecord.order(ScheduleRecord.Columns.createdAt, ScheduleRecord.Columns.id)
        let request = state.map { ordered.filter(ScheduleRecord.Columns.state == $0.rawValue) } ?? ordered
        return try await writer.read { db in try request.fetchAll(db).map(\.body) }
    }

    public func save(_ run: ScheduleRun) async throws {
        try await writer.write { db in try ScheduleRunRecord(run).save(db) }
    }

    public func runs(scheduleID: String) async throws -> [ScheduleRun] {
        try await writer.read { db in
            try ScheduleRunRecord.filter(ScheduleRunRecord.Columns.scheduleID == scheduleID)
                .order(ScheduleRunRecord.Columns.dueAt, ScheduleRunRecord.Columns.zone).fetchAll(db).map(\.model)
        }
    }

    public func lastRuns(scheduleID: String) async throws -> [String: Int64] {
        try await writer.read { db in
            var last: [String: Int64] = [:]
            let request = ScheduleRunRecord.filter(ScheduleRunRecord.Columns.scheduleID == scheduleID)
                .select(ScheduleRunRecord.Columns.zone, max(ScheduleRunRecord.Columns.dueAt)).group(ScheduleRunRecord.Columns.zone)
            for row in try Row.fetchAll(db, request) { last[row[0]] = row[1] }
            return last
        }
    }
}
