import Crypto
import Foundation
import HeraldCore
import HeraldStore
import NIOCore
import NIOWebSocket

extension DeviceSessionHandler {
    // MARK: topics

    /// Issues (or finds) the device's token of a scope: an app, a Live Activity push-to-start or
    /// update token, a channel subscription or a Web Push subscription. Answers `registered`,
    /// `subscribed` or `webpush-subscribed` (`webPushOrigin`: the origin of its endpoint).
    func register(_ scope: TokenScope, webPushOrigin: String? = nil) {
        guard let deviceID = session.deviceID else { return }
        let tokens = port.tokens
        let maximum = tokens.maximumPerDevice
        run({ try await tokens.issue(scope, deviceID: deviceID) }) { handler, result in
            switch result {
            case .success(let registration):
                handler.send(Self.registeredFrame(scope, registration.token, webPushOrigin: webPushOrigin), flush: true)
                if case .channel = scope.kind { handler.indexSubscription(registration) }
            case .failure(let error as StoreError) where error.code == .tooManyTokens:
                handler.send(.error(code: .tooManyTopics, message: "a device may have at most \(maximum) tokens (apps, Live Activities, channel and Web Push subscriptions); unregister one first"), flush: true)
            case .failure(let error):
                handler.port.logger.error("could not issue a token", metadata: ["error": "\(error)"])
                handler.send(.error(code: .internalError, message: "could not register \(scope.stored); try again"), flush: true)
            }
        }
    }

    static func registeredFrame(_ scope: TokenScope, _ token: DeviceToken, webPushOrigin: String?) -> DeviceServerFrame {
        switch scope.kind {
        case .app: .registered(topic: scope.bundleID, token: token)
        case .pushToStart: .registeredActivity(topic: scope.bundleID, activity: .pushToStart, token: token)
        case .activity(let id): .registeredActivity(topic: scope.bundleID, activity: .activity(id), token: token)
        case .widgets: .registeredWidgets(topic: scope.bundleID, token: token)
        case .pushKit(let kind): .registeredPushKit(topic: scope.bundleID, kind: kind, token: token)
        case .channel(let id): .subscribed(topic: scope.bundleID, channel: id, token: token)
        case .webPush(let subscription, _):
            .webPushSubscribed(topic: scope.bundleID, subscription: subscription, endpoint: (webPushOrigin ?? "") + "/wpush/" + token.hex, token: token)
        }
    }

    /// A Web Push subscription for one of the device's apps: a token like the others, whose
    /// endpoint is on the Web Push port. The device keeps the keys; the gateway only the scope.
    func webPushSubscribe(_ scope: TokenScope) {
        guard let endpoints = webPushEndpoints() else { return }
        guard let origin = endpoints.origin(deviceHost: host) else {
            return send(.error(code: .webPushUnavailable, message: "the gateway cannot name its Web Push endpoints for this connection (no usable Host; set --webpush-origin)"), flush: true)
        }
        register(scope, webPushOrigin: origin)
    }

    /// The gateway's Web Push endpoints, or nil after telling the device this gateway has none.
    func webPushEndpoints() -> WebPushEndpoints? {
        if let endpoints = port.webPush { return endpoints }
        send(.error(code: .webPushUnavailable, message: "this gateway has no Web Push port (herald gateway --webpush-port)"), flush: true)
        return nil
    }

    func webPushUnsubscribe(topic: String, subscription: String) {
        guard let deviceID = session.deviceID else { return }
        guard let endpoints = webPushEndpoints() else { return }
        let now = port.clock.nowMilliseconds()
        let maximum = port.limits.topicsPerDevice
        run({ try await endpoints.subscriptions.unsubscribe(deviceID: deviceID, bundleID: topic, channel: subscription, atMilliseconds: now, limit: maximum) }) { handler, result in
            switch result {
            case .success(true): handler.send(.webPushUnsubscribed(topic: topic, subscription: subscription), flush: true)
            case .success(false):
                handler.send(.error(code: .unknownSubscription, message: "\(topic) has no Web Push subscription \(subscription) on this device"), flush: true)
            case .failure(let error):
                handler.port.logger.error("could not remove a Web Push subscription", metadata: ["error": "\(error)"])
                handler.send(.error(code: .internalError, message: "could not unsubscribe \(subscription); try again"), flush: true)
            }
        }
    }

