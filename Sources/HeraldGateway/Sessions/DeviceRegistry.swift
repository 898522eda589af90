import HeraldCore
import HeraldStore
import NIOCore

/// A connection that stored notifications are delivered on: a Herald device's session on the
/// device port, or a browser's on the Web Push port. Called on the connection's event loop.
protocol DeliverySession: AnyObject {
    /// Sends a delivery (or holds it); the caller flushes with ``flushIfNeeded()``.
    func offer(_ delivery: Delivery)
    func flushIfNeeded()
    /// Closes the connection, telling the peer why (and, for a graceful stop, within how long to
    /// come back) when its protocol can.
    func close(with code: DeviceErrorCode, _ message: String, reconnectWithinMilliseconds: Int64?)
}

extension DeliverySession {
    func close(with code: DeviceErrorCode, _ message: String) { close(with: code, message, reconnectWithinMilliseconds: nil) }
}

/// The devices and user agents connected now, each with its one session. A second connection
/// of a device replaces the first. Deliveries are handed to sessions on their own event loops,
/// one hop per loop for a whole batch.
final class DeviceRegistry: Sendable {
    struct Session: Sendable {
        let id: ObjectIdentifier
        /// The connection's id in the device's cluster presence.
        let connection: Int64
        let handler: NIOLoopBound<any DeliverySession>
        var eventLoop: EventLoop { handler.eventLoop }
    }

    private let sessions = Locked([String: Session]())
    /// The channel subscriptions of the connected devices: where a broadcast finds its
    /// subscribers on this node without asking the store.
    private let subscriptions = Locked(SubscriptionIndex())

    /// Makes `session` the device's session; tells the one it replaces (if any) to close.
    func register(deviceID: String, session: Session) {
        subscriptions.withLock { $0.start(deviceID: deviceID, session: session.id) }
        let previous = sessions.withLock { sessions in
            defer { sessions[deviceID] = session }
            return sessions[deviceID]
        }
        if let previous, previous.id != session.id {
            previous.eventLoop.execute { previous.handler.value.close(with: .replaced, "another connection of this device took over") }
        }
    }

    /// Forgets the device's session if it still is `sessionID`.
    func remove(deviceID: String, sessionID: ObjectIdentifier) {
        sessions.withLock { sessions in
            if sessions[deviceID]?.id == sessionID { sessions[deviceID] = nil }
        }
        subscriptions.withLock { $0.end(deviceID: deviceID, session: sessionID) }
    }

    /// Indexes channel subscriptions of the device's session `sessionID` (ignored once another
    /// session of the device took over).
    func subscribed(_ registrations: [TokenRegistration], deviceID: String, sessionID: ObjectIdentifier) {
        subscriptions.withLock { index in
            for registration in registrations { index.add(registration, deviceID: deviceID, session: sessionID) }
        }
    }

    /// The device unsubscribed from a channel.
    func unsubscribed(scope: String, environment: PushEnvironment, deviceID: String) {
        subscriptions.withLock { $0.remove(SubscriptionIndex.Channel(scope: scope, environment: environment), deviceID: deviceID) }
    }

    /// Hands a broadcast to every subscriber of its channel connected here, one delivery each
    /// (their sessions skip what they have in flight or acked). Returns how many were handed.
    @discardableResult
    func deliver(_ broadcast: StoredBroadcast) -> Int {
        let channel = SubscriptionIndex.Channel(scope: broadcast.subscriptionScope, environment: broadcast.environment)
        let subscribers = subscriptions.withLock { $0.subscribers(of: channel) }
        guard !subscribers.isEmpty else { return 0 }
        let deliveries = subscribers.map { broadcast.delivery(to: $0.value, deviceID: $0.key) }
        return deliveries.count - deliver(deliveries).count
    }

    /// Whether the device's session here is still the one with this cluster connection id.
    func holds(deviceID: String, connection: Int64) -> Bool {
        sessions.withLock { $0[deviceID]?.connection == connection }
    }

    /// The ids of the devices connected now.
    func connectedDeviceIDs() -> Set<String> { sessions.withLock { Set($0.keys) } }

