import HeraldCore

/// How many times a day something may happen: a rolling day's budget (widget reloads by push,
/// complication pushes). `Allowance` names the number.
public struct DailyBudget<Allowance: DailyAllowance>: Sendable, Hashable, Codable {
    public static var perDay: Int { Allowance.perDay }
    public static var windowMilliseconds: Int64 { 86_400_000 }

    /// Instants used within the last day, oldest first.
    public private(set) var recent: [Int64] = []

    public init() {}

    /// The uses that count at `now`: within the last day (one in the future, after the clock
    /// went back, does not count).
    private func live(at now: Int64) -> ArraySlice<Int64> {
        recent.filter { $0 > now - Self.windowMilliseconds && $0 <= now }[...]
    }

    /// Takes one use at `now` if the budget allows it.
    public mutating func take(now: Int64) -> Bool {
        recent = Array(live(at: now))
        guard recent.count < Self.perDay else { return false }
        recent.append(now)
        return true
    }

    /// Uses left now.
    public func remaining(now: Int64) -> Int {
        Self.perDay - live(at: now).count
    }

    /// When the next use becomes possible (nil: now).
    public func nextAvailable(now: Int64) -> Int64? {
        let live = live(at: now)
        guard live.count >= Self.perDay, let oldest = live.first else { return nil }
        return oldest + Self.windowMilliseconds
    }

    /// Why a use was refused: the budget and when it allows the next one.
    public func refusal(_ what: String, now: Int64) -> (reason: String, retryAt: Int64?) {
        let next = nextAvailable(now: now)
        return ("over the budget of \(Self.perDay) \(what) a day" + (next.map { " until \(PlanFormat.utcString($0))" } ?? ""), next)
    }
}

/// The number a ``DailyBudget`` allows.
public protocol DailyAllowance: Sendable, Hashable {
    static var perDay: Int { get }
}

/// Widget reloads caused by pushes, per app. Apple gives no number for widget pushes beyond "the
/// system may throttle" them; it says a frequently viewed widget "typically receives 40 to 70
/// refreshes a day" (WidgetKit, *Keeping a widget up to date*), and Herald takes the top of that
/// range as the budget for push-driven reloads.
public enum WidgetReloads: DailyAllowance {
    public static let perDay = 70
}

public typealias WidgetReloadBudget = DailyBudget<WidgetReloads>

/// What happened to an app's widgets.
public enum WidgetEvent: Sendable, Hashable {
    /// The app's widget push token, to give its provider (`WidgetPushHandler.pushTokenDidChange`).
    case token(DeviceToken)
    /// A `widgets` push reloaded the app's widgets; `remaining` reloads are left in the day's budget.
    case reloaded(apnsID: String, remaining: Int)
    /// A `widgets` push did not reload them, and why; `retryAt`: when the day's budget allows
    /// the next reload (milliseconds since 1970), when the budget was the reason.
    case refused(apnsID: String, reason: String, retryAt: Int64?)
}

/// Widget pushes (iOS 26, WidgetKit `WidgetPushHandler`): an app whose widgets are configured for
/// pushes gets a widget push token; a `widgets` push (`{"aps":{"content-changed":true}}` on
/// `<bundle>.push-type.widgets`) reloads its widgets, within ``WidgetReloadBudget``.
extension DeviceRuntime {
    /// The app configures (or stops configuring) its widgets with a push handler: the token is
    /// asked for now or once connected, and given up when `enabled` is false.
    public func configureWidgetPushes(app appID: String, enabled: Bool) throws(RuntimeError) {
        let slot = try slot(appID)
        guard slot.widgetKit.wantsWidgetPushes != enabled else {
            if enabled, let token = slot.widgetKit.widgetToken { emit(.widgets(app: appID, .token(token))) }
            return
        }
        slot.widgetKit.wantsWidgetPushes = enabled
        if !enabled { slot.widgetKit.widgetToken = nil }
        save(slot)
        liveActivityRequester?(.widgets(topic: appID), enabled)
    }

    /// The gateway issued the app's widget push token.
    func gatewayIssued(widgetToken token: DeviceToken, topic: String) {
        guard let slot = apps[topic], slot.widgetKit.wantsWidgetPushes else { return }
        let changed = slot.widgetKit.widgetToken != token
        slot.widgetKit.widgetToken = token
        if changed {
            emit(.widgets(app: topic, .token(token)))
            save(slot)
        }
    }

    /// A `widgets` push: reloads the app's widgets if it configured them for pushes, the payload
    /// says their content changed, and the day's budget allows; the outcome is an event either
    /// way (the caller concludes and saves).
    func receiveWidgetPush(_ slot: AppSlot, _ push: DeviceNotification, now: Int64) {
        let id = push.apnsID.description
        guard slot.widgetKit.wantsWidgetPushes else {
            return announce(slot, .widget(.refused(apnsID: id, reason: "the app's widgets are not configured for pushes", retryAt: nil)))
        }
        guard NotificationPayload(lenient: push.payload).aps.contentChanged == true else {
            return announce(slot, .widget(.refused(apnsID: id, reason: "the payload is not {\"aps\":{\"content-changed\":true}}", retryAt: nil)))
        }
        guard slot.widgetKit.widgetBudget.take(now: now) else {
            let refusal = slot.widgetKit.widgetBudget.refusal("widget reloads", now: now)
            return announce(slot, .widget(.refused(apnsID: id, reason: refusal.reason, retryAt: refusal.retryAt)))
        }
        announce(slot, .widget(.reloaded(apnsID: id, remaining: slot.widgetKit.widgetBudget.remaining(now: now))))
    }
}
