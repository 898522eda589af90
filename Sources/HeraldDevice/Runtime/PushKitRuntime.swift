import HeraldCore

/// PushKit's push types through the runtime: each kind's own token (VoIP, complication and File
/// Provider from the push registry, Push to Talk while a channel is joined, location while
/// location pushes are monitored), and each kind's contract when its push arrives. docs/push-types/
/// has the rules and where they come from.
extension DeviceRuntime {
    // MARK: tokens

    /// `PKPushRegistry.desiredPushTypes`: the registry's kinds (VoIP, complication, File
    /// Provider) the app wants tokens for; kinds left out give their token up. Registering for
    /// VoIP again lets VoIP pushes reach an app they had stopped reaching.
    public func setDesiredPushTypes(app appID: String, _ kinds: Set<PushKitKind>) throws(RuntimeError) {
        let slot = try slot(appID)
        let registry: Set<PushKitKind> = [.voip, .complication, .fileProvider]
        if let other = kinds.subtracting(registry).first {
            throw RuntimeError("\(other.rawValue) tokens do not come from the push registry: \(other.tokenSource)")
        }
        if kinds.contains(.voip), slot.pushKit.voipStopped || slot.pushKit.voipFailures > 0 {
            slot.pushKit.voipStopped = false
            slot.pushKit.voipFailures = 0
        }
        for kind in registry.subtracting(kinds) where slot.pushKit.wanted.contains(kind) { giveUp(slot, kind) }
        for kind in kinds.sorted(by: { $0.rawValue < $1.rawValue }) { want(slot, kind) }
        save(slot)
    }

    /// `CLLocationManager.startMonitoringLocationPushes`: needs the location push entitlement.
    public func monitorLocationPushes(app appID: String, _ on: Bool) throws(RuntimeError) {
        let slot = try slot(appID)
        guard on else {
            if slot.pushKit.wanted.contains(.location) { giveUp(slot, .location) }
            return save(slot)
        }
        guard slot.bundle.locationPushEntitlement else {
            throw RuntimeError("\(appID) lacks the location push entitlement (com.apple.developer.location.push; herald device run --entitlements \(appID)=location-push)")
        }
        want(slot, .location)
        save(slot)
    }

    /// `PTChannelManager.requestJoinChannel`: the Push to Talk token exists while a channel is joined.
    public func joinChannel(app appID: String, channel: String) throws(RuntimeError) {
        let slot = try slot(appID)
        guard !channel.isEmpty, channel.utf8.count <= IncomingCall.maximumFieldBytes else {
            throw RuntimeError("a channel is 1 to \(IncomingCall.maximumFieldBytes) bytes (its UUID)")
        }
        if let joined = slot.pushKit.channel, joined != channel {
            throw RuntimeError("\(appID) has joined channel \(joined) already; leave it first (one channel at a time)")
        }
        if slot.pushKit.channel == nil { emitAfterSave(slot, .pushKit(app: appID, .channelJoined(channel))) }
        slot.pushKit.channel = channel
        want(slot, .pushToTalk)
        save(slot)
    }

    /// `PTChannelManager.leaveChannel`: the Push to Talk token ends with the channel.
    public func leaveChannel(app appID: String) throws(RuntimeError) {
        let slot = try slot(appID)
        leave(slot)
        save(slot)
    }

    private func leave(_ slot: AppSlot) {
        guard let channel = slot.pushKit.channel else { return }
        slot.pushKit.channel = nil
        giveUp(slot, .pushToTalk)
        emitAfterSave(slot, .pushKit(app: slot.id, .channelLeft(channel)))
    }

    private func want(_ slot: AppSlot, _ kind: PushKitKind) {
        if let token = slot.pushKit.tokens[kind] { emit(.pushKit(app: slot.id, .token(kind, token))) }
        guard slot.pushKit.wanted.insert(kind).inserted else { return }
        liveActivityRequester?(.pushKit(topic: slot.id, kind), true)
    }

    private func giveUp(_ slot: AppSlot, _ kind: PushKitKind) {
        slot.pushKit.wanted.remove(kind)
        if slot.pushKit.tokens.removeValue(forKey: kind) != nil { emitAfterSave(slot, .pushKit(app: slot.id, .tokenInvalidated(kind))) }
        liveActivityRequester?(.pushKit(topic: slot.id, kind), false)
    }

    /// The gateway issued a PushKit token.
    public func gatewayIssued(pushKitToken token: DeviceToken, kind: PushKitKind, topic: String) {
        guard let slot = apps[topic], slot.pushKit.wanted.contains(kind), slot.pushKit.tokens[kind] != token else { return }
        slot.pushKit.tokens[kind] = token
        emit(.pushKit(app: topic, .token(kind, token)))
        if let delegate = slot.delegate { work.spawn { await delegate.didUpdatePushToken(token, for: kind) } }
        save(slot)
    }

    func pushKitStandingRequests(_ slot: AppSlot) {
        for kind in slot.pushKit.wanted.sorted(by: { $0.rawValue < $1.rawValue }) { liveActivityRequester?(.pushKit(topic: slot.id, kind), true) }
    }

