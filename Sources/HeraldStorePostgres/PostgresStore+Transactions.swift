import Logging
import NIOCore
import PostgresNIO

// Transactions: statements queued on one connection back to back, BEGIN to COMMIT.
extension PostgresStore {
    /// Runs `body` in one transaction on a connection of `pool` (the main pool by default). An
    /// error thrown by `body` or by the database is rethrown as it is, after the rollback. With
    /// `relaxed`, the commit does not wait for the disk: for records whose loss in a database
    /// crash only causes a repeat.
    ///
    /// A connection whose transaction state is unknown — `BEGIN`, `COMMIT` or `ROLLBACK` failed —
    /// is closed rather than returned to the pool: reused, it would run the next caller's
    /// statements inside a transaction left open (holding its locks, or refusing everything as
    /// aborted). The pool opens a fresh one.
    @discardableResult
    func transaction<T: Sendable>(
        relaxed: Bool = false, on pool: PostgresClient? = nil, _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await transaction(relaxed: relaxed, on: pool, pipelined: { connection in
            let value = try await body(connection)
            return { value }
        })
    }

    /// Runs `body` in one transaction, its statements sent back to back: `body` may queue
    /// statements with ``send(_:on:logger:)`` without waiting for their answers, and returns what
    /// waits for the last of them, which runs after the `COMMIT` is queued behind them.
    ///
    /// A connection sends a queued statement as soon as the one before it is answered, from its
    /// event loop: the opening `BEGIN` (and `SET LOCAL`) go out with `body`'s first statement and
    /// the `COMMIT` with its last, without a round trip through this task between them. Each
    /// statement still starts after the previous one ended, with a snapshot of its own (read
    /// committed): a read queued behind a `FOR UPDATE` sees what was committed before the locks
    /// were granted. A statement that fails aborts the transaction, and the `COMMIT` behind it then
    /// ends it as a rollback (the server answers it with `ROLLBACK`); the statement's error is
    /// rethrown. Whatever decides whether to commit is decided in `body` (throwing there rolls
    /// back what it queued): the returned closure runs with the `COMMIT` already queued, so an
    /// error it throws of its own cannot undo the commit. `BEGIN` itself is not awaited before
    /// `body`'s statements are sent: it fails only with the connection, and then so does every
    /// statement queued behind it.
    func transaction<T: Sendable>(
        relaxed: Bool = false, on pool: PostgresClient? = nil,
        pipelined body: @Sendable (PostgresConnection) async throws -> @Sendable () async throws -> T
    ) async throws -> T {
        let logger = self.logger
        return try await (pool ?? client).withConnection { connection in
            var opening = [Self.send("BEGIN", on: connection, logger: logger)]
            if relaxed { opening.append(Self.send("SET LOCAL synchronous_commit = off", on: connection, logger: logger)) }
            let finish: @Sendable () async throws -> T
            do {
                finish = try await body(connection)
                for statement in opening { _ = try await statement.get() }
            } catch {
                // On a connection that closed (a statement failed with it), the ROLLBACK fails at
                // once too (``send(_:on:logger:)``): it once waited forever there, holding the
                // intake's commit until its deadline (issue 63).
                do { _ = try await Self.send("ROLLBACK", on: connection, logger: logger).get() } catch { await Self.discard(connection) }
                throw error
            }
            let commit = Self.send("COMMIT", on: connection, logger: logger)
            let value: T
            do {
                value = try await finish()
            } catch {
                // The transaction ended with the COMMIT's answer, a rollback; without an answer
                // the connection's state is unknown.
                if (try? await commit.get()) == nil { await Self.discard(connection) }
                throw error
            }
            let ended: PostgresQueryResult
            do {
                ended = try await commit.get()
            } catch {
                await Self.discard(connection)
                throw error
            }
            guard ended.metadata.command == "COMMIT" else {
                throw PostgresStoreError("the transaction ended with \(ended.metadata.command), not COMMIT")
            }
            return value
        }
    }

    /// Runs `statements` in one transaction, all of them sent at once with the `BEGIN` and the
    /// `COMMIT` (for statements that need no answer of another).
    func transaction(relaxed: Bool = false, on pool: PostgresClient? = nil, statements: [PostgresQuery]) async throws {
        let logger = self.logger
        try await transaction(relaxed: relaxed, on: pool, pipelined: { connection in
            let sent = statements.map { Self.send($0, on: connection, logger: logger) }
            return { for statement in sent { _ = try await statement.get() } }
        })
    }

    /// Queues `query` on `connection` and returns its answer's future: the statement goes out
    /// when the ones queued before it are answered, and its rows are collected. Every statement
    /// Herald sends goes through here (or ``query(on:_:logger:)``, which comes here).
    ///
    /// A statement for a connection that has closed fails at once with ``ConnectionClosed``, and
    /// is never written. postgres-nio (1.33) writes a statement to its channel with
    /// `promise: nil`: once the channel has closed and its handlers are gone, the write goes
    /// nowhere and its answer never comes. Seen after every failover: a statement failed as its
    /// connection was cut, the ROLLBACK behind it was never answered, and the intake's commit
    /// waited with it until its deadline (8–10 s of 503s, issue 63). So the statement is handed to
    /// the connection from its event loop, where the look at the channel and the write are one
    /// step: a channel still active has its handlers (they go only after it is closed), which
    /// fail what they hold when it closes. Statements keep their order (the loop runs its tasks
    /// in order).
    static func send(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) -> EventLoopFuture<PostgresQueryResult> {
        let loop = connection.eventLoop
        let result = loop.makePromise(of: PostgresQueryResult.self)
        let write: @Sendable () -> Void = {
            if connection.isClosed {
                result.fail(ConnectionClosed())
            } else {
                connection.query(query, logger: logger).cascade(to: result)
            }
        }
        if loop.inEventLoop { write() } else { loop.execute(write) }
        return result.futureResult
    }

    /// The rows of `query`, run on a connection of `pool` (see ``send(_:on:logger:)``).
    @discardableResult
    func query(on pool: PostgresClient, _ query: PostgresQuery, logger: Logger) async throws -> PostgresQueryResult {
        try await pool.withConnection { connection in try await Self.send(query, on: connection, logger: logger).get() }
    }

    /// The rows of `query`, run on `connection` (see ``send(_:on:logger:)``).
    @discardableResult
    static func query(on connection: PostgresConnection, _ query: PostgresQuery, logger: Logger) async throws -> PostgresQueryResult {
        try await send(query, on: connection, logger: logger).get()
    }

    /// Closes a connection that must not be reused (its pool replaces it).
    private static func discard(_ connection: PostgresConnection) async {
        try? await connection.close()
    }
}

/// A statement sent on a connection that had closed: it was never sent, and is retried on another.
public struct ConnectionClosed: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "the database connection closed before the statement was sent" }
}

extension PostgresQueryResult {
    /// Every row, decoded as one column of `Column`.
    func decode<Column: PostgresDecodable>(_ column: Column.Type) throws -> [Column] {
        try rows.map { try $0.decode(Column.self) }
    }

    /// Every row, decoded as columns of these types.
    func decode<each Column: PostgresDecodable>(_ columns: (repeat each Column).Type) throws -> [(repeat each Column)] {
        try rows.map { try $0.decode(columns) }
    }
}
