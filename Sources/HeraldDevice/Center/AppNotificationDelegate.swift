import HeraldCore

/// A notification as the device delivered it: what the app and the user see.
public struct DeliveredNotification: Sendable, Hashable {
    public enum Origin: Sendable, Hashable {
        /// A local request; the trigger kind (`now`, `interval`, `calendar`, `date`, `location`).
        case local(trigger: String)
        /// A push that came over the device connection.
        case remote(apnsID: String)
    }

    /// The request identifier (local) or the apns-id (remote).
    public var id: String
    public var origin: Origin
    public var content: NotificationContent
    /// When it was delivered (milliseconds since 1970, the runtime's clock).
    public var deliveredAt: Int64
    /// When it was due: its fire time (local) or its arrival (remote). `deliveredAt - dueAt` is its lateness.
    public var dueAt: Int64
    /// What the device showed.
    public var presentation: DeliveryByAppState.Presentation
    /// The sound that played: a file's path, `"default"`, or `nil`.
    public var playedSound: String?
    /// The actions offered, in the minimal context (banner, lock screen, Notification Center).
    public var actions: [NotificationAction]
    /// How it was let through (or not) by its interruption level, the Focus and the summary.
    public var attention = Attention()

    /// What the device made of a notification's claim on the user's attention.
    public struct Attention: Sendable, Hashable {
        /// The interruption level applied (``Interruption/effectiveLevel(_:entitlements:settings:)``).
        public var level: NotificationGrouping.InterruptionLevel = .active
        /// The Focus that was on when it arrived.
        public var focus: String?
        /// What let it through that Focus or the summary.
        public var through: Interruption.Breakthrough?
        /// Silenced by ``focus``: listed without banner, sound or lighting the screen.
        public var silenced = false
        /// Delivered in the scheduled summary of this instant (it was held until then).
        public var summaryAt: Int64?
        /// A critical sound played (even with the device muted), at this volume (1: full).
        public var criticalVolume: Double?
        public init() {}
    }
}

/// What an app implements to hear from the runtime: the UserNotifications delegate and the
/// `UIApplicationDelegate` notification methods in one protocol. Every method has a default,
/// and a method with a ``CallbackHandler`` must call it (the defaults do) within its time limit,
/// or the runtime reports a contract violation.
public protocol AppNotificationDelegate: Sendable {
    /// UserNotifications, app in the foreground: how to present it. Not implemented (the default)
    /// or `[]`: nothing is shown.
    func willPresent(_ notification: DeliveredNotification, completion: CallbackHandler<DeliveryByAppState.ForegroundOptions>) async
    /// UserNotifications: the user tapped the notification (default action id), chose an action,
    /// or dismissed it (with `customDismissAction`). Legacy apps receive actions here too
    /// (`handleActionWithIdentifier:…completionHandler:`).
    func didReceive(_ response: NotificationResponse, for notification: DeliveredNotification, completion: CallbackHandler<Void>) async
    /// Legacy: `didReceiveLocalNotification:` / `didReceiveRemoteNotification:` with the app's state.
    func didReceiveLegacy(_ notification: DeliveredNotification, state: DeliveryByAppState.LegacyState) async
    /// The app was launched; `notification` is the one the user tapped (legacy launch options), if any.
    func didLaunch(with notification: DeliveredNotification?) async
    /// The user allowed nothing to be presented, yet the app is handed the notification (while it runs).
    func didDeliverWithoutPresentation(_ notification: DeliveredNotification) async
    /// A silent push (`content-available: 1`): report new data, no data or failed within 30 s.
    func didReceiveSilentPush(_ payload: JSONValue, completion: CallbackHandler<SilentPushes.FetchResult>) async
    /// The device token: after `registerForRemoteNotifications`, and unprompted when it changes.
    func didRegisterForRemoteNotifications(token: DeviceToken) async
    /// The device's preferred languages changed (`NSCurrentLocaleDidChangeNotification`).
    func preferredLanguagesDidChange(_ languages: [String]) async
    /// A Web Push subscription got its endpoint (``DeviceRuntime/subscribeWebPush(app:scope:applicationServerKey:)``).
    func didSubscribeWebPush(_ subscription: WebPushSubscription) async
    /// A Web Push message, decrypted (the service worker's `push` event).
    func didReceiveWebPush(_ message: WebPushMessageDelivery) async
    /// A mutable Declarative Web Push message (the push event with its proposed notification):
    /// answer a replacement to show instead, or `nil` to show the proposed one, within 30 s
    /// (then the proposed one is shown). Default: ``didReceiveWebPush(_:)``, then `nil`.
    func didReceiveMutableWebPush(
        _ message: WebPushMessageDelivery, proposed: DeclarativeWebPushMessage, completion: CallbackHandler<DeclarativeWebPushMessage?>
    ) async
    /// A PushKit token arrived or changed (`pushRegistry(_:didUpdate:for:)` and its kin).
    func didUpdatePushToken(_ token: DeviceToken, for kind: PushKitKind) async
    /// A PushKit push (`pushRegistry(_:didReceiveIncomingPushWith:for:completion:)`, Push to
    /// Talk's `incomingPushResult`, the location push service extension): complete it within
    /// its kind's time (``PushKitContract``); a VoIP push that must be reported is reported
    /// with ``DeviceRuntime/reportIncomingCall(app:_:)`` before.
    func didReceivePushKit(_ push: PushKitPush, completion: CallbackHandler<PushKitAnswer>) async
    /// CallKit: the user answered or declined a call the app reported.
    func performCallAction(_ action: CallAction, call uuid: String) async
    /// The system terminated the app (a contract broken): nothing it does now counts.
    func wasTerminated(reason: String) async
}

