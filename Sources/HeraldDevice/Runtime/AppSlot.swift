import Foundation
import HeraldCore

/// One installed app's state inside the runtime.
final class AppSlot {
    let id: String
    var bundle: DeviceRuntime.AppBundle
    var scheduler: LocalScheduler
    var authorization: AppAuthorization
    var categories = CategoryRegistry()
    /// In Notification Center, oldest first.
    var delivered: [DeliveredNotification] = []
    /// Shown (a banner) but not listed: the user can still tap it.
    var shownOnly: [String: DeliveredNotification] = [:]
    var badge = 0
    var lifecycle: SilentPushes.Lifecycle = .terminatedBySystem
    var silentBudget = SilentPushes.Budget()
    var delegate: AppNotificationDelegate?
    var serviceExtension: NotificationServiceExtension?
    var locationAuthorized = true
    /// The token the app was last given, and whether it asked for remote notifications.
    var token: DeviceToken?
    var wantsRemote = false
    /// Live Activities, their tokens and channel subscriptions.
    var activities = LiveActivityBook()
    /// The app asked for its push-to-start token.
    var wantsPushToStart = false
    /// Widgets configured for pushes, their token, and the day's reloads.
    var wantsWidgetPushes = false
    var widgetToken: DeviceToken?
    var widgetBudget = WidgetReloadBudget()
    /// Web Push subscriptions, by scope, and messages kept for the app while it is not connected.
    var webPush: [String: WebPushSubscriptionState] = [:]
    var webPushInbox: [WebPushMessageDelivery] = []
    var version = 0
    /// Remote notifications the app has had (saved with its state; see ``RecentIDs``).
    var handledRemote = RecentIDs(limit: 4_096)
    /// Remote notifications being handled (waiting for `willPresent`, the service extension…),
    /// with the ack each owes the gateway once its outcome is saved.
    var inProgressRemote: [String: @Sendable () -> Void] = [:]
    /// Acks to send once the next save has reached the disk.
    var acksAfterSave: [@Sendable () -> Void] = []
    /// Shown, held or reloaded since the last save: their events follow the save that records them.
    var announcing: [(seq: Int64, announcement: Announcement)] = []
    var nextAnnouncement: Int64 = 1
    /// Other events about what the next save writes (Live Activities, silent pushes), emitted after it.
    var eventsAfterSave: [RuntimeEvent] = []
    /// Held for the scheduled summary, in arrival order, and when that summary is due.
    var summaryHeld: [DeliveredNotification] = []
    var summaryDue: Int64?

    init(id: String, bundle: DeviceRuntime.AppBundle, timeZone: TimeZone) {
        self.id = id
        self.bundle = bundle
        self.scheduler = LocalScheduler(timeZone: timeZone)
        self.authorization = AppAuthorization(entitlements: bundle.entitlements)
    }

    /// Critical alerts: the entitlement and the user's setting (Interruption's one rule).
    var criticalAlertsAllowed: Bool {
        Interruption.effectiveLevel(.critical, entitlements: bundle.entitlements, settings: authorization.settings) == .critical
    }

    var appState: DeliveryByAppState.AppState {
        switch lifecycle {
        case .foreground: .foreground
        case .background, .suspended: .background
        case .terminatedBySystem, .forceQuitByUser: .notRunning
        }
    }
}

/// The most recent ids, in order, up to a limit: membership in O(1), the oldest forgotten first.
struct RecentIDs {
    let limit: Int
    private var set = Set<String>()
    private var order: [String] = []
    private var start = 0

    init(limit: Int) { self.limit = limit }

    var ids: [String] { Array(order[start...]) }

    func contains(_ id: String) -> Bool { set.contains(id) }

    mutating func insert(_ id: String) {
        guard set.insert(id).inserted else { return }
        order.append(id)
        if order.count - start > limit {
            set.remove(order[start])
            start += 1
            if start >= limit {
                order.removeFirst(start)
                start = 0
            }
        }
    }
}