    /// Hands each delivery to its device's session. Returns those whose device is not connected.
    func deliver(_ deliveries: [Delivery]) -> [Delivery] {
        var offline: [Delivery] = []
        var byLoop: [ObjectIdentifier: (EventLoop, [(Session, Delivery)])] = [:]
        sessions.withLock { sessions in
            for delivery in deliveries {
                guard let session = sessions[delivery.deviceID] else {
                    offline.append(delivery)
                    continue
                }
                byLoop[ObjectIdentifier(session.eventLoop), default: (session.eventLoop, [])].1.append((session, delivery))
            }
        }
        for (loop, items) in byLoop.values {
            loop.execute {
                for (session, delivery) in items { session.handler.value.offer(delivery) }
                for (session, _) in items { session.handler.value.flushIfNeeded() }
            }
        }
        return offline
    }

    /// The connected devices with their connections (what a node claims presence for).
    func presenceClaims() -> [PresenceClaim] {
        sessions.withLock { sessions in
            sessions.map { PresenceClaim(deviceID: $0.key, connection: $0.value.connection) }
        }
    }

    /// Closes these devices' sessions with an error frame saying why.
    func close(deviceIDs: some Sequence<String>, code: DeviceErrorCode, _ message: String) {
        let chosen = sessions.withLock { sessions in deviceIDs.compactMap { sessions[$0] } }
        for session in chosen {
            session.eventLoop.execute { session.handler.value.close(with: code, message) }
        }
    }

    /// Closes every session (a node that lost its cluster lease: its devices go to another node).
    func closeAll(code: DeviceErrorCode, _ message: String) {
        let all = sessions.withLock { Array($0.values) }
        for session in all {
            session.eventLoop.execute { session.handler.value.close(with: code, message) }
        }
    }

    /// Closes every session for a graceful stop, asking the devices to come back spread over
    /// ``reconnectWindow(devices:rate:)``.
    func closeAllForShutdown(reconnectRate: Int) {
        let all = sessions.withLock { Array($0.values) }
        let window = Self.reconnectWindow(devices: all.count, rate: reconnectRate)
        for session in all {
            session.eventLoop.execute {
                session.handler.value.close(with: .shutdown, "the gateway is shutting down; reconnect later", reconnectWithinMilliseconds: window)
            }
        }
    }

    /// The window, in milliseconds, over which `devices` devices reconnecting at random moments
    /// arrive at about `rate` a second: devices ÷ rate seconds, at most
    /// ``DeviceProtocol/maximumReconnectWithinMilliseconds``.
    static func reconnectWindow(devices: Int, rate: Int) -> Int64 {
        let milliseconds = Int64(devices) * 1_000 / Int64(max(1, rate))
        return min(milliseconds, Int64(DeviceProtocol.maximumReconnectWithinMilliseconds))
    }
}

/// The channel subscriptions of the connected devices, by channel and by device. Each device's
/// entries belong to its current session: a session that was replaced neither adds nor removes.
struct SubscriptionIndex {
    struct Channel: Hashable {
        /// The subscriptions' stored scope (``TokenScope/channelSubscriptions(bundleID:channel:)``).
        var scope: String
        var environment: PushEnvironment
    }

    private var byChannel: [Channel: [String: DeviceToken]] = [:]
    private var byDevice: [String: (session: ObjectIdentifier, channels: Set<Channel>)] = [:]

    /// A session of the device starts: what an earlier one indexed goes.
    mutating func start(deviceID: String, session: ObjectIdentifier) {
        clear(deviceID: deviceID)
        byDevice[deviceID] = (session, [])
    }

    /// The device's session `session` ended: its entries go, unless another session took over.
    mutating func end(deviceID: String, session: ObjectIdentifier) {
        guard byDevice[deviceID]?.session == session else { return }
        clear(deviceID: deviceID)
    }

    private mutating func clear(deviceID: String) {
        guard let entry = byDevice.removeValue(forKey: deviceID) else { return }
        for channel in entry.channels { remove(channel, deviceID: deviceID) }
    }

    mutating func add(_ registration: TokenRegistration, deviceID: String, session: ObjectIdentifier) {
        guard case .channel = registration.scope.kind, byDevice[deviceID]?.session == session else { return }
        let channel = Channel(scope: registration.scope.stored, environment: registration.environment)
        byChannel[channel, default: [:]][deviceID] = registration.token
        byDevice[deviceID]?.channels.insert(channel)
    }

    mutating func remove(_ channel: Channel, deviceID: String) {
        byChannel[channel]?[deviceID] = nil
        if byChannel[channel]?.isEmpty == true { byChannel[channel] = nil }
        byDevice[deviceID]?.channels.remove(channel)
    }

    /// The channel's subscribers: device id and subscription token.
    func subscribers(of channel: Channel) -> [String: DeviceToken] { byChannel[channel] ?? [:] }
}
