import Foundation
import HeraldCore

/// Where the runtime keeps each app's state across restarts: one JSON file per app,
/// `DIR/apps/<app id>.json`, replaced atomically after every change.
struct RuntimeStorage: Sendable {
    let directory: String

    init(directory: String) throws {
        self.directory = (directory as NSString).appendingPathComponent("apps")
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
    }

    private func path(_ appID: String) -> String {
        // Bundle ids are printable ASCII without slashes (checked at install); keep the name as is.
        (directory as NSString).appendingPathComponent(appID.replacingOccurrences(of: "/", with: "_") + ".json")
    }

    func load(_ appID: String) throws(RuntimeError) -> SavedApp? {
        let path = path(appID)
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do { return try JSONReader.decode(SavedApp.self, from: data, limits: JSONLimits(maximumBytes: 64 << 20, maximumDepth: 64)) } catch {
            throw RuntimeError("\(path) is not a saved app state (\(error)); remove it to start the app afresh")
        }
    }

    /// Forgets an app (uninstalled): its settings, notifications and token.
    func remove(_ appID: String) throws {
        removeJournal(appID)
        let path = path(appID)
        guard FileManager.default.fileExists(atPath: path) else { return }
        try FileManager.default.removeItem(atPath: path)
    }

    func save(_ app: SavedApp, appID: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(app).write(to: URL(fileURLWithPath: path(appID)), options: .atomic)
    }

    // MARK: the device's Focus

    /// `DIR/focus.json`: the device's Focus modes and summary (``FocusSettings/json``).
    private var focusPath: String { ((directory as NSString).deletingLastPathComponent as NSString).appendingPathComponent("focus.json") }

    func loadFocus() throws(RuntimeError) -> FocusSettings? {
        guard let data = FileManager.default.contents(atPath: focusPath) else { return nil }
        do {
            return try FocusSettings(json: try JSONReader.parse(Array(data), limits: JSONLimits(maximumBytes: 16 << 20, maximumDepth: 16)))
        } catch let error as RuntimeError {
            throw RuntimeError("\(focusPath): \(error.message); fix or remove it")
        } catch {
            throw RuntimeError("\(focusPath) is not JSON (\(error)); fix or remove it")
        }
    }

    func saveFocus(_ settings: FocusSettings) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(settings.json).write(to: URL(fileURLWithPath: focusPath), options: .atomic)
    }

    // MARK: announcements

    // A notification is "shown" once: in the app's saved state (its delivered list and handled
    // apns-ids) and by one `delivered` event. The two cannot be written atomically together, so
    // the state is written first, listing the notifications whose event is still to come
    // ("announcing", each with a sequence number); then each event is emitted and its number
    // appended to a small journal, `<app>.announced` (a plain write: it survives the process
    // being killed; a power loss may lose it, and then the event comes again). At start-up the
    // runtime emits those listed in the state and missing from the journal. The next save no
    // longer lists them and empties the journal. What is left is one instant: after an event is
    // written and before its number is: a kill exactly there shows that notification twice.
    // Herald errs on that side (twice, never lost).

    private func journalPath(_ appID: String) -> String { path(appID) + ".announced" }

    /// The announcements the journal records as emitted since the last save.
    func announced(_ appID: String) -> Set<Int64> {
        guard let data = FileManager.default.contents(atPath: journalPath(appID)) else { return [] }
        return AnnouncementJournalFile.records(in: Array(data))
    }

    /// Empties the journal (the state just saved lists none of what it recorded) and returns it
    /// open for the announcements that follow that save.
    func startJournal(_ appID: String) -> AnnouncementJournal { AnnouncementJournal(path: journalPath(appID), truncating: true) }

    /// The journal open for more records after the last save's (a summary part, emitted once
    /// every app due has saved).
    func appendToJournal(_ appID: String) -> AnnouncementJournal { AnnouncementJournal(path: journalPath(appID), truncating: false) }

    func removeJournal(_ appID: String) {
        try? FileManager.default.removeItem(atPath: journalPath(appID))
    }
}

/// How the journal's file is read: one positive decimal number a line; anything else (a line cut
/// by a kill, garbage) records nothing, so its announcement comes again. At most 1 MiB is read.
public enum AnnouncementJournalFile {
    public static let maximumBytes = 1 << 20

