import Crypto
import HeraldCore
import HeraldStore

/// One device session's decisions, as a state machine: a frame from the device, a store result,
/// a timer or a delivery, at a given instant, goes in; what to do comes out. Pure: no event loop,
/// no I/O. ``DeviceSessionHandler`` carries out what it decides (writes frames, runs store work,
/// keeps the timers) and feeds the results back in. See `docs/device-protocol.md`.
///
/// The phases: the challenge is out and the hello awaited; the hello verified and the store asked
/// about the device; the device welcomed and what the store holds for it loading (deliveries that
/// arrive meanwhile wait); live; closed.
///
/// A browser on the Web Push port (``BrowserPushSessionHandler``, Mozilla's push protocol) is a
/// session too: it starts in ``Phase/awaitingBrowserHello`` (no challenge: its `hello` names a
/// uaid the handler checks with the store, ``browserHello()``), and from then on its delivery,
/// in-flight bound, acks, reloads and close are these.
struct DeviceSession {
    enum Phase: Hashable {
        case awaitingHello(nonce: String)
        /// A browser's session, before its `hello`.
        case awaitingBrowserHello
        case authenticating
        case loading(waiting: [Delivery])
        case live
        case closed
    }

    /// A notification written to the device and not yet acked.
    struct Sent: Hashable {
        var seq: Int64
        var sentAtMilliseconds: Int64
        var topic: String
        /// The trace the push came with (tracing on): its delivery span is recorded at the ack.
        var trace: Traces.Carrier? = nil
        /// For a broadcast's delivery (``Delivery/broadcastSeq``): the subscription it went to,
        /// whose acked broadcast the ack moves up.
        var subscription: DeviceToken? = nil

        /// What the store records for this send once the device acked it at `now`.
        func acked(at now: Int64) -> DeliveryEvent {
            if let subscription { return .broadcastAcked(seq: -seq, subscription: subscription, ackedAtMilliseconds: now) }
            return .acked(seq: seq, sentAtMilliseconds: sentAtMilliseconds, ackedAtMilliseconds: now)
        }
    }

    /// What a frame from the device asks of the handler.
    enum FrameAction: Hashable {
        /// Nothing to do (the session is closed).
        case none
        /// Answer with this frame (an error the session survives).
        case reply(DeviceServerFrame)
        /// Send an error frame, then close the WebSocket.
        case close(DeviceErrorCode, String)
        /// The hello verified: ask the store about the device (enroll it, or refuse it).
        case authenticate(deviceID: String, publicKey: [UInt8], enrollmentSecret: String?)
        /// Issue (or find) the device's token of this scope.
        case register(TokenScope)
        /// Unregister the device's token of this scope.
        case unregister(TokenScope)
        /// Subscribe to a channel if the app has it.
        case subscribe(topic: String, channel: BroadcastChannelID)
        /// Make (or find) a Web Push subscription of the app: a token of this scope, answered
        /// with its endpoint.
        case webPushSubscribe(TokenScope)
        /// Unsubscribe the app's Web Push subscription `subscription`.
        case webPushUnsubscribe(topic: String, subscription: String)
        /// Record these acks (``acknowledge(_:nowMilliseconds:)`` already removed them from flight).
        case acknowledged([Acked], reload: Bool)
    }

    /// One send the device acknowledged.
    struct Acked: Hashable {
        var apnsID: NotificationID
        var sent: Sent
    }

    /// What to do with a delivery offered to the session.
    enum OfferDecision: Hashable {
        /// Write it now (it is in flight from this instant).
        case send
        /// Nothing now: the session is not live (it waits while loading), it is already in
        /// flight, or the in-flight bound is reached (it stays held in the store and is loaded
        /// again once the device has acked enough).
        case notNow
        /// Over the background budget: held (the newest per app) until `untilMilliseconds`.
        /// `replacedSeq` is an older held push this one replaced.
        case held(topic: String, untilMilliseconds: Int64, replacedSeq: Int64?)
        /// Over the background budget and older than the push already held: replaced at once.
        case replaced(seq: Int64)
    }

