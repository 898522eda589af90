import Crypto
import Foundation
import HeraldCore
import HeraldStore
import NIOCore
import NIOWebSocket

/// One device's connection, after the WebSocket upgrade: carries out what its ``DeviceSession``
/// decides (frames written, store work run off the loop, timers, the registry, the recorder, the
/// live feed and metrics) and feeds the results back in.
///
/// Runs on the connection's event loop. Store work runs off the loop and continues on it.
final class DeviceSessionHandler: ChannelInboundHandler, RemovableChannelHandler, DeliverySession {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let port: DevicePort
    var session: DeviceSession
    var context: ChannelHandlerContext?
    /// The timers that release held background pushes, by topic.
    private var releaseTimers: [String: Scheduled<Void>] = [:]
    var needsFlush = false
    private var lowPriorityFlush: Scheduled<Void>?
    /// This connection, in the device's cluster presence (a newer connection replaces it).
    let connectionID = Int64.random(in: 1...Int64.max)
    /// How often this connection is pinged when quiet and when it is dropped for silence.
    private var keepalive: DeviceKeepalive.Grant

    /// The `Host` the device connected to: Web Push endpoints issued to it name this host.
    let host: String?

    init(port: DevicePort, host: String? = nil) {
        self.port = port
        self.host = host
        keepalive = port.keepalive.grant(requestedSeconds: nil)
        var nonce = [UInt8](repeating: 0, count: 32)
        var generator = SystemRandomNumberGenerator()
        for i in nonce.indices { nonce[i] = generator.next() }
        session = DeviceSession(nonce: Data(nonce).base64EncodedString(), maximumInFlight: port.limits.deviceInFlight)
    }

