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
        let path = path(appID)
        guard FileManager.default.fileExists(atPath: path) else { return }
        try FileManager.default.removeItem(atPath: path)
    }

    func save(_ app: SavedApp, appID: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(app).write(to: URL(fileURLWithPath: path(appID)), options: .atomic)
    }
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

    init(_ slot: AppSlot) {
        let s = slot.authorization.settings
        status = s.status.rawValue
        (alert, sound, badgeSetting, criticalAlert, timeSensitive, carPlay) =
            (s.alert.rawValue, s.sound.rawValue, s.badge.rawValue, s.criticalAlert.rawValue, s.timeSensitive.rawValue, s.carPlay.rawValue)
        promptCount = slot.authorization.promptCount
        categories = slot.categories.categories.keys.sorted().compactMap { slot.categories.categories[$0].map(RuntimeJSON.json) }
        pending = slot.scheduler.pending.map { Pending(request: RuntimeJSON.json($0.request), scheduledAt: $0.scheduledAt, nextFire: $0.nextFire) }
        delivered = slot.delivered.map { n in
            switch n.origin {
            case .local(let trigger):
                Delivered(id: n.id, remote: false, trigger: trigger, content: n.content.json, deliveredAt: n.deliveredAt, dueAt: n.dueAt)
            case .remote:
                Delivered(id: n.id, remote: true, trigger: nil, content: n.content.json, deliveredAt: n.deliveredAt, dueAt: n.dueAt)
            }
        }
        badge = slot.badge
        token = slot.token?.description
        wantsRemote = slot.wantsRemote
        locationAuthorized = slot.locationAuthorized
        handledRemote = slot.handledRemote.ids
        silentBudget = slot.silentBudget.saved
        liveActivities = slot.activities.saved
        wantsPushToStart = slot.wantsPushToStart
    }

    /// Puts the state back into a fresh slot. A pending request whose fire time passed while the
    /// runtime was stopped keeps that time: the first alarm delivers it, once.
    func restore(into slot: AppSlot, now: Int64, timeZone: TimeZone) {
        var settings = NotificationSettings()
        settings.status = AuthorizationStatus(rawValue: status) ?? .notDetermined
        func setting(_ raw: Int) -> NotificationSetting { NotificationSetting(rawValue: raw) ?? .notSupported }
        settings.alert = setting(alert)
        settings.sound = setting(sound)
        settings.badge = setting(badgeSetting)
        settings.criticalAlert = setting(criticalAlert)
        settings.timeSensitive = setting(timeSensitive)
        settings.carPlay = setting(carPlay)
        slot.authorization = AppAuthorization(restoring: settings, promptCount: promptCount, entitlements: slot.bundle.entitlements)
        _ = try? slot.categories.setCategories(categories.compactMap { try? RuntimeJSON.category($0) })
        for entry in pending {
            guard let request = try? PlanFormat.request(entry.request) else { continue }
            slot.scheduler.restore(request, scheduledAt: entry.scheduledAt, nextFire: entry.nextFire)
        }
        slot.delivered = delivered.map { d in
            let content = NotificationContent.local(d.content)
            var presentation = DeliveryByAppState.Presentation()
            presentation.listed = true
            return DeliveredNotification(
                id: d.id, origin: d.remote ? .remote(apnsID: d.id) : .local(trigger: d.trigger ?? "now"), content: content,
                deliveredAt: d.deliveredAt, dueAt: d.dueAt, presentation: presentation, playedSound: nil,
                actions: slot.categories.category(named: content.category)?.actions(in: .minimal) ?? [])
        }
        slot.badge = badge
        slot.token = token.flatMap { DeviceToken(hex: $0) }
        slot.wantsRemote = wantsRemote
        slot.locationAuthorized = locationAuthorized
        for id in handledRemote ?? [] { slot.handledRemote.insert(id) }
        if let silentBudget { slot.silentBudget.restore(silentBudget, now: now) }
        if let liveActivities { slot.activities = LiveActivityBook(saved: liveActivities) }
        slot.wantsPushToStart = wantsPushToStart ?? false
        slot.scheduler.setLocation(authorized: locationAuthorized)
    }
}
