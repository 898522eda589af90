import Foundation
import HeraldCore

/// The device's notification system, what a phone's notification center does for all of its
/// apps: authorization, categories, local scheduling (one alarm for the soonest due time across
/// every app; it never polls), delivery by app state, badges, sounds, localization, silent
/// pushes, the service extension, remote registration, and persistence of each app's state.
///
/// Time comes only from the injected ``AlarmClock``; the device's time zone, position, language
/// and connectivity only from the calls that set them. Apps use it through
/// ``AppNotificationCenter``; the methods named `user…` and `system…` are what the person holding
/// the device and the operating system do.
public actor DeviceRuntime {
    /// How long an app has to call a `willPresent` or action completion handler.
    public static let callbackTimeLimitMilliseconds: Int64 = 30_000
    /// How many entries an app keeps in Notification Center; older ones leave as new ones come
    /// (Herald's choice: the reference sets no number, and an unbounded list would grow forever).
    public let deliveredLimit: Int

    public let clock: AlarmClock
    public internal(set) var timeZone: TimeZone
    public internal(set) var preferredLanguages: [String]
    public internal(set) var isOnline = false
    public internal(set) var locationServicesEnabled = true
    /// The device's last known position (``setLocation(latitude:longitude:)``).
    public internal(set) var location: DeviceLocation?
    public internal(set) var isLocked = false
    /// The ring/silent switch: muted, no sound plays but a critical alert's.
    public internal(set) var isMuted = false
    /// Focus modes and the scheduled summary (saved with the device; see ``setFocus(_:)``).
    public internal(set) var focus = FocusSettings()
    /// The Focus last seen on, for the `focus` event, and the next instant a scheduled one may
    /// start or end (on the alarm).
    var lastActiveFocus: String?
    var focusEdge: Int64?
    let user: UserSettingsSource
    let storage: RuntimeStorage?
    private let observer: (@Sendable (RuntimeEvent) -> Void)?
    let work = WorkTracker()

    var apps: [String: AppSlot] = [:]
    /// Summary parts saved and not yet emitted (``emitSummaries()``).
    var summaryParts: [(app: String, seq: Int64, at: Int64, items: [SummaryItem])] = []
    private var dueHeap = DueHeap<(app: String, version: Int)>()
    private var alarm: ClockAlarm?
    /// Asks the device connection for Live Activity tokens and channel subscriptions (`keep`
    /// false gives one up); set by ``attach(_:)``.
    var liveActivityRequester: (@Sendable (DeviceConnection.Want, _ keep: Bool) -> Void)?

    /// - Parameters:
    ///   - storageDirectory: where each app's state is kept across restarts (`nil`: memory only).
    ///   - observer: told of everything the runtime does, synchronously, on the runtime's executor.
    public init(
        clock: AlarmClock, timeZone: TimeZone, preferredLanguages: [String] = ["en"], user: UserSettingsSource,
        storageDirectory: String? = nil, deliveredLimit: Int = 100, observer: (@Sendable (RuntimeEvent) -> Void)? = nil
    ) throws {
        self.deliveredLimit = max(1, deliveredLimit)
        self.clock = clock
        self.timeZone = timeZone
        self.preferredLanguages = preferredLanguages
        self.user = user
        self.storage = try storageDirectory.map(RuntimeStorage.init(directory:))
        self.observer = observer
        if let saved = try storage?.loadFocus() { focus = saved }
        // With Focus modes set, the Focus on at start (or none) is announced at once: whatever
        // shows it starts right, even when an edge passed while the runtime was stopped. The
        // next scheduled start or end rings the alarm (armed by the first install).
        let now = clock.nowMilliseconds()
        lastActiveFocus = focus.activeMode(at: now, in: timeZone)?.name
        focusEdge = focus.nextFocusEdge(after: now, in: timeZone)
        if !focus.modes.isEmpty { observer?(.focus(active: lastActiveFocus, focus)) }
    }

    // MARK: apps

    /// What an app brings with it when installed.
    public struct AppBundle: Sendable {
        public var api: DeliveryByAppState.API
        public var entitlements: AuthorizationOptions
        /// `com.apple.developer.location.push`: the app may monitor location pushes.
        public var locationPushEntitlement: Bool
        public var sounds: NotificationSounds.Locations
        public var localization: AlertLocalization
        public init(
            api: DeliveryByAppState.API = .userNotifications, entitlements: AuthorizationOptions = [],
            sounds: NotificationSounds.Locations = .init(), localization: AlertLocalization = .init(tables: [:]),
            locationPushEntitlement: Bool = false
        ) {
            self.api = api
            self.entitlements = entitlements
            self.locationPushEntitlement = locationPushEntitlement
            self.sounds = sounds
            self.localization = localization
        }
    }

    /// Removes what a runtime keeping its state in `storageDirectory` saved for an app, as an
    /// uninstall does: its settings, pending and delivered notifications and token. Call it while
    /// no runtime runs that app (a running one writes its state back).
    public static func removeSavedState(of appID: String, storageDirectory: String) throws {
        try RuntimeStorage(directory: storageDirectory).remove(appID)
    }

    /// Installs an app (its id is its bundle id, the push topic), or returns the installed one.
    /// Saved state (settings, categories, pending requests, delivered list, badge, token) comes
    /// back; a request whose fire time passed while the runtime was stopped is delivered now, once.
    public func install(_ appID: String, bundle: AppBundle = AppBundle()) throws -> AppNotificationCenter {
        if apps[appID] == nil {
            let slot = AppSlot(id: appID, bundle: bundle, timeZone: timeZone)
            if let storage, let saved = try storage.load(appID) {
                saved.restore(into: slot, now: clock.nowMilliseconds(), timeZone: timeZone, alreadyAnnounced: storage.announced(appID))
            }
            slot.scheduler.setLocation(servicesEnabled: locationServicesEnabled)
            apps[appID] = slot
            reschedule(slot)
            armAlarm()
            // Notifications shown before a crash whose event was not emitted yet (a summary
            // interrupted so comes back as this app's own `summary` event).
            if !slot.saving.announcing.isEmpty {
                save(slot)
                emitSummaries()
            }
        }
        return AppNotificationCenter(runtime: self, appID: appID)
    }

    /// The center of an installed app.
    public func center(for appID: String) -> AppNotificationCenter? {
        apps[appID] == nil ? nil : AppNotificationCenter(runtime: self, appID: appID)
    }

    public var installedApps: [String] { apps.keys.sorted() }

    func slot(_ appID: String) throws(RuntimeError) -> AppSlot {
        guard let slot = apps[appID] else { throw RuntimeError("no app \"\(appID)\" is installed on this device") }
        return slot
    }

    /// Waits until everything the runtime started (alarm handling, delegate calls) has finished.
    /// Tests and benchmarks call it after moving a ``SimulatedAlarmClock``. Delegate *methods*
    /// are awaited (a method that never returns keeps `settle` waiting); what the time limits
    /// cover are the *handlers* those methods receive.
    public nonisolated func settle() async { await work.settle() }

    /// Moves a simulated clock to `instant` one alarm at a time, letting the runtime finish each
    /// step, so that every fire happens at its own instant.
    public nonisolated func advance(_ clock: SimulatedAlarmClock, to instant: Int64) async {
        await clock.advance(to: instant, settling: { await self.settle() })
    }

    func emit(_ event: RuntimeEvent) { observer?(event) }

    nonisolated func report(_ appID: String, _ message: String) {
        work.spawn { await self.emit(.contractViolation(app: appID, message: message)) }
    }

    // MARK: scheduling

    /// Recomputes an app's soonest due time (its scheduler and its held silent push).
    func reschedule(_ slot: AppSlot) {
        slot.saving.version &+= 1
        let due = [slot.scheduler.nextDue, slot.remote.silentBudget.nextRelease, slot.widgetKit.activities.nextDue, slot.center.summaryDue].compactMap { $0 }.min()
        if let due { dueHeap.push(due: due, (slot.id, slot.saving.version)) }
    }

    /// Arms the one alarm for the soonest due time of any app, or the next Focus edge (or none).
    func armAlarm() {
        while let top = dueHeap.top, apps[top.payload.app]?.saving.version != top.payload.version { dueHeap.pop() }
        let next = [dueHeap.top?.due, focusEdge].compactMap { $0 }.min()
        if alarm?.deadline == next, alarm?.isCancelled == false { return }
        alarm?.cancel()
        alarm = nil
        guard let next else { return }
        alarm = clock.setAlarm(at: next) { [work] in work.spawn { await self.alarmRang() } }
    }

    private func alarmRang() {
        alarm = nil
        let now = clock.nowMilliseconds()
        while let top = dueHeap.top, top.due <= now {
            dueHeap.pop()
            guard let slot = apps[top.payload.app], slot.saving.version == top.payload.version else { continue }
            for firing in slot.scheduler.fireDue(upTo: now) { deliverLocal(slot, firing, now: now) }
            if let payload = slot.remote.silentBudget.release(now: now) { startSilentPush(slot, payload) }
            fireLiveActivities(slot, now: now)
            if let due = slot.center.summaryDue, due <= now { releaseSummary(slot, now: now) }
            reschedule(slot)
            save(slot)
        }
        emitSummaries()
        if let edge = focusEdge, edge <= now { focusEdgeReached(now: now) }
        armAlarm()
    }

    func deliverLocal(_ slot: AppSlot, _ firing: LocalFiring, now: Int64) {
        arrive(slot, id: firing.request.id, origin: .local(trigger: LocalPlanner.triggerName(firing.request.trigger)),
               content: NotificationContent.local(firing.request.content), dueAt: firing.atMilliseconds, now: now)
    }

    /// Saves an app's state (when the runtime has storage).
    /// Writes the app's state; then acks the remote notifications whose outcome it holds. A state
    /// that cannot be written acks nothing: the gateway sends those notifications again.
    ///
    /// What happened to notifications since the last save (shown, held, a widget push's outcome:
    /// ``Announcement``) is announced only after the state that records it is written, so a crash
    /// never shows one twice through a redelivery; the journal of ``RuntimeStorage`` makes sure a
    /// crash between the two never loses an event either.
    func save(_ slot: AppSlot) {
        let acks = slot.saving.acksAfterSave
        slot.saving.acksAfterSave = []
        let announcing = slot.saving.announcing
        let events = slot.saving.eventsAfterSave
        slot.saving.eventsAfterSave = []
        // Saved with the state below (what a crash before their events leaves to announce at start).
        defer { slot.saving.announcing = [] }
        // A summary part waits for the other apps' (``emitSummaries()``, after the saves).
        func emitNow(_ seq: Int64, _ announcement: Announcement) -> Bool {
            guard let event = announcement.event(app: slot.id) else {
                if case .summary(let at, let items) = announcement { summaryParts.append((slot.id, seq, at, items)) }
                return false
            }
            emit(event)
            return true
        }
        guard let storage else {
            for (seq, announcement) in announcing { _ = emitNow(seq, announcement) }
            for event in events { emit(event) }
            for ack in acks { ack() }
            return
        }
        do { try storage.save(SavedApp(slot), appID: slot.id) } catch {
            emit(.contractViolation(app: slot.id, message: "could not save the app's state: \(error)"))
            // Done in memory all the same; unacked, the remote ones come again after a restart.
            for (seq, announcement) in announcing { _ = emitNow(seq, announcement) }
            for event in events { emit(event) }
            return
        }
        // Nothing to announce: the journal is left as it is (what it records are numbers the
        // saved state no longer lists, and numbers are never given twice).
        if !announcing.isEmpty {
            let journal = storage.startJournal(slot.id)
            for (seq, announcement) in announcing {
                if emitNow(seq, announcement) { journal.record(seq) }
            }
        }
        for event in events { emit(event) }
        for ack in acks { ack() }
    }

    /// A remote notification has its outcome (presented, shown to the app, dropped, held): it is
    /// remembered as handled and acked after the next save, which the caller makes.
    func concludeRemote(_ slot: AppSlot, id: String) {
        guard let ack = slot.remote.inProgress.removeValue(forKey: id) else { return }
        slot.remote.handled.insert(id)
        slot.saving.acksAfterSave.append(ack)
    }

    // MARK: delivery by app state

    /// A notification arrives for an app, local or remote: sound lookup, then (UserNotifications
    /// in the foreground) the app's `willPresent`, then the presentation the reference's table gives.
    /// `actions`: the buttons of a notification that brings its own (Declarative Web Push), shown
    /// when the content names no registered category.
    func arrive(_ slot: AppSlot, id: String, origin: DeliveredNotification.Origin, content: NotificationContent, dueAt: Int64, now: Int64,
                actions: [NotificationAction] = []) {
        var played: String?
        if let name = content.sound {
            switch NotificationSounds.resolve(named: name, in: slot.bundle.sounds) {
            case .custom(let file): played = file.path
            case .defaultSound(let reason):
                played = "default"
                if name != "default" { emit(.soundReplaced(app: slot.id, name: name, reason: reason)) }
            }
        }
        let category = slot.center.categories.category(named: content.category)
        var notification = DeliveredNotification(
            id: id, origin: origin, content: content, deliveredAt: now, dueAt: dueAt, presentation: .init(),
            playedSound: played, actions: category?.actions(in: .minimal) ?? actions)
        // The Focus and the summary; an app in the foreground is in use and holds nothing back.
        let decided = attention(slot, content, now: now)
        notification.attention = decided.attention
        if decided.hold, slot.appState != .foreground { return holdForSummary(slot, notification, now: now) }
        if slot.appState == .foreground, slot.bundle.api == .userNotifications, let delegate = slot.delegate {
            let preview = notification
            let handler = CallbackHandler<DeliveryByAppState.ForegroundOptions>(
                purpose: "the willPresent completion handler for \(id)", clock: clock,
                limitMilliseconds: Self.callbackTimeLimitMilliseconds, fallback: [],
                misuse: { [appID = slot.id] in self.report(appID, $0) },
                then: { [work, appID = slot.id] outcome in
                    work.spawn {
                        if case .timedOut = outcome {
                            await self.emit(.contractViolation(app: appID, message: "the willPresent completion handler for \(id) was not called within 30 s; nothing was shown"))
                        }
                        let options: DeliveryByAppState.ForegroundOptions = switch outcome {
                        case .answered(let o): o
                        case .timedOut(let o): o
                        }
                        await self.present(appID, preview, foregroundOptions: options)
                    }
                })
            work.spawn { await delegate.willPresent(preview, completion: handler) }
            return
        }
        notification.deliveredAt = now
        present(slot, notification, foregroundOptions: nil)
    }

    private func present(_ appID: String, _ notification: DeliveredNotification, foregroundOptions: DeliveryByAppState.ForegroundOptions?) {
        guard let slot = apps[appID] else { return }
        present(slot, notification, foregroundOptions: foregroundOptions)
        save(slot)
    }

    func present(_ slot: AppSlot, _ arriving: DeliveredNotification, foregroundOptions: DeliveryByAppState.ForegroundOptions?) {
        var notification = arriving
        let settings = slot.center.authorization.settings
        var (presentation, callback) = DeliveryByAppState.arrive(
            state: slot.appState, api: slot.bundle.api, kinds: notification.content.kinds, badge: notification.content.badge,
            settings: settings, foregroundOptions: foregroundOptions)
        let attention = notification.attention
        // Passive: listed silently; silenced by a Focus, or delivered in the summary: the same.
        if attention.level == .passive || attention.silenced || attention.summaryAt != nil {
            presentation.banner = false
            presentation.sound = false
        }
        // Muted: only a critical alert plays (at its volume).
        let critical = attention.level == .critical || (notification.content.criticalSound && slot.criticalAlertsAllowed)
        if presentation.sound, critical {
            notification.attention.criticalVolume = notification.content.criticalVolume ?? 1
        } else if isMuted {
            presentation.sound = false
        }
        if !presentation.sound { notification.playedSound = nil }
        notification.presentation = presentation
        if let badge = presentation.badge, badge != slot.center.badge {
            slot.center.badge = badge
            emit(.badgeChanged(app: slot.id, badge: badge))
        }
        if presentation.listed {
            slot.center.delivered.removeAll { $0.id == notification.id }
            slot.center.delivered.append(notification)
            if slot.center.delivered.count > deliveredLimit { slot.center.delivered.removeFirst(slot.center.delivered.count - deliveredLimit) }
        } else {
            // A banner that is not listed stays tappable only while it is on screen: until the next one.
            slot.center.shownOnly = [notification.id: notification]
        }
        // Announced by the save that records it (the caller saves).
        announce(slot, .delivered(notification))
        if case .remote(let apnsID) = notification.origin { concludeRemote(slot, id: apnsID) }
        guard let delegate = slot.delegate else { return }
        let told = notification
        let nothingShown = !presentation.banner && !presentation.listed && !presentation.sound && presentation.badge == nil
        switch callback {
        case .legacyDidReceive(let state):
            work.spawn { await delegate.didReceiveLegacy(told, state: state) }
        case .none where nothingShown && slot.appState != .notRunning:
            work.spawn { await delegate.didDeliverWithoutPresentation(told) }
        default: break
        }
    }

    /// A delivered notification the user can still act on: in Notification Center, or shown only.
    func shown(_ slot: AppSlot, _ id: String) -> DeliveredNotification? {
        slot.center.delivered.last { $0.id == id } ?? slot.center.shownOnly[id]
    }

    func forget(_ slot: AppSlot, _ id: String) {
        let wasListed = slot.center.delivered.contains { $0.id == id }
        slot.center.delivered.removeAll { $0.id == id }
        slot.center.shownOnly[id] = nil
        if wasListed { emit(.dismissed(app: slot.id, id: id)) }
    }

}

/// A runtime call that cannot be done, in words.
public struct RuntimeError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A min-heap of (due time, app) with lazy invalidation by version.