    /// An app's PushKit tokens.
    public func pushKitTokens(app appID: String) throws(RuntimeError) -> [PushKitKind: DeviceToken] {
        try slot(appID).pushKit.tokens
    }

    // MARK: pushes

    /// A push of a PushKit kind: refused by its kind's rule (no token, VoIP stopped, no channel,
    /// no location authorization, over the complication budget) or handed to the app, now if it
    /// runs, else when it starts. Its outcome so far is saved before the ack (the caller's).
    func receivePushKit(_ slot: AppSlot, _ push: DeviceNotification, kind: PushKitKind, now: Int64) {
        let id = push.apnsID.description
        if let reason = refusal(slot, kind, now: now) {
            return emitAfterSave(slot, .pushKit(app: slot.id, .notDelivered(kind, apnsID: id, reason: reason)))
        }
        var handed = PushKitPush(kind: kind, apnsID: id, payload: push.payload, arrivedAt: now)
        switch kind {
        case .pushToTalk: handed.channel = slot.pushKit.channel
        case .location: handed.location = location
        default: break
        }
        guard slot.delegate != nil else {
            slot.pushKit.inbox.append(handed)
            if slot.pushKit.inbox.count > PushKitContract.inboxLimit {
                let dropped = slot.pushKit.inbox.removeFirst()
                emitAfterSave(slot, .pushKit(app: slot.id, .notDelivered(dropped.kind, apnsID: dropped.apnsID, reason: "more than \(PushKitContract.inboxLimit) PushKit pushes waited for the app to start")))
            }
            return emitAfterSave(slot, .pushKit(app: slot.id, .held(kind, apnsID: id)))
        }
        hand(slot, handed)
    }

    /// Why a push of `kind` cannot be delivered now, if it cannot.
    private func refusal(_ slot: AppSlot, _ kind: PushKitKind, now: Int64) -> String? {
        let state = slot.pushKit
        guard state.tokens[kind] != nil else { return "the app holds no \(kind.rawValue) token (it comes from \(kind.tokenSource))" }
        switch kind {
        case .voip where state.voipStopped:
            return "VoIP pushes stopped reaching the app after \(PushKitContract.voipFailuresBeforeStop) were not reported as calls; it must register for VoIP again"
        case .pushToTalk where state.channel == nil:
            return "no Push to Talk channel is joined"
        case .location where !locationServicesEnabled:
            return "location services are off"
        case .location where !slot.locationAuthorized:
            return "the app is not authorized to use the device's location"
        case .complication:
            guard slot.pushKit.complicationBudget.take(now: now) else {
                return slot.pushKit.complicationBudget.refusal("complication pushes", now: now).reason
            }
            return nil
        default:
            return nil
        }
    }

    /// Hands a push to the running app (launching it in the background if it was not running),
    /// with its kind's time to complete.
    private func hand(_ slot: AppSlot, _ original: PushKitPush) {
        guard let delegate = slot.delegate else { return }
        var withMetadata = original
        if original.kind == .voip {
            // Herald's reading of `mustReport` (Apple does not say when it is false): an app in
            // the foreground, or one with a call going on, need not report another.
            withMetadata.mustReport = !(slot.lifecycle == .foreground || !slot.pushKit.calls.isEmpty)
        }
        let push = withMetadata
        if slot.appState == .notRunning || slot.lifecycle == .suspended { setLifecycle(slot, .background) }
        emitAfterSave(slot, .pushKit(app: slot.id, .handed(push)))
        let appID = slot.id
        let reportedBefore = slot.pushKit.reportedCalls
        let handler = CallbackHandler<PushKitAnswer>(
            purpose: "the completion handler of the \(push.kind.rawValue) push \(push.apnsID)", clock: clock,
            limitMilliseconds: PushKitContract.timeLimit(push.kind), fallback: .done, misuse: { self.report(appID, $0) },
            then: { [work] outcome in work.spawn { await self.pushKitEnded(appID, push, outcome, reportedBefore: reportedBefore) } })
        work.spawn { await delegate.didReceivePushKit(push, completion: handler) }
    }

