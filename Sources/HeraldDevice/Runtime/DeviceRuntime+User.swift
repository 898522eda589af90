import Foundation
import HeraldCore

extension DeviceRuntime {
    // MARK: the user

    /// The user tapped a notification's body.
    public func userTapped(app appID: String, notification id: String) throws(RuntimeError) {
        let slot = try slot(appID)
        guard let notification = shown(slot, id) else { throw RuntimeError("\(appID) has no notification \"\(id)\" on screen or in Notification Center") }
        forget(slot, id)
        navigate(slot, shownID: id, action: nil)
        let callback = DeliveryByAppState.tap(state: slot.appState, api: slot.bundle.api)
        setLifecycle(slot, .foreground)
        guard let delegate = slot.delegate else { return save(slot) }
        switch callback {
        case .launch(let api):
            if api == .legacy {
                work.spawn { await delegate.didLaunch(with: notification) }
            } else {
                work.spawn { await delegate.didLaunch(with: nil) }
                respond(slot, delegate, NotificationResponse(actionIdentifier: NotificationResponse.defaultActionIdentifier, userText: nil, requiredUnlock: isLocked), notification)
            }
        case .legacyDidReceive(let state):
            work.spawn { await delegate.didReceiveLegacy(notification, state: state) }
        case .didReceive(let actionID):
            respond(slot, delegate, NotificationResponse(actionIdentifier: actionID, userText: nil, requiredUnlock: isLocked), notification)
        case .none, .willPresent: break
        }
        save(slot)
    }

    /// The user chose an action (with text for a text-input action).
    public func userChoseAction(app appID: String, notification id: String, action: String, text: String? = nil) throws(RuntimeError) {
        if id.hasPrefix(IncomingCall.shownPrefix) {
            return try userAnsweredCall(app: appID, uuid: String(id.dropFirst(IncomingCall.shownPrefix.count)), answer: action == CallAction.answer.rawValue)
        }
        let slot = try slot(appID)
        guard let notification = shown(slot, id) else { throw RuntimeError("\(appID) has no notification \"\(id)\" on screen or in Notification Center") }
        // A Declarative Web Push notification has no category: its buttons came with it.
        let category = slot.center.categories.category(named: notification.content.category)
            ?? (notification.actions.isEmpty ? nil : try? NotificationCategory(identifier: "webpush.declarative", actions: notification.actions))
        let response: NotificationResponse?
        do { response = try NotificationResponse.response(to: .action(action, text: text), category: category, locked: isLocked) } catch {
            throw RuntimeError(error.message)
        }
        forget(slot, id)
        navigate(slot, shownID: id, action: action)
        guard let response else { return save(slot) }
        let foreground = category.flatMap { c in (c.actions + (c.minimalActions ?? [])).first { $0.identifier == action } }?.options.contains(.foreground) ?? false
        if foreground { setLifecycle(slot, .foreground) } else if slot.appState == .notRunning { setLifecycle(slot, .background) }
        if response.requiredUnlock { isLocked = false }
        if let delegate = slot.delegate { respond(slot, delegate, response, notification) }
        save(slot)
    }

    /// The user dismissed a notification explicitly ("Clear"): the app hears of it only with `customDismissAction`.
    public func userDismissed(app appID: String, notification id: String) throws(RuntimeError) {
        let slot = try slot(appID)
        guard let notification = shown(slot, id) else { throw RuntimeError("\(appID) has no notification \"\(id)\" on screen or in Notification Center") }
        forget(slot, id)
        if slot.webPush.pages.removeValue(forKey: id) != nil { slot.webPush.pageOrder.removeAll { $0 == id } }
        let category = slot.center.categories.category(named: notification.content.category)
        if let response = try? NotificationResponse.response(to: .dismiss, category: category, locked: isLocked), let delegate = slot.delegate {
            respond(slot, delegate, response, notification)
        }
        save(slot)
    }

