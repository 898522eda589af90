import HeraldCore
import HeraldStore

/// The core's answers, said in APNs's terms: the only place where the intake's and the
/// admission's outcomes become APNs statuses and reasons.
extension APNsRejection {
    /// A refusal by the token's registration (reference §3: 400 `BadDeviceToken`, 400
    /// `DeviceTokenNotForTopic`, 410 `Unregistered` / `ExpiredToken` with the instant).
    init(_ refusal: TokenRefusal) {
        switch refusal {
        case .unknownToken: self.init(.badDeviceToken)
        case .notForThisScope: self.init(.deviceTokenNotForTopic)
        case .unregistered(let at): self.init(.unregistered, timestampMilliseconds: at)
        case .expired(let at): self.init(.expiredToken, timestampMilliseconds: at)
        }
    }

    /// The intake could not take the push now: 503, which providers retry.
    init(_ unavailable: IntakeUnavailable) {
        switch unavailable {
        case .storeBehind: self.init(.serviceUnavailable)
        case .shuttingDown: self.init(.shutdown)
        }
    }
}
