import Crypto
import Foundation
import HeraldCore
@testable import HeraldGateway
import HeraldStore
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

/// The device session's handler, driven frame by frame without sockets: on an `EmbeddedChannel`
/// for what needs no store, on a `NIOAsyncTestingChannel` (whose loop store work can return to)
/// for a whole session against an in-memory store.
@Suite("Device port: the session handler without sockets")
struct DeviceSessionHandlerTests {
    struct Harness {
        let store = InMemoryStore()
        let registry = DeviceRegistry()
        let port: DevicePort

        init(keepalive: DeviceKeepalive = DeviceKeepalive(interval: .seconds(30), minimum: .seconds(15), idleTimeout: .seconds(90))) {
            let logger = Logger(label: "test")
            port = DevicePort(
                core: SessionCore(
                    environment: .development, clock: SystemWallClock(), store: store, registry: registry,
                    recorder: DeliveryRecorder(store: store, logger: logger), metrics: GatewayMetrics(), logger: logger,
                    limits: GatewayLimits(), feed: DeliveryFeed(), cluster: nil),
                backgroundThrottle: nil, keepalive: keepalive, lowPriorityDelay: .milliseconds(5),
                connectionsPerAddress: ConnectionsPerAddress(limit: 100, budget: ConnectionBudget(limit: 1_000)), enrollmentSecret: nil)
        }
    }

    /// A frame as a device sends it: masked (RFC 6455 §5.1).
    static func masked(_ opcode: WebSocketOpcode, _ text: String = "") -> WebSocketFrame {
        let key = WebSocketMaskingKey.random()
        var data = ByteBuffer(string: text)
        data.webSocketMask(key)
        return WebSocketFrame(fin: true, opcode: opcode, maskKey: key, data: data)
    }

    static func text(_ frame: DeviceClientFrame) -> WebSocketFrame {
        masked(.text, String(decoding: frame.encoded(), as: UTF8.self))
    }

