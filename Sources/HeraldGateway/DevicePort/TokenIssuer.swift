import HeraldCore
import HeraldStore

/// Issues (or finds) a connected device's token of a scope — an app, a Live Activity, a widget
/// extension, a channel subscription, a Web Push subscription — within the bound on tokens per
/// device (``GatewayLimits/topicsPerDevice``, counted by the store across connections and
/// nodes). The one way a Herald device's session and a browser's session make a token.
struct TokenIssuer: Sendable {
    let store: any GatewayStore
    let environment: PushEnvironment
    let clock: any WallClock
    let maximumPerDevice: Int

    /// The device's token of `scope`: the one it has, or a new one. Throws
    /// ``StoreError/Code/tooManyTokens`` past the bound.
    func issue(_ scope: TokenScope, deviceID: String) async throws -> TokenRegistration {
        let candidate = TokenRegistration(
            token: .random(), scope: scope, environment: environment, deviceID: deviceID, createdAtMilliseconds: clock.nowMilliseconds())
        return try await store.issueToken(candidate, maximumActivePerDevice: maximumPerDevice)
    }
}

extension SessionPort {
    /// Tokens for this port's sessions (a device's or a browser's), from the core they share.
    var tokens: TokenIssuer {
        TokenIssuer(store: core.store, environment: core.environment, clock: core.clock, maximumPerDevice: core.limits.topicsPerDevice)
    }
}
