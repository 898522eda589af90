import HeraldCore
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// What happens on a device's connection, as its apps (and `herald device run`) see it: the
/// connection's own events, and every frame the gateway sends after the handshake as the protocol
/// defines it (one frame type per direction: ``DeviceServerFrame``).
public enum DeviceEvent: Sendable, Hashable {
    /// The first authenticated connection of this run. `enrolled` when it enrolled the device.
    case connected(deviceID: String, enrolled: Bool)
    /// Authenticated again after a disconnection.
    case reconnected(deviceID: String)
    /// The app's token differs from the one it had before (the app was reinstalled, or the
    /// device enrolled anew): its provider must be told. Comes just before the
    /// ``DeviceServerFrame/registered(topic:token:)`` frame that issued the new token.
    case tokenChanged(topic: String, previous: DeviceToken, current: DeviceToken)
    case disconnected(reason: String)
    /// A frame from the gateway: tokens issued and withdrawn (the app's, a Live Activity's, the
    /// widgets'), channel and Web Push subscriptions, notifications, error frames. Never a
    /// challenge or a welcome: the connection answers those itself (they become ``connected(deviceID:enrolled:)``
    /// and ``reconnected(deviceID:)``).
    ///
    /// A notification comes, with ``DeviceConnection/Acknowledgement/onReceipt``, once per
    /// apns-id (repeats after a reconnect are acked and dropped); with
    /// ``DeviceConnection/Acknowledgement/byConsumer``, every copy the gateway sends, until the
    /// consumer acks it with ``DeviceConnection/acknowledge(_:)``.
    case frame(DeviceServerFrame)
}

