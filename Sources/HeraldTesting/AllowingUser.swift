import HeraldDevice

/// A user who allows whatever an app asks for at its authorization prompt.
public struct AllowingUser: UserSettingsSource {
    public init() {}
    public func answerPrompt(appID: String, requested: AuthorizationOptions) async -> AuthorizationOptions { requested }
}
