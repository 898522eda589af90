import Crypto
import Foundation
import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOPosix
import PostgresNIO

extension PostgresStore {
    // MARK: keys and topics

    public func registerKey(_ key: ProviderKey, topics: [String], atMilliseconds: Int64) async throws {
        try await transaction { c in
            // Topics are claimed in a fixed order so that two registrations cannot deadlock.
            let sorted = Array(Set(topics)).sorted()
            try await Self.query(on: c, "LOCK TABLE topics IN SHARE ROW EXCLUSIVE MODE", logger: logger)
            for _ in try await Self.query(on: c, "SELECT 1 FROM provider_keys WHERE key_id = \(key.keyID)", logger: logger) {
                throw StoreError(.keyExists, "key \(key.keyID) is already registered")
            }
            for (topic, owner) in try await Self.query(on: c, 
                "SELECT topic, team_id FROM topics WHERE topic = ANY(\(sorted))", logger: logger).decode((String, String).self)
            where owner != key.teamID {
                throw StoreError(.topicOwnedByAnotherTeam, "topic \(topic) belongs to team \(owner), not \(key.teamID)")
            }
            try await Self.query(on: c, """
                INSERT INTO provider_keys (key_id, team_id, public_key, environment, created_at_ms)
                VALUES (\(key.keyID), \(key.teamID), \(Self.buffer(key.publicKey.x963Representation)), \(key.environment?.rawValue), \(atMilliseconds))
                """, logger: logger)
            try await Self.query(on: c, """
                INSERT INTO topics (topic, team_id) SELECT unnest(\(sorted)::text[]), \(key.teamID) ON CONFLICT (topic) DO NOTHING
                """, logger: logger)
        }
    }

    public func key(id: String) async throws -> ProviderKey? {
        let rows = try await query(on: client, 
            "SELECT key_id, team_id, public_key, environment FROM provider_keys WHERE key_id = \(id) AND revoked_at_ms IS NULL",
            logger: logger)
        for (keyID, teamID, raw, environment) in try rows.decode((String, String, ByteBuffer, String?).self) {
            guard let publicKey = try? P256.Signing.PublicKey(x963Representation: Self.bytes(raw)) else {
                throw StoreError(.corrupt, "the public key of \(id) in the database is not a P-256 key")
            }
            return ProviderKey(
                keyID: keyID, teamID: teamID, publicKey: publicKey, environment: environment.flatMap(PushEnvironment.init(rawValue:)))
        }
        return nil
    }

    public func topics(ofTeam teamID: String) async throws -> Set<String> {
        var topics = Set<String>()
        for topic in try await query(on: client, "SELECT topic FROM topics WHERE team_id = \(teamID)", logger: logger).decode(String.self) {
            topics.insert(topic)
        }
        return topics
    }
}
