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
        return migrator
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    private static func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try encoder.encode(value), as: UTF8.self) }
    private static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T { try JSONDecoder().decode(type, from: Data(text.utf8)) }

    // MARK: registrations

    public func upsert(_ r: Registration) throws {
        try writer.write { db in
            try db.execute(sql: """
                INSERT INTO registrations (token, topic, language, time_zone, user_id, tags, registered_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(token) DO UPDATE SET topic = excluded.topic, language = excluded.language, time_zone = excluded.time_zone,
                    user_id = excluded.user_id, tags = excluded.tags, registered_at = excluded.registered_at
                """, arguments: [r.token, r.topic, r.language, r.timeZone, r.userID, try Self.json(r.tags), r.registeredAt])
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

    public func registrations(user: String) throws -> [Registration] {
        try writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM registrations WHERE user_id = ? ORDER BY token", arguments: [user]).map(Self.registration)
        }
    }

    public func registrations(topic: String?) throws -> [Registration] {
        try writer.read { db in
            if let topic {
                return try Row.fetchAll(db, sql: "SELECT * FROM registrations WHERE topic = ? ORDER BY token", arguments: [topic]).map(Self.registration)
            }
            return try Row.fetchAll(db, sql: "SELECT * FROM registrations ORDER BY token").map(Self.registration)
        }
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
}