    private(set) var phase: Phase
    private(set) var deviceID: String?
    /// The protocol version the device's hello named.
    private(set) var protocolVersion = 1
    /// The ping interval the device's hello asked for (`keepalive`), if it did.
    private(set) var requestedKeepaliveSeconds: Int?
    /// Sent and not yet acked, by apns-id (the same apns-id may go to several apps of the device).
    private var inFlight: [NotificationID: [Sent]] = [:]
    private var inFlightSeqs: Set<Int64> = []
    /// The latest acked sequence numbers: a snapshot of what the store holds (the cluster's
    /// sweep, a reload) read before an ack was recorded and offered after it would send the push
    /// again.
    private var recentlyAcked = RecentlyAcked()
    /// Background pushes over budget: the newest per topic.
    private var heldBackground: [String: Delivery] = [:]
    /// Deliveries were left held because the in-flight bound was reached: load them from the
    /// store again once the device has acked what it has.
    private var reloadWhenAcked = false
    private var reloading = false
    /// ``GatewayLimits/deviceInFlight``.
    let maximumInFlight: Int

    init(nonce: String, maximumInFlight: Int) {
        phase = .awaitingHello(nonce: nonce)
        self.maximumInFlight = maximumInFlight
    }

    /// A browser's session (Mozilla's push protocol on the Web Push port).
    init(browserWithMaximumInFlight maximumInFlight: Int) {
        phase = .awaitingBrowserHello
        self.maximumInFlight = maximumInFlight
    }

    /// A browser said `hello`: the store is asked about its uaid. `false` when it is not awaited
    /// (a second hello).
    mutating func browserHello() -> Bool {
        guard phase == .awaitingBrowserHello else { return false }
        phase = .authenticating
        return true
    }

    /// Welcomed and not closed: subscriptions may change.
    var isWelcomed: Bool {
        switch phase {
        case .loading, .live: true
        default: false
        }
    }

    var isClosed: Bool { phase == .closed }
    var inFlightCount: Int { inFlightSeqs.count }

    /// The challenge to send when the connection starts.
    var challenge: DeviceServerFrame? {
        guard case .awaitingHello(let nonce) = phase else { return nil }
        return .challenge(version: DeviceProtocol.version, nonce: nonce)
    }

    // MARK: frames from the device

    mutating func receive(_ frame: DeviceClientFrame, nowMilliseconds now: Int64) -> FrameAction {
        switch (phase, frame) {
        case (.closed, _): return .none
        case (.awaitingHello(let nonce), .hello(let version, let publicKey, let signature, let secret, let keepalive)):
            requestedKeepaliveSeconds = keepalive
            return hello(nonce: nonce, version: version, publicKey: publicKey, signature: signature, enrollmentSecret: secret)
        case (.awaitingHello, _), (.authenticating, _), (.awaitingBrowserHello, _):
            return .reply(.error(code: .notAuthenticated, message: "answer the challenge with a hello frame first"))
        case (_, .hello):
            return .reply(.error(code: .alreadyAuthenticated, message: "this connection is already authenticated"))
        case (_, let frame) where frame.minimumVersion > protocolVersion:
            return .reply(.error(
                code: frame.minimumVersion >= 4 ? .needsVersion4 : frame.minimumVersion >= 3 ? .needsVersion3 : .unsupportedFrameForVersion,
                message: "this frame is part of device protocol version \(frame.minimumVersion); say hello with that version"))
        case (_, .register(let topic)): return register(TokenScope(bundleID: topic))
        case (_, .unregister(let topic)): return .unregister(TokenScope(bundleID: topic))
        case (_, .registerActivity(let topic, let activity)): return register(TokenScope(bundleID: topic, activity: activity))
        case (_, .unregisterActivity(let topic, let activity)): return .unregister(TokenScope(bundleID: topic, activity: activity))
        case (_, .registerWidgets(let topic)): return register(TokenScope(bundleID: topic, kind: .widgets))
        case (_, .unregisterWidgets(let topic)): return .unregister(TokenScope(bundleID: topic, kind: .widgets))
        case (_, .registerPushKit(let topic, let kind)): return register(TokenScope(bundleID: topic, kind: .pushKit(kind)))
        case (_, .unregisterPushKit(let topic, let kind)): return .unregister(TokenScope(bundleID: topic, kind: .pushKit(kind)))
        case (_, .subscribe(let topic, let channel)):
            guard DeviceProtocol.isValidTopic(topic), let id = BroadcastChannelID(channel) else {
                return .reply(.error(code: .invalidTopic, message: "\"\(topic)\" is not a bundle id"))
            }
            return .subscribe(topic: topic, channel: id)
        case (_, .unsubscribe(let topic, let channel)): return .unregister(TokenScope(bundleID: topic, kind: .channel(channel)))
        case (_, .webPushSubscribe(let topic, let subscription, let key)):
            guard case .register(let scope) = register(TokenScope(
                bundleID: topic, kind: .webPush(channel: subscription, applicationServerKey: key.map(Base64URL.encode)))) else {
                return .reply(.error(code: .invalidTopic, message: "\"\(topic)\" is not a bundle id (printable ASCII, no spaces, no push-type suffix)"))
            }
            return .webPushSubscribe(scope)
        case (_, .webPushUnsubscribe(let topic, let subscription)):
            guard DeviceProtocol.isValidTopic(topic) else { return .reply(.error(code: .invalidTopic, message: "\"\(topic)\" is not a bundle id")) }
            return .webPushUnsubscribe(topic: topic, subscription: subscription)
        case (_, .ack(let ids)):
            let (acked, reload) = acknowledge(ids, nowMilliseconds: now)
            return .acknowledged(acked, reload: reload)
        }
    }

