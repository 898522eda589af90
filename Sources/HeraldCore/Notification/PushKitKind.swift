/// The push types that reach an app through their own token rather than the app's APNs device
/// token: what `PKPushRegistry` (VoIP, complication, File Provider), `PTChannelManager` (Push to
/// Talk) and `CLLocationManager.startMonitoringLocationPushes` (location queries) hand the app.
///
/// A push of one of these types is accepted only for a token of its own kind, and a token of
/// one of these kinds accepts only its own type (APNs answers `DeviceTokenNotForTopic`
/// otherwise); the raw values are the `apns-push-type` header's.
public enum PushKitKind: String, Sendable, Hashable, CaseIterable, Codable {
    case voip
    case pushToTalk = "pushtotalk"
    case location
    case complication
    case fileProvider = "fileprovider"

    /// The push type this kind's token receives.
    public var pushType: PushType { PushType(rawValue: rawValue) }

    /// The kind whose token a push of `pushType` needs, or `nil` when it goes to another token.
    public init?(pushType: PushType) {
        self.init(rawValue: pushType.rawValue)
    }

    /// What hands the app this kind's token, for messages and documentation.
    public var tokenSource: String {
        switch self {
        case .voip: "PKPushRegistry (.voIP)"
        case .pushToTalk: "PTChannelManager (while a channel is joined)"
        case .location: "CLLocationManager.startMonitoringLocationPushes"
        case .complication: "PKPushRegistry (.complication)"
        case .fileProvider: "PKPushRegistry (.fileProvider)"
        }
    }
}