    public static func records(in bytes: [UInt8]) -> Set<Int64> {
        var seen = Set<Int64>()
        for line in bytes.prefix(maximumBytes).split(separator: UInt8(ascii: "\n")) where line.count <= 19 {
            if let seq = Int64(String(decoding: line, as: UTF8.self)), seq > 0 { seen.insert(seq) }
        }
        return seen
    }
}

/// The journal of announcements emitted since the app's state was last saved (see
/// ``RuntimeStorage``). Opened truncated by a save, appended to after it; each record is one `write(2)`.
struct AnnouncementJournal: ~Copyable {
    private let descriptor: Int32

    init(path: String, truncating: Bool) {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncating ? O_TRUNC : 0), 0o600)
    }

    /// Records that announcement `seq` was emitted.
    func record(_ seq: Int64) {
        guard descriptor >= 0 else { return }
        let line = Array("\(seq)\n".utf8)
        _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }

    deinit { if descriptor >= 0 { close(descriptor) } }
}

/// An app's saved state.
struct SavedApp: Codable {
    struct Pending: Codable {
        var request: JSONValue
        var scheduledAt: Int64
        var nextFire: Int64?
    }
    struct Delivered: Codable {
        var id: String
        var remote: Bool
        var trigger: String?
        var content: JSONValue
        var deliveredAt: Int64
        var dueAt: Int64
        /// What was applied to it and how it was shown (absent in state saved before they were kept).
        var attention: SavedAttention?
        var banner: Bool?, sound: Bool?
        var playedSound: String?

        init(_ n: DeliveredNotification) {
            id = n.id
            content = n.content.json
            deliveredAt = n.deliveredAt
            dueAt = n.dueAt
            switch n.origin {
            case .local(let trigger): (remote, self.trigger) = (false, trigger)
            case .remote: (remote, trigger) = (true, nil)
            }
            attention = SavedAttention(n.attention)
            (banner, sound) = (n.presentation.banner ? true : nil, n.presentation.sound ? true : nil)
            playedSound = n.playedSound
        }

        /// The notification as it was, `listed` in Notification Center or not. State saved before
        /// the attention was kept reads back with the level its content asked for.
        func notification(in slot: AppSlot, listed: Bool, badge: Int? = nil) -> DeliveredNotification {
            let content = NotificationContent.local(content)
            var presentation = DeliveryByAppState.Presentation()
            (presentation.banner, presentation.sound, presentation.listed, presentation.badge) = (banner ?? false, sound ?? false, listed, badge)
            var notification = DeliveredNotification(
                id: id, origin: remote ? .remote(apnsID: id) : .local(trigger: trigger ?? "now"), content: content,
                deliveredAt: deliveredAt, dueAt: dueAt, presentation: presentation, playedSound: playedSound,
                actions: slot.center.categories.category(named: content.category)?.actions(in: .minimal) ?? [])
            if let attention {
                notification.attention = attention.attention
            } else {
                notification.attention.level = content.interruptionLevel
            }
            return notification
        }
    }
    /// ``DeliveredNotification/Attention`` as saved.
    struct SavedAttention: Codable {
        var level: String
        var focus: String?
        var through: String?
        var silenced: Bool?
        var summaryAt: Int64?
        var criticalVolume: Double?

        init(_ a: DeliveredNotification.Attention) {
            (level, focus, through, silenced) = (a.level.rawValue, a.focus, a.through?.rawValue, a.silenced ? true : nil)
            (summaryAt, criticalVolume) = (a.summaryAt, a.criticalVolume)
        }

        var attention: DeliveredNotification.Attention {
            var a = DeliveredNotification.Attention()
            a.level = .init(rawValue: level)
            a.focus = focus
            a.through = through.flatMap(Interruption.Breakthrough.init(rawValue:))
            a.silenced = silenced ?? false
            a.summaryAt = summaryAt
            a.criticalVolume = criticalVolume
            return a
        }
    }
    /// Something announced (see ``Announcement``) whose event may not have been emitted yet: a
    /// notification shown (no `kind`; how it was shown in the flags), held for the summary
    /// (`held`, `until`), the app's part of a summary (`summary`, `until` its time, `items`), a
    /// widget push's outcome (`widget-reloaded`, `widget-refused`), or a Live Activity's
    /// (`live-started`, `live-updated`, `live-stale`, `live-ended`, `live-dismissed` with the
    /// activity; `live-ignored`).
    struct SavedAnnouncement: Codable {
        var seq: Int64
        var kind: String?
        var notification: Delivered?
        var banner: Bool?, sound: Bool?, listed: Bool?
        var badge: Int?
        var playedSound: String?
        var until: Int64?
        var apnsID: String?
        var remaining: Int?
        var reason: String?
        var retryAt: Int64?
        var items: [SummaryEntry]?
        var activity: LiveActivity?
        var alert: String?
        var throttled: Bool?

