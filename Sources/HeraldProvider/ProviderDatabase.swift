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
        return migrator
    }

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

    // MARK: sends

    public func save(_ report: SendReport, idempotencyKey: String?) throws {
        try writer.write { db in
            try db.execute(sql: "INSERT INTO sends (id, idempotency_key, created_at, report) VALUES (?, ?, ?, ?)",
                           arguments: [report.id, idempotencyKey, report.createdAt, try Self.json(report)])
        }
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
