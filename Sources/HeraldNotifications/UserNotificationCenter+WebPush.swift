import Foundation

/// Web Push subscriptions of the app (`PushManager`), over its center's connection.
extension UserNotificationCenter {
    /// A Web Push subscription (`PushManager.subscribe`) under `scope`, for the application server
    /// with `applicationServerKey` (base64url of its P-256 public key; nil: none). Returns once the
    /// gateway has given it an endpoint.
    public func subscribeToWebPush(applicationServerKey: String?, scope: String = "default", timeout: Duration = .seconds(30)) async throws -> WebPushSubscription {
        let request = AgentRequest.WebPushSubscribe(applicationServerKey: applicationServerKey, scope: scope)
        let answer = try await send(request)
        if answer.subscription.endpoint != nil { return answer.subscription }
        let event = try await waitForCallback(timeout: timeout, what: "the Web Push endpoint of \(scope)") {
            if case .webPushSubscription(let s) = $0 { return s.subscription.scope == scope && s.subscription.endpoint != nil }
            return false
        } trigger: {
            // Subscribing again answers the same subscription: the endpoint may have come between.
            let again = try await self.send(request).subscription
            return again.endpoint == nil ? nil : .webPushSubscription(AgentCallback.WebPushSubscription(subscription: again))
        }
        guard case .webPushSubscription(let subscribed) = event else { throw AgentError.unreadable("a subscription without an endpoint") }
        return subscribed.subscription
    }

    public func webPushSubscriptions() async throws -> [WebPushSubscription] {
        try await send(AgentRequest.WebPushSubscriptions()).subscriptions
    }

    /// Ends the subscription under `scope`; whether there was one. Its endpoint answers 410 from then on.
    @discardableResult
    public func unsubscribeFromWebPush(scope: String = "default") async throws -> Bool {
        try await send(AgentRequest.WebPushUnsubscribe(scope: scope)).unsubscribed
    }
}