    private func pushKitEnded(_ appID: String, _ push: PushKitPush, _ outcome: CallbackHandler<PushKitAnswer>.Outcome, reportedBefore: Int) {
        guard let slot = apps[appID] else { return }
        defer { save(slot) }
        let limit = PushKitContract.timeLimit(push.kind) / 1_000
        guard case .answered(let answer) = outcome else {
            if push.kind == .voip, push.mustReport == true, slot.pushKit.reportedCalls == reportedBefore { return voipNotReported(slot, push) }
            return terminate(slot, "the completion handler of the \(push.kind.rawValue) push \(push.apnsID) was not called within \(limit) s")
        }
        switch (push.kind, answer) {
        case (.voip, _) where push.mustReport == true && slot.pushKit.reportedCalls == reportedBefore:
            voipNotReported(slot, push)
        case (.voip, _):
            slot.pushKit.voipFailures = 0
            let reported = slot.pushKit.reportedCalls > reportedBefore
            emitAfterSave(slot, .pushKit(app: appID, .completed(.voip, apnsID: push.apnsID, result: reported ? "call reported" : "completed without a call (mustReport was false)")))
        case (.pushToTalk, .activeRemoteParticipant(let name)):
            emitAfterSave(slot, .pushKit(app: appID, .completed(.pushToTalk, apnsID: push.apnsID, result: "active remote participant: \(name)")))
        case (.pushToTalk, .leaveChannel):
            emitAfterSave(slot, .pushKit(app: appID, .completed(.pushToTalk, apnsID: push.apnsID, result: "left the channel")))
            leave(slot)
        case (.pushToTalk, .done):
            emit(.contractViolation(app: appID, message: "a Push to Talk push is answered with an active remote participant or leaveChannel, not a bare completion (\(push.apnsID))"))
        case (_, .done):
            emitAfterSave(slot, .pushKit(app: appID, .completed(push.kind, apnsID: push.apnsID, result: "completed")))
        case (_, .activeRemoteParticipant), (_, .leaveChannel):
            emit(.contractViolation(app: appID, message: "only a Push to Talk push is answered with a participant or leaveChannel (\(push.apnsID) is \(push.kind.rawValue))"))
        }
    }

    /// A VoIP push that had to be reported and was not: the app is terminated; past the
    /// threshold, VoIP pushes stop reaching it.
    private func voipNotReported(_ slot: AppSlot, _ push: PushKitPush) {
        slot.pushKit.voipFailures += 1
        terminate(slot, "the VoIP push \(push.apnsID) was not reported as a call (CallKit or LiveCommunicationKit) before its completion")
        if slot.pushKit.voipFailures >= PushKitContract.voipFailuresBeforeStop, !slot.pushKit.voipStopped {
            slot.pushKit.voipStopped = true
            emitAfterSave(slot, .pushKit(app: slot.id, .voipStopped(failures: slot.pushKit.voipFailures)))
        }
    }

    /// The system terminates the app: its connection is told why and closed.
    private func terminate(_ slot: AppSlot, _ reason: String) {
        emit(.contractViolation(app: slot.id, message: reason + "; the app was terminated"))
        emitAfterSave(slot, .pushKit(app: slot.id, .terminated(reason: reason)))
        setLifecycle(slot, .terminatedBySystem)
        guard let delegate = slot.delegate else { return }
        slot.delegate = nil
        slot.serviceExtension = nil
        work.spawn { await delegate.wasTerminated(reason: reason) }
    }

    /// The app started (a delegate was set): what waited for it is handed over, oldest first.
    func handHeldPushKit(_ slot: AppSlot) {
        guard slot.delegate != nil, !slot.pushKit.inbox.isEmpty else { return }
        let waiting = slot.pushKit.inbox
        slot.pushKit.inbox = []
        for push in waiting { hand(slot, push) }
        save(slot)
    }

    // MARK: calls

    /// `CXProvider.reportNewIncomingCall`: the device shows the call with Answer and Decline.
    public func reportIncomingCall(app appID: String, _ call: IncomingCall) throws(RuntimeError) {
        let slot = try slot(appID)
        for (name, value) in [("call", call.uuid), ("handle", call.handle), ("caller", call.caller ?? "x")]
        where value.isEmpty || value.utf8.count > IncomingCall.maximumFieldBytes {
            throw RuntimeError("\"\(name)\" must be 1 to \(IncomingCall.maximumFieldBytes) bytes")
        }
        guard slot.pushKit.calls[call.uuid] == nil else { throw RuntimeError("call \(call.uuid) was reported already") }
        slot.pushKit.calls[call.uuid] = call
        slot.pushKit.reportedCalls += 1
        emitAfterSave(slot, .pushKit(app: appID, .callReported(call)))
        save(slot)
    }

    /// `CXEndCallAction` from the app: the call is over.
    public func endCall(app appID: String, uuid: String) throws(RuntimeError) {
        let slot = try slot(appID)
        guard slot.pushKit.calls.removeValue(forKey: uuid) != nil else { throw RuntimeError("\(appID) has no call \(uuid)") }
        emitAfterSave(slot, .pushKit(app: appID, .callEnded(uuid: uuid, reason: "ended by the app")))
        save(slot)
    }

    /// The user answered (`true`) or declined a shown call: the app hears CallKit's answer or end action.
    public func userAnsweredCall(app appID: String, uuid: String, answer: Bool) throws(RuntimeError) {
        let slot = try slot(appID)
        guard slot.pushKit.calls[uuid] != nil else { throw RuntimeError("\(appID) has no call \(uuid) on screen") }
        if answer {
            setLifecycle(slot, .foreground)
        } else {
            slot.pushKit.calls[uuid] = nil
            emitAfterSave(slot, .pushKit(app: appID, .callEnded(uuid: uuid, reason: "declined by the user")))
        }
        if let delegate = slot.delegate { work.spawn { await delegate.performCallAction(answer ? .answer : .end, call: uuid) } }
        save(slot)
    }
}
