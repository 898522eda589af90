/// The environment a gateway runs as: every token, key, channel and stored notification belongs to
/// one. Tokens minted by one are unknown on the other (the APNs port answers `BadDeviceToken`).
/// The names are APNs's, which Web Push and the device port share.
public struct PushEnvironment: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init?(rawValue: String) {
        guard rawValue == "development" || rawValue == "production" else { return nil }
        self.rawValue = rawValue
    }
    private init(known: String) { rawValue = known }

    /// The sandbox (APNs: `api.sandbox.push.apple.com`).
    public static let development = PushEnvironment(known: "development")
    /// Production (APNs: `api.push.apple.com`).
    public static let production = PushEnvironment(known: "production")

    public var description: String { rawValue }
}