extension AppNotificationDelegate {
    public func willPresent(_ notification: DeliveredNotification, completion: CallbackHandler<DeliveryByAppState.ForegroundOptions>) async { completion([]) }
    public func didReceive(_ response: NotificationResponse, for notification: DeliveredNotification, completion: CallbackHandler<Void>) async { completion() }
    public func didReceiveLegacy(_ notification: DeliveredNotification, state: DeliveryByAppState.LegacyState) async {}
    public func didLaunch(with notification: DeliveredNotification?) async {}
    public func didDeliverWithoutPresentation(_ notification: DeliveredNotification) async {}
    public func didReceiveSilentPush(_ payload: JSONValue, completion: CallbackHandler<SilentPushes.FetchResult>) async { completion(.noData) }
    public func didRegisterForRemoteNotifications(token: DeviceToken) async {}
    public func preferredLanguagesDidChange(_ languages: [String]) async {}
    public func didSubscribeWebPush(_ subscription: WebPushSubscription) async {}
    public func didReceiveWebPush(_ message: WebPushMessageDelivery) async {}
    public func didReceiveMutableWebPush(
        _ message: WebPushMessageDelivery, proposed: DeclarativeWebPushMessage, completion: CallbackHandler<DeclarativeWebPushMessage?>
    ) async {
        await didReceiveWebPush(message)
        completion(nil)
    }
    public func didUpdatePushToken(_ token: DeviceToken, for kind: PushKitKind) async {}
    public func didReceivePushKit(_ push: PushKitPush, completion: CallbackHandler<PushKitAnswer>) async { completion(.done) }
    public func performCallAction(_ action: CallAction, call uuid: String) async {}
    public func wasTerminated(reason: String) async {}
}

/// An app's notification service extension: may rewrite a remote alert with `mutable-content: 1`
/// by calling the handler with new content within 30 seconds; otherwise the original is shown.
public protocol NotificationServiceExtension: Sendable {
    func didReceive(_ payload: JSONValue, contentHandler: CallbackHandler<ExtensionContent>) async
    /// The time is about to run out; the original content will be shown.
    func timeWillExpire() async
}

extension NotificationServiceExtension {
    public func timeWillExpire() async {}
}

/// What the runtime did, for observers: `herald device run --json` prints these; tests and the
/// scheduler benchmark read them.
public enum RuntimeEvent: Sendable {
    case prompted(app: String, requested: AuthorizationOptions, granted: AuthorizationOptions)
    case delivered(app: String, DeliveredNotification)
    /// Requests dropped for good by the 64 limit.
    case dropped(app: String, ids: [String])
    /// An entry left Notification Center (tapped, dismissed, cancelled, cleared).
    case dismissed(app: String, id: String)
    case badgeChanged(app: String, badge: Int)
    /// A named sound was not played; the default was, for this reason.
    case soundReplaced(app: String, name: String, reason: String)
    case lifecycleChanged(app: String, SilentPushes.Lifecycle)
    case silentPush(app: String, outcome: String)
    case tokenDelivered(app: String, token: DeviceToken)
    /// The app broke a rule (a handler never called, called twice, too late).
    case contractViolation(app: String, message: String)
    /// A Live Activity of the app started, changed, went stale, ended or was dismissed; a token
    /// arrived; or a Live Activity push was ignored.
    case liveActivity(app: String, LiveActivityEvent)
    /// A Web Push subscription got its endpoint or ended; a message was received or dropped.
    case webPush(app: String, WebPushEvent)
    /// The app's widget push token arrived; a widget push reloaded its widgets or was refused.
    case widgets(app: String, WidgetEvent)
    /// PushKit: a token, a push handed, held or refused, a call, a termination.
    case pushKit(app: String, PushKitEvent)
    /// A notification was held for the scheduled summary at `until`.
    case heldForSummary(app: String, id: String, origin: DeliveredNotification.Origin, until: Int64)
    /// The scheduled summary was delivered: every notification it held, on every app, the most
    /// relevant first (ties: the earliest to arrive).
    case summary(at: Int64, [(app: String, id: String, origin: DeliveredNotification.Origin)])
    /// The Focus settings changed, or the Focus that is on (nil: none) was seen to change.
    case focus(active: String?, FocusSettings)
}
