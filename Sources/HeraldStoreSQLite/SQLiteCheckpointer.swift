import GRDB
import Logging
import ServiceLifecycle

/// Copies the SQLite write-ahead log into the database file in the background.
///
/// Run it beside the gateway. A commit that has to checkpoint first stalls every push waiting on
/// it; measured on the provider-port benchmark, moving checkpoints off the writer raised
/// throughput by about a fifth (docs/benchmarks.md). `PASSIVE` checkpoints never block the writer
/// or readers; each one copies what it can and the next picks up the rest.
public struct SQLiteCheckpointer: Service {
    private let path: String
    private let interval: Duration
    private let logger: Logger

    /// - Parameters:
    ///   - store: the store whose database to checkpoint (a second connection is opened to it).
    ///   - interval: the pause between checkpoints.
    public init(store: SQLiteStore, interval: Duration = .milliseconds(200), logger: Logger) {
        self.path = store.path
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        let connection = try DatabaseQueue(path: path)
        while !Task.isCancelledOrShuttingDown {
            do {
                try await connection.writeWithoutTransaction { db in
                    _ = try db.checkpoint(.passive)
                }
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
                // The writer is checkpointing itself (its automatic checkpoint at a full WAL)
                // at this moment: expected under load, and the next pass copies what is left.
                logger.debug("WAL checkpoint skipped: the writer holds the database", metadata: ["error": "\(error)"])
            } catch {
                logger.warning("WAL checkpoint failed", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }
}

extension Task where Success == Never, Failure == Never {
    fileprivate static var isCancelledOrShuttingDown: Bool { isCancelled || isShuttingDownGracefully }
}