    /// The next frame the handler writes. The testing loop runs its tasks only when asked, and
    /// store work completes on it from another task: run it until the frame is there.
    static func nextFrame(_ channel: NIOAsyncTestingChannel, sourceLocation: SourceLocation = #_sourceLocation) async throws -> WebSocketFrame? {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            await channel.testingEventLoop.run()
            if let frame = try await channel.readOutbound(as: WebSocketFrame.self) { return frame }
            await Task.yield()
        }
        Issue.record("no frame within 10 s", sourceLocation: sourceLocation)
        return nil
    }

    static func serverFrame(_ frame: WebSocketFrame?) -> DeviceServerFrame? {
        guard let frame, frame.opcode == .text else { return nil }
        var data = frame.data
        return try? DeviceServerFrame.decode(data.readBytes(length: data.readableBytes) ?? []).get()
    }

    static func nonce(of frame: DeviceServerFrame?) -> String? {
        if case .challenge(_, let nonce)? = frame { return nonce }
        return nil
    }

    @Test("without a store: the challenge first, then the protocol's errors for unmasked, binary, malformed and early frames; pings answered")
    func framing() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(DeviceSessionHandler(port: Harness().port))
        #expect(Self.nonce(of: Self.serverFrame(try channel.readOutbound(as: WebSocketFrame.self))) != nil)

        try channel.writeInbound(Self.masked(.binary, "x"))
        #expect(Self.serverFrame(try channel.readOutbound()) == .error(
            code: .unsupportedFrame, message: "binary frames are not part of the protocol; send JSON text frames"))
        try channel.writeInbound(Self.masked(.text, "{not json"))
        guard case .error(.malformedFrame, _, _)? = Self.serverFrame(try channel.readOutbound()) else {
            Issue.record("malformed JSON was not refused")
            return
        }
        try channel.writeInbound(Self.text(.register(topic: "com.example.app")))
        #expect(Self.serverFrame(try channel.readOutbound()) == .error(code: .notAuthenticated, message: "answer the challenge with a hello frame first"))
        try channel.writeInbound(Self.masked(.ping, "are you there"))
        let pong = try channel.readOutbound(as: WebSocketFrame.self)
        #expect(pong?.opcode == .pong && pong.map { String(buffer: $0.data) } == "are you there")

        // An unmasked frame: an error frame, a close frame with 1008, and the channel closed.
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: "{}")))
        #expect(Self.serverFrame(try channel.readOutbound()) == .error(
            code: .malformedFrame, message: "frames from a device must be masked (RFC 6455 §5.1)"))
        var close = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(close.opcode == .connectionClose && close.data.readWebSocketErrorCode() == .policyViolation)
        #expect(!channel.isActive)
    }

    @Test("a signature of another nonce closes the connection with authenticationFailed")
    func forgedHello() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(DeviceSessionHandler(port: Harness().port))
        _ = try channel.readOutbound(as: WebSocketFrame.self)
        try channel.writeInbound(Self.text(try DeviceSessionTests.hello(nonce: "not the challenge")))
        #expect(Self.serverFrame(try channel.readOutbound()) == .error(
            code: .authenticationFailed, message: "the signature does not verify against the challenge and public key"))
        #expect(try channel.readOutbound(as: WebSocketFrame.self)?.opcode == .connectionClose)
    }

    @Test("a whole session against an in-memory store: hello, welcome, register, a notification, its ack recorded, unacked ones kept at close")
    func session() async throws {
        let harness = Harness()
        let port = harness.port
        let recording = Task { await port.recorder.run() }
        let channel = try await NIOAsyncTestingChannel { try $0.pipeline.syncOperations.addHandler(DeviceSessionHandler(port: port)) }
        let challenge = Self.serverFrame(try await Self.nextFrame(channel))
        let nonce = try #require(Self.nonce(of: challenge))

        let key = P256.Signing.PrivateKey()
        try await channel.writeInbound(Self.text(try DeviceSessionTests.hello(key, nonce: nonce)))
        let deviceID = DeviceProtocol.deviceID(publicKey: Array(key.publicKey.rawRepresentation))
        #expect(Self.serverFrame(try await Self.nextFrame(channel))
            == .welcome(deviceID: deviceID, environment: .development, enrolled: true, pingIntervalSeconds: 30))

        try await channel.writeInbound(Self.text(.register(topic: "com.example.app")))
        guard case .registered("com.example.app", let token)? = Self.serverFrame(try await Self.nextFrame(channel)) else {
            Issue.record("no registered frame")
            return
        }
        #expect(await harness.store.activeToken(deviceID: deviceID, scope: TokenScope(bundleID: "com.example.app"), environment: .development)?.token == token)

        // Two notifications committed, then handed over through the registry as the intake does.
        let now = SystemWallClock().nowMilliseconds()
        func notification() -> StoredNotification {
            StoredNotification(
                id: .random(), token: token, bundleID: "com.example.app", pushType: .alert, priority: .immediate,
                expiration: .unspecified, collapseID: nil, payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8), receivedAtMilliseconds: now)
        }
        var deliveries: [Delivery] = []
        let batch = [notification(), notification()]
        let outcomes = await harness.store.accept(batch, policy: StorePolicy(maximumPerApp: 10), environment: .development, nowMilliseconds: now)
        for (n, outcome) in zip(batch, outcomes) {
            guard case .stored(let seq, deviceID?, _) = outcome else { Issue.record("not stored: \(outcome)"); return }
            deliveries.append(Delivery(seq: seq, deviceID: deviceID, notification: n))
        }
        #expect(harness.registry.connectedDeviceIDs() == [deviceID])  // registered before the welcome was written
        #expect(harness.registry.deliver(deliveries).isEmpty)
        for expected in deliveries {
            guard case .notification(let n)? = Self.serverFrame(try await Self.nextFrame(channel)) else {
                Issue.record("no notification frame")
                return
            }
            #expect(n.apnsID == expected.notification.id && n.topic == "com.example.app" && n.payload == .object(["aps": .object(["alert": .string("hi")])]))
        }
        let (first, second) = (deliveries[0], deliveries[1])

        try await channel.writeInbound(Self.text(.ack(ids: [first.notification.id])))
        await channel.testingEventLoop.run()
        await harness.port.recorder.waitUntilRecorded()
        let pending = await harness.store.pendingDeliveries(forDevice: deviceID, nowMilliseconds: now).map(\.seq)
        #expect(pending == [second.seq])
        #expect(await harness.store.receipts(of: first.notification.id).first?.events.map(\.status).contains(.acked) == true)

        // The device goes away with the second one unacked: recorded as delivered, still held for next time.
        try await channel.close()
        await harness.port.recorder.waitUntilRecorded()
        let pendingAfterClose = await harness.store.pendingDeliveries(forDevice: deviceID, nowMilliseconds: now).map(\.seq)
        #expect(pendingAfterClose == [second.seq])
        let statuses = await harness.store.receipts(of: second.notification.id).first?.events.map(\.status) ?? []
        #expect(statuses.contains(.delivered) && !statuses.contains(.acked), "\(statuses)")
        #expect(harness.registry.connectedDeviceIDs().isEmpty)
        port.recorder.close()
        await recording.value
    }

    @Test("a device that asks for a shorter ping interval is welcomed with it (within the port's floor), pinged at it, and dropped at the idle timeout scaled to it")
    func keepalive() async throws {
        let harness = Harness(keepalive: DeviceKeepalive(interval: .seconds(30), minimum: .seconds(4), idleTimeout: .seconds(62)))
        let port = harness.port
        let recording = Task { await port.recorder.run() }
        let channel = try await NIOAsyncTestingChannel {
            try $0.pipeline.syncOperations.addHandler(KeepaliveHandler(pingInterval: .seconds(30), idleTimeout: .seconds(62), wheel: KeepaliveWheel(eventLoop: $0.eventLoop)))
            try $0.pipeline.syncOperations.addHandler(DeviceSessionHandler(port: port))
        }
        try await channel.connect(to: .init(ipAddress: "127.0.0.1", port: 1))
        let nonce = try #require(Self.nonce(of: Self.serverFrame(try await Self.nextFrame(channel))))
        let key = P256.Signing.PrivateKey()
        let signature = try key.signature(for: DeviceProtocol.challengeMessage(nonce: nonce))
        try await channel.writeInbound(Self.text(.hello(
            version: 3, publicKey: Array(key.publicKey.rawRepresentation), signature: Array(signature.rawRepresentation), keepaliveSeconds: 5)))
        guard case .welcome(_, _, _, let granted)? = Self.serverFrame(try await Self.nextFrame(channel)) else {
            Issue.record("no welcome")
            return
        }
        #expect(granted == 5)

        // Quiet for the granted interval: a ping (not at the port's 30 s).
        await channel.testingEventLoop.advanceTime(by: .seconds(5))
        #expect(try await channel.readOutbound(as: WebSocketFrame.self)?.opcode == .ping)
        // The device answers nothing: dropped 62 × 5 / 30 = 10.33… s after its last frame, on the
        // keepalive's next whole second.
        await channel.testingEventLoop.advanceTime(by: .seconds(5))
        #expect(try await channel.readOutbound(as: WebSocketFrame.self)?.opcode == .ping)
        #expect(channel.isActive)
        await channel.testingEventLoop.advanceTime(by: .milliseconds(400))
        #expect(try await channel.readOutbound(as: WebSocketFrame.self) == nil, "not before the tick")
        await channel.testingEventLoop.advanceTime(by: .milliseconds(600))
        guard case .error(.idleTimeout, let message, _)? = Self.serverFrame(try await channel.readOutbound(as: WebSocketFrame.self)) else {
            Issue.record("no idle-timeout error")
            return
        }
        #expect(message == "nothing heard from the device for 10 s")
        port.recorder.close()
        await recording.value
    }

    @Test("the grant: the port's interval for no request, the request within floor and ceiling, the idle timeout scaled")
    func grants() {
        let keepalive = DeviceKeepalive(interval: .seconds(1_500), minimum: .seconds(15), idleTimeout: .seconds(3_060))
        #expect(keepalive.grant(requestedSeconds: nil) == .init(pingInterval: .seconds(1_500), idleTimeout: .seconds(3_060)))
        #expect(keepalive.grant(requestedSeconds: 750) == .init(pingInterval: .seconds(750), idleTimeout: .seconds(1_530)))
        #expect(keepalive.grant(requestedSeconds: 1) == .init(pingInterval: .seconds(15), idleTimeout: .seconds(30) + .milliseconds(600)))
        #expect(keepalive.grant(requestedSeconds: 86_400).pingInterval == .seconds(1_500))
        // A floor above the interval is taken as the interval.
        let short = DeviceKeepalive(interval: .seconds(1), minimum: .seconds(15), idleTimeout: .seconds(4))
        #expect(short.grant(requestedSeconds: 60) == .init(pingInterval: .seconds(1), idleTimeout: .seconds(4)))
    }
}
