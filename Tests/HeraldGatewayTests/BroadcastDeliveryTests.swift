import Foundation
import HeraldCore
@testable import HeraldGateway
import HeraldStore
import NIOCore
import NIOEmbedded
import Testing

/// A broadcast's way through a node (issue 66), without sockets: the subscription index a
/// broadcast finds its connected subscribers in, and the session's send and ack of a broadcast
/// delivery, at fixed instants.
@Suite("Broadcasts: the subscription index and the session")
struct BroadcastDeliveryTests {
    let channel = BroadcastChannelID("AAAAAAAAAAAAAAAAAAAAAA==")!

    func subscription(_ device: String, channel: BroadcastChannelID? = nil) -> TokenRegistration {
        TokenRegistration(
            token: .random(), scope: TokenScope(bundleID: "com.a", kind: .channel((channel ?? self.channel).value)),
            environment: .development, deviceID: device, createdAtMilliseconds: 0)
    }

    var key: SubscriptionIndex.Channel {
        .init(scope: TokenScope.channelSubscriptions(bundleID: "com.a", channel: channel.value), environment: .development)
    }

    final class Handle {}

    @Test("the index holds each device's subscriptions for its current session only: a replaced session neither adds nor removes")
    func indexFollowsTheSession() {
        var index = SubscriptionIndex()
        // Both alive for the whole test: a freed object's address (its identifier) may be reused.
        let handles = (Handle(), Handle())
        let first = ObjectIdentifier(handles.0), second = ObjectIdentifier(handles.1)
        defer { withExtendedLifetime(handles) {} }
        let d1 = subscription("d1"), d2 = subscription("d2")
        index.start(deviceID: "d1", session: first)
        index.start(deviceID: "d2", session: first)
        index.add(d1, deviceID: "d1", session: first)
        index.add(d2, deviceID: "d2", session: first)
        index.add(TokenRegistration(token: .random(), scope: TokenScope(bundleID: "com.a"), environment: .development, createdAtMilliseconds: 0),
                  deviceID: "d1", session: first)
        #expect(index.subscribers(of: key) == ["d1": d1.token, "d2": d2.token], "channel subscriptions only")

        // d1 connects again: its new session starts before the old one's end is seen.
        index.start(deviceID: "d1", session: second)
        #expect(index.subscribers(of: key) == ["d2": d2.token], "the new session indexes its own, from the store")
        index.add(d1, deviceID: "d1", session: first)
        #expect(index.subscribers(of: key)["d1"] == nil, "the replaced session adds nothing")
        index.add(d1, deviceID: "d1", session: second)
        index.end(deviceID: "d1", session: first)
        #expect(index.subscribers(of: key)["d1"] == d1.token, "the replaced session's end removes nothing")
        index.remove(key, deviceID: "d1")
        #expect(index.subscribers(of: key) == ["d2": d2.token])
        index.end(deviceID: "d2", session: first)
        #expect(index.subscribers(of: key).isEmpty)
    }

    @Test("a broadcast's delivery goes by its negated sequence; its ack moves the subscription's acked broadcast, an unacked one records nothing at close")
    func sessionAcks() throws {
        var session = try DeviceSessionTests.live()
        let subscription = subscription("device")
        let broadcast = StoredBroadcast(
            seq: 41, bundleID: "com.a", channel: channel, environment: .development, id: .random(), priority: .immediate,
            expiration: .unspecified, payload: Array("{}".utf8), receivedAtMilliseconds: 0)
        let delivery = broadcast.delivery(to: subscription.token, deviceID: "device")
        #expect(delivery.seq == -41 && delivery.broadcastSeq == 41)
        #expect(session.offer(delivery, nowMilliseconds: 10, throttle: nil) == .send)
        #expect(session.offer(delivery, nowMilliseconds: 11, throttle: nil) == .notNow, "in flight already")
        // A held notification numbered 41 too is another delivery.
        #expect(session.offer(DeviceSessionTests.delivery(41), nowMilliseconds: 12, throttle: nil) == .send)
        let acked = session.acknowledge([broadcast.id], nowMilliseconds: 20).acked
        #expect(acked.map { $0.sent.acked(at: 20) } == [.broadcastAcked(seq: 41, subscription: subscription.token, ackedAtMilliseconds: 20)])
        #expect(session.offer(delivery, nowMilliseconds: 30, throttle: nil) == .notNow, "acked: not sent again")

        let next = StoredBroadcast(
            seq: 42, bundleID: "com.a", channel: channel, environment: .development, id: .random(), priority: .immediate,
            expiration: .unspecified, payload: Array("{}".utf8), receivedAtMilliseconds: 0)
        #expect(session.offer(next.delivery(to: subscription.token, deviceID: "device"), nowMilliseconds: 40, throttle: nil) == .send)
        let unacked = session.close() ?? []
        #expect(unacked.filter { $0.subscription != nil }.map(\.seq) == [-42], "the leave records only the held notification as sent")
    }

    /// A session that records what it is offered.
    final class OfferedSession: DeliverySession {
        var offered: [Delivery] = []
        func offer(_ delivery: Delivery) { offered.append(delivery) }
        func flushIfNeeded() {}
        func close(with code: DeviceErrorCode, _ message: String, reconnectWithinMilliseconds: Int64?) {}
    }

    @Test("the registry hands a broadcast to the connected subscribers of its channel, in its environment, and forgets a session that ends")
    func registryFanOut() {
        let registry = DeviceRegistry()
        let loop = EmbeddedEventLoop()
        let sessions = ["d1": OfferedSession(), "d2": OfferedSession(), "d3": OfferedSession()]
        for (device, session) in sessions {
            registry.register(deviceID: device, session: .init(
                id: ObjectIdentifier(session), connection: 1, handler: NIOLoopBound<any DeliverySession>(session, eventLoop: loop)))
        }
        let s1 = subscription("d1"), s2 = subscription("d2")
        registry.subscribed([s1], deviceID: "d1", sessionID: ObjectIdentifier(sessions["d1"]!))
        registry.subscribed([s2], deviceID: "d2", sessionID: ObjectIdentifier(sessions["d2"]!))
        registry.subscribed([subscription("d3", channel: BroadcastChannelID("AQEBAQEBAQEBAQEBAQEBAQ==")!)], deviceID: "d3", sessionID: ObjectIdentifier(sessions["d3"]!))
        var broadcast = StoredBroadcast(
            seq: 7, bundleID: "com.a", channel: channel, environment: .development, id: .random(), priority: .immediate,
            expiration: .unspecified, payload: Array("{}".utf8), receivedAtMilliseconds: 0)
        #expect(registry.deliver(broadcast) == 2)
        loop.run()
        #expect(sessions["d1"]!.offered.map(\.seq) == [-7] && sessions["d1"]!.offered.first?.notification.token == s1.token)
        #expect(sessions["d2"]!.offered.first?.notification.token == s2.token)
        #expect(sessions["d3"]!.offered.isEmpty, "another channel's subscriber")
        broadcast.environment = .production
        #expect(registry.deliver(broadcast) == 0, "another environment's channel")
        registry.remove(deviceID: "d1", sessionID: ObjectIdentifier(sessions["d1"]!))
        broadcast.environment = .development
        #expect(registry.deliver(broadcast) == 1, "d1's session ended")
        registry.unsubscribed(scope: key.scope, environment: .development, deviceID: "d2")
        #expect(registry.deliver(broadcast) == 0, "d2 unsubscribed")
    }
}