        /// One notification of a summary part.
        struct SummaryEntry: Codable {
            var id: String
            var trigger: String?
            var remote: Bool
            var relevance: Double
            var arrivedAt: Int64
            var order: Int
        }

        init(seq: Int64, _ announcement: Announcement) {
            self.seq = seq
            switch announcement {
            case .delivered(let n):
                notification = Delivered(n)
                (banner, sound, listed, badge, playedSound) = (n.presentation.banner, n.presentation.sound, n.presentation.listed, n.presentation.badge, n.playedSound)
            case .held(let n, let until):
                (kind, notification, self.until) = ("held", Delivered(n), until)
            case .widget(.reloaded(let id, let remaining)):
                (kind, apnsID, self.remaining) = ("widget-reloaded", id, remaining)
            case .widget(.refused(let id, let reason, let retryAt)):
                (kind, apnsID, self.reason, self.retryAt) = ("widget-refused", id, reason, retryAt)
            case .widget(.token):
                kind = "widget-token"  // never announced this way; read back as nothing
            case .summary(let at, let parts):
                (kind, until) = ("summary", at)
                items = parts.map { item in
                    switch item.origin {
                    case .local(let trigger):
                        SummaryEntry(id: item.id, trigger: trigger, remote: false, relevance: item.relevance, arrivedAt: item.arrivedAt, order: item.order)
                    case .remote:
                        SummaryEntry(id: item.id, trigger: nil, remote: true, relevance: item.relevance, arrivedAt: item.arrivedAt, order: item.order)
                    }
                }
            case .liveActivity(let event):
                switch event {
                case .started(let a, let id, let alert): (kind, activity, apnsID, self.alert) = ("live-started", a, id, alert)
                case .updated(let a, let id, let alert, let throttled):
                    (kind, activity, apnsID, self.alert, self.throttled) = ("live-updated", a, id, alert, throttled)
                case .stale(let a): (kind, activity) = ("live-stale", a)
                case .ended(let a, let id, let alert): (kind, activity, apnsID, self.alert) = ("live-ended", a, id, alert)
                case .dismissed(let a): (kind, activity) = ("live-dismissed", a)
                case .ignored(let id, let reason): (kind, apnsID, self.reason) = ("live-ignored", id, reason)
                case .pushToStartToken, .updateToken:
                    kind = "live-token"  // never announced this way; read back as nothing
                }
            }
        }

        func announcement(in slot: AppSlot) -> Announcement? {
            switch kind {
            case nil:
                guard let notification else { return nil }
                var n = notification.notification(in: slot, listed: listed ?? false, badge: badge)
                (n.presentation.banner, n.presentation.sound, n.playedSound) = (banner ?? false, sound ?? false, playedSound)
                return .delivered(n)
            case "held":
                guard let notification, let until else { return nil }
                return .held(notification.notification(in: slot, listed: false), until: until)
            case "widget-reloaded":
                guard let apnsID, let remaining else { return nil }
                return .widget(.reloaded(apnsID: apnsID, remaining: remaining))
            case "widget-refused":
                guard let apnsID, let reason else { return nil }
                return .widget(.refused(apnsID: apnsID, reason: reason, retryAt: retryAt))
            case "summary":
                guard let until, let items else { return nil }
                return .summary(at: until, items.map { entry in
                    DeviceRuntime.SummaryItem(
                        app: slot.id, id: entry.id, origin: entry.remote ? .remote(apnsID: entry.id) : .local(trigger: entry.trigger ?? "now"),
                        relevance: entry.relevance, arrivedAt: entry.arrivedAt, order: entry.order)
                })
            case "live-ignored":
                guard let apnsID, let reason else { return nil }
                return .liveActivity(.ignored(apnsID: apnsID, reason: reason))
            case "live-started", "live-updated", "live-stale", "live-ended", "live-dismissed":
                guard let activity else { return nil }
                switch kind {
                case "live-started": return .liveActivity(.started(activity, apnsID: apnsID, alert: alert))
                case "live-updated":
                    guard let apnsID else { return nil }
                    return .liveActivity(.updated(activity, apnsID: apnsID, alert: alert, throttled: throttled ?? false))
                case "live-stale": return .liveActivity(.stale(activity))
                case "live-ended": return .liveActivity(.ended(activity, apnsID: apnsID, alert: alert))
                default: return .liveActivity(.dismissed(activity))
                }
            default: return nil
            }
        }
    }

