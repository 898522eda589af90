import Crypto

/// A provider's signing key as the gateway knows it: the public half, its team, and an optional
/// environment restriction (Apple's team-scoped keys may be limited to one environment).
public struct ProviderKey: Sendable {
    public var keyID: String
    public var teamID: String
    public var publicKey: P256.Signing.PublicKey
    /// `nil`: the key works in both environments.
    public var environment: PushEnvironment?

    public init(keyID: String, teamID: String, publicKey: P256.Signing.PublicKey, environment: PushEnvironment? = nil) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKey = publicKey
        self.environment = environment
    }

    /// The id prefix of a push certificate's credential: registered beside keys (so that one
    /// revocation stops either), never the `kid` of a provider token (Apple key ids are 10
    /// letters or digits).
    public static let certificateCredentialPrefix = "cert-"

    /// Whether this credential is a push certificate's rather than a signing key.
    public var isCertificate: Bool { keyID.hasPrefix(Self.certificateCredentialPrefix) }
}
