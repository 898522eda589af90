import HeraldCore

/// Remote notifications through the runtime: registration (tokens from the device connection),
/// pushes presented by the same rules as local notifications, silent pushes, the service extension.
extension DeviceRuntime {
    /// Feeds the runtime from a device connection until the connection's events end: connectivity,
    /// tokens and pushes. Run it in a task beside ``DeviceConnection/run()``.
    ///
    /// `acknowledge` is how a notification is acked once handled (``DeviceConnection/acknowledge(_:)``
    /// for a connection with ``DeviceConnection/Acknowledgement/byConsumer``); `nil` when the
    /// connection acks on receipt.
    ///
    /// `divert` takes events that are not the runtime's (returns `true` for them): the UnifiedPush
    /// distributor's subscriptions and messages.
    public func follow(
        _ events: AsyncStream<DeviceEvent>, acknowledge: (@Sendable (NotificationID) -> Void)? = nil,
        divert: (@Sendable (DeviceEvent) -> Bool)? = nil, onEvent: (@Sendable (DeviceEvent) -> Void)? = nil
    ) async {
        for await event in events {
            onEvent?(event)
            if divert?(event) == true { continue }
            switch event {
            case .connected, .reconnected: setConnectivity(true)
            case .disconnected: setConnectivity(false)
            case .tokenChanged: break  // `registered` follows with the new token
            case .frame(let frame): take(frame, acknowledge: acknowledge)
            }
        }
        setConnectivity(false)
    }

    /// What the gateway sent: tokens issued to the apps, their withdrawal, subscriptions and notifications.
    private func take(_ frame: DeviceServerFrame, acknowledge: (@Sendable (NotificationID) -> Void)?) {
        switch frame {
        case .registered(let topic, let token): gatewayIssued(token: token, topic: topic)
        case .unregistered(let topic, _):
            if let slot = apps[topic] {
                slot.remote.token = nil
                save(slot)
            }
        case .notification(let notification):
            let id = notification.apnsID
            receive(notification) { acknowledge?(id) }
        case .registeredActivity(let topic, let activity, let token): gatewayIssued(activityToken: token, topic: topic, activity: activity)
        case .registeredWidgets(let topic, let token): gatewayIssued(widgetToken: token, topic: topic)
        case .subscribed(let topic, let channel, let token): gatewaySubscribed(topic: topic, channel: channel, token: token)
        case .unsubscribed(let topic, let channel): gatewayUnsubscribed(topic: topic, channel: channel)
        case .webPushSubscribed(let topic, let subscription, let endpoint, let token):
            gatewayWebPushSubscribed(topic: topic, subscription: subscription, endpoint: endpoint, token: token)
        case .registeredPushKit(let topic, let kind, let token): gatewayIssued(pushKitToken: token, kind: kind, topic: topic)
        case .challenge, .welcome, .unregisteredActivity, .unregisteredWidgets, .webPushUnsubscribed, .unregisteredPushKit, .error: break
        }
    }

    /// Each installed app's last token: what the gateway's next answer is compared with.
    public func tokens() -> [String: DeviceToken] {
        apps.compactMapValues { $0.remote.token }
    }

    /// The device has (or lost) a connection to its gateway.
    public func setConnectivity(_ online: Bool) { isOnline = online }

    /// The gateway gave an app its token (at every connection). The app hears of it if it asked
    /// for remote notifications and the token is new to it (first registration, or a change:
    /// reinstall, restore to a new device).
    public func gatewayIssued(token: DeviceToken, topic: String) {
        guard let slot = apps[topic] else { return }
        let changed = slot.remote.token != token
        slot.remote.token = token
        if changed, slot.remote.wantsRemote { tellToken(slot, token) }
        save(slot)
    }

    func registerForRemote(_ slot: AppSlot) {
        slot.remote.wantsRemote = true
        // Already registered: the stored token comes back at once, even offline. Otherwise
        // nothing happens (neither success nor failure) until the gateway issues one.
        if let token = slot.remote.token { tellToken(slot, token) }
        save(slot)
    }

    private func tellToken(_ slot: AppSlot, _ token: DeviceToken) {
        emit(.tokenDelivered(app: slot.id, token: token))
        if let delegate = slot.delegate { work.spawn { await delegate.didRegisterForRemoteNotifications(token: token) } }
    }