    var status: Int
    var alert: Int, sound: Int, badgeSetting: Int, criticalAlert: Int, timeSensitive: Int, carPlay: Int
    var promptCount: Int
    var categories: [JSONValue]
    var pending: [Pending]
    var delivered: [Delivered]
    var badge: Int
    var token: String?
    var wantsRemote: Bool
    var locationAuthorized: Bool
    /// The apns-ids of the remote notifications the app has had, newest last (bounded): a copy the
    /// gateway sends again — its ack was lost in a crash — is acked and dropped, across restarts.
    var handledRemote: [String]?
    /// The silent-push budget's recent uses and the push it holds (acked when held, so kept here).
    var silentBudget: SilentPushes.Budget.Saved?
    /// Live Activities and their tokens (absent in state saved before they existed).
    var liveActivities: LiveActivityBook.Saved?
    var wantsPushToStart: Bool?
    /// Notifications shown whose `delivered` event is to be emitted after this save (absent in
    /// state saved before it existed), and the next announcement's number.
    var announcing: [SavedAnnouncement]?
    var nextAnnouncement: Int64?
    /// Web Push subscriptions with their keys, and messages kept for the app (absent in state
    /// saved before they existed).
    var webPush: [WebPushSubscriptionState.Saved]?
    var webPushInbox: [SavedWebPushMessage]?
    /// The pages declarative notifications open, oldest first (absent in state saved before them).
    var webPushPages: [SavedPages]?

    struct SavedPages: Codable {
        var id: String
        var pages: [String: String]
    }
    /// Held for the scheduled summary, and when it is due (absent in state saved before they existed).
    var summaryHeld: [Delivered]?
    var summaryDue: Int64?
    /// Widget pushes: configured, the token, the day's reloads (absent in state saved before them).
    var wantsWidgetPushes: Bool?
    var widgetToken: String?
    var widgetBudget: WidgetReloadBudget?
    /// PushKit tokens, calls, counts and held pushes (absent in state saved before them).
    var pushKit: PushKitState.Saved?

    struct SavedWebPushMessage: Codable {
        var scope: String
        var id: String
        var data: String
        var declarative: Bool
    }

    init(_ slot: AppSlot) {
        let s = slot.center.authorization.settings
        status = s.status.rawValue
        (alert, sound, badgeSetting, criticalAlert, timeSensitive, carPlay) =
            (s.alert.rawValue, s.sound.rawValue, s.badge.rawValue, s.criticalAlert.rawValue, s.timeSensitive.rawValue, s.carPlay.rawValue)
        promptCount = slot.center.authorization.promptCount
        categories = slot.center.categories.categories.keys.sorted().compactMap { slot.center.categories.categories[$0].map(RuntimeJSON.json) }
        pending = slot.scheduler.pending.map { Pending(request: RuntimeJSON.json($0.request), scheduledAt: $0.scheduledAt, nextFire: $0.nextFire) }
        delivered = slot.center.delivered.map(Delivered.init)
        announcing = slot.saving.announcing.map { SavedAnnouncement(seq: $0.seq, $0.announcement) }
        nextAnnouncement = slot.saving.nextAnnouncement
        badge = slot.center.badge
        token = slot.remote.token?.description
        wantsRemote = slot.remote.wantsRemote
        locationAuthorized = slot.locationAuthorized
        handledRemote = slot.remote.handled.ids
        silentBudget = slot.remote.silentBudget.saved
        liveActivities = slot.widgetKit.activities.saved
        wantsPushToStart = slot.widgetKit.wantsPushToStart
        webPush = slot.webPush.subscriptions.values.sorted { $0.scope < $1.scope }.map(\.saved)
        webPushPages = slot.webPush.pageOrder.isEmpty ? nil : slot.webPush.pageOrder.compactMap { id in slot.webPush.pages[id].map { SavedPages(id: id, pages: $0) } }
        webPushInbox = slot.webPush.inbox.map { SavedWebPushMessage(scope: $0.scope, id: $0.id, data: Base64URL.encode($0.data), declarative: $0.declarative) }
        summaryHeld = slot.center.summaryHeld.isEmpty ? nil : slot.center.summaryHeld.map(Delivered.init)
        summaryDue = slot.center.summaryDue
        wantsWidgetPushes = slot.widgetKit.wantsWidgetPushes ? true : nil
        widgetToken = slot.widgetKit.widgetToken?.description
        widgetBudget = slot.widgetKit.widgetBudget.recent.isEmpty ? nil : slot.widgetKit.widgetBudget
        pushKit = slot.pushKit.saved
    }

