import HeraldCore
import HeraldStore
@testable import HeraldStorePostgres
import HeraldTesting
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Testing

/// A statement for a connection that has closed fails at once, never waits (issue 63): postgres-nio
/// 1.33 writes a statement with `promise: nil`, and one written after its channel's handlers are
/// gone is never answered. After a failover cut every connection, the ROLLBACK behind a failed
/// statement waited there until the intake's commit deadline (8–10 s of 503s).
@Suite("PostgreSQL: statements on a lost connection", .enabled(if: PostgreSQLTestServer.url != nil || PostgreSQLTestServer.isRequired))
struct PostgresConnectionLossTests {
    let logger = Logger(label: "test")

    func connection(_ store: PostgresStore) async throws -> PostgresConnection {
        try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(), configuration: store.listenerConfiguration, id: 1, logger: logger
        ).get()
    }

    @Test("postgres-nio 1.33 itself never answers a statement written after its connection closed (why send checks first)")
    func libraryLeavesItUnanswered() async throws {
        let store = try await PostgresStore.connect(try PostgresURL(try PostgreSQLTestServer.freshDatabase()), logger: logger)
        defer { Task { await store.close() } }
        let connection = try await connection(store)
        try await connection.close()
        let answered = Locked(false)
        let raw: EventLoopFuture<PostgresQueryResult> = connection.query("SELECT 1", logger: logger)
        raw.whenComplete { _ in answered.withLock { $0 = true } }
        // The loop has run the write (it runs its tasks in order) and a failure would have been
        // delivered there: none came. When a later postgres-nio fails it, this test says so, and
        // the look in `send` may go.
        try await connection.eventLoop.submit {}.get()
        #expect(!answered.withLock { $0 })
    }

    @Test("a statement for a connection that has closed fails with ConnectionClosed, and is never written")
    func closedConnection() async throws {
        let store = try await PostgresStore.connect(try PostgresURL(try PostgreSQLTestServer.freshDatabase()), logger: logger)
        defer { Task { await store.close() } }
        let connection = try await connection(store)
        #expect(try await PostgresStore.query(on: connection, "SELECT 1", logger: logger).count == 1)
        try await connection.close()
        // Closed, its handlers removed (closeFuture completes after that): what postgres-nio would
        // write into nothing. Off the loop and on it, both ways a statement is sent.
        await #expect(throws: ConnectionClosed.self) {
            try await PostgresStore.send("ROLLBACK", on: connection, logger: logger).get()
        }
        let onLoop = try await connection.eventLoop.submit {
            PostgresStore.send("SELECT 1", on: connection, logger: logger)
        }.get()
        await #expect(throws: ConnectionClosed.self) { try await onLoop.get() }
    }

    @Test("statements queued back to back keep their order and answer, then fail at once after the close")
    func orderKept() async throws {
        let store = try await PostgresStore.connect(try PostgresURL(try PostgreSQLTestServer.freshDatabase()), logger: logger)
        defer { Task { await store.close() } }
        let connection = try await connection(store)
        let sent = (1...50).map { PostgresStore.send("SELECT \($0)::int8", on: connection, logger: logger) }
        var values: [Int64] = []
        for statement in sent { values += try await statement.get().decode(Int64.self) }
        #expect(values == Array(1...50))
        // Queued while the close is under way: each fails, none waits for an answer.
        let closing: EventLoopFuture<Void> = connection.close()
        let late = (1...5).map { _ in PostgresStore.send("SELECT 1", on: connection, logger: logger) }
        try await closing.get()
        for statement in late {
            await #expect(throws: (any Error).self) { try await statement.get() }
        }
    }
}
