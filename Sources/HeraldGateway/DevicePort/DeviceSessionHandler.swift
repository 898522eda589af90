import Crypto
import Foundation
import HeraldCore
import HeraldStore
import NIOCore
import NIOWebSocket

/// One device's connection, after the WebSocket upgrade: the challenge and hello, topic
/// registration, delivery with acks, pings, and errors (see `docs/device-protocol.md`).
///
/// Runs on the connection's event loop. Store work runs off the loop and continues on it.
final class DeviceSessionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private enum State {
        case awaitingHello(nonce: String)
        case authenticating
        /// Authenticated; what was stored is being loaded. Deliveries that arrive meanwhile wait.
        case loading(waiting: [Delivery])
        case live
        case closed
    }

    private let port: DevicePort
    private var state: State
    private var context: ChannelHandlerContext?
    private var deviceID: String?
    /// The protocol version the device's hello named.
    private var protocolVersion = 1
    /// Sent and not yet acked, by apns-id (the same apns-id may go to several apps of the device).
    private var inFlight: [APNsID: [(seq: Int64, sentAt: Int64, topic: String)]] = [:]
    private var inFlightSeqs: Set<Int64> = []
    /// Background pushes over budget: the newest per topic, and the timer that releases it.
    private var heldBackground: [String: Delivery] = [:]
    private var releaseTimers: [String: Scheduled<Void>] = [:]
    private var needsFlush = false
    private var lowPriorityFlush: Scheduled<Void>?
    /// Deliveries were left held because ``GatewayLimits/deviceInFlight`` was reached: load them
    /// from the store again once the device has acked what it has.
    private var reloadWhenAcked = false
    private var reloading = false
    /// This connection, in the device's cluster presence (a newer connection replaces it).
    private let connectionID = Int64.random(in: 1...Int64.max)

    init(port: DevicePort) {
        self.port = port
        var nonce = [UInt8](repeating: 0, count: 32)
        var generator = SystemRandomNumberGenerator()
        for i in nonce.indices { nonce[i] = generator.next() }
        state = .awaitingHello(nonce: Data(nonce).base64EncodedString())
    }

    // MARK: lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if case .awaitingHello(let nonce) = state {
            send(.challenge(version: DeviceProtocol.version, nonce: nonce), flush: true)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
        self.context = nil
    }

    /// Forgets the session: unacked sends are recorded (they stay held and go again next time).
    private func finish() {
        if case .closed = state { return }
        state = .closed
        lowPriorityFlush?.cancel()
        for timer in releaseTimers.values { timer.cancel() }
        releaseTimers = [:]
        guard let deviceID, let context else { return }
        port.registry.remove(deviceID: deviceID, sessionID: ObjectIdentifier(context.channel))
        port.cluster?.release(deviceID: deviceID, connection: connectionID)
        port.metrics.connectedDevices.decrement()
        let unacked = inFlight.values.flatMap { $0 }.map { DeliveryEvent.sent(seq: $0.seq, atMilliseconds: $0.sentAt) }
        port.recorder.record(unacked)
        inFlight = [:]
        inFlightSeqs = []
    }

    /// Sends an error frame, then closes the WebSocket (close code 1008, or 1009 for size).
    func close(with code: DeviceErrorCode, _ message: String) {
        guard let context else { return }
        if case .closed = state { return }
        send(.error(code: code, message: message), flush: false)
        var reason = context.channel.allocator.buffer(capacity: 2)
        let closeCode: WebSocketErrorCode = code == .frameTooLarge ? .messageTooLarge : code == .shutdown ? .goingAway : .policyViolation
        reason.write(webSocketErrorCode: closeCode)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: reason)
        finish()
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in channel.close(promise: nil) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent {
            switch idle {
            case .read:
                close(with: .idleTimeout, "nothing heard from the device for \(port.idleTimeout.nanoseconds / 1_000_000_000) s")
            case .write, .all:
                let ping = WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(capacity: 0))
                context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        let closed: Bool = if case .closed = state { true } else { false }
        if !context.channel.isWritable && !closed {
            // The device does not read: its notifications stay held for its next connection.
            port.metrics.recordPeerClosed(port: "device", reason: "slow_reader")
            close(with: .slowConsumer, "the device did not read \(port.limits.deviceOutboundBytes) bytes queued for it")
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        switch error {
        case NIOWebSocketError.invalidFrameLength, is NIOWebSocketFrameAggregator.Error:
            close(with: .frameTooLarge, "frames are limited to \(DeviceProtocol.maximumFrameSize) bytes")
        case let error as NIOWebSocketError:
            close(with: .malformedFrame, "invalid WebSocket framing (\(error))")
        default:
            port.logger.debug("device connection error", metadata: ["error": "\(error)"])
            finish()
            context.close(promise: nil)
        }
    }

    // MARK: frames from the device

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.maskKey != nil else {
            return close(with: .malformedFrame, "frames from a device must be masked (RFC 6455 §5.1)")
        }
        switch frame.opcode {
        case .text:
            var data = frame.unmaskedData
            let bytes = data.readBytes(length: data.readableBytes) ?? []
            handle(text: bytes)
        case .ping:
            var pong = frame.unmaskedData
            let reply = WebSocketFrame(fin: true, opcode: .pong, data: pong.readSlice(length: pong.readableBytes) ?? pong)
            context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
        case .pong:
            break
        case .connectionClose:
            finish()
            var data = frame.unmaskedData
            let code = data.readSlice(length: min(2, data.readableBytes)) ?? context.channel.allocator.buffer(capacity: 0)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: code)))
                .whenComplete { _ in channel.close(promise: nil) }
        case .binary:
            send(.error(code: .unsupportedFrame, message: "binary frames are not part of the protocol; send JSON text frames"), flush: true)
        default:
            send(.error(code: .unsupportedFrame, message: "unexpected WebSocket opcode \(frame.opcode)"), flush: true)
        }
    }

    private func handle(text bytes: [UInt8]) {
        let frame: DeviceClientFrame
        switch DeviceClientFrame.decode(bytes) {
        case .failure(let error): return send(.error(code: .malformedFrame, message: error.message), flush: true)
        case .success(let decoded): frame = decoded
        }
        switch (state, frame) {
        case (.closed, _): return
        case (.awaitingHello(let nonce), .hello(let version, let publicKey, let signature, let secret)):
            authenticate(nonce: nonce, version: version, publicKey: publicKey, signature: signature, enrollmentSecret: secret)
        case (.awaitingHello, _), (.authenticating, _):
            send(.error(code: .notAuthenticated, message: "answer the challenge with a hello frame first"), flush: true)
        case (_, .hello):
            send(.error(code: .alreadyAuthenticated, message: "this connection is already authenticated"), flush: true)
        case (_, let frame) where frame.minimumVersion > protocolVersion:
            send(.error(code: .unsupportedFrameForVersion, message: "this frame is part of device protocol version \(frame.minimumVersion); say hello with that version"), flush: true)
        case (_, .register(let topic)): register(TokenScope(bundleID: topic))
        case (_, .unregister(let topic)): unregister(TokenScope(bundleID: topic))
        case (_, .registerActivity(let topic, let activity)): register(TokenScope(bundleID: topic, activity: activity))
        case (_, .unregisterActivity(let topic, let activity)): unregister(TokenScope(bundleID: topic, activity: activity))
        case (_, .subscribe(let topic, let channel)): subscribe(topic: topic, channel: channel)
        case (_, .unsubscribe(let topic, let channel)): unregister(TokenScope(bundleID: topic, kind: .channel(channel)))
        case (_, .ack(let ids)): acknowledge(ids)
        }
    }

    // MARK: authentication

    private func authenticate(nonce: String, version: Int, publicKey: [UInt8], signature: [UInt8], enrollmentSecret: String?) {
        guard DeviceProtocol.supportedVersions.contains(version) else {
            return close(with: .unsupportedVersion, "this gateway speaks versions \(DeviceProtocol.supportedVersions.lowerBound) to \(DeviceProtocol.supportedVersions.upperBound), not \(version)")
        }
        protocolVersion = version
        guard let key = try? P256.Signing.PublicKey(rawRepresentation: publicKey) else {
            return close(with: .authenticationFailed, "public-key is not a raw P-256 public key (64 bytes, x ‖ y)")
        }
        guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
              key.isValidSignature(ecdsa, for: DeviceProtocol.challengeMessage(nonce: nonce)) else {
            return close(with: .authenticationFailed, "the signature does not verify against the challenge and public key")
        }
        state = .authenticating
        let deviceID = DeviceProtocol.deviceID(publicKey: publicKey)
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
        guard case .authenticating = state, let context else { return }
        if port.cluster?.isFenced == true {
            // Its presence could not be claimed, nor kept: the device must use another node.
            return close(with: .shutdown, "this gateway node has lost its cluster lease (it cannot reach the database); connect to another node")
        }
        self.deviceID = deviceID
        state = .loading(waiting: [])
        // The challenge is answered: the connection's deadline is met.
        context.triggerUserOutboundEvent(ConnectionDeadline.DeadlineMet(), promise: nil)
        port.metrics.connectedDevices.increment()
        port.registry.register(
            deviceID: deviceID,
            session: .init(
                id: ObjectIdentifier(context.channel), connection: connectionID, handler: NIOLoopBound(self, eventLoop: context.eventLoop)))
        send(.welcome(
            deviceID: deviceID, environment: port.environment, enrolled: enrolled,
            pingIntervalSeconds: Int(port.pingInterval.nanoseconds / 1_000_000_000)), flush: true)
        let store = port.store
        let now = port.clock.nowMilliseconds()
        let cluster = port.cluster
        let connection = connectionID
        run({
            // Presence first: whatever is committed after the load below is then hinted here.
            try await cluster?.claim(deviceID: deviceID, connection: connection)
            return try await store.pendingDeliveries(forDevice: deviceID, nowMilliseconds: now)
        }) { handler, result in
            guard case .loading(let waiting) = handler.state else { return }
            switch result {
            case .failure(let error):
                handler.port.logger.error("could not load stored notifications", metadata: ["error": "\(error)"])
                handler.close(with: .internalError, "the gateway could not load this device's notifications; reconnect later")
            case .success(let stored):
                handler.state = .live
                for delivery in stored + waiting.sorted(by: { $0.seq < $1.seq }) { handler.offer(delivery) }
                handler.flushIfNeeded()
            }
        }
    }

    // MARK: topics

    /// Issues (or finds) the device's token of a scope: an app, a Live Activity push-to-start or
    /// update token, or a channel subscription. Answers `registered` or `subscribed`.
    private func register(_ scope: TokenScope) {
        guard DeviceProtocol.isValidTopic(scope.bundleID) else {
            return send(.error(code: .invalidTopic, message: "\"\(scope.bundleID)\" is not a bundle id (printable ASCII, no spaces, no push-type suffix)"), flush: true)
        }
        guard let deviceID else { return }
        let candidate = TokenRegistration(
            token: .random(), bundleID: scope.stored, environment: port.environment, deviceID: deviceID,
            createdAtMilliseconds: port.clock.nowMilliseconds())
        let store = port.store
        let maximum = port.limits.topicsPerDevice
        run({ try await store.issueToken(candidate, maximumActivePerDevice: maximum) }) { handler, result in
            switch result {
            case .success(let registration): handler.send(Self.registeredFrame(scope, registration.token), flush: true)
            case .failure(let error as StoreError) where error.code == .tooManyTokens:
                handler.send(.error(code: .tooManyTopics, message: "a device may have at most \(maximum) tokens (apps, Live Activities, channel subscriptions); unregister one first"), flush: true)
            case .failure(let error):
                handler.port.logger.error("could not issue a token", metadata: ["error": "\(error)"])
                handler.send(.error(code: .internalError, message: "could not register \(scope.stored); try again"), flush: true)
            }
        }
    }

    private static func registeredFrame(_ scope: TokenScope, _ token: DeviceToken) -> DeviceServerFrame {
        switch scope.kind {
        case .app: .registered(topic: scope.bundleID, token: token)
        case .pushToStart: .registeredActivity(topic: scope.bundleID, activity: .pushToStart, token: token)
        case .activity(let id): .registeredActivity(topic: scope.bundleID, activity: .activity(id), token: token)
        case .channel(let id): .subscribed(topic: scope.bundleID, channel: id, token: token)
        }
    }

    /// Subscribes the device to a channel the app has (created on the channel management port).
    private func subscribe(topic: String, channel: String) {
        guard DeviceProtocol.isValidTopic(topic), let id = BroadcastChannelID(channel) else {
            return send(.error(code: .invalidTopic, message: "\"\(topic)\" is not a bundle id"), flush: true)
        }
        let store = port.store
        let environment = port.environment
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

    private func unregister(_ scope: TokenScope) {
        guard let deviceID else { return }
        let store = port.store
        let environment = port.environment
        let now = port.clock.nowMilliseconds()
        let stored = scope.stored
        run({ () async throws -> Int64? in
            guard let registration = try await store.activeToken(deviceID: deviceID, bundleID: stored, environment: environment) else {
                return nil
            }
            _ = try await store.unregisterToken(registration.token, atMilliseconds: now)
            return now
        }) { handler, result in
            switch result {
            case .success(let at?):
                if let held = handler.heldBackground.removeValue(forKey: stored) {
                    handler.port.recorder.record(.dropped(seq: held.seq, atMilliseconds: at))
                }
                switch scope.kind {
                case .app: handler.send(.unregistered(topic: scope.bundleID, atMilliseconds: at), flush: true)
                case .pushToStart: handler.send(.unregisteredActivity(topic: scope.bundleID, activity: .pushToStart, atMilliseconds: at), flush: true)
                case .activity(let id): handler.send(.unregisteredActivity(topic: scope.bundleID, activity: .activity(id), atMilliseconds: at), flush: true)
                case .channel(let id): handler.send(.unsubscribed(topic: scope.bundleID, channel: id), flush: true)
                }
            case .success(nil):
                handler.send(.error(code: .unknownTopic, message: "this device has no token for \(stored)"), flush: true)
            case .failure(let error):
                handler.port.logger.error("could not unregister a token", metadata: ["error": "\(error)"])
                handler.send(.error(code: .internalError, message: "could not unregister \(stored); try again"), flush: true)
            }
        }
    }

    // MARK: delivery

    /// Sends a notification (or holds it while loading, or while over the background budget).
    /// The caller flushes with ``flushIfNeeded()``.
    func offer(_ delivery: Delivery) {
        switch state {
        case .loading(var waiting):
            waiting.append(delivery)
            state = .loading(waiting: waiting)
            return
        case .live: break
        default: return
        }
        guard !inFlightSeqs.contains(delivery.seq) else { return }
        guard inFlightSeqs.count < port.limits.deviceInFlight else {
            // Enough is unacked: this one stays held in the store and is loaded again later.
            reloadWhenAcked = true
            return
        }
        let now = port.clock.nowMilliseconds()
        let n = delivery.notification
        if n.pushType == .background, let throttle = port.backgroundThrottle,
           let nextAt = throttle.take(deviceID: delivery.deviceID, topic: n.bundleID, nowMilliseconds: now) {
            return holdBackground(delivery, until: nextAt, now: now)
        }
        write(delivery, now: now)
    }

    private func write(_ delivery: Delivery, now: Int64) {
        guard let context else { return }
        let n = delivery.notification
        var bytes: [UInt8] = []
        DeviceServerFrame.encodeNotification(
            apnsID: n.apnsID, topic: n.bundleID, pushType: n.pushType, priority: n.priority, collapseID: n.collapseID?.value,
            expiration: n.expiration.storedSeconds, payload: n.payload,
            token: n.pushType == .liveactivity ? n.token : nil, into: &bytes)
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer)), promise: nil)
        inFlight[n.apnsID, default: []].append((delivery.seq, now, n.bundleID))
        inFlightSeqs.insert(delivery.seq)
        port.metrics.deviceDeliveries.increment()
        port.feed.publish {
            DeliveryFeed.Event(event: .sent, at: now, apnsId: n.apnsID.description, topic: n.bundleID, token: n.token.hex, device: delivery.deviceID)
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

    /// Flushes what priority-10 notifications wrote.
    func flushIfNeeded() {
        guard needsFlush, let context else { return }
        needsFlush = false
        context.flush()
    }

    private func holdBackground(_ delivery: Delivery, until nextAt: Int64, now: Int64) {
        let topic = delivery.notification.bundleID
        if let older = heldBackground[topic], older.seq != delivery.seq {
            if older.seq > delivery.seq { return port.recorder.record(.replaced(seq: delivery.seq, atMilliseconds: now)) }
            port.recorder.record(.replaced(seq: older.seq, atMilliseconds: now))
        }
        heldBackground[topic] = delivery
        port.logger.debug("background push held", metadata: ["apns_id": "\(delivery.notification.apnsID)", "until": "\(nextAt)"])
        guard releaseTimers[topic] == nil, let context else { return }
        // The budget is computed on the injected clock, which real time does not drive: look
        // again at least every second while something is held.
        let wait = TimeAmount.milliseconds(min(1000, max(100, nextAt - now)))
        releaseTimers[topic] = context.eventLoop.assumeIsolated().scheduleTask(in: wait) { [self] in
            releaseTimers[topic] = nil
            guard let held = heldBackground.removeValue(forKey: topic) else { return }
            offer(held)
            flushIfNeeded()
            self.context?.flush()
        }
    }

    private func acknowledge(_ ids: [APNsID]) {
        let now = port.clock.nowMilliseconds()
        var events: [DeliveryEvent] = []
        for id in ids {
            guard let sends = inFlight.removeValue(forKey: id) else { continue }
            for sent in sends {
                port.feed.publish { DeliveryFeed.Event(event: .acked, at: now, apnsId: id.description, topic: sent.topic, device: deviceID) }
                inFlightSeqs.remove(sent.seq)
                events.append(.acked(seq: sent.seq, sentAtMilliseconds: sent.sentAt, ackedAtMilliseconds: now))
                port.metrics.deviceAckSeconds.record(milliseconds: now - sent.sentAt)
            }
        }
        port.metrics.deviceAcks.increment(by: Int64(events.count))
        port.recorder.record(events)
        if reloadWhenAcked, inFlightSeqs.count <= port.limits.deviceInFlight / 2 { reloadHeld() }
    }

    /// Loads what the store still holds for the device (after deliveries were left held at the
    /// in-flight bound); what is already in flight is skipped by sequence number.
    private func reloadHeld() {
        guard !reloading, case .live = state, let deviceID else { return }
        reloadWhenAcked = false
        reloading = true
        let store = port.store
        let now = port.clock.nowMilliseconds()
        // Acks recorded so far must be in the store before it is asked what is still held.
        let recorder = port.recorder
        run({ () async throws -> [Delivery] in
            await recorder.waitUntilRecorded()
            return try await store.pendingDeliveries(forDevice: deviceID, nowMilliseconds: now)
        }) { handler, result in
            handler.reloading = false
            guard case .success(let stored) = result else { return }
            for delivery in stored { handler.offer(delivery) }
            handler.flushIfNeeded()
        }
    }

    // MARK: plumbing

    private func send(_ frame: DeviceServerFrame, flush: Bool) {
        guard let context else { return }
        let bytes = frame.encoded()
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        let out = wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer))
        if flush { context.writeAndFlush(out, promise: nil) } else { context.write(out, promise: nil) }
    }

    /// Runs store work off the event loop, then continues on it (unless the session closed).
    private func run<T: Sendable>(
        _ work: @escaping @Sendable () async throws -> T,
        then next: @escaping (DeviceSessionHandler, Result<T, Error>) -> Void
    ) {
        guard let context else { return }
        let bound = NIOLoopBound((self, next), eventLoop: context.eventLoop)
        context.eventLoop.makeFutureWithTask(work).whenComplete { result in
            let (handler, next) = bound.value
            if case .closed = handler.state { return }
            next(handler, result)
        }
    }
}
