import HeraldCore

/// One app's notification center, in the spirit of `UNUserNotificationCenter` (with the legacy
/// `UIApplication` calls beside it): authorization, categories, local requests, the delivered
/// list, the badge, remote registration. Get it from ``DeviceRuntime/install(_:bundle:)``.
public struct AppNotificationCenter: Sendable {
    public let runtime: DeviceRuntime
    /// The app's bundle id (its push topic).
    public let appID: String

    /// Sets who hears about notifications, actions, silent pushes and tokens. Set it before the
    /// app's launch ends (a tap that launched the app is handed to it then).
    public func setDelegate(_ delegate: AppNotificationDelegate?) async throws(RuntimeError) {
        try await runtime.update(appID) { $0.delegate = delegate }
        try await runtime.delegateChanged(appID)
    }

    public func setServiceExtension(_ serviceExtension: NotificationServiceExtension?) async throws(RuntimeError) {
        try await runtime.update(appID) { $0.serviceExtension = serviceExtension }
    }

    /// Asks for authorization: the first time the user is prompted (the runtime's
    /// ``UserSettingsSource`` answers); later, the stored settings come back at once.
    @discardableResult
    public func requestAuthorization(_ options: AuthorizationOptions) async throws(RuntimeError) -> (granted: Bool, settings: NotificationSettings, prompted: Bool) {
        try await runtime.requestAuthorization(appID, options)
    }

    /// The settings as the user left them (read them at every launch).
    public func settings() async throws(RuntimeError) -> NotificationSettings {
        try await runtime.read(appID) { $0.center.authorization.settings }
    }

    /// Replaces the app's categories. Returns the categories ignored because an earlier one had
    /// the same identifier.
    @discardableResult
    public func setCategories(_ categories: [NotificationCategory]) async throws(RuntimeError) -> [NotificationCategory] {
        try await runtime.setCategories(appID, categories)
    }

    public func categories() async throws(RuntimeError) -> [NotificationCategory] {
        try await runtime.read(appID) { slot in slot.center.categories.categories.keys.sorted().compactMap { slot.center.categories.categories[$0] } }
    }

    /// Adds a request, replacing a pending one with the same identifier. No trigger, or a fire
    /// date already past: delivered now. Only the 64 soonest stay pending; the runtime reports
    /// those dropped. Returns the identifiers dropped by this addition.
    @discardableResult
    public func add(_ request: LocalRequest) async throws(RuntimeError) -> [String] {
        try await runtime.add(appID, request)
    }

    /// Legacy `presentLocalNotificationNow:`: delivered at once whatever its trigger, never pending.
    public func presentNow(_ request: LocalRequest) async throws(RuntimeError) {
        _ = try await runtime.add(appID, LocalRequest(id: request.id, content: request.content, trigger: nil))
    }

    /// The pending requests with their next fire (milliseconds; `nil` for location triggers), soonest first.
    public func pendingRequests() async throws(RuntimeError) -> [(request: LocalRequest, nextFire: Int64?)] {
        try await runtime.read(appID) { slot in
            slot.scheduler.pending.sorted { ($0.nextFire ?? .max, $0.scheduledAt) < ($1.nextFire ?? .max, $1.scheduledAt) }
                .map { ($0.request, $0.nextFire) }
        }
    }

    /// UserNotifications: removes pending requests (already-delivered one-shots are not touched).
    public func removePendingRequests(_ ids: [String]) async throws(RuntimeError) {
        try await runtime.update(appID) { $0.scheduler.remove(ids: Set(ids)) }
    }

    public func removeAllPendingRequests() async throws(RuntimeError) {
        try await runtime.update(appID) { $0.scheduler.removeAll() }
    }

    /// Legacy `cancelLocalNotification:`: the request never fires, and if it was shown, its alert goes away.
    public func cancelLocalNotifications(_ ids: [String]) async throws(RuntimeError) {
        try await runtime.cancel(appID, ids: Set(ids))
    }

    /// Legacy `cancelAllLocalNotifications`.
    public func cancelAllLocalNotifications() async throws(RuntimeError) {
        try await runtime.cancel(appID, ids: nil)
    }

    /// What is in Notification Center for the app, oldest first.
    public func deliveredNotifications() async throws(RuntimeError) -> [DeliveredNotification] {
        try await runtime.read(appID) { $0.center.delivered }
    }

    public func removeDeliveredNotifications(_ ids: [String]) async throws(RuntimeError) {
        try await runtime.removeDelivered(appID, ids: Set(ids))
    }

    public func removeAllDeliveredNotifications() async throws(RuntimeError) {
        try await runtime.removeDelivered(appID, ids: nil)
    }