    /// Subscribes the device to a channel the app has (created on the channel management port).
    func subscribe(topic: String, channel id: BroadcastChannelID) {
        let store = port.store
        let environment = port.environment
        let channel = id.value
        run({ try await store.channel(bundleID: topic, id: id, environment: environment) != nil }) { handler, result in
            switch result {
            case .success(true): handler.register(TokenScope(bundleID: topic, kind: .channel(channel)))
            case .success(false):
                handler.send(.error(code: .unknownChannel, message: "\(topic) has no channel \(channel) in \(environment) (never created, or deleted)"), flush: true)
            case .failure(let error):
                handler.port.logger.error("could not look up a channel", metadata: ["error": "\(error)"])
                handler.send(.error(code: .internalError, message: "could not subscribe to \(channel); try again"), flush: true)
            }
        }
    }

    func unregister(_ scope: TokenScope) {
        guard let deviceID = session.deviceID else { return }
        let store = port.store
        let environment = port.environment
        let now = port.clock.nowMilliseconds()
        run({ () async throws -> Int64? in
            guard let registration = try await store.activeToken(deviceID: deviceID, scope: scope, environment: environment) else {
                return nil
            }
            _ = try await store.unregisterToken(registration.token, atMilliseconds: now)
            return now
        }) { handler, result in
            switch result {
            case .success(let at?):
                if let held = handler.session.unregistered(stored: scope.stored) {
                    handler.port.recorder.record(.dropped(seq: held.seq, atMilliseconds: at))
                }
                switch scope.kind {
                case .app: handler.send(.unregistered(topic: scope.bundleID, atMilliseconds: at), flush: true)
                case .pushToStart: handler.send(.unregisteredActivity(topic: scope.bundleID, activity: .pushToStart, atMilliseconds: at), flush: true)
                case .activity(let id): handler.send(.unregisteredActivity(topic: scope.bundleID, activity: .activity(id), atMilliseconds: at), flush: true)
                case .widgets: handler.send(.unregisteredWidgets(topic: scope.bundleID, atMilliseconds: at), flush: true)
                case .pushKit(let kind): handler.send(.unregisteredPushKit(topic: scope.bundleID, kind: kind, atMilliseconds: at), flush: true)
                case .channel(let id):
                    handler.port.registry.unsubscribed(scope: scope.stored, environment: environment, deviceID: deviceID)
                    handler.send(.unsubscribed(topic: scope.bundleID, channel: id), flush: true)
                case .webPush(let subscription, _): handler.send(.webPushUnsubscribed(topic: scope.bundleID, subscription: subscription), flush: true)
                }
            case .success(nil):
                handler.send(.error(code: .unknownTopic, message: "this device has no token for \(scope.stored)"), flush: true)
            case .failure(let error):
                handler.port.logger.error("could not unregister a token", metadata: ["error": "\(error)"])
                handler.send(.error(code: .internalError, message: "could not unregister \(scope.stored); try again"), flush: true)
            }
        }
    }

    /// A channel subscription issued (or found) on this connection: broadcasts find the session
    /// through the registry from now on. One committed after the token was issued and before it
    /// was indexed found no session here, so what the store holds for the device is asked once
    /// more and its broadcasts offered (the session skips what it has in flight or acked).
    func indexSubscription(_ registration: TokenRegistration) {
        guard let deviceID = session.deviceID, let context else { return }
        port.registry.subscribed([registration], deviceID: deviceID, sessionID: ObjectIdentifier(context.channel))
        let store = port.store, now = port.clock.nowMilliseconds()
        run({ try await store.pendingDeliveries(forDevice: deviceID, nowMilliseconds: now) }) { handler, result in
            guard case .success(let pending) = result else { return }
            for delivery in pending where delivery.notification.token == registration.token { handler.offer(delivery) }
            handler.flushIfNeeded()
        }
    }
}
