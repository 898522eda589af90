import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOWebSocket

/// A WebSocket session's handler: how it says something to its peer and how it waits for the
/// store, the same for a device's session and a browser's.
protocol WebSocketSessionHandler: WebSocketSessionEnd, ChannelInboundHandler, DeliverySession, SendableMetatype
where InboundIn == WebSocketFrame, OutboundOut == WebSocketFrame {
    associatedtype Port: SessionPort
    /// The handler's context while it is in a pipeline.
    var context: ChannelHandlerContext? { get set }
    /// Whether something was written and not flushed yet (``flushIfNeeded()``).
    var needsFlush: Bool { get set }
    var port: Port { get }
    /// The session's state machine: what is in flight, held, acked.
    var session: DeviceSession { get set }
    /// This connection's id in the device's cluster presence.
    var connectionID: Int64 { get }
    /// Who the peer is, as a close for an unmasked frame says it ("a device", "a browser").
    var peerName: String { get }
    /// A text frame's bytes: one message of the session's protocol.
    func receiveText(_ bytes: [UInt8])
    /// A binary or continuation frame, which neither protocol has.
    func receiveNotText(_ opcode: WebSocketOpcode)
    /// The session is over (the peer closed, or the handler closes it): what it held is released.
    func finish()
}

extension WebSocketSessionHandler {
    /// A frame from the peer: control frames are answered here, a text frame goes to the session.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch WebSocketControl.receive(unwrapInboundIn(data), context: context) {
        case .unmasked: close(with: .malformedFrame, "frames from \(peerName) must be masked (RFC 6455 §5.1)", reconnectWithinMilliseconds: nil)
        case .handled: break
        case .peerClosed: finish()
        case .text(let bytes): receiveText(bytes)
        case .notText(let opcode): receiveNotText(opcode)
        }
    }
}

/// What both sessions do alike over their lives: the end of the connection, the flush, the
/// acks and the reload of what the store still holds.
extension WebSocketSessionHandler {
    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
        self.context = nil
    }

    /// The session is over: pushes for the device no longer find it here, its cluster presence
    /// goes, and what was written and not acked is recorded as sent (it stays held and goes
    /// again at the next connection).
    func leave(deviceID: String, unacked: [DeviceSession.Sent], context: ChannelHandlerContext) {
        port.registry.remove(deviceID: deviceID, sessionID: ObjectIdentifier(context.channel))
        port.cluster?.release(deviceID: deviceID, connection: connectionID)
        // A broadcast sent and not acked needs no record: its subscription's acked sequence says so.
        port.recorder.record(unacked.filter { $0.subscription == nil }.map { DeliveryEvent.sent(seq: $0.seq, atMilliseconds: $0.sentAtMilliseconds) })
    }

    /// Flushes what ``offer(_:)`` wrote without a flush.
    func flushIfNeeded() {
        guard needsFlush, let context else { return }
        needsFlush = false
        context.flush()
    }

    /// Records acks: each one's event for the store and the live feed (`feedProtocol`: `webpush`
    /// for a browser's) and its latency; returns how many. `each` sees every ack too.
    func recordAcks(
        _ acked: [DeviceSession.Acked], now: Int64, feedProtocol: String?, each: (DeviceSession.Acked) -> Void = { _ in }
    ) -> Int {
        let deviceID = session.deviceID
        var events: [DeliveryEvent] = []
        events.reserveCapacity(acked.count)
        for ack in acked {
            let sent = ack.sent
            events.append(sent.acked(at: now))
            port.feed.publish {
                DeliveryFeed.Event(event: .acked, at: now, protocol: feedProtocol, apnsId: ack.apnsID.description, topic: sent.topic, device: deviceID)
            }
            port.metrics.deviceAckSeconds.record(milliseconds: now - sent.sentAtMilliseconds)
            each(ack)
        }
        port.recorder.record(events)
        return events.count
    }

    /// Loads what the store still holds for the device (deliveries were left there at the
    /// in-flight bound); what is already in flight is skipped by sequence number.
    func reloadHeld() {
        guard let deviceID = session.deviceID else { return }
        let store = port.store, recorder = port.recorder
        let now = port.clock.nowMilliseconds()
        run({ () async throws -> [Delivery] in
            // Acks recorded so far must be in the store before it is asked what is still held.
            await recorder.waitUntilRecorded()
            return try await store.pendingDeliveries(forDevice: deviceID, nowMilliseconds: now)
        }) { handler, result in
            for delivery in handler.session.reloaded(try? result.get()) { handler.offer(delivery) }
            handler.flushIfNeeded()
        }
    }
}

extension WebSocketSessionHandler {
    /// Writes one text frame (and flushes it unless more follow at once).
    func sendText(_ bytes: [UInt8], flush: Bool = true) {
        guard let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        let out = wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer))
        if flush { context.writeAndFlush(out, promise: nil) } else { context.write(out, promise: nil) }
    }

    /// Runs store work off the event loop, then continues on it (unless the session closed meanwhile).
    func run<T: Sendable>(
        _ work: @escaping @Sendable () async throws -> T,
        then next: @escaping (Self, Result<T, Error>) -> Void
    ) {
        guard let context else { return }
        let bound = NIOLoopBound((self, next), eventLoop: context.eventLoop)
        context.eventLoop.makeFutureWithTask(work).whenComplete { result in
            let (handler, next) = bound.value
            if handler.isSessionClosed { return }
            next(handler, result)
        }
    }

    /// Once the peer is welcomed: it is where pushes for `deviceID` find it, its presence is
    /// claimed in the cluster (first: whatever is committed after the load below is then hinted
    /// here), and what the store holds for it is loaded and offered. A store that fails closes
    /// the session with `closing` (logged as `failure`).
    func startDelivering(deviceID: String, context: ChannelHandlerContext, failure: Logger.Message, closing: String) {
        port.registry.register(deviceID: deviceID, session: .init(
            id: ObjectIdentifier(context.channel), connection: connectionID,
            handler: NIOLoopBound<any DeliverySession>(self, eventLoop: context.eventLoop)))
        let store = port.store, cluster = port.cluster, connection = connectionID
        let now = port.clock.nowMilliseconds()
        let registry = port.registry, sessionID = ObjectIdentifier(context.channel)
        run({
            try await cluster?.claim(deviceID: deviceID, connection: connection)
            // Indexed before the load, as presence is claimed: a broadcast committed after the
            // load finds the session here.
            registry.subscribed(try await store.channelSubscriptions(ofDevice: deviceID), deviceID: deviceID, sessionID: sessionID)
            return try await store.pendingDeliveries(forDevice: deviceID, nowMilliseconds: now)
        }) { handler, result in
            switch result {
            case .failure(let error):
                handler.port.logger.error(failure, metadata: ["error": "\(error)"])
                handler.close(with: .internalError, closing)
            case .success(let stored):
                guard let deliveries = handler.session.loaded(stored, nowMilliseconds: handler.port.clock.nowMilliseconds()) else { return }
                for delivery in deliveries { handler.offer(delivery) }
                handler.flushIfNeeded()
            }
        }
    }
}
