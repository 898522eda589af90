import Foundation
import HeraldCore
@testable import HeraldGateway
import HeraldStore
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

/// The browser's push session (Mozilla's protocol on the Web Push port), driven frame by frame
/// without sockets against an in-memory store, as ``DeviceSessionHandlerTests`` drives a
/// device's: the same ``DeviceSession`` decides both.
@Suite("Web Push port: the browser session handler without sockets")
struct BrowserPushSessionHandlerTests {
    struct Harness {
        let store = InMemoryStore()
        let registry = DeviceRegistry()
        let port: WebPushPort

        init(inFlight: Int) {
            let logger = Logger(label: "test")
            let (store, registry) = (self.store, self.registry)
            let recorder = DeliveryRecorder(store: store, logger: logger)
            var limits = GatewayLimits()
            limits.deviceInFlight = inFlight
            let intake = NotificationIntake(
                store: store, policy: .default, environment: .development, clock: SystemWallClock(), maximumBatchSize: 64,
                health: GatewayHealth(), registry: registry, recorder: recorder, feed: DeliveryFeed(), metrics: GatewayMetrics(), logger: logger)
            port = WebPushPort(
                core: SessionCore(
                    environment: .development, clock: SystemWallClock(), store: store, registry: registry, recorder: recorder,
                    metrics: GatewayMetrics(), logger: logger, limits: limits, feed: DeliveryFeed(), cluster: nil),
                intake: intake, subscriptions: WebPushSubscriptions(store: store, storeTimeout: .seconds(5)),
                limiter: TokenRateLimiter(configuration: nil), publicOrigin: "https://push.example.com", pingInterval: .seconds(30),
                idleTimeout: .seconds(90), connectionsPerAddress: ConnectionsPerAddress(limit: 100, budget: ConnectionBudget(limit: 1_000)))
        }
    }

    static func message(_ object: [String: JSONValue]) -> WebSocketFrame {
        DeviceSessionHandlerTests.masked(.text, String(decoding: JSONValue.object(object).compactBytes, as: UTF8.self))
    }

    /// The next JSON message the handler writes, or the close frame's opcode as `"close"`.
    static func next(_ channel: NIOAsyncTestingChannel, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: JSONValue]? {
        guard let frame = try await DeviceSessionHandlerTests.nextFrame(channel, sourceLocation: sourceLocation) else { return nil }
        if frame.opcode == .connectionClose { return ["messageType": .string("close")] }
        var data = frame.data
        return try JSONReader.parseObject(data.readBytes(length: data.readableBytes) ?? [], limits: .payload)
    }

    @Test("a whole session: hello, a subscription, messages at the in-flight bound of 1, the ack that reloads, the unacked one kept at close, a second hello refused")
    func session() async throws {
        let harness = Harness(inFlight: 1)
        let port = harness.port
        let recording = Task { await port.recorder.run() }
        let channel = try await NIOAsyncTestingChannel {
            try $0.pipeline.syncOperations.addHandler(BrowserPushSessionHandler(port: port, origin: "https://push.example.com"))
        }

        try await channel.writeInbound(Self.message(["messageType": .string("hello"), "use_webpush": .bool(true)]))
        let hello = try #require(try await Self.next(channel))
        let uaid = try #require(hello["uaid"]?.stringValue)
        #expect(hello["messageType"] == .string("hello") && hello["status"] == .int(200) && BrowserPushProtocol.isUAID(uaid))
        let deviceID = WebPushPort.deviceID(uaid: uaid)
        #expect(harness.registry.connectedDeviceIDs() == [deviceID])

        let channelID = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
        try await channel.writeInbound(Self.message(["messageType": .string("register"), "channelID": .string(channelID)]))
        let registered = try #require(try await Self.next(channel))
        let endpoint = try #require(registered["pushEndpoint"]?.stringValue)
        #expect(registered["status"] == .int(200) && endpoint.hasPrefix("https://push.example.com/wpush/"))
        let token = try #require(DeviceToken(hex: String(endpoint.split(separator: "/").last ?? "")))

        // Two messages committed, handed over as the intake does: one is written (the bound), the
        // other stays held in the store until the first is acked.
        let now = SystemWallClock().nowMilliseconds()
        let batch = (0..<2).map { i in
            StoredNotification(
                id: .random(), token: token, bundleID: WebPushPort.browserApp, pushType: .webpush, priority: .immediate,
                expiration: .unspecified, collapseID: nil,
                payload: WebPushStoredMessage(channelID: channelID, encoding: .aes128gcm, legacyHeaders: nil, body: [UInt8(i), 1, 2]).encoded(),
                receivedAtMilliseconds: now)
        }
        var deliveries: [Delivery] = []
        for (n, outcome) in zip(batch, await harness.store.accept(batch, policy: .default, environment: .development, nowMilliseconds: now)) {
            guard case .stored(let seq, deviceID?, _) = outcome else { Issue.record("not stored: \(outcome)"); return }
            deliveries.append(Delivery(seq: seq, deviceID: deviceID, notification: n))
        }
        #expect(harness.registry.deliver(deliveries).isEmpty)
        let first = try #require(try await Self.next(channel))
        #expect(first["messageType"] == .string("notification") && first["version"] == .string(batch[0].id.description))
        #expect(first["channelID"] == .string(channelID) && first["data"] == .string(Base64URL.encode([0, 1, 2])))
        await channel.testingEventLoop.run()
        #expect(try await channel.readOutbound(as: WebSocketFrame.self) == nil, "the second waits: one in flight at most")

        // The ack is recorded and frees the bound: the second is loaded from the store and written.
        let ack: JSONValue = .object(["channelID": .string(channelID), "version": .string(batch[0].id.description)])
        try await channel.writeInbound(Self.message(["messageType": .string("ack"), "updates": .array([ack])]))
        let second = try #require(try await Self.next(channel))
        #expect(second["version"] == .string(batch[1].id.description))
        await port.recorder.waitUntilRecorded()
        #expect(await harness.store.receipts(of: batch[0].id).first?.events.last?.status == .acked)

        // A second hello closes the connection; the unacked message is recorded as delivered and
        // stays held for the browser's next connection.
        try await channel.writeInbound(Self.message(["messageType": .string("hello"), "use_webpush": .bool(true)]))
        #expect(try await Self.next(channel)?["messageType"] == .string("close"))
        await port.recorder.waitUntilRecorded()
        #expect(await harness.store.pendingDeliveries(forDevice: deviceID, nowMilliseconds: now).map(\.seq) == [deliveries[1].seq])
        let statuses = await harness.store.receipts(of: batch[1].id).first?.events.map(\.status) ?? []
        #expect(statuses.contains(.delivered) && !statuses.contains(.acked), "\(statuses)")
        #expect(harness.registry.connectedDeviceIDs().isEmpty)
        try? await channel.close()
        port.recorder.close()
        await recording.value
    }
}
