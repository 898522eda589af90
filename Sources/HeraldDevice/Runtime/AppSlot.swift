import Foundation
import HeraldCore

/// One installed app's state inside the runtime, in the parts the runtime manages: what its
/// notification center holds (``Center``), its remote notifications (``Remote``), its Live
/// Activities and widgets (``WidgetKit``), its Web Push subscriptions (``WebPush``), and what
/// the next save writes and announces (``Saving``).
final class AppSlot {
    let id: String
    var bundle: DeviceRuntime.AppBundle
    var scheduler: LocalScheduler
    var lifecycle: SilentPushes.Lifecycle = .terminatedBySystem
    var delegate: AppNotificationDelegate?
    var serviceExtension: NotificationServiceExtension?
    var locationAuthorized = true
    var center: Center
    var remote = Remote()
    var widgetKit = WidgetKit()
    var webPush = WebPush()
    var pushKit = PushKitState()
    var saving = Saving()

    /// What the app's notification center holds: the user's settings, the categories, what is
    /// listed and shown, the badge, and what waits for the scheduled summary.
    struct Center {
        var authorization: AppAuthorization
        var categories = CategoryRegistry()
        /// In Notification Center, oldest first.
        var delivered: [DeliveredNotification] = []
        /// Shown (a banner) but not listed: the user can still tap it.
        var shownOnly: [String: DeliveredNotification] = [:]
        var badge = 0
        /// Held for the scheduled summary, in arrival order, and when that summary is due.
        var summaryHeld: [DeliveredNotification] = []
        var summaryDue: Int64?
    }

    /// Remote notifications: the token, the pushes had and being handled, the silent budget.
    struct Remote {
        /// The token the app was last given, and whether it asked for remote notifications.
        var token: DeviceToken?
        var wantsRemote = false
        /// Remote notifications the app has had (saved with its state; see ``RecentIDs``).
        var handled = RecentIDs(limit: 4_096)
        /// Remote notifications being handled (waiting for `willPresent`, the service extension…),
        /// with the ack each owes the gateway once its outcome is saved.
        var inProgress: [String: @Sendable () -> Void] = [:]
        var silentBudget = SilentPushes.Budget()
    }

    /// What WidgetKit shows outside the app: Live Activities (their tokens and channel
    /// subscriptions, the push-to-start token) and widgets (their push token and daily reloads).
    struct WidgetKit {
        var activities = LiveActivityBook()
        /// The app asked for its push-to-start token.
        var wantsPushToStart = false
        /// Widgets configured for pushes, their token, and the day's reloads.
        var wantsWidgetPushes = false
        var widgetToken: DeviceToken?
        var widgetBudget = WidgetReloadBudget()
    }

    /// Web Push subscriptions, by scope, and messages kept for the app while it is not connected.
    struct WebPush {
        var subscriptions: [String: WebPushSubscriptionState] = [:]
        var inbox: [WebPushMessageDelivery] = []
        /// The pages declarative notifications on screen open, by shown id: `""` for the
        /// notification itself, else the action's id (the newest 256 kept).
        var pages: [String: [String: String]] = [:]
        var pageOrder: [String] = []
    }

    /// What the next save writes and what follows it.
    struct Saving {
        var version = 0
        /// Acks to send once the next save has reached the disk.
        var acksAfterSave: [@Sendable () -> Void] = []
        /// Shown, held or reloaded since the last save: their events follow the save that records them.
        var announcing: [(seq: Int64, announcement: Announcement)] = []
        var nextAnnouncement: Int64 = 1
        /// Other events about what the next save writes (Live Activities, silent pushes), emitted after it.
        var eventsAfterSave: [RuntimeEvent] = []
    }

    init(id: String, bundle: DeviceRuntime.AppBundle, timeZone: TimeZone) {
        self.id = id
        self.bundle = bundle
        self.scheduler = LocalScheduler(timeZone: timeZone)
        self.center = Center(authorization: AppAuthorization(entitlements: bundle.entitlements))
    }

    /// Critical alerts: the entitlement and the user's setting (Interruption's one rule).
    var criticalAlertsAllowed: Bool {
        Interruption.effectiveLevel(.critical, entitlements: bundle.entitlements, settings: center.authorization.settings) == .critical
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
