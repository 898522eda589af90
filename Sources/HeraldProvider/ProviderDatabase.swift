import Foundation
import GRDB
import HeraldCore

/// The provider service's store: one SQLite database (GRDB) in its data directory, or in memory.
public final class ProviderDatabase: Sendable {
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
        return migrator
    }

    /// The most items one page of a list holds.
    public static let maximumPage = 1_000

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    private static func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try encoder.encode(value), as: UTF8.self) }
    private static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T { try JSONReader.decode(type, from: text.utf8) }

    // MARK: registrations

    public func upsert(_ r: Registration) throws { try upsert([r]) }

    /// Stores many registrations in one transaction.
    public func upsert(_ registrations: [Registration]) throws {
        try writer.write { db in
            let statement = try db.cachedStatement(sql: """
                INSERT INTO registrations (token, topic, language, time_zone, user_id, tags, registered_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(token) DO UPDATE SET topic = excluded.topic, language = excluded.language, time_zone = excluded.time_zone,
                    user_id = excluded.user_id, tags = excluded.tags, registered_at = excluded.registered_at
                """)
            for r in registrations {
                try statement.execute(arguments: [r.token, r.topic, r.language, r.timeZone, r.userID, try Self.json(r.tags), r.registeredAt])
            }
        }
    }

    @discardableResult
    public func deleteRegistration(_ token: String) throws -> Bool {
        try writer.write { db in
            try db.execute(sql: "DELETE FROM registrations WHERE token = ?", arguments: [token])
            return db.changesCount > 0
        }
    }

    /// Removes a token the gateway reported unregistered at `at`, unless the app registered it again after that.
    public func prune(_ token: String, unregisteredAt at: Int64) throws -> Bool {
        try writer.write { db in
            try db.execute(sql: "DELETE FROM registrations WHERE token = ? AND registered_at < ?", arguments: [token, at])
            return db.changesCount > 0
        }
    }

    private static func registration(_ row: Row) throws -> Registration {
        Registration(
            token: row["token"], topic: row["topic"], language: row["language"], timeZone: row["time_zone"],
            userID: row["user_id"], tags: try decode([String].self, row["tags"]), registeredAt: row["registered_at"])
    }

    public func registration(token: String) throws -> Registration? {
        try writer.read { db in try Row.fetchOne(db, sql: "SELECT * FROM registrations WHERE token = ?", arguments: [token]).map(Self.registration) }
    }

    /// A user's registrations, optionally only those in one time zone.
    public func registrations(user: String, zone: String? = nil) throws -> [Registration] {
        try fetch(where: ["user_id = ?"], [user], zone: zone)
    }

    /// A topic's registrations (every topic's when `nil`), optionally only those in one time zone.
    public func registrations(topic: String?, zone: String? = nil) throws -> [Registration] {
        try fetch(where: topic == nil ? [] : ["topic = ?"], topic.map { [$0] } ?? [], zone: zone)
    }

    private func fetch(where conditions: [String], _ values: [String], zone: String?) throws -> [Registration] {
        var conditions = conditions, values = values
        if let zone { conditions.append("time_zone = ?"); values.append(zone) }
        let clause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return try writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM registrations\(clause) ORDER BY token", arguments: StatementArguments(values)).map(Self.registration)
        }
    }

    /// One page of registrations in token order, after the token `after`.
    public func registrations(_ filter: RegistrationFilter, after: String?, limit: Int) throws -> [Registration] {
        var conditions: [String] = [], values: [String] = []
        func add(_ condition: String, _ value: String?) {
            guard let value else { return }
            conditions.append(condition)
            values.append(value)
        }
        add("topic = ?", filter.topic)
        add("user_id = ?", filter.user)
        add("time_zone = ?", filter.zone)
        add("EXISTS (SELECT 1 FROM json_each(registrations.tags) WHERE json_each.value = ?)", filter.tag)
        if let language = filter.language?.lowercased() {
            conditions.append("(lower(language) = ? OR substr(lower(language), 1, ?) = ?)")
            values += [language, String(language.count + 1), language + "-"]
        }
        add("token > ?", after)
        let clause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return try writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM registrations\(clause) ORDER BY token LIMIT \(min(max(limit, 1), Self.maximumPage))",
                             arguments: StatementArguments(values)).map(Self.registration)
        }
    }

    /// The topics registrations are for.
    public func topics() throws -> [String] {
        try writer.read { db in try String.fetchAll(db, sql: "SELECT DISTINCT topic FROM registrations ORDER BY topic") }
    }

    /// The time zones registrations are in.
    public func zones() throws -> [String] {
        try writer.read { db in try String.fetchAll(db, sql: "SELECT DISTINCT time_zone FROM registrations ORDER BY time_zone") }
    }

    public func registrationCount() throws -> Int {
        try writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM registrations") ?? 0 }
    }

    // MARK: templates

    public func put(_ template: MessageTemplate) throws {
        try writer.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO templates (id, body) VALUES (?, ?)", arguments: [template.id, try Self.json(template)])
        }
    }

    public func template(_ id: String) throws -> MessageTemplate? {
        try writer.read { db in
            try String.fetchOne(db, sql: "SELECT body FROM templates WHERE id = ?", arguments: [id]).map { try Self.decode(MessageTemplate.self, $0) }
        }
    }

    /// One page of templates in id order, after the id `after`.
    public func templates(after: String?, limit: Int) throws -> [MessageTemplate] {
        try writer.read { db in
            try String.fetchAll(db, sql: "SELECT body FROM templates WHERE id > ? ORDER BY id LIMIT ?",
                                arguments: [after ?? "", min(max(limit, 1), Self.maximumPage)])
                .map { try Self.decode(MessageTemplate.self, $0) }
        }
    }

    @discardableResult
    public func deleteTemplate(_ id: String) throws -> Bool {
        try writer.write { db in
            try db.execute(sql: "DELETE FROM templates WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }

    // MARK: sends

    /// Stores a finished send's report in one step (a schedule's run).
    public func save(_ report: SendReport, idempotencyKey: String?) throws {
        try writer.write { db in
            try db.execute(sql: "INSERT INTO sends (id, idempotency_key, created_at, report, state, schedule_id) VALUES (?, ?, ?, ?, 'done', ?)",
                           arguments: [report.id, idempotencyKey, report.createdAt, try Self.json(report), report.scheduleID])
        }
    }

    /// Records a send as started before its first push. Returns `false` when another send already
    /// holds `idempotencyKey` (nothing is written then).
    public func beginSend(id: String, idempotencyKey: String?, fingerprint: String?, createdAt: Int64) throws -> Bool {
        let placeholder = SendReport(id: id, createdAt: createdAt, deliveries: [], pruned: [])
        return try writer.write { db in
            try db.execute(sql: """
                INSERT INTO sends (id, idempotency_key, created_at, report, state, request_hash) VALUES (?, ?, ?, ?, 'started', ?)
                ON CONFLICT(idempotency_key) DO NOTHING
                """, arguments: [id, idempotencyKey, createdAt, try Self.json(placeholder), fingerprint])
            return db.changesCount > 0
        }
    }

    /// Stores a started send's report and marks it done.
    public func finishSend(_ report: SendReport) throws {
        try writer.write { db in
            try db.execute(sql: "UPDATE sends SET report = ?, state = 'done' WHERE id = ?", arguments: [try Self.json(report), report.id])
        }
    }

    /// Marks the sends and schedule runs a stopped service left started as interrupted; returns
    /// how many of each.
    public func markInterrupted(at now: Int64) throws -> (sends: Int, runs: Int) {
        try writer.write { db in
            try db.execute(sql: "UPDATE sends SET state = 'interrupted' WHERE state = 'started'")
            let sends = db.changesCount
            try db.execute(sql: """
                UPDATE schedule_runs SET outcome = 'interrupted', finished_at = ?,
                    error = 'the service stopped while sending this run; it is not sent again (some of its pushes may have gone out)'
                WHERE outcome = 'started'
                """, arguments: [now])
            return (sends, db.changesCount)
        }
    }

    /// What a send under an idempotency key was: its state, the fingerprint of its request
    /// (`nil` for sends stored before fingerprints were kept) and its report.
    public func sendRecord(idempotencyKey: String) throws -> (state: SendState, fingerprint: String?, report: SendReport)? {
        try writer.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT state, request_hash, report FROM sends WHERE idempotency_key = ?",
                                             arguments: [idempotencyKey]) else { return nil }
            return (SendState(rawValue: row["state"]) ?? .done, row["request_hash"], try Self.decode(SendReport.self, row["report"]))
        }
    }

    /// One page of sends, newest first, after the send `after`; only a schedule's runs when given.
    public func sends(after: String?, scheduleID: String?, limit: Int) throws -> [SendSummary] {
        var conditions: [String] = [], values: [String] = []
        if let scheduleID {
            conditions.append("schedule_id = ?")
            values.append(scheduleID)
        }
        if let after {
            conditions.append("(created_at, id) < (SELECT created_at, id FROM sends WHERE id = ?)")
            values.append(after)
        }
        let clause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return try writer.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, created_at, state, report FROM sends\(clause) ORDER BY created_at DESC, id DESC LIMIT \(min(max(limit, 1), Self.maximumPage))
                """, arguments: StatementArguments(values)).map { row in
                let report = try Self.decode(SendReport.self, row["report"])
                return SendSummary(id: row["id"], createdAt: row["created_at"], state: SendState(rawValue: row["state"]) ?? .done,
                                   counts: report.counts, scheduleID: report.scheduleID)
            }
        }
    }

    /// Whether a send with this id exists (a list's `after` must name one).
    public func sendExists(id: String) throws -> Bool {
        try writer.read { db in try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM sends WHERE id = ?)", arguments: [id]) ?? false }
    }

    public func send(id: String) throws -> SendReport? {
        try writer.read { db in
            try String.fetchOne(db, sql: "SELECT report FROM sends WHERE id = ?", arguments: [id]).map { try Self.decode(SendReport.self, $0) }
        }
    }

    public func send(idempotencyKey: String) throws -> SendReport? {
        try writer.read { db in
            try String.fetchOne(db, sql: "SELECT report FROM sends WHERE idempotency_key = ?", arguments: [idempotencyKey])
                .map { try Self.decode(SendReport.self, $0) }
        }
    }

    // MARK: schedules

    public func put(_ schedule: Schedule) throws {
        try writer.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO schedules (id, created_at, state, body) VALUES (?, ?, ?, ?)",
                           arguments: [schedule.id, schedule.createdAt, schedule.state.rawValue, try Self.json(schedule)])
        }
    }

    public func schedule(_ id: String) throws -> Schedule? {
        try writer.read { db in
            try String.fetchOne(db, sql: "SELECT body FROM schedules WHERE id = ?", arguments: [id]).map { try Self.decode(Schedule.self, $0) }
        }
    }

    /// Schedules, oldest first; only those in `state` when given.
    public func schedules(state: Schedule.State? = nil) throws -> [Schedule] {
        try writer.read { db in
            let rows = state == nil
                ? try String.fetchAll(db, sql: "SELECT body FROM schedules ORDER BY created_at, id")
                : try String.fetchAll(db, sql: "SELECT body FROM schedules WHERE state = ? ORDER BY created_at, id", arguments: [state!.rawValue])
            return try rows.map { try Self.decode(Schedule.self, $0) }
        }
    }

    public func save(_ run: ScheduleRun) throws {
        try writer.write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO schedule_runs (schedule_id, zone, due_at, local_date, started_at, finished_at, outcome, send_id, counts, error)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [run.scheduleID, run.zone, run.dueAt, run.localDate?.description, run.startedAt, run.finishedAt,
                                 run.outcome.rawValue, run.sendID, try Self.json(run.counts), run.error])
        }
    }

    /// A schedule's runs, in due order.
    public func runs(scheduleID: String) throws -> [ScheduleRun] {
        try writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM schedule_runs WHERE schedule_id = ? ORDER BY due_at, zone", arguments: [scheduleID]).map { row in
                ScheduleRun(
                    scheduleID: row["schedule_id"], zone: row["zone"], localDate: (row["local_date"] as String?).flatMap(LocalDate.init),
                    dueAt: row["due_at"], startedAt: row["started_at"], finishedAt: row["finished_at"],
                    outcome: ScheduleRun.Outcome(rawValue: row["outcome"]) ?? .sent, sendID: row["send_id"],
                    counts: try Self.decode([String: Int].self, row["counts"]), error: row["error"])
            }
        }
    }

    /// The due instant of each zone's last run of a schedule: where its plan resumes after a restart.
    public func lastRuns(scheduleID: String) throws -> [String: Int64] {
        try writer.read { db in
            var last: [String: Int64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT zone, MAX(due_at) AS due FROM schedule_runs WHERE schedule_id = ? GROUP BY zone",
                                        arguments: [scheduleID]) {
                last[row["zone"]] = row["due"]
            }
            return last
        }
    }
}