    private mutating func hello(nonce: String, version: Int, publicKey: [UInt8], signature: [UInt8], enrollmentSecret: String?) -> FrameAction {
        guard DeviceProtocol.supportedVersions.contains(version) else {
            return .close(.unsupportedVersion, "this gateway speaks versions \(DeviceProtocol.supportedVersions.lowerBound) to \(DeviceProtocol.supportedVersions.upperBound), not \(version)")
        }
        protocolVersion = version
        guard let key = try? P256.Signing.PublicKey(rawRepresentation: publicKey) else {
            return .close(.authenticationFailed, "public-key is not a raw P-256 public key (64 bytes, x ‖ y)")
        }
        guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
              key.isValidSignature(ecdsa, for: DeviceProtocol.challengeMessage(nonce: nonce)) else {
            return .close(.authenticationFailed, "the signature does not verify against the challenge and public key")
        }
        phase = .authenticating
        return .authenticate(deviceID: DeviceProtocol.deviceID(publicKey: publicKey), publicKey: publicKey, enrollmentSecret: enrollmentSecret)
    }

    private func register(_ scope: TokenScope) -> FrameAction {
        guard DeviceProtocol.isValidTopic(scope.bundleID) else {
            return .reply(.error(code: .invalidTopic, message: "\"\(scope.bundleID)\" is not a bundle id (printable ASCII, no spaces, no push-type suffix)"))
        }
        return .register(scope)
    }

    // MARK: authentication and loading

    /// The store knows the device now: it is welcomed and what is stored for it loads. Returns
    /// `false` when the session is no longer authenticating (it closed meanwhile).
    mutating func welcomed(deviceID: String) -> Bool {
        guard case .authenticating = phase else { return false }
        self.deviceID = deviceID
        phase = .loading(waiting: [])
        return true
    }

    /// What the store held for the device arrived at `now`: the session is live. Returns what to
    /// offer, in order (the stored ones, then those that arrived while loading, by sequence
    /// number), or `nil` when the session is not loading.
    mutating func loaded(_ stored: [Delivery], nowMilliseconds now: Int64) -> [Delivery]? {
        guard case .loading(let waiting) = phase else { return nil }
        phase = .live
        liveSinceMilliseconds = now
        return stored + waiting.sorted { $0.seq < $1.seq }
    }

    /// When the session went live (its store load returned).
    private(set) var liveSinceMilliseconds: Int64?
    /// Whether a delivery ever waited for the in-flight bound (a backlog drained as acks come):
    /// waits are the device's pace then, not a lost offer.
    private var deferredForInFlight = false

    /// How long a delivery sent now waited, held for this live session, before it was offered:
    /// from when it was accepted, or when the session went live if later. The gateway's own
    /// invariant (issue 63): an alert past ``GatewayLimits/lateOfferBound`` here was held for a
    /// connected device and not offered (a lost hint, a sweep that skipped it). Background pushes
    /// wait for their budget on purpose, and a session that drained a backlog at its device's
    /// pace (the in-flight bound) waited on purpose: neither is counted (nil).
    func waited(_ delivery: Delivery, nowMilliseconds now: Int64) -> Int64? {
        guard delivery.notification.pushType != .background, !deferredForInFlight, let live = liveSinceMilliseconds else { return nil }
        return max(0, now - max(live, delivery.notification.receivedAtMilliseconds))
    }

