import Foundation
import GRDB

/// Online backup of a gateway's SQLite store: SQLite's backup API (through GRDB) copies every page
/// from one read transaction, so the copy is one consistent snapshot even while a gateway writes.
public enum SQLiteBackup {
    /// Copies the database at `source` into a new file at `destination` (which must not exist).
    /// On failure (a full disk, a source that is not a database) nothing is left at `destination`.
    public static func copy(databaseAt source: String, to destination: String) throws {
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw SQLiteBackupError("\(destination) exists already; a backup never overwrites a file")
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        do {
            let from = try DatabaseQueue(path: source, configuration: configuration)
            let to = try DatabaseQueue(path: destination)
            try from.backup(to: to)
            try to.close()
            try from.close()
        } catch {
            for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: destination + suffix) }
            throw SQLiteBackupError("could not copy \(source) to \(destination): \(Self.describe(error))")
        }
    }

    /// `PRAGMA integrity_check`: empty when the database is sound, else SQLite's findings.
    public static func integrityProblems(databaseAt path: String) throws -> [String] {
        do {
            let queue = try DatabaseQueue(path: path, configuration: { var c = Configuration(); c.readonly = true; return c }())
            defer { try? queue.close() }
            let lines = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            return lines == ["ok"] ? [] : lines
        } catch {
            throw SQLiteBackupError("\(path) cannot be read as a database: \(Self.describe(error))")
        }
    }

    static func describe(_ error: any Error) -> String {
        guard let error = error as? DatabaseError else { return "\(error)" }
        // SQLite's backup reports some failures with the code alone (its message then reads "not an error").
        switch error.resultCode {
        case .SQLITE_FULL: return "the disk is full (SQLITE_FULL)"
        case .SQLITE_IOERR: return "an I/O error (SQLITE_IOERR)"
        case .SQLITE_NOTADB: return "not a SQLite database (SQLITE_NOTADB)"
        case .SQLITE_CORRUPT: return "the database is corrupt (SQLITE_CORRUPT)"
        case .SQLITE_BUSY, .SQLITE_LOCKED: return "the database stayed locked for 10 s (\(error.resultCode))"
        default: return error.message.map { "\($0) (\(error.resultCode))" } ?? "\(error.resultCode)"
        }
    }
}

public struct SQLiteBackupError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
