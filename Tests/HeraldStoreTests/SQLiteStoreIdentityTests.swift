import Foundation
import HeraldStoreSQLite
import HeraldTesting
import Testing

/// A gateway opens only a store that is Herald's: not a damaged file, not another program's
/// database, not a newer Herald's schema — and says which, without an integrity scan.
@Suite("SQLite store: identified before it is opened")
struct SQLiteStoreIdentityTests {
    @Test("new, Herald's, not SQLite, another program's, a newer Herald's")
    func identify() throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-identity")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/herald.sqlite"
        try SQLiteStore.checkIsHerald(path: path)  // absent: new
        _ = try SQLiteStore(path: path)
        try SQLiteStore.checkIsHerald(path: path)  // Herald's own

        let garbage = dir + "/garbage.sqlite"
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: garbage))
        #expect(throws: SQLiteStoreRefusal.self) { try SQLiteStore.checkIsHerald(path: garbage) }
        do { try SQLiteStore.checkIsHerald(path: garbage) } catch { #expect(error.description.contains("is not a SQLite database")) }
        #expect(throws: SQLiteStoreRefusal.self) { _ = try SQLiteStore(path: garbage) }

        let foreign = dir + "/foreign.sqlite"
        try run(foreign, "CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
        do { try SQLiteStore.checkIsHerald(path: foreign); Issue.record("another program's database passed") } catch {
            #expect(error.description.contains("another program's tables (invoices)"), "\(error)")
        }

        let newer = dir + "/newer.sqlite"
        try FileManager.default.copyItem(atPath: path, toPath: newer)
        try run(newer, "INSERT INTO grdb_migrations (identifier) VALUES ('v99: from the future')")
        do { try SQLiteStore.checkIsHerald(path: newer); Issue.record("a newer Herald's store passed") } catch {
            #expect(error.description.contains("written by a newer Herald") && error.description.contains("v99: from the future"), "\(error)")
        }
    }

    /// Runs one statement on the database at `path` with Python's sqlite3 (an independent writer:
    /// the files are not made by the code under test; the test suite installs python3).
    func run(_ path: String, _ sql: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()", path, sql]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
