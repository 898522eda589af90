import HeraldCore

/// A dead token in the feedback list: the app was removed, or its device has not connected for
/// the inactivity period. `timestamp` is when the gateway learned it (legacy feedback semantics).
public struct FeedbackEntry: Sendable, Hashable {
    public var token: DeviceToken
    public var atMilliseconds: Int64
    public init(token: DeviceToken, atMilliseconds: Int64) {
        self.token = token
        self.atMilliseconds = atMilliseconds
    }
}