    // MARK: delivery

    /// Decides what happens to a delivery now. `throttle` is the background budget (`nil`: not
    /// throttled).
    mutating func offer(_ delivery: Delivery, nowMilliseconds now: Int64, throttle: BackgroundThrottle?) -> OfferDecision {
        switch phase {
        case .loading(var waiting):
            waiting.append(delivery)
            phase = .loading(waiting: waiting)
            return .notNow
        case .live: break
        default: return .notNow
        }
        guard !inFlightSeqs.contains(delivery.seq), !recentlyAcked.contains(delivery.seq) else { return .notNow }
        guard inFlightSeqs.count < maximumInFlight else {
            reloadWhenAcked = true
            deferredForInFlight = true
            return .notNow
        }
        let n = delivery.notification
        if n.pushType == .background, let throttle,
           let nextAt = throttle.take(deviceID: delivery.deviceID, topic: n.bundleID, nowMilliseconds: now) {
            return hold(delivery, until: nextAt)
        }
        inFlight[n.id, default: []].append(Sent(
            seq: delivery.seq, sentAtMilliseconds: now, topic: n.bundleID, trace: n.trace,
            subscription: delivery.broadcastSeq == nil ? nil : n.token))
        inFlightSeqs.insert(delivery.seq)
        return .send
    }

    private mutating func hold(_ delivery: Delivery, until nextAt: Int64) -> OfferDecision {
        let topic = delivery.notification.bundleID
        var replaced: Int64?
        if let older = heldBackground[topic], older.seq != delivery.seq {
            if older.seq > delivery.seq { return .replaced(seq: delivery.seq) }
            replaced = older.seq
        }
        heldBackground[topic] = delivery
        return .held(topic: topic, untilMilliseconds: nextAt, replacedSeq: replaced)
    }

    /// Nothing was written to the device for a ping interval: the acks remembered against
    /// snapshots read before them are long past every snapshot's store round trip.
    mutating func quiet() {
        recentlyAcked = RecentlyAcked()
    }

    /// The release timer of `topic` fired: the push held for it, to offer again.
    mutating func release(topic: String) -> Delivery? {
        heldBackground.removeValue(forKey: topic)
    }

    /// The app's token of `stored` was unregistered: the push held for it, now dropped.
    mutating func unregistered(stored: String) -> Delivery? {
        heldBackground.removeValue(forKey: stored)
    }

    /// Takes acked sends out of flight. `reload` says the handler should load from the store
    /// again (deliveries were left there at the in-flight bound and half of it is free now); the
    /// session then counts as reloading until ``reloaded(_:)``.
    mutating func acknowledge(_ ids: [NotificationID], nowMilliseconds now: Int64) -> (acked: [Acked], reload: Bool) {
        var acked: [Acked] = []
        for id in ids {
            guard let sends = inFlight.removeValue(forKey: id) else { continue }
            for sent in sends {
                inFlightSeqs.remove(sent.seq)
                recentlyAcked.insert(sent.seq)
                acked.append(Acked(apnsID: id, sent: sent))
            }
        }
        guard reloadWhenAcked, inFlightSeqs.count <= maximumInFlight / 2, !reloading, phase == .live, deviceID != nil else {
            return (acked, false)
        }
        reloadWhenAcked = false
        reloading = true
        return (acked, true)
    }

    /// The reload asked for by ``acknowledge(_:nowMilliseconds:)`` finished: what to offer again.
    mutating func reloaded(_ stored: [Delivery]?) -> [Delivery] {
        reloading = false
        guard phase == .live else { return [] }
        return stored ?? []
    }

    /// Closes the session. Returns what was sent and not acked (to record as sent: it stays held
    /// and goes again on the next connection), or `nil` when it was closed already.
    mutating func close() -> [Sent]? {
        if phase == .closed { return nil }
        phase = .closed
        let unacked = inFlight.values.flatMap { $0 }
        inFlight = [:]
        inFlightSeqs = []
        heldBackground = [:]
        return unacked
    }
}
