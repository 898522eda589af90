import Crypto
import Foundation
import HeraldCore
@testable import HeraldGateway
import HeraldStore
import Testing

/// The device session's state machine, pure: frames, store results, timers and deliveries at
/// fixed instants, and what it decides.
@Suite("Device session: the state machine at fixed instants")
struct DeviceSessionTests {
    static let nonce = "bm9uY2Utbm9uY2Utbm9uY2Utbm9uY2Utbm9uY2U="
    static let topic = "com.example.app"

    static func hello(_ key: P256.Signing.PrivateKey = .init(), version: Int = DeviceProtocol.supportedVersions.upperBound, nonce: String = nonce) throws -> DeviceClientFrame {
        let signature = try key.signature(for: DeviceProtocol.challengeMessage(nonce: nonce))
        return .hello(version: version, publicKey: Array(key.publicKey.rawRepresentation), signature: Array(signature.rawRepresentation))
    }

    static func delivery(
        _ seq: Int64, pushType: PushType = .alert, topic: String = topic, apnsID: NotificationID = .random(), deviceID: String = "device"
    ) -> Delivery {
        Delivery(seq: seq, deviceID: deviceID, notification: StoredNotification(
            id: apnsID, token: .random(), bundleID: topic, pushType: pushType, priority: .immediate,
            expiration: .unspecified, collapseID: nil, payload: Array(#"{"aps":{}}"#.utf8), receivedAtMilliseconds: 0))
    }

    /// A session that said hello and was welcomed, and whose store load returned nothing.
    static func live(maximumInFlight: Int = 8) throws -> DeviceSession {
        var session = DeviceSession(nonce: nonce, maximumInFlight: maximumInFlight)
        guard case .authenticate(let deviceID, _, _) = session.receive(try hello(), nowMilliseconds: 0) else {
            Issue.record("the hello was not accepted")
            return session
        }
        expectTrue(session.welcomed(deviceID: deviceID))
        expectEqual(session.loaded([], nowMilliseconds: 0), [])
        expectEqual(session.phase, .live)
        return session
    }

    @Test("the challenge goes out first; only a hello with a supported version, a P-256 key and a signature of the nonce is accepted")
    func hello() throws {
        var session = DeviceSession(nonce: Self.nonce, maximumInFlight: 8)
        expectEqual(session.challenge, .challenge(version: DeviceProtocol.version, nonce: Self.nonce))
        expectEqual(session.receive(.register(topic: Self.topic), nowMilliseconds: 0), .reply(.error(code: .notAuthenticated, message: "answer the challenge with a hello frame first")))

        guard case .close(.unsupportedVersion, _) = session.receive(try Self.hello(version: 99), nowMilliseconds: 0) else {
            Issue.record("version 99 was not refused")
            return
        }
        let wrongNonce = try Self.hello(nonce: "another")
        expectEqual(session.receive(wrongNonce, nowMilliseconds: 0), .close(.authenticationFailed, "the signature does not verify against the challenge and public key"))
        expectEqual(session.receive(.hello(version: 1, publicKey: [1, 2, 3], signature: []), nowMilliseconds: 0), .close(.authenticationFailed, "public-key is not a raw P-256 public key (64 bytes, x ‖ y)"))

        let key = P256.Signing.PrivateKey()
        let action = session.receive(try Self.hello(key, version: 1), nowMilliseconds: 0)
        let publicKey = Array(key.publicKey.rawRepresentation)
        #expect(action == .authenticate(deviceID: DeviceProtocol.deviceID(publicKey: publicKey), publicKey: publicKey, enrollmentSecret: nil))
        #expect(session.phase == .authenticating && session.protocolVersion == 1)
        // While the store is asked, frames still wait for authentication.
        expectEqual(session.receive(.ack(ids: []), nowMilliseconds: 0), .reply(.error(code: .notAuthenticated, message: "answer the challenge with a hello frame first")))
        expectTrue(session.welcomed(deviceID: "d"))
        expectEqual(session.receive(try Self.hello(), nowMilliseconds: 0), .reply(.error(code: .alreadyAuthenticated, message: "this connection is already authenticated")))
        // Version 1 has no channels.
        expectEqual(session.receive(.subscribe(topic: Self.topic, channel: BroadcastChannelID.random().value), nowMilliseconds: 0), .reply(.error(code: .unsupportedFrameForVersion, message: "this frame is part of device protocol version 2; say hello with that version")))
    }

    @Test("topics are checked before the store is asked; a closed session does nothing")
    func topics() throws {
        var session = try Self.live()
        expectEqual(session.receive(.register(topic: Self.topic), nowMilliseconds: 0), .register(TokenScope(bundleID: Self.topic)))
        guard case .reply(.error(.invalidTopic, _, _)) = session.receive(.register(topic: "com.example.app.voip"), nowMilliseconds: 0) else {
            Issue.record("a push-type suffix was accepted as a topic")
            return
        }
        expectEqual(session.receive(.subscribe(topic: Self.topic, channel: "not-a-channel"), nowMilliseconds: 0), .reply(.error(code: .invalidTopic, message: "\"\(Self.topic)\" is not a bundle id")))
        let channel = BroadcastChannelID.random()
        expectEqual(session.receive(.subscribe(topic: Self.topic, channel: channel.value), nowMilliseconds: 0), .subscribe(topic: Self.topic, channel: channel))
        expectEqual(session.receive(.unsubscribe(topic: Self.topic, channel: channel.value), nowMilliseconds: 0), .unregister(TokenScope(bundleID: Self.topic, kind: .channel(channel.value))))
        expectEqual(session.close(), [])
        expectEqual(session.close(), nil)
        expectEqual(session.receive(.register(topic: Self.topic), nowMilliseconds: 0), .none)
        expectEqual(session.offer(Self.delivery(1), nowMilliseconds: 0, throttle: nil), .notNow)
    }

    @Test("version 3: Web Push subscriptions are a scope of the app (with the key, base64url); version 2 is told it needs version 3")
    func webPushSubscriptions() throws {
        var session = try Self.live()
        let subscription = "0f8e3a52-6c1d-4b7e-9a2f-5d3c1b0e7a64"
        let key = Array(P256.Signing.PrivateKey().publicKey.x963Representation)
        expectEqual(
            session.receive(.webPushSubscribe(topic: Self.topic, subscription: subscription, applicationServerKey: key), nowMilliseconds: 0),
            .webPushSubscribe(TokenScope(bundleID: Self.topic, kind: .webPush(channel: subscription, applicationServerKey: Base64URL.encode(key)))))
        expectEqual(
            session.receive(.webPushSubscribe(topic: Self.topic, subscription: subscription, applicationServerKey: nil), nowMilliseconds: 0),
            .webPushSubscribe(TokenScope(bundleID: Self.topic, kind: .webPush(channel: subscription, applicationServerKey: nil))))
        expectEqual(
            session.receive(.webPushUnsubscribe(topic: Self.topic, subscription: subscription), nowMilliseconds: 0),
            .webPushUnsubscribe(topic: Self.topic, subscription: subscription))
        guard case .reply(.error(.invalidTopic, _, _)) = session.receive(.webPushSubscribe(topic: "a b", subscription: subscription, applicationServerKey: nil), nowMilliseconds: 0) else {
            Issue.record("an invalid topic was accepted for a Web Push subscription")
            return
        }

        var older = DeviceSession(nonce: Self.nonce, maximumInFlight: 8)
        _ = older.receive(try Self.hello(version: 2), nowMilliseconds: 0)
        expectTrue(older.welcomed(deviceID: "d"))
        expectEqual(
            older.receive(.webPushSubscribe(topic: Self.topic, subscription: subscription, applicationServerKey: nil), nowMilliseconds: 0),
            .reply(.error(code: .needsVersion3, message: "this frame is part of device protocol version 3; say hello with that version")))
    }

    @Test("version 4: a PushKit token's register and unregister carry its scope; a version 3 hello is told to say 4; an app topic cannot be a PushKit scope")
    func pushKitTokens() throws {
        var session = DeviceSession(nonce: Self.nonce, maximumInFlight: 8)
        _ = session.receive(try Self.hello(version: 4), nowMilliseconds: 0)
        expectTrue(session.welcomed(deviceID: "d"))
        expectEqual(session.receive(.registerPushKit(topic: Self.topic, kind: .voip), nowMilliseconds: 0), .register(TokenScope(bundleID: Self.topic, kind: .pushKit(.voip))))
        expectEqual(session.receive(.unregisterPushKit(topic: Self.topic, kind: .pushToTalk), nowMilliseconds: 0), .unregister(TokenScope(bundleID: Self.topic, kind: .pushKit(.pushToTalk))))
        guard case .reply(.error(.invalidTopic, _, _)) = session.receive(.register(topic: Self.topic + ".pushkit/voip"), nowMilliseconds: 0) else {
            Issue.record("an app topic that reads as a PushKit scope was accepted")
            return
        }
        var older = DeviceSession(nonce: Self.nonce, maximumInFlight: 8)
        _ = older.receive(try Self.hello(version: 3), nowMilliseconds: 0)
        expectTrue(older.welcomed(deviceID: "d"))
        expectEqual(
            older.receive(.registerPushKit(topic: Self.topic, kind: .location), nowMilliseconds: 0),
            .reply(.error(code: .needsVersion4, message: "this frame is part of device protocol version 4; say hello with that version")))
    }

    @Test("deliveries that arrive while the store loads wait, and follow the stored ones in sequence order")
    func loading() throws {
        var session = DeviceSession(nonce: Self.nonce, maximumInFlight: 8)
        _ = session.receive(try Self.hello(), nowMilliseconds: 0)
        let early = Self.delivery(9)
        expectEqual(session.offer(early, nowMilliseconds: 0, throttle: nil), .notNow)  // not welcomed yet: dropped, the store has it
        expectTrue(session.welcomed(deviceID: "device"))
        let late = Self.delivery(12), middle = Self.delivery(11)
        expectEqual(session.offer(late, nowMilliseconds: 0, throttle: nil), .notNow)
        expectEqual(session.offer(middle, nowMilliseconds: 0, throttle: nil), .notNow)
        let stored = [Self.delivery(3), Self.delivery(10)]
        expectEqual(session.loaded(stored, nowMilliseconds: 0), stored + [middle, late])
        expectEqual(session.loaded([], nowMilliseconds: 0), nil)
    }

    @Test("at the in-flight bound deliveries stay in the store; acks that free half of it ask for one reload")
    func inFlightBound() throws {
        var session = try Self.live(maximumInFlight: 4)
        let sent = (1...4).map { Self.delivery(Int64($0)) }
        for delivery in sent { expectEqual(session.offer(delivery, nowMilliseconds: 100, throttle: nil), .send) }
        expectEqual(session.offer(sent[0], nowMilliseconds: 100, throttle: nil), .notNow)  // already in flight
        expectEqual(session.offer(Self.delivery(5), nowMilliseconds: 100, throttle: nil), .notNow)  // over the bound
        expectEqual(session.inFlightCount, 4)

        let one = session.acknowledge([sent[0].notification.id, .random()], nowMilliseconds: 150)
        #expect(one.acked == [.init(apnsID: sent[0].notification.id, sent: .init(seq: 1, sentAtMilliseconds: 100, topic: Self.topic))])
        #expect(!one.reload)  // 3 in flight: more than half
        let two = session.receive(.ack(ids: [sent[1].notification.id]), nowMilliseconds: 160)
        guard case .acknowledged(let acked, reload: true) = two else {
            Issue.record("half the bound free did not ask for a reload: \(two)")
            return
        }
        #expect(acked.map(\.sent.seq) == [2])
        expectTrue(!session.acknowledge([sent[2].notification.id], nowMilliseconds: 170).reload)  // one reload at a time
        expectEqual(session.reloaded([Self.delivery(4), Self.delivery(5)]).map(\.seq), [4, 5])
        expectEqual(session.offer(Self.delivery(4), nowMilliseconds: 180, throttle: nil), .notNow)
        expectEqual(session.offer(Self.delivery(5), nowMilliseconds: 180, throttle: nil), .send)
        expectEqual(session.close()?.map(\.seq).sorted(), [4, 5])
    }

    @Test("a snapshot of the store read before an ack (the sweep's, a reload's) does not send the acked push again; the memory is bounded and released when quiet")
    func staleSnapshot() throws {
        var session = try Self.live(maximumInFlight: 1_000)
        let first = Self.delivery(1)
        expectEqual(session.offer(first, nowMilliseconds: 10, throttle: nil), .send)
        // The sweep reads seq 1 as held; the device's ack arrives before the sweep offers it.
        expectEqual(session.acknowledge([first.notification.id], nowMilliseconds: 20).acked.map(\.sent.seq), [1])
        expectEqual(session.offer(first, nowMilliseconds: 30, throttle: nil), .notNow)

        // Only the latest RecentlyAcked.capacity acks are remembered: the oldest goes again.
        let many = (2...Int64(RecentlyAcked.capacity + 1)).map { Self.delivery($0) }
        for delivery in many { expectEqual(session.offer(delivery, nowMilliseconds: 40, throttle: nil), .send) }
        expectEqual(session.acknowledge(many.map(\.notification.id), nowMilliseconds: 50).acked.count, many.count)
        expectEqual(session.offer(first, nowMilliseconds: 60, throttle: nil), .send)
        expectEqual(session.offer(many[0], nowMilliseconds: 60, throttle: nil), .notNow)

        session.quiet()
        expectEqual(session.offer(many[0], nowMilliseconds: 70, throttle: nil), .send)
    }

    @Test("one apns-id sent to two apps of the device is acked for both")
    func sameIDTwice() throws {
        var session = try Self.live()
        let id = NotificationID.random()
        expectEqual(session.offer(Self.delivery(1, topic: "com.example.a", apnsID: id), nowMilliseconds: 5, throttle: nil), .send)
        expectEqual(session.offer(Self.delivery(2, topic: "com.example.b", apnsID: id), nowMilliseconds: 6, throttle: nil), .send)
        let acked = session.acknowledge([id], nowMilliseconds: 9).acked
        #expect(acked.map(\.sent.topic) == ["com.example.a", "com.example.b"])
        expectEqual(session.inFlightCount, 0)
    }

    @Test("background pushes over budget: the newest per app is held until the budget allows, older ones are replaced")
    func backgroundHold() throws {
        var session = try Self.live()
        let throttle = BackgroundThrottle(budget: .init(count: 1, windowMilliseconds: 60_000))
        expectEqual(session.offer(Self.delivery(1, pushType: .background), nowMilliseconds: 0, throttle: throttle), .send)
        expectEqual(session.offer(Self.delivery(3, pushType: .background), nowMilliseconds: 1_000, throttle: throttle), .held(topic: Self.topic, untilMilliseconds: 60_000, replacedSeq: nil))
        expectEqual(session.offer(Self.delivery(2, pushType: .background), nowMilliseconds: 2_000, throttle: throttle), .replaced(seq: 2))
        let newest = Self.delivery(4, pushType: .background)
        expectEqual(session.offer(newest, nowMilliseconds: 3_000, throttle: throttle), .held(topic: Self.topic, untilMilliseconds: 60_000, replacedSeq: 3))
        // An alert is not throttled.
        expectEqual(session.offer(Self.delivery(5), nowMilliseconds: 3_000, throttle: throttle), .send)
        expectEqual(session.release(topic: Self.topic), newest)
        expectEqual(session.release(topic: Self.topic), nil)
        expectEqual(session.offer(newest, nowMilliseconds: 60_000, throttle: throttle), .send)

        expectEqual(session.offer(Self.delivery(6, pushType: .background), nowMilliseconds: 61_000, throttle: throttle), .held(topic: Self.topic, untilMilliseconds: 120_000, replacedSeq: nil))
        expectEqual(session.unregistered(stored: Self.topic)?.seq, 6)
        expectEqual(session.release(topic: Self.topic), nil)
    }

    @Test("how long an alert waited, held for a live session, before it was offered (the late-offer invariant)")
    func waitedBeforeOffered() throws {
        var session = DeviceSession(nonce: Self.nonce, maximumInFlight: 1)
        guard case .authenticate(let deviceID, _, _) = session.receive(try Self.hello(), nowMilliseconds: 0) else {
            Issue.record("the hello was not accepted")
            return
        }
        expectTrue(session.welcomed(deviceID: deviceID))
        #expect(session.waited(Self.delivery(1), nowMilliseconds: 5_000) == nil, "not live yet")
        _ = session.loaded([], nowMilliseconds: 10_000)
        // Accepted before the session went live: counted from then; accepted later: from its acceptance.
        #expect(session.waited(Self.delivery(1), nowMilliseconds: 10_400) == 400)
        var late = Self.delivery(2)
        late.notification.receivedAtMilliseconds = 12_000
        #expect(session.waited(late, nowMilliseconds: 25_000) == 13_000)
        #expect(session.waited(Self.delivery(3, pushType: .background), nowMilliseconds: 25_000) == nil, "background pushes wait for their budget")
        // A backlog drained at the device's pace (the in-flight bound reached) is not counted.
        #expect(session.offer(Self.delivery(4), nowMilliseconds: 25_000, throttle: nil) == .send)
        #expect(session.offer(Self.delivery(5), nowMilliseconds: 25_000, throttle: nil) == .notNow)
        #expect(session.waited(late, nowMilliseconds: 30_000) == nil)
    }
}

/// `#expect` cannot call a mutating method inside its expression: the value is taken first.
private func expectEqual<T: Equatable>(_ value: T, _ expected: T, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(value == expected, sourceLocation: sourceLocation)
}

private func expectTrue(_ value: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(value, sourceLocation: sourceLocation)
}
