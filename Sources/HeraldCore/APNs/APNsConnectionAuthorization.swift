/// The token-authentication rules of one provider connection, as a state machine: a request's
/// `authorization` header and the current time in, a decision out (reference §3).
///
/// - The first accepted provider token binds the connection to its team and key. A token of
///   another team is `InvalidProviderToken`; another key of the same team is `UnrelatedKeyIdInToken`.
/// - A token with different claims within 20 minutes of the last accepted one is
///   `TooManyProviderTokenUpdates` (the same claims signed again count as the same token).
/// - A token whose `iat` is more than an hour old is `ExpiredProviderToken`, checked on every request.
/// - The token last accepted is cached: repeating it costs a string comparison and a look at the
///   key (still there, not revoked), not a signature check.
public struct APNsConnectionAuthorization: Sendable {
    /// How old `iat` may be, in seconds.
    public static let maximumTokenAge: Int64 = 3600
    /// How soon a connection may switch to a new token, in seconds.
    public static let minimumRefreshInterval: Int64 = 20 * 60

    /// The outcome for one request.
    public enum Decision: Sendable {
        /// The request is authorized; `isFirst` is true for the connection's first accepted token.
        case authorized(ProviderTokenClaims, isFirst: Bool)
        case rejected(APNsRejection)
        /// The key named by the token is not at hand: look it up and call again.
        case needsKey(keyID: String)
    }

    /// What the caller knows of a key id.
    public enum KeyLookup: Sendable {
        case found(ProviderKey)
        case absent
        case unknown
    }

    public let environment: PushEnvironment
    /// The whole `authorization` value last accepted: compared first, as one string, because
    /// providers repeat it byte for byte.
    private var currentHeader: String?
    private var currentClaims: ProviderTokenClaims?
    private var acceptedAtSeconds: Int64 = 0

    public init(environment: PushEnvironment) { self.environment = environment }

    /// Whether a provider token has been accepted on this connection.
    public var isAuthenticated: Bool { currentClaims != nil }
    /// The team this connection is bound to.
    public var boundTeamID: String? { currentClaims?.teamID }

    /// `bearer ` in any case, followed by at least one character; no allocation.
    private static func hasBearerPrefix(_ header: String) -> Bool {
        let utf8 = header.utf8
        guard utf8.count > 7 else { return false }
        for (c, expected) in zip(utf8, "bearer ".utf8) {
            // ASCII letters compare case-insensitively; the space must be a space.
            let folded = expected == UInt8(ascii: " ") ? c : c | 0x20
            if folded != expected { return false }
        }
        return true
    }

    public mutating func authorize(
        header: String?, nowSeconds: Int64, key: (String) -> KeyLookup
    ) -> Decision {
        if let header, let currentHeader, let currentClaims, header == currentHeader {
            if nowSeconds - currentClaims.issuedAt > Self.maximumTokenAge {
                return .rejected(APNsRejection(.expiredProviderToken))
            }
            // The signature was checked when the token was accepted; the key must still exist
            // (a revoked key stops authenticating connections already open with it).
            switch key(currentClaims.keyID) {
            case .found: return .authorized(currentClaims, isFirst: false)
            case .absent:
                return .rejected(APNsRejection(.invalidProviderToken, detail: "key \(currentClaims.keyID) was revoked or removed since this connection's token was accepted"))
            case .unknown: return .needsKey(keyID: currentClaims.keyID)
            }
        }
        guard let header, Self.hasBearerPrefix(header) else { return .rejected(APNsRejection(.missingProviderToken)) }
        let text = header.utf8.dropFirst(7)

        let token: ProviderToken
        do { token = try ProviderToken(parsing: Substring(text)) } catch {
            return .rejected(APNsRejection(.invalidProviderToken, detail: "the token is not an ES256 JWT the gateway can read: \(error)"))
        }
        let claims = token.claims
        if claims.keyID.hasPrefix(ProviderKey.certificateCredentialPrefix) {
            return .rejected(APNsRejection(.invalidProviderToken, detail: "\(claims.keyID) names a push certificate, which authenticates by TLS, not a signing key"))
        }
        let providerKey: ProviderKey
        switch key(claims.keyID) {
        case .unknown: return .needsKey(keyID: claims.keyID)
        case .absent:
            return .rejected(APNsRejection(.invalidProviderToken, detail: "no key \(claims.keyID) is registered (check the key id: herald keys list)"))
        case .found(let found): providerKey = found
        }
        guard providerKey.teamID == claims.teamID else {
            return .rejected(APNsRejection(
                .invalidProviderToken, detail: "key \(claims.keyID) belongs to team \(providerKey.teamID), the token names team \(claims.teamID) (check the team)"))
        }
        guard token.isSigned(by: providerKey.publicKey) else {
            return .rejected(APNsRejection(
                .invalidProviderToken, detail: "the signature does not verify with key \(claims.keyID) (check the key: the .p8 made with this key id)"))
        }
        if let restricted = providerKey.environment, restricted != environment {
            return .rejected(APNsRejection(.badEnvironmentKeyIdInToken))
        }
        if nowSeconds - claims.issuedAt > Self.maximumTokenAge {
            return .rejected(APNsRejection(.expiredProviderToken))
        }
        if let bound = currentClaims, bound == claims {
            // The same claims signed again (ECDSA signatures differ each time): not a new token.
            currentHeader = header
            return .authorized(claims, isFirst: false)
        }
        if let bound = currentClaims {
            if bound.teamID != claims.teamID {
                return .rejected(APNsRejection(
                    .invalidProviderToken, detail: "this connection belongs to team \(bound.teamID); team \(claims.teamID) needs a connection of its own"))
            }
            if bound.keyID != claims.keyID { return .rejected(APNsRejection(.unrelatedKeyIdInToken)) }
            if nowSeconds - acceptedAtSeconds < Self.minimumRefreshInterval {
                return .rejected(APNsRejection(.tooManyProviderTokenUpdates))
            }
        }
        let isFirst = currentClaims == nil
        currentHeader = header
        currentClaims = claims
        acceptedAtSeconds = nowSeconds
        return .authorized(claims, isFirst: isFirst)
    }
}