    /// A push for one of the device's apps: silent pushes wake the app; alerts go through the
    /// service extension (when `mutable-content` asks and the app has one), then are presented
    /// by the app's state and settings, like local notifications.
    ///
    /// `acknowledge` is called once the notification's outcome is saved with its app's state (at
    /// once for a repeat of one the app has had, even before a restart; never for a repeat of one
    /// still being handled, which is acked when done).
    public func receive(_ push: DeviceNotification, acknowledge: @escaping @Sendable () -> Void = {}) {
        guard let slot = apps[push.topic] else {
            // No such app on this device: nothing to decide or keep.
            emit(.dropped(app: push.topic, ids: [push.apnsID.description]))
            return acknowledge()
        }
        let id = push.apnsID.description
        if slot.remote.handled.contains(id) { return acknowledge() }
        if slot.remote.inProgress[id] != nil { return }
        slot.remote.inProgress[id] = acknowledge
        let now = clock.nowMilliseconds()
        if let kind = PushKitKind(pushType: push.pushType) {
            receivePushKit(slot, push, kind: kind, now: now)
            concludeRemote(slot, id: id)
            return save(slot)
        }
        switch push.pushType {
        case .liveactivity:
            // Its outcome is final at once: concluded, then its events follow the save.
            receiveLiveActivity(slot, push, now: now)
            concludeRemote(slot, id: id)
            return activitiesChanged(slot)
        case .widgets:
            receiveWidgetPush(slot, push, now: now)
            concludeRemote(slot, id: id)
            return save(slot)
        case .webpush:
            return receiveWebPush(slot, push, now: now)
        default:
            break
        }
        // Read once, leniently (as iOS reads it), and passed on as the model.
        let read = NotificationPayload(lenient: push.payload)
        if read.isSilent {
            // Woken, launched, held over budget or not delivered: decided now.
            defer {
                concludeRemote(slot, id: id)
                save(slot)
            }
            switch SilentPushes.wake(slot.lifecycle) {
            case .notDelivered(let reason):
                emitAfterSave(slot, .silentPush(app: slot.id, outcome: "not delivered: \(reason)"))
            case .handleNow, .launchInBackground:
                if let payload = slot.remote.silentBudget.receive(push.payload, now: now) {
                    startSilentPush(slot, payload)
                } else {
                    emitAfterSave(slot, .silentPush(app: slot.id, outcome: "held: over the device's budget of \(slot.remote.silentBudget.count) per hour (the newest is kept)"))
                    reschedule(slot)
                    armAlarm()
                }
            }
            return
        }
        if let ext = slot.serviceExtension, ServiceExtension.runs(for: read) {
            let original = push.payload
            let appID = slot.id
            let handler = CallbackHandler<ExtensionContent>(
                purpose: "the service extension's content handler for \(id)", clock: clock,
                limitMilliseconds: ServiceExtension.timeLimitMilliseconds, fallback: ExtensionContent(payload: original),
                misuse: { self.report(appID, $0) },
                then: { [work, clock] outcome in
                    work.spawn {
                        let handlerCalled: (ExtensionContent, Int64)? = if case .answered(let content) = outcome { (content, clock.nowMilliseconds()) } else { nil }
                        let shown = ServiceExtension.outcome(original: read, startedAt: now, handlerCalled: handlerCalled)
                        if shown.timeWillExpire { await ext.timeWillExpire() }
                        await self.presentRemote(appID, id: id, payload: shown.payload, communication: shown.communication, arrivedAt: now)
                    }
                })
            work.spawn { await ext.didReceive(original, contentHandler: handler) }
            return
        }
        presentRemote(slot, id: id, payload: read, arrivedAt: now)
    }

    private func presentRemote(_ appID: String, id: String, payload: NotificationPayload, communication: CommunicationContext?, arrivedAt: Int64) {
        guard let slot = apps[appID] else { return }
        presentRemote(slot, id: id, payload: payload, communication: communication, arrivedAt: arrivedAt)
    }

    /// `communication`: the context a service extension gave it (a message from a person).
    private func presentRemote(_ slot: AppSlot, id: String, payload: NotificationPayload, communication: CommunicationContext? = nil, arrivedAt: Int64) {
        var content = NotificationContent.remote(payload, localization: slot.bundle.localization, languages: preferredLanguages)
        content.communication = communication
        arrive(slot, id: id, origin: .remote(apnsID: id), content: content, dueAt: arrivedAt, now: clock.nowMilliseconds())
        save(slot)
    }

    /// Wakes (or launches in the background) the app for a silent push, with 30 s to report.
    func startSilentPush(_ slot: AppSlot, _ payload: JSONValue) {
        if slot.lifecycle == .terminatedBySystem {
            setLifecycle(slot, .background)
            if let delegate = slot.delegate { work.spawn { await delegate.didLaunch(with: nil) } }
        } else if slot.lifecycle == .suspended {
            setLifecycle(slot, .background)
        }
        guard let delegate = slot.delegate else {
            emit(.silentPush(app: slot.id, outcome: "woken; the app has no delegate to handle it"))
            return
        }
        emit(.silentPush(app: slot.id, outcome: "woken"))
        let appID = slot.id
        let handler = CallbackHandler<SilentPushes.FetchResult>(
            purpose: "the fetch completion handler", clock: clock, limitMilliseconds: SilentPushes.timeLimitMilliseconds,
            fallback: .failed, misuse: { self.report(appID, $0) },
            then: { [work] outcome in
                work.spawn { await self.silentPushEnded(appID, outcome) }
            })
        work.spawn { await delegate.didReceiveSilentPush(payload, completion: handler) }
    }

    private func silentPushEnded(_ appID: String, _ outcome: CallbackHandler<SilentPushes.FetchResult>.Outcome) {
        guard let slot = apps[appID] else { return }
        switch outcome {
        case .answered(let result):
            emit(.silentPush(app: appID, outcome: "finished: \(result)"))
        case .timedOut:
            emit(.contractViolation(app: appID, message: "the fetch completion handler was not called within 30 s; the app was terminated"))
            setLifecycle(slot, .terminatedBySystem)
        }
    }
}
