import Crypto

/// A provider's signing key as the gateway knows it: the public half, its team, and an optional
/// environment restriction (Apple's team-scoped keys may be limited to one environment).
public struct ProviderKey: Sendable {
    public var keyID: String
    public var teamID: String
    public var publicKey: P256.Signing.PublicKey
    /// `nil`: the key works in both environments.
    public var environment: APNsEnvironment?

    public init(keyID: String, teamID: String, publicKey: P256.Signing.PublicKey, environment: APNsEnvironment? = nil) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKey = publicKey
        self.environment = environment
    }
}