    /// The app's badge (0: none).
    public func badge() async throws(RuntimeError) -> Int { try await runtime.read(appID) { $0.center.badge } }

    /// Sets the badge; needs badge authorization. A legacy app setting 0 also clears its
    /// Notification Center entries (iOS 8–9 behaviour).
    public func setBadge(_ badge: Int) async throws(RuntimeError) { try await runtime.setBadge(appID, badge) }

    /// Asks for a device token. Already registered: the stored token comes back at once, even
    /// offline. Never registered and offline: neither success nor failure until the device
    /// connects. A later change of token is reported unprompted.
    public func registerForRemoteNotifications() async throws(RuntimeError) {
        try await runtime.registerForRemote(appID)
    }
}

extension DeviceRuntime {
    func read<T: Sendable>(_ appID: String, _ body: (AppSlot) -> T) throws(RuntimeError) -> T { body(try slot(appID)) }

    func update(_ appID: String, _ body: (AppSlot) -> Void) throws(RuntimeError) {
        let slot = try slot(appID)
        body(slot)
        reschedule(slot)
        armAlarm()
        save(slot)
    }

    func requestAuthorization(_ appID: String, _ options: AuthorizationOptions) async throws(RuntimeError) -> (granted: Bool, settings: NotificationSettings, prompted: Bool) {
        let slot = try slot(appID)
        // The prompt is answered outside the actor's state: copy, ask, write back.
        var authorization = slot.center.authorization
        let (settings, prompted) = await authorization.request(options, appID: appID, user: user)
        slot.center.authorization = authorization
        if prompted { emit(.prompted(app: appID, requested: options, granted: settings.enabledOptions)) }
        save(slot)
        let granted = settings.status == .authorized || settings.status == .provisional || settings.status == .ephemeral
        return (granted, settings, prompted)
    }

    func setCategories(_ appID: String, _ categories: [NotificationCategory]) throws(RuntimeError) -> [NotificationCategory] {
        let slot = try slot(appID)
        let ignored: [NotificationCategory]
        do { ignored = try slot.center.categories.setCategories(categories) } catch { throw RuntimeError(error.message) }
        save(slot)
        return ignored
    }

    func add(_ appID: String, _ request: LocalRequest) throws(RuntimeError) -> [String] {
        let slot = try slot(appID)
        let now = clock.nowMilliseconds()
        let result: (delivered: [LocalFiring], dropped: [LocalRequest])
        do { result = try slot.scheduler.add(request, now: now) } catch { throw RuntimeError("request \"\(request.id)\": \(error.message)") }
        for firing in result.delivered { deliverLocal(slot, firing, now: now) }
        let dropped = result.dropped.map(\.id)
        if !dropped.isEmpty { emit(.dropped(app: appID, ids: dropped)) }
        reschedule(slot)
        armAlarm()
        save(slot)
        return dropped
    }

    func cancel(_ appID: String, ids: Set<String>?) throws(RuntimeError) {
        let slot = try slot(appID)
        if let ids { slot.scheduler.remove(ids: ids) } else { slot.scheduler.removeAll() }
        let local = (slot.center.delivered.map(\.id) + slot.center.shownOnly.keys).filter { id in
            guard let n = shown(slot, id), case .local = n.origin else { return false }
            return ids?.contains(id) ?? true
        }
        for id in Set(local) { forget(slot, id) }
        reschedule(slot)
        armAlarm()
        save(slot)
    }

    func removeDelivered(_ appID: String, ids: Set<String>?) throws(RuntimeError) {
        let slot = try slot(appID)
        for id in Set(slot.center.delivered.map(\.id) + slot.center.shownOnly.keys) where ids?.contains(id) ?? true { forget(slot, id) }
        save(slot)
    }

    func setBadge(_ appID: String, _ badge: Int) throws(RuntimeError) {
        let slot = try slot(appID)
        guard badge >= 0 else { throw RuntimeError("a badge is 0 (none) or more, not \(badge)") }
        guard slot.center.authorization.settings.badge == .enabled else {
            throw RuntimeError("\(appID) may not set its badge: the user has not allowed badges (request .badge authorization first)")
        }
        if badge != slot.center.badge {
            slot.center.badge = badge
            emit(.badgeChanged(app: appID, badge: badge))
        }
        if badge == 0 && slot.bundle.api == .legacy {
            for id in Set(slot.center.delivered.map(\.id)) { forget(slot, id) }
        }
        save(slot)
    }

    func registerForRemote(_ appID: String) throws(RuntimeError) { registerForRemote(try slot(appID)) }
}
