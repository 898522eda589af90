import Foundation
import GRDB
import HeraldCore
import Synchronization

/// Which held notifications (state 0) each token has, kept in memory rather than as an SQLite
/// index.
///
/// Tokens are random, so an index on them puts every accepted push on a random B-tree leaf: on
/// the 100,000-token provider-port benchmark that leaf was one 4 KiB WAL frame per push, and
/// finding and replacing the previous notification through it was about 60% of the store's work
/// (docs/benchmarks.md). The table stays the only durable record; this index is rebuilt from it
/// (one pass over the held notifications) when the store opens, whenever the writer sees that
/// another process committed (`SQLiteStore.noticeOtherProcesses`) and after a write that failed.
/// Only the gateway inserts held notifications, so a process that only reads trusts the index it
/// built when it opened the store.
///
/// The index may hold more than is held — seqs that another process ended (`herald tokens
/// revoke`), or of another token that shares the key — but never less: every reader re-checks
/// `token` and `state = 0` in SQL, so an extra seq costs a primary-key lookup and nothing else,
/// while a missing one would hide a notification. Entries are removed when this process ends a
/// notification and pruned when a lookup finds them no longer held.
final class HeldIndex: Sendable {
    private let seqs = Mutex<[UInt64: [Int64]]>([:])

    /// The key of a token: its first eight bytes. Gateway-issued tokens are random; tokens that
    /// share a key only share a list, which SQL then filters by token.
    private static func key(_ tokenBytes: some Collection<UInt8>) -> UInt64 {
        var key: UInt64 = 0
        for byte in tokenBytes.prefix(8) { key = key << 8 | UInt64(byte) }
        return key
    }

    /// Reads every held notification into the index, replacing what it had.
    func rebuild(_ db: Database) throws {
        var fresh: [UInt64: [Int64]] = [:]
        let rows = try Row.fetchCursor(db, sql: "SELECT seq, token FROM notifications WHERE state = 0 ORDER BY seq")
        while let row = try rows.next() {
            let token: Data = row[1]
            fresh[Self.key(token), default: []].append(row[0])
        }
        seqs.withLock { $0 = fresh }
    }

    /// The seqs that may be held for `token` (a superset, in ascending order).
    func candidates(for token: DeviceToken) -> [Int64] {
        seqs.withLock { $0[Self.key(token.bytes)] ?? [] }
    }

    /// Records a newly held notification (seqs only grow, so the list stays sorted).
    func add(_ seq: Int64, for token: DeviceToken) {
        seqs.withLock { $0[Self.key(token.bytes), default: []].append(seq) }
    }

    /// Forgets `removed` seqs of `token`'s list.
    func remove(_ removed: some Collection<Int64>, for token: DeviceToken) {
        remove(removed, key: Self.key(token.bytes))
    }

    /// Forgets one seq whose token is known only as stored bytes (no token is built for it).
    func remove(_ seq: Int64, tokenBytes: Data) {
        remove(CollectionOfOne(seq), key: Self.key(tokenBytes))
    }

    private func remove(_ removed: some Collection<Int64>, key: UInt64) {
        guard !removed.isEmpty else { return }
        seqs.withLock { index in
            guard var list = index[key] else { return }
            list.removeAll { removed.contains($0) }
            index[key] = list.isEmpty ? nil : list
        }
    }
}
