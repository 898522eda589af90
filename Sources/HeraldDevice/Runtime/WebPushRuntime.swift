import Crypto
import Foundation
import HeraldCore

/// A Web Push subscription of an app, as the app hands it to its application server: the
/// endpoint and the keys (the Push API's `PushSubscription.toJSON()`).
public struct WebPushSubscription: Sendable, Hashable {
    /// The app's name for it (an app may hold several, e.g. one per account); `default` unless named.
    public var scope: String
    /// `nil` until the gateway has answered (the device was offline when the app subscribed).
    public var endpoint: String?
    public var keys: WebPushSubscriptionKeys
    /// The application server key its pushes must be VAPID-signed with, if it was made with one.
    public var applicationServerKey: [UInt8]?

    /// `{"endpoint": …, "expirationTime": null, "keys": {"p256dh": …, "auth": …}}` plus `scope`:
    /// what pywebpush and the web-push libraries take as a subscription.
    public var json: JSONValue {
        .object([
            "scope": .string(scope), "endpoint": endpoint.map(JSONValue.string) ?? .null, "expirationTime": .null,
            "keys": .object(["p256dh": .string(Base64URL.encode(keys.p256dh)), "auth": .string(Base64URL.encode(keys.auth))]),
        ])
    }
}

/// A Web Push message the runtime decrypted for an app.
public struct WebPushMessageDelivery: Sendable, Hashable {
    /// The subscription's scope.
    public var scope: String
    /// The message id (the notification's apns-id on the device connection).
    public var id: String
    /// The plaintext (empty for a push without a body).
    public var data: [UInt8]
    /// It was a Declarative Web Push message: the runtime presented it (by the app's settings).
    public var declarative: Bool
}

/// What happened to an app's Web Push subscriptions and messages, for observers.
public enum WebPushEvent: Sendable, Hashable {
    /// The gateway gave the subscription its endpoint.
    case subscribed(WebPushSubscription)
    case unsubscribed(scope: String)
    /// A message was decrypted and handed to the app (or kept for it until it connects).
    case received(scope: String, id: String, bytes: Int, declarative: Bool, handedToApp: Bool)
    /// A message could not be read (not for a subscription of this device, or it does not
    /// decrypt with its keys): acked and dropped, with the reason.
    case undecryptable(id: String, reason: String)
    /// The user activated a declarative notification (`action`: the button, `nil`: the
    /// notification itself): the user agent opens `url`, whether or not the app runs.
    case navigated(id: String, action: String?, url: String)
}

/// An app's Web Push subscription on this device: the keys never leave it.
struct WebPushSubscriptionState {
    var scope: String
    /// The subscription's id on the device connection (a UUID).
    var id: String
    var applicationServerKey: [UInt8]?
    var keys: WebPushUserAgentKeys
    var endpoint: String?
    var token: DeviceToken?

    var subscription: WebPushSubscription {
        WebPushSubscription(scope: scope, endpoint: endpoint, keys: keys.subscriptionKeys, applicationServerKey: applicationServerKey)
    }

    /// Saved with the app's state (the private key as its raw 32 bytes, in the device's own
    /// state directory, like the device key).
    struct Saved: Codable {
        var scope: String
        var id: String
        var applicationServerKey: String?
        var privateKey: String
        var auth: String
        var endpoint: String?
        var token: String?
    }

    var saved: Saved {
        Saved(
            scope: scope, id: id, applicationServerKey: applicationServerKey.map(Base64URL.encode),
            privateKey: Base64URL.encode(Array(keys.privateKey.rawRepresentation)), auth: Base64URL.encode(keys.auth),
            endpoint: endpoint, token: token?.description)
    }

    init(scope: String, id: String, applicationServerKey: [UInt8]?, keys: WebPushUserAgentKeys) {
        (self.scope, self.id, self.applicationServerKey, self.keys) = (scope, id, applicationServerKey, keys)
    }

