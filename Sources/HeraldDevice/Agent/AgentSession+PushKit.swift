import HeraldCore
import NIOCore

/// The agent's PushKit ops: the push registry's types, location push monitoring, Push to Talk
/// channels and CallKit's call reports (docs/device-agent.md, "PushKit").
extension AgentSession {
    static let pushKitOps: Set<String> = [
        "pushRegistry", "startMonitoringLocationPushes", "stopMonitoringLocationPushes", "joinChannel", "leaveChannel",
        "reportIncomingCall", "endCall",
    ]

    func pushKit(_ op: String, _ m: [String: JSONValue], app: String) async throws -> [String: JSONValue] {
        switch op {
        case "pushRegistry":
            guard case .array(let items)? = m["types"] else { throw RuntimeError("pushRegistry needs \"types\": an array of voip, complication, fileprovider") }
            var kinds: Set<PushKitKind> = []
            for item in items {
                guard let name = item.stringValue, let kind = PushKitKind(rawValue: name) else {
                    throw RuntimeError("\"types\" holds voip, complication or fileprovider, not \(item)")
                }
                kinds.insert(kind)
            }
            try await runtime.setDesiredPushTypes(app: app, kinds)
        case "startMonitoringLocationPushes", "stopMonitoringLocationPushes":
            try await runtime.monitorLocationPushes(app: app, op == "startMonitoringLocationPushes")
        case "joinChannel":
            guard case .string(let channel)? = m["channel"] else { throw RuntimeError("joinChannel needs \"channel\": the channel's UUID") }
            try await runtime.joinChannel(app: app, channel: channel)
        case "leaveChannel":
            try await runtime.leaveChannel(app: app)
        case "reportIncomingCall":
            guard case .string(let uuid)? = m["call"], case .string(let handle)? = m["handle"] else {
                throw RuntimeError("reportIncomingCall needs \"call\" (its UUID) and \"handle\" (who calls), and takes \"caller\" and \"video\"")
            }
            let caller: String? = switch m["caller"] {
            case nil, .null?: nil
            case .string(let name)?: name
            default: throw RuntimeError("\"caller\" must be a string")
            }
            guard case .bool(let video)? = m["video"] ?? .bool(false) else { throw RuntimeError("\"video\" must be true or false") }
            try await runtime.reportIncomingCall(app: app, IncomingCall(uuid: uuid, handle: handle, caller: caller, video: video))
            // CallKit's completion carries an error or nothing: a call report changes no token.
            return [:]
        case "endCall":
            guard case .string(let uuid)? = m["call"] else { throw RuntimeError("endCall needs \"call\": the call's UUID") }
            try await runtime.endCall(app: app, uuid: uuid)
            return [:]
        default:
            throw RuntimeError("unknown op \"\(op)\"")
        }
        let tokens = try await runtime.pushKitTokens(app: app)
        return ["tokens": .object(Dictionary(uniqueKeysWithValues: tokens.map { ($0.key.rawValue, JSONValue.string($0.value.description)) }))]
    }

}

extension AgentSession {
    /// Closes the connection once what was written has gone out (the app was terminated).
    func closeAfterWrites() {
        let channel = channel
        channel.writeAndFlush(channel.allocator.buffer(capacity: 0)).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// PushKit's callbacks to the app.
extension AgentAppDelegate {
    func didUpdatePushToken(_ token: DeviceToken, for kind: PushKitKind) async {
        call("pushToken", ["kind": .string(kind.rawValue), "token": .string(token.description)], waiting: nil)
    }
    func didReceivePushKit(_ push: PushKitPush, completion: CallbackHandler<PushKitAnswer>) async {
        call("pushKit", ["push": RuntimeJSON.json(push)], waiting: .pushKit(completion))
    }
    func performCallAction(_ action: CallAction, call uuid: String) async {
        call("callAction", ["call": .string(uuid), "action": .string(action.rawValue)], waiting: nil)
    }
    /// The system terminated the app: it is told why, and its connection is closed.
    func wasTerminated(reason: String) async {
        call("terminated", ["reason": .string(reason)], waiting: nil)
        disconnected()
        session.closeAfterWrites()
    }
}

/// How the agent reads an app's answers to PushKit pushes and mutable Web Push messages (pure,
/// public for the fuzz target `agent-line`).
public enum AgentAnswerReaders {
    /// A mutable Web Push message's answer: nothing (show the proposed notification) or a
    /// `notification` to show instead, read by the declarative parse steps (its `navigate`, when
    /// absent, is the proposed one's).
    public static func replacement(_ value: JSONValue?, of proposed: DeclarativeWebPushMessage) throws -> DeclarativeWebPushMessage? {
        switch value {
        case nil, .null?: return nil
        case .object(var notification)?:
            if notification["navigate"] == nil { notification["navigate"] = .string(proposed.navigate) }
            let message = JSONValue.object(["web_push": .int(DeclarativeWebPushMessage.magic), "notification": .object(notification)])
            do { return try DeclarativeWebPushMessage(plaintext: message.compactBytes) } catch {
                throw RuntimeError("\"notification\" is not a notification to show: \(error)")
            }
        default:
            throw RuntimeError("\"notification\" must be an object (title, body, navigate, …) or null")
        }
    }

    /// How the app completes a PushKit push: nothing more, a Push to Talk participant, or leaving the channel.
    public static func pushKitAnswer(_ m: [String: JSONValue]) throws -> PushKitAnswer {
        switch (m["activeRemoteParticipant"], m["leaveChannel"]) {
        case (nil, nil), (.null?, _), (_, .bool(false)?): return .done
        case (.string(let name)?, nil) where !name.isEmpty && name.utf8.count <= IncomingCall.maximumFieldBytes:
            return .activeRemoteParticipant(name)
        case (nil, .bool(true)?): return .leaveChannel
        default:
            throw RuntimeError("complete a PushKit push with nothing, \"activeRemoteParticipant\": a name (1 to \(IncomingCall.maximumFieldBytes) bytes), or \"leaveChannel\": true")
        }
    }
}
