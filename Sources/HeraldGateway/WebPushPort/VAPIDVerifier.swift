import HeraldCore
import HeraldStore
import Logging
import NIOCore

/// VAPID checks with a memory: a token verified once (signature, `aud`, `exp`, `sub`) is not
/// verified again until it expires, as the APNs port keeps a provider token it verified. An
/// application server that reuses its token (as RFC 8292 §2 allows, for up to 24 h) then costs
/// a table look-up per push instead of an ECDSA verification. The subscription's key is
/// checked on every push.
final class VAPIDVerifier: Sendable {
    private struct Verified {
        var publicKey: [UInt8]
        var audience: String
        var expiresAt: Int64
    }

    private let verified = Locked([String: Verified]())
    /// Tokens remembered at most (the table starts again when full).
    static let maximumCached = 10_000

    func verify(
        authorization: String?, cryptoKey: String?, audience: String, nowSeconds: Int64, subscriptionKey: [UInt8]?
    ) throws(VAPIDAuthorization.Failure) {
        let cacheKey = cryptoKey.map { (authorization ?? "") + "\n" + $0 } ?? authorization ?? ""
        if let hit = verified.withLock({ $0[cacheKey] }), hit.audience == audience, hit.expiresAt > nowSeconds {
            if let subscriptionKey, subscriptionKey != hit.publicKey { throw .wrongKey }
            return
        }
        let vapid = try VAPIDAuthorization(authorization: authorization, cryptoKey: cryptoKey)
        try vapid.verify(audience: audience, nowSeconds: nowSeconds, subscriptionKey: subscriptionKey)
        guard let expiresAt = vapid.token.claims["exp"].flatMap(ES256JWT.seconds) else { return }
        let entry = Verified(publicKey: vapid.publicKey, audience: audience, expiresAt: expiresAt)
        verified.withLock { table in
            if table.count >= Self.maximumCached { table.removeAll(keepingCapacity: true) }
            table[cacheKey] = entry
        }
    }
}
