import HeraldCore

/// The rules of PushKit's push types as the device enforces them: Apple's numbers where it gives
/// them, Herald's choices (documented in docs/push-types/) where it does not.
public enum PushKitContract {
    /// How long the app has to complete a VoIP push (and report its call before). Apple names no
    /// figure ("report the call quickly", `PKPushType.voIP`); Herald gives the 30 s it gives every
    /// background handler.
    public static let voipTimeLimitMilliseconds: Int64 = 30_000
    /// Consecutive VoIP pushes not reported as calls after which VoIP pushes stop reaching the app
    /// until it registers for them again. Apple says only that *repeated* failures stop them
    /// (`PKPushType.voIP`); three is the smallest number that is "repeated" more than once and
    /// what developers report seeing.
    public static let voipFailuresBeforeStop = 3
    /// How long the app has to answer a Push to Talk push with its result. Apple's
    /// `incomingPushResult(channelManager:channelUUID:pushPayload:)` returns the result
    /// synchronously; Herald allows an agent connection's round trip.
    public static let pushToTalkTimeLimitMilliseconds: Int64 = 5_000
    /// How long a location push service extension has to complete (Apple names no figure; the
    /// notification service extension's 30 s).
    public static let locationTimeLimitMilliseconds: Int64 = 30_000
    /// Complication and File Provider pushes: the same 30 s.
    public static let otherTimeLimitMilliseconds: Int64 = 30_000
    /// PushKit pushes kept for an app that is not running, handed over when it starts (the
    /// oldest are dropped first).
    public static let inboxLimit = 16

    static func timeLimit(_ kind: PushKitKind) -> Int64 {
        switch kind {
        case .voip: voipTimeLimitMilliseconds
        case .pushToTalk: pushToTalkTimeLimitMilliseconds
        case .location: locationTimeLimitMilliseconds
        case .complication, .fileProvider: otherTimeLimitMilliseconds
        }
    }
}

/// Complication pushes, per app: "you can send up to 50 complication pushes per day"
/// (PushKit, `PKPushType.complication`).
public enum ComplicationPushes: DailyAllowance {
    public static let perDay = 50
}

/// Where the device is: what a location push service extension is handed.
public struct DeviceLocation: Sendable, Hashable, Codable {
    public var latitude: Double
    public var longitude: Double
    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

/// A call an app reported to CallKit (`CXProvider.reportNewIncomingCall(with:update:)`): the
/// device shows it with Answer and Decline until it is answered, declined or ended.
public struct IncomingCall: Sendable, Hashable, Codable {
    /// The call's UUID, as the app chose it.
    public var uuid: String
    /// Who calls: the handle (a number, an address) and the name to show, if any.
    public var handle: String
    public var caller: String?
    public var video: Bool

    public init(uuid: String, handle: String, caller: String? = nil, video: Bool = false) {
        self.uuid = uuid
        self.handle = handle
        self.caller = caller
        self.video = video
    }