    init?(saved: Saved) {
        guard let raw = Base64URL.decode(saved.privateKey[...]), let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: raw),
              let auth = Base64URL.decode(saved.auth[...]), auth.count == 16, BrowserPushProtocol.channelID(saved.id) == saved.id else { return nil }
        self.init(
            scope: saved.scope, id: saved.id, applicationServerKey: saved.applicationServerKey.flatMap { Base64URL.decode($0[...]) },
            keys: WebPushUserAgentKeys(privateKey: key, auth: auth))
        endpoint = saved.endpoint
        token = saved.token.flatMap { DeviceToken(hex: $0) }
    }
}

/// Web Push on the device: an app takes a subscription (the runtime makes its keys and asks the
/// gateway for an endpoint), and its messages are decrypted here (RFC 8291), handed to the app,
/// and presented when they are Declarative Web Push messages.
extension DeviceRuntime {
    /// The most subscriptions one app holds, and the longest scope name.
    public static let maximumWebPushSubscriptionsPerApp = 16
    public static let maximumWebPushScopeBytes = 128
    /// Messages kept for an app that is not connected, at most (the oldest leave first).
    public static let maximumWebPushInbox = 100

    /// The app subscribes (`PushManager.subscribe`): returns its subscription, the same one every
    /// time for the same scope. Its endpoint comes from the gateway, now or once connected: it is
    /// `nil` until then, and the app hears of it (``AppNotificationDelegate/didSubscribeWebPush(_:)``).
    /// Another application server key than the subscription's is refused, as browsers refuse it:
    /// unsubscribe first.
    public func subscribeWebPush(app appID: String, scope: String = "default", applicationServerKey: [UInt8]?) throws(RuntimeError) -> WebPushSubscription {
        let slot = try slot(appID)
        guard !scope.isEmpty, scope.utf8.count <= Self.maximumWebPushScopeBytes, scope.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
            throw RuntimeError("a Web Push scope is 1 to \(Self.maximumWebPushScopeBytes) printable ASCII characters")
        }
        if let key = applicationServerKey, !ApplicationServerKey.isValid(key) {
            throw RuntimeError("\"applicationServerKey\" must be an uncompressed P-256 public key (65 bytes)")
        }
        if let existing = slot.webPush.subscriptions[scope] {
            guard existing.applicationServerKey == applicationServerKey else {
                throw RuntimeError("the subscription \"\(scope)\" was made with another application server key; unsubscribe first")
            }
            return existing.subscription
        }
        guard slot.webPush.subscriptions.count < Self.maximumWebPushSubscriptionsPerApp else {
            throw RuntimeError("an app holds at most \(Self.maximumWebPushSubscriptionsPerApp) Web Push subscriptions")
        }
        let state = WebPushSubscriptionState(
            scope: scope, id: UUID().uuidString.lowercased(), applicationServerKey: applicationServerKey, keys: .generate())
        slot.webPush.subscriptions[scope] = state
        save(slot)
        liveActivityRequester?(.webPush(topic: appID, subscription: state.id, applicationServerKey: applicationServerKey), true)
        return state.subscription
    }

    /// The app's subscriptions.
    public func webPushSubscriptions(app appID: String) throws(RuntimeError) -> [WebPushSubscription] {
        try slot(appID).webPush.subscriptions.values.sorted { $0.scope < $1.scope }.map(\.subscription)
    }

    /// The app unsubscribes: the gateway answers 410 to its endpoint from now on (or from the
    /// next connection, when offline). Returns whether it had that subscription.
    @discardableResult
    public func unsubscribeWebPush(app appID: String, scope: String = "default") throws(RuntimeError) -> Bool {
        let slot = try slot(appID)
        guard let state = slot.webPush.subscriptions.removeValue(forKey: scope) else { return false }
        save(slot)
        liveActivityRequester?(.webPush(topic: appID, subscription: state.id, applicationServerKey: state.applicationServerKey), false)
        emit(.webPush(app: appID, .unsubscribed(scope: scope)))
        return true
    }

    /// What every app's subscriptions need from a (new) connection.
    func webPushStandingRequests(_ slot: AppSlot) {
        for state in slot.webPush.subscriptions.values.sorted(by: { $0.scope < $1.scope }) {
            liveActivityRequester?(.webPush(topic: slot.id, subscription: state.id, applicationServerKey: state.applicationServerKey), true)
        }
    }

    /// The gateway answered a subscription with its endpoint.
    func gatewayWebPushSubscribed(topic: String, subscription id: String, endpoint: String, token: DeviceToken) {
        guard let slot = apps[topic], let scope = slot.webPush.subscriptions.first(where: { $0.value.id == id })?.key, var state = slot.webPush.subscriptions[scope] else { return }
        let changed = state.endpoint != endpoint
        state.endpoint = endpoint
        state.token = token
        slot.webPush.subscriptions[scope] = state
        save(slot)
        guard changed else { return }
        emit(.webPush(app: topic, .subscribed(state.subscription)))
        let subscription = state.subscription
        if let delegate = slot.delegate { work.spawn { await delegate.didSubscribeWebPush(subscription) } }
    }

    /// A Web Push message for one of the app's subscriptions: decrypted with its keys, kept with
    /// the app's state, handed to the app (or kept for it), and presented when declarative.
    /// Acked once saved.
    func receiveWebPush(_ slot: AppSlot, _ push: DeviceNotification, now: Int64) {
        let id = push.apnsID.description
        // Concluded (acked once saved) here, unless presented: then once its outcome is known.
        var presenting = false
        defer {
            if !presenting { concludeRemote(slot, id: id) }
            save(slot)
        }
        let message: WebPushStoredMessage
        do { message = try WebPushStoredMessage(payload: push.payload) } catch {
            return emit(.webPush(app: slot.id, .undecryptable(id: id, reason: "not a Web Push message: \(error)")))
        }
        guard let state = slot.webPush.subscriptions.values.first(where: { $0.id == message.channelID }) else {
            return emit(.webPush(app: slot.id, .undecryptable(id: id, reason: "no subscription \(message.channelID) on this device (unsubscribed)")))
        }
        var plaintext: [UInt8] = []
        if !message.body.isEmpty {
            guard message.encoding == .aes128gcm else {
                return emit(.webPush(app: slot.id, .undecryptable(
                    id: id, reason: "encrypted as \(message.encoding?.rawValue ?? "nothing"); Herald devices read aes128gcm (RFC 8291)")))
            }
            do { plaintext = try WebPushEncryption.decrypt(message.body, with: state.keys) } catch {
                return emit(.webPush(app: slot.id, .undecryptable(id: id, reason: "\(error)")))
            }
        }
        let declarative = try? DeclarativeWebPushMessage(plaintext: plaintext)
        let delivery = WebPushMessageDelivery(scope: state.scope, id: id, data: plaintext, declarative: declarative != nil)
        // The Push API: a declarative message is shown by the user agent; the app's code hears of
        // it only when it is mutable (a push event carrying it). Any other message is the app's.
        // A mutable one goes to the running app first, which may replace it; an app that is not
        // running cannot, and it is shown as it came.
        let forTheApp = declarative.map(\.mutable) ?? true
        let handedToApp = forTheApp && slot.delegate != nil
        if let declarative, declarative.mutable, let delegate = slot.delegate {
            emit(.webPush(app: slot.id, .received(scope: state.scope, id: id, bytes: plaintext.count, declarative: true, handedToApp: true)))
            presenting = true
            return offerToApp(slot, delegate, delivery, declarative, scope: state.scope, now: now)
        } else if forTheApp, let delegate = slot.delegate {
            work.spawn { await delegate.didReceiveWebPush(delivery) }
        } else if forTheApp, declarative == nil {
            slot.webPush.inbox.append(delivery)
            if slot.webPush.inbox.count > Self.maximumWebPushInbox { slot.webPush.inbox.removeFirst(slot.webPush.inbox.count - Self.maximumWebPushInbox) }
        }
        emit(.webPush(app: slot.id, .received(scope: state.scope, id: id, bytes: plaintext.count, declarative: declarative != nil, handedToApp: handedToApp)))
        if let declarative {
            presenting = true
            show(slot, declarative, scope: state.scope, id: id, now: now)
        }
    }

    /// Shows a declarative notification by the app's settings and state, like any remote
    /// notification; `arrive` concludes the message (now, or once the app's willPresent
    /// answered). A tag names the notification, so that the next with the same tag replaces it
    /// (the Notifications Standard's show steps), within the subscription.
    private func show(_ slot: AppSlot, _ declarative: DeclarativeWebPushMessage, scope: String, id: String, now: Int64) {
        let shownID = declarative.tag.map { "webpush-tag:\(scope):\($0)" } ?? id
        remember(slot, pagesOf: declarative, shownAs: shownID)
        arrive(slot, id: shownID, origin: .remote(apnsID: id), content: .declarative(declarative), dueAt: now, now: now,
               actions: Self.buttons(of: declarative))
    }

    private func showAnswered(_ appID: String, _ message: DeclarativeWebPushMessage, scope: String, id: String, now: Int64) {
        guard let slot = apps[appID] else { return }
        show(slot, message, scope: scope, id: id, now: now)
        save(slot)
    }

    /// How long a running app has to answer a mutable message before the proposed notification
    /// is shown. The Push API leaves the push event's lifetime to the user agent; Herald gives the
    /// 30 s that browsers give a service worker's event.
    public static let mutableWebPushTimeLimitMilliseconds: Int64 = 30_000

    /// A mutable message: the app gets the push event with the proposed notification and shows
    /// its replacement, or the proposed one once it answers nothing or its time runs out.
    private func offerToApp(
        _ slot: AppSlot, _ delegate: AppNotificationDelegate, _ delivery: WebPushMessageDelivery, _ proposed: DeclarativeWebPushMessage,
        scope: String, now: Int64
    ) {
        let appID = slot.id
        let handler = CallbackHandler<DeclarativeWebPushMessage?>(
            purpose: "the push event of \(delivery.id)", clock: clock, limitMilliseconds: Self.mutableWebPushTimeLimitMilliseconds,
            fallback: nil, misuse: { self.report(appID, $0) },
            then: { [work, clock] outcome in
                let shown: DeclarativeWebPushMessage = switch outcome {
                case .answered(let replacement?): replacement
                default: proposed
                }
                work.spawn { await self.showAnswered(appID, shown, scope: scope, id: delivery.id, now: clock.nowMilliseconds()) }
            })
        work.spawn { await delegate.didReceiveMutableWebPush(delivery, proposed: proposed, completion: handler) }
    }

    /// Keeps the pages a declarative notification's activation opens (the newest 256).
    private func remember(_ slot: AppSlot, pagesOf message: DeclarativeWebPushMessage, shownAs shownID: String) {
        var pages = ["": message.navigate]
        for action in message.shownActions(maximum: NotificationContent.maximumDeclarativeActions) { pages[action.action] = message.page(forAction: action.action) }
        if slot.webPush.pages.updateValue(pages, forKey: shownID) == nil { slot.webPush.pageOrder.append(shownID) }
        if slot.webPush.pageOrder.count > 256 { slot.webPush.pages[slot.webPush.pageOrder.removeFirst()] = nil }
    }

    /// The user activated a notification: a declarative one opens its page (an event, the app
    /// running or not). Returns whether it was declarative.
    @discardableResult
    func navigate(_ slot: AppSlot, shownID: String, action: String?) -> Bool {
        guard let pages = slot.webPush.pages.removeValue(forKey: shownID) else { return false }
        slot.webPush.pageOrder.removeAll { $0 == shownID }
        let url = action.flatMap { pages[$0] } ?? pages[""] ?? ""
        emit(.webPush(app: slot.id, .navigated(id: shownID, action: action, url: url)))
        return true
    }

    /// A declarative message's actions as buttons (up to the device's maximum; a repeated
    /// identifier keeps the first): each opens its page, so each brings the app forward.
    static func buttons(of message: DeclarativeWebPushMessage) -> [NotificationAction] {
        message.shownActions(maximum: NotificationContent.maximumDeclarativeActions).compactMap { action in
            try? NotificationAction(identifier: action.action, title: action.title, options: .foreground)
        }
    }

    /// The app's delegate changed: messages kept while it was away are handed to it, oldest first.
    func delegateChanged(_ appID: String) throws(RuntimeError) {
        let slot = try slot(appID)
        handHeldPushKit(slot)
        guard let delegate = slot.delegate, !slot.webPush.inbox.isEmpty else { return }
        let waiting = slot.webPush.inbox
        slot.webPush.inbox = []
        save(slot)
        work.spawn { for delivery in waiting { await delegate.didReceiveWebPush(delivery) } }
    }
}
