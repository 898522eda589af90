import Foundation
import GRDB

/// A database file refused as a gateway's store, in words an operator can act on (the gateway's
/// start and `herald doctor` say the same).
public struct SQLiteStoreRefusal: Error, CustomStringConvertible, Equatable {
    public var description: String
}

extension SQLiteStore {
    /// Whether the file at `path` can be opened as Herald's store, without a full integrity scan
    /// (`herald doctor` does that): a missing or empty file is new; else the header must be
    /// SQLite's, the schema readable, its tables Herald's (or none), and its migrations ones this
    /// Herald knows (a newer Herald's store is refused, never half-migrated).
    public static func checkIsHerald(path: String) throws(SQLiteStoreRefusal) {
        var status = stat()
        guard stat(path, &status) == 0, status.st_size > 0 else { return }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw SQLiteStoreRefusal(description: "\(path) is not a regular file: it cannot be Herald's store")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw SQLiteStoreRefusal(description: "\(path) cannot be read: \(String(cString: strerror(errno)))")
        }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        try? handle.close()
        guard header == Data("SQLite format 3\0".utf8) else {
            throw SQLiteStoreRefusal(description: "\(path) is not a SQLite database (its first 16 bytes are not SQLite's header): it is damaged or not Herald's store; move it away, or restore a backup (herald restore)")
        }
        let tables: [String]
        let applied: [String]
        do {
            var configuration = Configuration()
            configuration.readonly = true
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            (tables, applied) = try queue.read { db in
                let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
                let applied = tables.contains("grdb_migrations") ? try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations") : []
                return (tables, applied)
            }
        } catch {
            throw SQLiteStoreRefusal(description: "\(path) cannot be read as a SQLite database (\(error)): it is damaged; move it away, or restore a backup (herald restore)")
        }
        if !tables.isEmpty && !tables.contains("grdb_migrations") {
            throw SQLiteStoreRefusal(description: "\(path) holds another program's tables (\(tables.prefix(5).joined(separator: ", "))), not Herald's store: give herald a data directory of its own")
        }
        let known = Set(migrator.migrations)
        if let unknown = applied.first(where: { !known.contains($0) }) {
            throw SQLiteStoreRefusal(description: "\(path) was written by a newer Herald (its schema has \"\(unknown.prefix(80))\", which this herald does not know): upgrade herald, or restore a backup this version made")
        }
    }
}