    /// The id the call is shown under (the user answers it by this id, like a notification).
    public var shownID: String { Self.shownPrefix + uuid }
    static let shownPrefix = "call:"
    /// The longest uuid, handle or caller name accepted.
    public static let maximumFieldBytes = 256
}

/// A PushKit push as the app is handed it (`PKPushPayload` and what comes with it).
public struct PushKitPush: Sendable, Hashable, Codable {
    public var kind: PushKitKind
    public var apnsID: String
    public var payload: JSONValue
    /// When the device received it (milliseconds since 1970).
    public var arrivedAt: Int64
    /// VoIP: whether this push must be reported as a call (`PKVoIPPushMetadata.mustReport`).
    public var mustReport: Bool?
    /// Push to Talk: the channel joined.
    public var channel: String?
    /// Location: the device's position, when it has one.
    public var location: DeviceLocation?
}

/// How the app completes a PushKit push.
public enum PushKitAnswer: Sendable, Hashable {
    /// Done (VoIP after reporting its call, location, complication, File Provider).
    case done
    /// Push to Talk: who is speaking now (`PTPushResult.activeRemoteParticipant`).
    case activeRemoteParticipant(String)
    /// Push to Talk: leave the channel (`PTPushResult.leaveChannel`).
    case leaveChannel
}

/// What the user did to a shown call, as CallKit tells the app (`CXAnswerCallAction`, `CXEndCallAction`).
public enum CallAction: String, Sendable, Hashable {
    case answer
    case end
}

/// What happened to an app's PushKit tokens, pushes and calls.
public enum PushKitEvent: Sendable, Hashable {
    /// A token arrived (`pushRegistry(_:didUpdate:for:)`, `channelManager(_:receivedEphemeralPushToken:)`,
    /// `startMonitoringLocationPushes`'s completion).
    case token(PushKitKind, DeviceToken)
    /// A token ended (`didInvalidatePushTokenFor`): the app gave it up.
    case tokenInvalidated(PushKitKind)
    /// Kept until the app starts (it is not running).
    case held(PushKitKind, apnsID: String)
    /// Handed to the app.
    case handed(PushKitPush)
    /// Not delivered, and why.
    case notDelivered(PushKitKind, apnsID: String, reason: String)
    /// The app completed it; `result` says how.
    case completed(PushKitKind, apnsID: String, result: String)
    case callReported(IncomingCall)
    /// A call ended: answered and hung up by the app, declined by the user, ended by the app.
    case callEnded(uuid: String, reason: String)
    /// The system terminated the app, and why.
    case terminated(reason: String)
    /// VoIP pushes stopped reaching the app after this many unreported in a row.
    case voipStopped(failures: Int)
    case channelJoined(String)
    case channelLeft(String)
}

/// One app's PushKit state.
struct PushKitState {
    /// Kinds the app asked a token for (the registry's desired types, a joined Push to Talk
    /// channel, location push monitoring).
    var wanted: Set<PushKitKind> = []
    var tokens: [PushKitKind: DeviceToken] = [:]
    /// VoIP pushes not reported as calls, in a row; at the threshold VoIP pushes stop.
    var voipFailures = 0
    var voipStopped = false
    /// The Push to Talk channel joined (its UUID).
    var channel: String?
    var complicationBudget = DailyBudget<ComplicationPushes>()
    /// Calls reported and not ended, by UUID.
    var calls: [String: IncomingCall] = [:]
    /// Calls reported so far (a VoIP push is reported when this grew while it was handled).
    var reportedCalls = 0
    /// Pushes waiting for the app to start.
    var inbox: [PushKitPush] = []

    /// What is saved with the app's state.
    struct Saved: Codable {
        var wanted: [PushKitKind]
        var tokens: [String: String]
        var voipFailures: Int
        var voipStopped: Bool
        var channel: String?
        var complicationBudget: DailyBudget<ComplicationPushes>
        var calls: [IncomingCall]
        var inbox: [PushKitPush]
    }

    var saved: Saved? {
        if wanted.isEmpty, tokens.isEmpty, voipFailures == 0, !voipStopped, channel == nil,
           complicationBudget.recent.isEmpty, calls.isEmpty, inbox.isEmpty { return nil }
        return Saved(
            wanted: wanted.sorted { $0.rawValue < $1.rawValue }, tokens: Dictionary(uniqueKeysWithValues: tokens.map { ($0.key.rawValue, $0.value.hex) }),
            voipFailures: voipFailures, voipStopped: voipStopped, channel: channel, complicationBudget: complicationBudget,
            calls: calls.values.sorted { $0.uuid < $1.uuid }, inbox: inbox)
    }

    init() {}

    init(saved: Saved) {
        wanted = Set(saved.wanted)
        for (kind, hex) in saved.tokens {
            if let kind = PushKitKind(rawValue: kind), let token = DeviceToken(hex: hex) { tokens[kind] = token }
        }
        voipFailures = saved.voipFailures
        voipStopped = saved.voipStopped
        channel = saved.channel
        complicationBudget = saved.complicationBudget
        calls = Dictionary(saved.calls.map { ($0.uuid, $0) }) { first, _ in first }
        inbox = Array(saved.inbox.suffix(PushKitContract.inboxLimit))
    }
}
