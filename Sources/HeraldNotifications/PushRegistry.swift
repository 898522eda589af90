import Foundation

/// PushKit's side of the device for an app: `PKPushRegistry` (VoIP, complication and File
/// Provider tokens), location push monitoring (`CLLocationManager.startMonitoringLocationPushes`),
/// Push to Talk's channel (`PTChannelManager`) and CallKit's call reports (`CXProvider`), over the
/// app's ``UserNotificationCenter`` connection. Each kind has its own token, to give the provider;
/// pushes arrive at ``PushRegistryDelegate/didReceiveIncomingPush(_:)``.
/// docs/push-types/ has each kind's contract.
public struct PushRegistry: Sendable {
    public let center: UserNotificationCenter

    public init(center: UserNotificationCenter) {
        self.center = center
    }

    /// `desiredPushTypes`: the registry's kinds to hold tokens for; kinds left out give theirs
    /// up. Returns the tokens known now (hex, by kind); a new one also comes as a `pushToken`
    /// callback on `events` (``token(for:timeout:)`` waits for it).
    @discardableResult
    public func setDesiredPushTypes(_ types: [RegistryPushType]) async throws -> [PushKitKind: String] {
        Self.tokens(try await center.send(AgentRequest.PushRegistry(types: types)).tokens)
    }

    /// The token of `kind`, waiting (up to `timeout`) for the device to be issued it, after asking
    /// for it with `ask` (``setDesiredPushTypes(_:)``, ``startMonitoringLocationPushes()``, ``joinChannel(_:)``).
    public func token(for kind: PushKitKind, timeout: Duration = .seconds(30), ask: @escaping @Sendable () async throws -> [PushKitKind: String]) async throws -> String {
        let event = try await center.waitForCallback(timeout: timeout, what: "the \(kind.rawValue) token (is the device connected to its gateway?)") {
            if case .pushToken(let t) = $0 { return t.kind == kind }
            return false
        } trigger: {
            guard let known = try await ask()[kind] else { return nil }
            return .pushToken(AgentCallback.PushToken(kind: kind, token: known))
        }
        guard case .pushToken(let token) = event else { throw AgentError.unreadable("a token callback without a token") }
        return token.token
    }

    /// The location push token's source (needs the location-push entitlement).
    @discardableResult
    public func startMonitoringLocationPushes() async throws -> [PushKitKind: String] {
        Self.tokens(try await center.send(AgentRequest.StartMonitoringLocationPushes()).tokens)
    }

    public func stopMonitoringLocationPushes() async throws {
        try await center.send(AgentRequest.StopMonitoringLocationPushes())
    }

    /// Joins a Push to Talk channel: its token exists while it is joined.
    @discardableResult
    public func joinChannel(_ channel: UUID) async throws -> [PushKitKind: String] {
        Self.tokens(try await center.send(AgentRequest.JoinChannel(channel: channel.uuidString)).tokens)
    }

    public func leaveChannel() async throws {
        try await center.send(AgentRequest.LeaveChannel())
    }

    /// Reports an incoming call (a VoIP push that must be reported is reported before the
    /// delegate's method returns): the device shows it with Answer and Decline, and the user's
    /// choice comes back as ``PushRegistryDelegate/perform(_:call:)``.
    public func reportIncomingCall(_ call: UUID, handle: String, caller: String? = nil, video: Bool = false) async throws {
        try await center.send(AgentRequest.ReportIncomingCall(call: call.uuidString, handle: handle, caller: caller, video: video))
    }

    /// The call is over.
    public func endCall(_ call: UUID) async throws {
        try await center.send(AgentRequest.EndCall(call: call.uuidString))
    }

    static func tokens(_ answer: [String: AgentJSON]) -> [PushKitKind: String] {
        var tokens: [PushKitKind: String] = [:]
        for (name, value) in answer {
            if let kind = PushKitKind(rawValue: name), case .string(let token) = value { tokens[kind] = token }
        }
        return tokens
    }
}

/// How an app completes a PushKit push.
public enum PushCompletion: Sendable, Hashable {
    /// Done (a VoIP push after its call was reported; location, complication, File Provider).
    case done
    /// Push to Talk: who speaks now.
    case activeRemoteParticipant(String)
    /// Push to Talk: leave the channel.
    case leaveChannel
}

/// What an app answers for its PushKit pushes and calls. The device waits for each kind's time
/// (VoIP 30 s, Push to Talk 5 s); a VoIP push that had to be reported and was not terminates the app.
public protocol PushRegistryDelegate: Sendable {
    /// A PushKit push (`pushRegistry(_:didReceiveIncomingPushWith:for:completion:)`, PTT's
    /// `incomingPushResult`, the location push extension). Default: `.done`.
    func didReceiveIncomingPush(_ push: PushKitPush) async -> PushCompletion
    /// The user answered or declined a reported call (CXAnswerCallAction / CXEndCallAction).
    func perform(_ action: CallActionType, call: String) async
}

extension PushRegistryDelegate {
    public func didReceiveIncomingPush(_ push: PushKitPush) async -> PushCompletion { .done }
    public func perform(_ action: CallActionType, call: String) async {}
}

extension UserNotificationCenter {
    /// Sets (or clears) the delegate that answers PushKit pushes and calls.
    public func setPushRegistryDelegate(_ delegate: (any PushRegistryDelegate)?) {
        state.withLock { $0.pushDelegate = delegate }
    }
}