    func respond(_ slot: AppSlot, _ delegate: AppNotificationDelegate, _ response: NotificationResponse, _ notification: DeliveredNotification) {
        let appID = slot.id
        let handler = CallbackHandler<Void>(
            purpose: "the completion handler of action \(response.actionIdentifier) on \(notification.id)", clock: clock,
            limitMilliseconds: Self.callbackTimeLimitMilliseconds, fallback: (),
            misuse: { self.report(appID, $0) },
            then: { [clock] outcome in
                if case .timedOut = outcome {
                    self.report(appID, "the completion handler of action \(response.actionIdentifier) on \(notification.id) was not called within \(Self.callbackTimeLimitMilliseconds / 1000) s (at \(clock.nowMilliseconds()))")
                }
            })
        work.spawn { await delegate.didReceive(response, for: notification, completion: handler) }
    }

    /// The user tapped the app's icon: the app launches (or comes forward) with no notification;
    /// entries and badge stay. A silent push held for it is handed over.
    public func userLaunched(app appID: String) throws(RuntimeError) {
        let slot = try slot(appID)
        let wasRunning = slot.appState != .notRunning
        setLifecycle(slot, .foreground)
        if !wasRunning, let delegate = slot.delegate { work.spawn { await delegate.didLaunch(with: nil) } }
        if let held = slot.remote.silentBudget.launched() { startSilentPush(slot, held) }
        reschedule(slot)
        armAlarm()
    }

    /// The user went to the home screen (the app moves to the background, then is suspended).
    public func userLeftApp(_ appID: String) throws(RuntimeError) { setLifecycle(try slot(appID), .background) }

    /// The user swiped the app away: no silent pushes until the user launches it again; a held one is discarded.
    public func userForceQuit(_ appID: String) throws(RuntimeError) {
        let slot = try slot(appID)
        setLifecycle(slot, .forceQuitByUser)
        slot.remote.silentBudget.userForceQuit()
        reschedule(slot)
        armAlarm()
    }

    /// The system suspended a background app.
    public func systemSuspended(_ appID: String) throws(RuntimeError) { setLifecycle(try slot(appID), .suspended) }

    /// The system terminated the app (memory, reboot): unlike a force-quit, silent pushes launch it.
    public func systemTerminated(_ appID: String) throws(RuntimeError) { setLifecycle(try slot(appID), .terminatedBySystem) }

    /// The process behind `delegate` ended (its agent connection closed): its delegate and
    /// service extension go and the app is terminated by the system, unless a newer process of
    /// the app has bound a delegate of its own since (a reconnect whose `hello` overtook this
    /// end): then the newer process stays as it is. Returns whether it ended the app.
    @discardableResult
    public func appProcessEnded(_ appID: String, delegate: any AppNotificationDelegate & AnyObject) throws(RuntimeError) -> Bool {
        let slot = try slot(appID)
        guard let current = slot.delegate as AnyObject?, current === delegate else { return false }
        slot.delegate = nil
        if let serviceExtension = slot.serviceExtension as AnyObject?, serviceExtension === delegate { slot.serviceExtension = nil }
        setLifecycle(slot, .terminatedBySystem)
        return true
    }

    func setLifecycle(_ slot: AppSlot, _ lifecycle: SilentPushes.Lifecycle) {
        guard slot.lifecycle != lifecycle else { return }
        slot.lifecycle = lifecycle
        emit(.lifecycleChanged(app: slot.id, lifecycle))
    }

    /// The user changed a type in the app's notification settings.
    public func userChangedSetting(app appID: String, _ option: AuthorizationOptions, to setting: NotificationSetting) throws(RuntimeError) {
        let slot = try slot(appID)
        slot.center.authorization.userSet(option, setting)
        save(slot)
    }

    /// The user changed the app's authorization (promoted a provisional app, turned it off).
    public func userChangedStatus(app appID: String, to status: AuthorizationStatus) throws(RuntimeError) {
        let slot = try slot(appID)
        slot.center.authorization.userSetStatus(status)
        save(slot)
    }

    public func setLocked(_ locked: Bool) { isLocked = locked }
}