    /// Puts the state back into a fresh slot. A pending request whose fire time passed while the
    /// runtime was stopped keeps that time: the first alarm delivers it, once.
    func restore(into slot: AppSlot, now: Int64, timeZone: TimeZone, alreadyAnnounced: Set<Int64>) {
        var settings = NotificationSettings()
        settings.status = AuthorizationStatus(rawValue: status) ?? .notDetermined
        func setting(_ raw: Int) -> NotificationSetting { NotificationSetting(rawValue: raw) ?? .notSupported }
        settings.alert = setting(alert)
        settings.sound = setting(sound)
        settings.badge = setting(badgeSetting)
        settings.criticalAlert = setting(criticalAlert)
        settings.timeSensitive = setting(timeSensitive)
        settings.carPlay = setting(carPlay)
        slot.center.authorization = AppAuthorization(restoring: settings, promptCount: promptCount, entitlements: slot.bundle.entitlements)
        _ = try? slot.center.categories.setCategories(categories.compactMap { try? RuntimeJSON.category($0) })
        for entry in pending {
            guard let request = try? PlanFormat.request(entry.request) else { continue }
            slot.scheduler.restore(request, scheduledAt: entry.scheduledAt, nextFire: entry.nextFire)
        }
        slot.center.delivered = delivered.map { $0.notification(in: slot, listed: true) }
        slot.saving.nextAnnouncement = max(1, nextAnnouncement ?? 1)
        // What was saved as shown but whose event the journal does not record is announced
        // again (by the first save after start-up).
        slot.saving.announcing = (announcing ?? []).filter { !alreadyAnnounced.contains($0.seq) }.compactMap { a in
            a.announcement(in: slot).map { (a.seq, $0) }
        }
        slot.center.badge = badge
        slot.remote.token = token.flatMap { DeviceToken(hex: $0) }
        slot.remote.wantsRemote = wantsRemote
        slot.locationAuthorized = locationAuthorized
        for id in handledRemote ?? [] { slot.remote.handled.insert(id) }
        if let silentBudget { slot.remote.silentBudget.restore(silentBudget, now: now) }
        if let liveActivities { slot.widgetKit.activities = LiveActivityBook(saved: liveActivities) }
        slot.widgetKit.wantsPushToStart = wantsPushToStart ?? false
        for saved in webPush ?? [] {
            if let state = WebPushSubscriptionState(saved: saved) { slot.webPush.subscriptions[state.scope] = state }
        }
        for saved in webPushPages ?? [] where slot.webPush.pages.updateValue(saved.pages, forKey: saved.id) == nil { slot.webPush.pageOrder.append(saved.id) }
        slot.webPush.inbox = (webPushInbox ?? []).compactMap { m in
            Base64URL.decode(m.data[...]).map { WebPushMessageDelivery(scope: m.scope, id: m.id, data: $0, declarative: m.declarative) }
        }
        slot.center.summaryHeld = (summaryHeld ?? []).map { $0.notification(in: slot, listed: false) }
        // A summary time that passed while the runtime was stopped is due at once.
        slot.center.summaryDue = slot.center.summaryHeld.isEmpty ? nil : summaryDue
        slot.widgetKit.wantsWidgetPushes = wantsWidgetPushes ?? false
        slot.widgetKit.widgetToken = widgetToken.flatMap { DeviceToken(hex: $0) }
        slot.widgetKit.widgetBudget = widgetBudget ?? WidgetReloadBudget()
        slot.pushKit = pushKit.map(PushKitState.init(saved:)) ?? PushKitState()
        slot.scheduler.setLocation(authorized: locationAuthorized)
    }
}
