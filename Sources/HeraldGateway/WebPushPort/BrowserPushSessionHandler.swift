import Foundation
import HeraldCore
import HeraldStore
import NIOCore
import NIOWebSocket

/// One browser's connection on the Web Push port, after the WebSocket upgrade: Mozilla's push
/// protocol (``BrowserPushProtocol``) as Firefox speaks it to `dom.push.serverURL`.
///
/// To the core a browser is a device: its `uaid` (issued here, 128 random bits) names it
/// (``WebPushPort/deviceID(uaid:)``), each subscription is one of its tokens (the endpoint id),
/// and the messages stored for it are delivered, acked, recorded, hinted across a cluster and
/// kept across reconnections as a Herald device's are. A browser that says `hello` with a uaid
/// the gateway issued gets it back, with what was stored while it was away; any other uaid is
/// replaced by a fresh one (the browser then drops its old subscriptions, as the protocol says).
///
/// Its decisions are a ``DeviceSession``'s, the state machine every device port session runs:
/// the phases, what is loaded and what waits meanwhile, what is in flight and its bound, acks and
/// reloads, what stays held at the close. This handler speaks the protocol and does the I/O.
///
/// Bounds: one `hello` within the port's deadline, frames of at most 64 KiB, at most
/// ``GatewayLimits/topicsPerDevice`` subscriptions per browser (counted by the store), at most
/// ``GatewayLimits/deviceInFlight`` messages written and not acked (the rest wait in the store),
/// and a browser that does not read is closed.
final class BrowserPushSessionHandler: ChannelInboundHandler, RemovableChannelHandler, DeliverySession {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let port: WebPushPort
    /// The origin endpoints are issued under (the port's, or the `Host` the browser connected to).
    private let origin: String
    var session: DeviceSession
    var context: ChannelHandlerContext?
    private var deviceID: String? { session.deviceID }
    var needsFlush = false
    let connectionID = Int64.random(in: 1...Int64.max)

    init(port: WebPushPort, origin: String) {
        self.port = port
        self.origin = origin
        self.session = DeviceSession(browserWithMaximumInFlight: port.limits.deviceInFlight)
    }

    // MARK: lifecycle

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    /// Forgets the session: what was written and not acked stays held, and goes again next time.
    func finish() {
        let wasWelcomed = session.isWelcomed
        guard let unacked = session.close(), wasWelcomed, let deviceID, let context else { return }
        leave(deviceID: deviceID, unacked: unacked, context: context)
        port.metrics.connectedUserAgents.decrement()
    }

    /// Mozilla's protocol has no reconnect hint: a browser comes back on its own backoff.
    func close(with code: DeviceErrorCode, _ message: String, reconnectWithinMilliseconds: Int64?) {
        guard let context, !session.isClosed else { return }
        port.logger.debug("closing a browser connection", metadata: ["device": "\(deviceID ?? "-")", "why": "\(message)"])
        let closeCode: WebSocketErrorCode = switch code {
        case .frameTooLarge: .messageTooLarge
        case .shutdown, .replaced: .goingAway
        default: .policyViolation
        }
        finish()
        WebSocketControl.close(context, code: closeCode)
    }

    // MARK: frames

    let peerName = "a browser"

    func receiveText(_ bytes: [UInt8]) {
        do {
            receive(try BrowserPushProtocol.read(bytes))
        } catch {
            port.metrics.recordPeerClosed(port: "webpush", reason: "malformed")
            close(with: .malformedFrame, error.description)
        }
    }

    func receiveNotText(_ opcode: WebSocketOpcode) {
        close(with: .unsupportedFrame, "the push protocol is JSON in text frames")
    }

    private func receive(_ message: BrowserPushProtocol.ClientMessage) {
        switch message {
        case .hello(let uaid, _, let useWebPush):
            guard useWebPush else { return close(with: .malformedFrame, "this push service speaks Web Push only (use_webpush: true)") }
            guard session.browserHello() else { return close(with: .malformedFrame, "hello twice") }
            hello(uaid: uaid)
        case .ping:
            sendText(BrowserPushProtocol.pong)
        case .other:
            // Messages Herald does not use (broadcast_subscribe…) are ignored, never fatal.
            break
        case .register(let channel, let key):
            guard session.isWelcomed else { return close(with: .malformedFrame, "register before hello") }
            register(channel: channel, key: key)
        case .unregister(let channel, _):
            guard session.isWelcomed else { return close(with: .malformedFrame, "unregister before hello") }
            unregister(channel: channel)
        case .ack(let updates):
            acknowledge(updates.map(\.version))
        case .nack(let version, _):
            // The service worker failed on it: it reached the browser, which will not take it again.
            acknowledge([version])
        }
    }

    // MARK: hello

    private func hello(uaid offered: String?) {
        let store = port.store
        let now = port.clock.nowMilliseconds()
        run({ () async throws -> (uaid: String, enrolled: Bool) in
            if let offered, BrowserPushProtocol.isUAID(offered), try await store.device(id: WebPushPort.deviceID(uaid: offered)) != nil {
                _ = try await store.deviceConnected(id: WebPushPort.deviceID(uaid: offered), publicKey: [], atMilliseconds: now)
                return (offered, false)
            }
            let fresh = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            _ = try await store.deviceConnected(id: WebPushPort.deviceID(uaid: fresh), publicKey: [], atMilliseconds: now)
            return (fresh, true)
        }) { handler, result in
            switch result {
            case .failure(let error):
                handler.port.logger.error("could not record a browser connection", metadata: ["error": "\(error)"])
                handler.close(with: .internalError, "the gateway could not record this browser")
            case .success(let (uaid, _)):
                handler.welcomed(uaid: uaid)
            }
        }
    }

