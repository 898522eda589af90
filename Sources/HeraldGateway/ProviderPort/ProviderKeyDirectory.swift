import HeraldCore
import HeraldStore

/// The provider keys and team topics the provider port needs on every request, cached in front
/// of the store so that the hot path never waits on it.
///
/// A miss is looked up in the store once (asynchronously) and remembered, including absence.
/// Absent keys and topic sets are looked up again after `refreshMilliseconds`, so keys and topics
/// registered while the gateway runs (`herald keys create` from another process) are picked up.
/// A known key older than that is still used while one lookup in the background checks it
/// again, so a key revoked by `herald keys revoke` stops working within about that interval,
/// on connections already authenticated with it too, and no request waits for the check.
final class ProviderKeyDirectory: Sendable {
    private struct Entry<Value: Sendable>: Sendable {
        var value: Value
        var loadedAtMilliseconds: Int64
        /// A background lookup of this entry is under way.
        var refreshing = false
    }

    private struct State: Sendable {
        var keys: [String: Entry<ProviderKey?>] = [:]
        var topics: [String: Entry<Set<String>>] = [:]
    }

    private let store: any GatewayStore
    private let clock: any WallClock
    private let refreshMilliseconds: Int64
    private let state = Locked(State())

    init(store: any GatewayStore, clock: any WallClock, refreshMilliseconds: Int64 = 5_000) {
        self.store = store
        self.clock = clock
        self.refreshMilliseconds = refreshMilliseconds
    }

    /// What is known of a key now, without waiting. A known key due for a check is returned as
    /// it is and looked up again in the background.
    func lookupKey(_ keyID: String) -> APNsConnectionAuthorization.KeyLookup {
        let now = clock.nowMilliseconds()
        let (lookup, refresh) = state.withLock { state -> (APNsConnectionAuthorization.KeyLookup, Bool) in
            guard let entry = state.keys[keyID] else { return (.unknown, false) }
            let fresh = now - entry.loadedAtMilliseconds < refreshMilliseconds
            guard let key = entry.value else { return (fresh ? .absent : .unknown, false) }
            if fresh || entry.refreshing { return (.found(key), false) }
            state.keys[keyID]?.refreshing = true
            return (.found(key), true)
        }
        if refresh {
            Task {
                do { try await self.loadKey(keyID) } catch {
                    // Checked again on a later request.
                    state.withLock { $0.keys[keyID]?.refreshing = false }
                }
            }
        }
        return lookup
    }

    /// Loads a key from the store into the cache.
    func loadKey(_ keyID: String) async throws {
        let key = try await store.key(id: keyID)
        let now = clock.nowMilliseconds()
        state.withLock { state in
            state.keys[keyID] = Entry(value: key, loadedAtMilliseconds: now)
            // Key ids come from peers: past the bound, forget every "no such key" (they are only
            // a shortcut); known keys stay.
            if state.keys.count > Self.maximumCachedKeys { state.keys = state.keys.filter { $0.value.value != nil } }
        }
    }

    /// Cached key ids (known and unknown) before the unknown ones are dropped.
    static let maximumCachedKeys = 10_000

    /// Whether the team owns the topic: `true`/`false` when the answer is fresh, `nil` when the
    /// team's topics must be (re)loaded first. A "no" older than the refresh interval is not trusted.
    func teamOwns(_ teamID: String, topic bundleID: String) -> Bool? {
        enum Cached { case unknown, owned, notOwned(loadedAtMilliseconds: Int64) }
        let cached = state.withLock { state -> Cached in
            guard let entry = state.topics[teamID] else { return .unknown }
            return entry.value.contains(bundleID) ? .owned : .notOwned(loadedAtMilliseconds: entry.loadedAtMilliseconds)
        }
        switch cached {
        case .unknown: return nil
        case .owned: return true
        case .notOwned(let loadedAt):
            // Only a "no" needs the time: it is trusted for `refreshMilliseconds`.
            return clock.nowMilliseconds() - loadedAt < refreshMilliseconds ? false : nil
        }
    }

    func loadTopics(ofTeam teamID: String) async throws {
        let topics = try await store.topics(ofTeam: teamID)
        let now = clock.nowMilliseconds()
        state.withLock { $0.topics[teamID] = Entry(value: topics, loadedAtMilliseconds: now) }
    }
}