/// A device's connection to a gateway, kept for as long as ``run()`` runs: connects, answers the
/// challenge, registers its apps' topics, receives and acks notifications, and reconnects with
/// exponential backoff and jitter.
///
/// Tokens are never taken from a cache as truth: every connection asks the gateway for each
/// app's token again, and a token that differs from `knownTokens` (what the caller last saw,
/// e.g. in a previous launch) is reported as ``DeviceEvent/tokenChanged(topic:previous:current:)``.
public final class DeviceConnection: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// `nil` connects without TLS (tests of the protocol only; the gateway's device port is TLS).
        public var tls: NIOSSLContext?
        public var topics: [String]
        public var knownTokens: [String: DeviceToken]
        public var backoff: ReconnectBackoff
        public var acknowledgement: Acknowledgement
        /// Presented in every hello: what a gateway with closed enrollment asks of a new device.
        public var enrollmentSecret: String?
        /// Other gateway nodes of the same cluster (host, port), tried in turn after `host`:port
        /// when one is unreachable or its connection ends.
        public var alternates: [Endpoint] = []
        /// Time to connect, finish TLS and the upgrade, and hear the gateway's challenge; a
        /// gateway silent that long (a frozen node still accepting TCP) is given up for the next.
        public var handshakeTimeout: TimeAmount = .seconds(10)
        /// The source address to connect from (`nil`: the system's choice); load generators
        /// spread devices over several loopback addresses.
        public var localAddress: SocketAddress?

        /// Where a gateway's device port is.
        public struct Endpoint: Sendable, Hashable {
            public var host: String
            public var port: Int
            public init(host: String, port: Int) {
                self.host = host
                self.port = port
            }
        }

        public init(
            host: String, port: Int, tls: NIOSSLContext?, topics: [String], knownTokens: [String: DeviceToken] = [:],
            backoff: ReconnectBackoff = ReconnectBackoff(), acknowledgement: Acknowledgement = .onReceipt,
            enrollmentSecret: String? = nil, alternates: [Endpoint] = []
        ) {
            self.alternates = alternates
            self.acknowledgement = acknowledgement
            self.enrollmentSecret = enrollmentSecret
            self.host = host
            self.port = port
            self.tls = tls
            self.topics = topics
            self.knownTokens = knownTokens
            self.backoff = backoff
        }
    }

    /// When notifications are acked to the gateway.
    public enum Acknowledgement: Sendable {
        /// As soon as they are read, once per read burst; repeats are dropped in memory. For
        /// consumers with nothing to persist (tools, load generators).
        case onReceipt
        /// When the consumer calls ``DeviceConnection/acknowledge(_:)``: after it has handled the
        /// notification and persisted what it decided (the device runtime), so that a crash at any
        /// moment loses nothing — the gateway sends again what was not acked.
        case byConsumer
    }

    public let identity: DeviceIdentity
    public let configuration: Configuration
    /// The socket of the current session (acks go there) and the acks waiting to be sent.
    private let current = Locked<(socket: DeviceSocket?, acks: [NotificationID])>((nil, []))
    /// Live Activity tokens and channel subscriptions asked for while running: sent at once when
    /// connected, and again at every connection (like the apps' topics).
    private let wanted = Locked<[Want]>([])
    private let authenticated = Locked<DeviceSocket?>(nil)

    /// A token or subscription the device keeps for as long as it wants it (versions 2 and 3).
    public enum Want: Sendable, Hashable {
        case activityToken(topic: String, LiveActivityToken)
        /// The app's widget push token.
        case widgets(topic: String)
        case channel(topic: String, channel: String)
        /// Version 3: a Web Push subscription (`subscription`: its UUID), with the application
        /// server key its pushes must be signed with, if any.
        case webPush(topic: String, subscription: String, applicationServerKey: [UInt8]?)
        /// Version 4: the app's token of a PushKit kind.
        case pushKit(topic: String, PushKitKind)

        var registerFrame: DeviceClientFrame {
            switch self {
            case .activityToken(let topic, let activity): .registerActivity(topic: topic, activity: activity)
            case .widgets(let topic): .registerWidgets(topic: topic)
            case .channel(let topic, let channel): .subscribe(topic: topic, channel: channel)
            case .webPush(let topic, let subscription, let key): .webPushSubscribe(topic: topic, subscription: subscription, applicationServerKey: key)
            case .pushKit(let topic, let kind): .registerPushKit(topic: topic, kind: kind)
            }
        }

        var unregisterFrame: DeviceClientFrame {
            switch self {
            case .activityToken(let topic, let activity): .unregisterActivity(topic: topic, activity: activity)
            case .widgets(let topic): .unregisterWidgets(topic: topic)
            case .channel(let topic, let channel): .unsubscribe(topic: topic, channel: channel)
            case .webPush(let topic, let subscription, _): .webPushUnsubscribe(topic: topic, subscription: subscription)
            case .pushKit(let topic, let kind): .unregisterPushKit(topic: topic, kind: kind)
            }
        }
    }

    /// Asks for a Live Activity token or a channel subscription, now if connected and at every
    /// connection from now on.
    public func want(_ want: Want) {
        let isNew = wanted.withLock { list in
            guard !list.contains(want) else { return false }
            list.append(want)
            return true
        }
        if isNew, let socket = authenticated.withLock({ $0 }) { socket.send(want.registerFrame) }
    }

    /// Stops (`false`) or resumes (`true`) reading the current connection, as a frozen app or a
    /// device whose network is stalled: for tests and benchmarks of a gateway facing devices that
    /// do not read. What the gateway writes meanwhile waits in the kernel's buffers and then the
    /// gateway's (bounded there: past it the gateway closes the connection, `slow-consumer`).
    /// Returns once the change is applied on the connection's event loop.
    public func setReading(_ reading: Bool) async {
        guard let channel = current.withLock({ $0.socket })?.channel else { return }
        try? await channel.setOption(ChannelOptions.autoRead, value: reading).get()
        if reading { channel.eventLoop.execute { channel.read() } }
    }

    /// Gives up a token or subscription: the gateway unregisters it now if the device is
    /// connected, else at its next connection.
    public func drop(_ want: Want) {
        wanted.withLock { $0.removeAll { $0 == want } }
        if let socket = authenticated.withLock({ $0 }) {
            socket.send(want.unregisterFrame)
        } else {
            toDrop.withLock { $0.append(want) }
        }
    }
    private let toDrop = Locked<[Want]>([])
    /// Every event, in order. Finishes when ``run()`` returns.
    public let events: AsyncStream<DeviceEvent>
    private let continuation: AsyncStream<DeviceEvent>.Continuation
    private let logger: Logger
    private let group: EventLoopGroup

    /// How many apns-ids are remembered to drop repeats.
    public static let rememberedIDs = 16_384

    public init(
        identity: DeviceIdentity, configuration: Configuration,
        group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger
    ) {
        self.identity = identity
        self.configuration = configuration
        self.group = group
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream(of: DeviceEvent.self, bufferingPolicy: .unbounded)
    }

    /// Keeps the connection until the task is cancelled.
    public func run() async {
        var backoff = configuration.backoff
        var state = SessionState(knownTokens: configuration.knownTokens)
        let endpoints = [Configuration.Endpoint(host: configuration.host, port: configuration.port)] + configuration.alternates
        var next = 0
        var unreachableInARow = 0
        while !Task.isCancelled {
            var reason = "closed by the gateway"
            let endpoint = endpoints[next]
            // The next connection goes to the next gateway node (a load balancer's job, done here
            // for deployments without one).
            next = (next + 1) % endpoints.count
            do {
                let socket = try await DeviceSocket.connect(
                    host: endpoint.host, port: endpoint.port, tls: configuration.tls, group: group,
                    timeout: configuration.handshakeTimeout, acknowledgeOnReceipt: configuration.acknowledgement == .onReceipt,
                    localAddress: configuration.localAddress)
                unreachableInARow = 0
                current.withLock { $0 = (socket, []) }
                reason = await session(on: socket, state: &state, backoff: &backoff)
                current.withLock { $0 = (nil, []) }
                authenticated.withLock { $0 = nil }
                await socket.close()
            } catch {
                reason = "\(error)"
                unreachableInARow += 1
            }
            if Task.isCancelled { break }
            continuation.yield(.disconnected(reason: reason))
            // Another node not yet tried in this round is tried at once; after a whole round
            // unreachable, the backoff applies.
            if endpoints.count > 1, unreachableInARow % endpoints.count != 0 { continue }
            let delay: Int64
            if let window = state.reconnectWithin {
                state.reconnectWithin = nil
                delay = Int64.random(in: 0...max(0, window))
            } else {
                delay = backoff.nextDelay()
            }
            logger.debug("reconnecting", metadata: ["delay_ms": "\(delay)"])
            try? await Task.sleep(for: .milliseconds(delay))
        }
        continuation.finish()
    }

    struct SessionState {
        var knownTokens: [String: DeviceToken]
        var deviceID: String?
        var seen = Set<NotificationID>()
        var seenOrder: [NotificationID] = []
        var seenStart = 0
        /// Set by a `shutdown` frame's `reconnect-within`: the next attempt waits a random time up
        /// to this instead of the backoff's delay.
        var reconnectWithin: Int64?
        /// The ping interval the network keeps idle connections through, learned from how
        /// connections end (the next hello's `keepalive`).
        var keepalive = KeepaliveLearner()

        /// Remembers an id; `false` when it was seen already.
        mutating func remember(_ id: NotificationID) -> Bool {
            guard seen.insert(id).inserted else { return false }
            seenOrder.append(id)
            if seenOrder.count - seenStart > DeviceConnection.rememberedIDs {
                seen.remove(seenOrder[seenStart])
                seenStart += 1
                if seenStart > DeviceConnection.rememberedIDs {
                    seenOrder.removeFirst(seenStart)
                    seenStart = 0
                }
            }
            return true
        }
    }

    /// How long a connection may stay silent once the gateway announced its ping interval:
    /// twice the interval plus two seconds (an interval out of 1…86400 s is taken as 30 s).
    public static func silenceBound(pingIntervalSeconds: Int) -> TimeAmount {
        let interval = DeviceProtocol.keepaliveSeconds.contains(pingIntervalSeconds) ? Int64(pingIntervalSeconds) : 30
        return .seconds(2 * interval + 2)
    }

    /// One connection's life; returns why it ended.
    private func session(on socket: DeviceSocket, state: inout SessionState, backoff: inout ReconnectBackoff) async -> String {
        var reason = "closed by the gateway"
        var welcomedAt: ContinuousClock.Instant?
        var silent = false
        defer {
            let lived = welcomedAt.map { ContinuousClock.now - $0 }?.components.seconds ?? 0
            let before = state.keepalive.requestedSeconds
            state.keepalive.ended(silent: silent, livedSeconds: lived)
            if state.keepalive.requestedSeconds != before {
                logger.info("asking the gateway for another ping interval", metadata: [
                    "keepalive_s": "\(state.keepalive.requestedSeconds.map(String.init) ?? "the gateway's own")",
                    "because": "\(silent ? "the connection went silent" : "the connection lived long")"])
            }
        }
        for await event in socket.events {
            switch event {
            case .closed:
                authenticated.withLock { $0 = nil }
                return reason
            case .malformed(let message):
                logger.warning("malformed frame from the gateway", metadata: ["error": "\(message)"])
            case .timedOut(let message):
                reason = message
                silent = welcomedAt != nil
            case .frame(let frame):
                switch frame {
                case .challenge(_, let nonce):
                    do {
                        socket.send(try identity.hello(
                            nonce: nonce, enrollmentSecret: configuration.enrollmentSecret, keepaliveSeconds: state.keepalive.requestedSeconds))
                    } catch {
                        return "could not sign the challenge: \(error)"
                    }
                case .welcome(let deviceID, _, let enrolled, let pingInterval):
                    backoff.reset()
                    welcomedAt = .now
                    state.keepalive.welcomed(pingIntervalSeconds: pingInterval)
                    // The gateway writes at least every ping interval: silence for twice that
                    // (and two seconds of slack) means the node or the path to it is gone.
                    socket.expectTraffic(within: Self.silenceBound(pingIntervalSeconds: pingInterval))
                    continuation.yield(state.deviceID == nil ? .connected(deviceID: deviceID, enrolled: enrolled) : .reconnected(deviceID: deviceID))
                    state.deviceID = deviceID
                    for topic in configuration.topics { socket.send(.register(topic: topic)) }
                    authenticated.withLock { $0 = socket }
                    for want in wanted.withLock({ $0 }) { socket.send(want.registerFrame) }
                    for want in toDrop.withLock({ list in defer { list = [] }; return list }) { socket.send(want.unregisterFrame) }
                case .registered(let topic, let token):
                    if let previous = state.knownTokens[topic], previous != token {
                        continuation.yield(.tokenChanged(topic: topic, previous: previous, current: token))
                    }
                    state.knownTokens[topic] = token
                    continuation.yield(.frame(frame))
                case .notification(let notification):
                    switch configuration.acknowledgement {
                    case .onReceipt:
                        // The socket has acked it already (acks go out per read burst).
                        if state.remember(notification.apnsID) { continuation.yield(.frame(frame)) }
                    case .byConsumer:
                        continuation.yield(.frame(frame))
                    }
                case .unregistered(let topic, _):
                    state.knownTokens[topic] = nil
                    continuation.yield(.frame(frame))
                case .registeredActivity, .unregisteredActivity, .registeredWidgets, .unregisteredWidgets, .subscribed,
                     .unsubscribed, .webPushSubscribed, .webPushUnsubscribed, .registeredPushKit, .unregisteredPushKit:
                    continuation.yield(.frame(frame))
                case .error(let code, let message, let reconnectWithin):
                    if code.closesConnection { reason = "\(code.rawValue): \(message)" }
                    // A gateway stopping gracefully spreads its devices' return over a window.
                    if code == .shutdown, let reconnectWithin { state.reconnectWithin = reconnectWithin }
                    continuation.yield(.frame(frame))
                }
            }
        }
        return Task.isCancelled ? "stopped" : reason
    }

    /// Acks a notification the consumer has handled (``Acknowledgement/byConsumer``). Acks given
    /// together are sent in one frame; an ack given while disconnected is dropped, and the gateway
    /// sends the notification again on the next connection (the consumer drops the repeat).
    public func acknowledge(_ id: NotificationID) {
        let (socket, first) = current.withLock { state -> (DeviceSocket?, Bool) in
            guard state.socket != nil else { return (nil, false) }
            state.acks.append(id)
            return (state.socket, state.acks.count == 1)
        }
        guard let socket, first else { return }
        // The first ack of a burst sends everything gathered by the time the event loop runs it.
        socket.channel.eventLoop.execute { [current] in
            let ids = current.withLock { state -> [NotificationID] in
                defer { state.acks.removeAll(keepingCapacity: true) }
                return state.socket === socket ? state.acks : []
            }
            socket.acknowledge(ids)
        }
    }

    /// Connects once, authenticates, unregisters `topic` (the app was removed) and disconnects.
    /// Returns the unregistration timestamp.
    public static func unregister(
        topic: String, identity: DeviceIdentity, host: String, port: Int, tls: NIOSSLContext?,
        group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> Int64 {
        let socket = try await DeviceSocket.connect(host: host, port: port, tls: tls, group: group)
        defer { Task { await socket.close() } }
        for await event in socket.events {
            guard case .frame(let frame) = event else {
                if case .malformed(let message) = event { throw DeviceError("the gateway sent a malformed frame: \(message)") }
                break
            }
            switch frame {
            case .challenge(_, let nonce): socket.send(try identity.hello(nonce: nonce))
            case .welcome: socket.send(.unregister(topic: topic))
            case .unregistered(let unregisteredTopic, let at) where unregisteredTopic == topic:
                await socket.close()
                return at
            case .error(let code, let message, _):
                throw DeviceError("the gateway refused: \(code.rawValue): \(message)")
            default: continue
            }
        }
        throw DeviceError("the gateway closed the connection before confirming")
    }
}