    private func welcomed(uaid: String) {
        guard let context else { return }
        if port.cluster?.isFenced == true {
            return close(with: .shutdown, "this gateway node has lost its cluster lease; connect to another node")
        }
        let deviceID = WebPushPort.deviceID(uaid: uaid)
        guard session.welcomed(deviceID: deviceID) else { return }
        context.triggerUserOutboundEvent(ConnectionDeadline.DeadlineMet(), promise: nil)
        port.metrics.connectedUserAgents.increment()
        sendText(BrowserPushProtocol.helloReply(uaid: uaid, useWebPush: true))
        startDelivering(
            deviceID: deviceID, context: context, failure: "could not load a browser's messages",
            closing: "the gateway could not load this browser's messages")
    }

    // MARK: subscriptions

    private func register(channel: String, key: [UInt8]?) {
        guard let deviceID else { return }
        let scope = TokenScope(bundleID: WebPushPort.browserApp, kind: .webPush(channel: channel, applicationServerKey: key.map(Base64URL.encode)))
        let tokens = port.tokens
        let maximum = tokens.maximumPerDevice
        run({ try await tokens.issue(scope, deviceID: deviceID) }) { handler, result in
            switch result {
            case .success(let registration):
                let endpoint = handler.origin + "/wpush/" + registration.token.hex
                handler.sendText(BrowserPushProtocol.registerReply(channelID: channel, status: 200, pushEndpoint: endpoint))
            case .failure(let error as StoreError) where error.code == .tooManyTokens:
                handler.port.logger.notice("a browser reached its subscription bound", metadata: ["device": "\(deviceID)", "maximum": "\(maximum)"])
                handler.sendText(BrowserPushProtocol.registerReply(channelID: channel, status: 409, pushEndpoint: nil))
            case .failure(let error):
                handler.port.logger.error("could not make a Web Push subscription", metadata: ["error": "\(error)"])
                handler.sendText(BrowserPushProtocol.registerReply(channelID: channel, status: 500, pushEndpoint: nil))
            }
        }
    }

    private func unregister(channel: String) {
        guard let deviceID else { return }
        let maximum = port.limits.topicsPerDevice
        let now = port.clock.nowMilliseconds()
        let subscriptions = port.subscriptions
        run({ () async throws -> Void in
            _ = try await subscriptions.unsubscribe(deviceID: deviceID, bundleID: WebPushPort.browserApp, channel: channel, atMilliseconds: now, limit: maximum)
        }) { handler, result in
            if case .failure(let error) = result {
                handler.port.logger.error("could not remove a Web Push subscription", metadata: ["error": "\(error)"])
                return handler.sendText(BrowserPushProtocol.unregisterReply(channelID: channel, status: 500))
            }
            handler.sendText(BrowserPushProtocol.unregisterReply(channelID: channel, status: 200))
        }
    }

    // MARK: delivery

    func offer(_ delivery: Delivery) {
        guard context != nil, session.isWelcomed else { return }
        let n = delivery.notification
        let now = port.clock.nowMilliseconds()
        let message: WebPushStoredMessage
        do { message = try WebPushStoredMessage(stored: n.payload) } catch {
            // Not a Web Push message (a push of another kind to a browser's token): never sent.
            port.logger.error("a browser's held message is unreadable: dropped", metadata: ["apns_id": "\(n.id)", "why": "\(error)"])
            port.recorder.record(.dropped(seq: delivery.seq, atMilliseconds: now))
            return
        }
        // Loading, already in flight, or at the in-flight bound: not now (no background budget here).
        guard session.offer(delivery, nowMilliseconds: now, throttle: nil) == .send else { return }
        port.core.offered(delivery, waited: session.waited(delivery, nowMilliseconds: now))
        let bytes = message.browserNotification(version: n.id.description)
        sendText(bytes, flush: false)
        needsFlush = true
        port.metrics.webPushDeliveries.increment()
        port.feed.publish {
            DeliveryFeed.Event(event: .sent, at: now, protocol: "webpush", apnsId: n.id.description, topic: n.bundleID, token: n.token.hex, device: delivery.deviceID)
        }
    }

    private func acknowledge(_ versions: [String]) {
        let now = port.clock.nowMilliseconds()
        let (acked, reload) = session.acknowledge(versions.compactMap(NotificationID.init(header:)), nowMilliseconds: now)
        port.metrics.webPushAcks.increment(by: Int64(recordAcks(acked, now: now, feedProtocol: "webpush")))
        if reload { reloadHeld() }
    }
}

extension BrowserPushSessionHandler: WebSocketSessionHandler {
    var isSessionClosed: Bool { session.isClosed }
    func sessionIsQuiet() { session.quiet() }
    func forgetSession(after error: Error) { finish() }

    var terms: WebSocketSessionEvents.Terms {
        WebSocketSessionEvents.Terms(
            silent: "nothing heard from the browser", notReading: "the browser does not read",
            maximumFrameBytes: BrowserPushProtocol.maximumMessageBytes, badFraming: { _ in "invalid WebSocket framing" },
            countSlowReader: { [port] in port.metrics.recordPeerClosed(port: "webpush", reason: "slow_reader") })
    }
}