    // MARK: lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if let challenge = session.challenge { send(challenge, flush: true) }
    }

    /// Forgets the session: unacked sends are recorded (they stay held and go again next time).
    func finish() {
        guard let unacked = session.close() else { return }
        lowPriorityFlush?.cancel()
        for timer in releaseTimers.values { timer.cancel() }
        releaseTimers = [:]
        guard let deviceID = session.deviceID, let context else { return }
        leave(deviceID: deviceID, unacked: unacked, context: context)
        port.metrics.connectedDevices.decrement()
        let now = port.clock.nowMilliseconds()
        for sent in unacked {
            guard let trace = sent.trace else { continue }
            Self.recordDeliverySpan(trace, nil, sent, deviceID: deviceID, until: now,
                                    failure: "the device's connection closed before it acked (the push stays held and is sent again)")
        }
    }

    /// The `device.delivery` span of a traced push: from its write on the device's connection to
    /// the device's ack (or the connection's end), a child of the provider request that brought it.
    private static func recordDeliverySpan(
        _ trace: Traces.Carrier, _ apnsID: NotificationID?, _ sent: DeviceSession.Sent, deviceID: String?, until now: Int64, failure: String?
    ) {
        var attributes = [("herald.device", deviceID ?? "-"), ("apns.topic", sent.topic), ("herald.seq", String(sent.seq))]
        if let apnsID { attributes.append(("apns.id", apnsID.description)) }
        Traces.record("device.delivery", parent: trace, kind: .producer, from: sent.sentAtMilliseconds, to: now, attributes: attributes, failure: failure)
    }

    /// Sends an error frame, then closes the WebSocket (close code 1008, or 1009 for size).
    func close(with code: DeviceErrorCode, _ message: String, reconnectWithinMilliseconds: Int64?) {
        guard let context, !session.isClosed else { return }
        send(.error(code: code, message: message, reconnectWithinMilliseconds: reconnectWithinMilliseconds), flush: false)
        finish()
        WebSocketControl.close(context, code: code == .frameTooLarge ? .messageTooLarge : code == .shutdown ? .goingAway : .policyViolation)
    }

    // MARK: frames from the device

    let peerName = "a device"

    func receiveText(_ bytes: [UInt8]) {
        switch DeviceClientFrame.decode(bytes) {
        case .failure(let error): send(.error(code: .malformedFrame, message: error.message), flush: true)
        case .success(let decoded):
            // One instant per frame: the session decides at it and its acks are recorded at it.
            let now = port.clock.nowMilliseconds()
            perform(session.receive(decoded, nowMilliseconds: now), now: now)
        }
    }

    func receiveNotText(_ opcode: WebSocketOpcode) {
        let message = opcode == .binary ? "binary frames are not part of the protocol; send JSON text frames" : "unexpected WebSocket opcode \(opcode)"
        send(.error(code: .unsupportedFrame, message: message), flush: true)
    }

    /// Carries out what the session decided about a frame.
    private func perform(_ action: DeviceSession.FrameAction, now: Int64) {
        switch action {
        case .none: break
        case .reply(let frame): send(frame, flush: true)
        case .close(let code, let message): close(with: code, message)
        case .authenticate(let deviceID, let publicKey, let secret): authenticate(deviceID: deviceID, publicKey: publicKey, enrollmentSecret: secret)
        case .register(let scope): register(scope)
        case .unregister(let scope): unregister(scope)
        case .subscribe(let topic, let channel): subscribe(topic: topic, channel: channel)
        case .webPushSubscribe(let scope): webPushSubscribe(scope)
        case .webPushUnsubscribe(let topic, let subscription): webPushUnsubscribe(topic: topic, subscription: subscription)
        case .acknowledged(let acked, let reload):
            recordAcks(acked, now: now)
            if reload { reloadHeld() }
        }
    }

    // MARK: authentication

    private func authenticate(deviceID: String, publicKey: [UInt8], enrollmentSecret: String?) {
        let store = port.store
        let now = port.clock.nowMilliseconds()
        // With enrollment closed, a key the store does not know needs the gateway's secret.
        let mayEnroll = port.enrollmentSecret.map { SecretComparison.equal(enrollmentSecret ?? "", $0) } ?? true
        run({ () async throws -> Bool? in
            if !mayEnroll, try await store.device(id: deviceID) == nil { return nil }
            return try await store.deviceConnected(id: deviceID, publicKey: publicKey, atMilliseconds: now)
        }) { handler, result in
            switch result {
            case .success(nil):
                handler.close(with: .enrollmentRefused, "this gateway enrolls new devices only with its enrollment secret")
            case .failure(let error):
                handler.port.logger.error("could not record a device connection", metadata: ["error": "\(error)"])
                handler.close(with: .internalError, "the gateway could not record this device; reconnect later")
            case .success(let enrolled?):
                handler.authenticated(deviceID: deviceID, enrolled: enrolled)
            }
        }
    }

    private func authenticated(deviceID: String, enrolled: Bool) {
        guard let context else { return }
        if port.cluster?.isFenced == true {
            // Its presence could not be claimed, nor kept: the device must use another node.
            return close(with: .shutdown, "this gateway node has lost its cluster lease (it cannot reach the database); connect to another node")
        }
        guard session.welcomed(deviceID: deviceID) else { return }
        // The challenge is answered: the connection's deadline is met.
        context.triggerUserOutboundEvent(ConnectionDeadline.DeadlineMet(), promise: nil)
        port.metrics.connectedDevices.increment()
        applyKeepalive(port.keepalive.grant(requestedSeconds: session.requestedKeepaliveSeconds), context: context)
        send(.welcome(
            deviceID: deviceID, environment: port.environment, enrolled: enrolled,
            pingIntervalSeconds: keepalive.pingIntervalSeconds), flush: true)
        startDelivering(
            deviceID: deviceID, context: context, failure: "could not load stored notifications",
            closing: "the gateway could not load this device's notifications; reconnect later")
    }

    // MARK: delivery

    /// Sends a notification (or holds it while loading, or while over the background budget).
    /// The caller flushes with ``flushIfNeeded()``.
    func offer(_ delivery: Delivery) {
        let now = port.clock.nowMilliseconds()
        switch session.offer(delivery, nowMilliseconds: now, throttle: port.backgroundThrottle) {
        case .notNow: break
        case .send:
            port.core.offered(delivery, waited: session.waited(delivery, nowMilliseconds: now))
            write(delivery, now: now)
        case .replaced(let seq): port.recorder.record(.replaced(seq: seq, atMilliseconds: now))
        case .held(let topic, let until, let replaced):
            if let replaced { port.recorder.record(.replaced(seq: replaced, atMilliseconds: now)) }
            port.logger.debug("background push held", metadata: ["apns_id": "\(delivery.notification.id)", "until": "\(until)"])
            startReleaseTimer(topic: topic, wait: until - now)
        }
    }

    private func write(_ delivery: Delivery, now: Int64) {
        guard let context else { return }
        let n = delivery.notification
        var bytes: [UInt8] = []
        DeviceServerFrame.encodeNotification(
            apnsID: n.id, topic: n.bundleID, pushType: n.pushType, priority: n.priority, collapseID: n.collapseID?.value,
            expiration: n.expiration.storedSeconds, payload: n.payload,
            token: n.pushType == .liveactivity || n.pushType == .webpush ? n.token : nil, into: &bytes)
        sendText(bytes, flush: false)
        port.metrics.deviceDeliveries.increment()
        port.feed.publish {
            DeliveryFeed.Event(event: .sent, at: now, apnsId: n.id.description, topic: n.bundleID, token: n.token.hex, device: delivery.deviceID)
        }
        if n.priority == .immediate {
            needsFlush = true
        } else if lowPriorityFlush == nil {
            // Priority 5 and 1 may wait a little to go out together.
            lowPriorityFlush = context.eventLoop.assumeIsolated().scheduleTask(in: port.lowPriorityDelay) { [self] in
                lowPriorityFlush = nil
                self.context?.flush()
            }
        }
    }

    private func startReleaseTimer(topic: String, wait: Int64) {
        guard releaseTimers[topic] == nil, let context else { return }
        // The budget is computed on the injected clock, which real time does not drive: look
        // again at least every second while something is held.
        let wait = TimeAmount.milliseconds(min(1000, max(100, wait)))
        releaseTimers[topic] = context.eventLoop.assumeIsolated().scheduleTask(in: wait) { [self] in
            releaseTimers[topic] = nil
            guard let held = session.release(topic: topic) else { return }
            offer(held)
            flushIfNeeded()
            self.context?.flush()
        }
    }

    private func recordAcks(_ acked: [DeviceSession.Acked], now: Int64) {
        let deviceID = session.deviceID
        let count = recordAcks(acked, now: now, feedProtocol: nil) { ack in
            if let trace = ack.sent.trace { Self.recordDeliverySpan(trace, ack.apnsID, ack.sent, deviceID: deviceID, until: now, failure: nil) }
        }
        port.metrics.deviceAcks.increment(by: Int64(count))
    }

    /// The connection's keepalive: the port's own unless the device asked for a shorter ping
    /// interval (its ``KeepaliveHandler`` is told the grant).
    private func applyKeepalive(_ grant: DeviceKeepalive.Grant, context: ChannelHandlerContext) {
        guard grant != keepalive else { return }
        keepalive = grant
        context.triggerUserOutboundEvent(KeepaliveHandler.Change(pingInterval: grant.pingInterval, idleTimeout: grant.idleTimeout), promise: nil)
    }

    // MARK: plumbing

    func send(_ frame: DeviceServerFrame, flush: Bool) {
        sendText(frame.encoded(), flush: flush)
    }
}

extension DeviceSessionHandler: WebSocketSessionHandler {
    var isSessionClosed: Bool { session.isClosed }
    func sessionIsQuiet() { session.quiet() }

    func forgetSession(after error: Error) {
        port.logger.debug("device connection error", metadata: ["error": "\(error)"])
        finish()
    }

    var terms: WebSocketSessionEvents.Terms {
        WebSocketSessionEvents.Terms(
            silent: "nothing heard from the device for \(keepalive.idleTimeout.nanoseconds / 1_000_000_000) s",
            notReading: "the device did not read \(port.limits.deviceOutboundBytes) bytes queued for it",
            maximumFrameBytes: DeviceProtocol.maximumFrameSize,
            badFraming: { "invalid WebSocket framing (\($0))" },
            countSlowReader: { [port] in port.metrics.recordPeerClosed(port: "device", reason: "slow_reader") })
    }
}
