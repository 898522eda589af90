import HeraldCore

/// The rules that decide, from a token's registration, whether a notification is admitted.
/// Every store applies them the same way, inside the transaction that stores the notification.
public enum Admission {
    public static func decide(
        registration: TokenRegistration?, notification: StoredNotification,
        environment: PushEnvironment, nowMilliseconds: Int64
    ) -> SubmissionOutcome {
        guard let registration, registration.environment == environment else {
            return .rejected(.unknownToken)
        }
        guard registration.scope.accepts(bundleID: notification.bundleID, pushType: notification.pushType) else {
            return .rejected(.notForThisScope)
        }
        if let at = registration.unregisteredAtMilliseconds {
            return .rejected(.unregistered(atMilliseconds: at))
        }
        if let at = registration.expiredAtMilliseconds {
            return .rejected(.expired(atMilliseconds: at))
        }
        if case .at = notification.expiration, !notification.expiration.isLive(atMilliseconds: nowMilliseconds) {
            return .discarded
        }
        return .stored(seq: 0, deviceID: registration.deviceID)
    }
}
