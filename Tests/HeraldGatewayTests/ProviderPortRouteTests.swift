import Foundation
import HeraldCore
@testable import HeraldGateway
import HeraldStore
import Logging
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

/// The provider port's first step, pure: a request head → push | query | broadcast | channel, or
/// the exact APNs refusal; and one stream handler driven frame by frame on an `EmbeddedChannel`,
/// without sockets.
@Suite("APNs port: routing and the stream handler without sockets")
struct ProviderPortRouteTests {
    static let token = String(repeating: "ab", count: 32)

    static func head(_ method: String, _ path: String, _ extra: [(String, String)] = []) -> APNsRequestHead {
        var head = APNsRequestHead()
        for (name, value) in [(":method", method), (":path", path), (":scheme", "https")] + extra { _ = head.record(name: name, value: value) }
        return head
    }

    static func route(_ head: APNsRequestHead, role: ProviderPort.Role = .provider, body: String = "") -> Result<ProviderPortRoute, APNsRejection> {
        ProviderPortRoute.route(head, body: body.isEmpty ? nil : ByteBuffer(string: body), role: role)
    }

    @Test("a device path is a push, with the provider's apns-id; a bad token or path is refused as APNs refuses it")
    func pushes() throws {
        let id = "123e4567-e89b-12d3-a456-426614174000"
        guard case .success(.push(let target)) = Self.route(Self.head("POST", "/3/device/\(Self.token)", [("apns-id", id)])) else {
            Issue.record("not a push")
            return
        }
        #expect(target.token.hex == Self.token && target.apnsID?.description == id)
        #expect(try #require(Self.route(Self.head("POST", "/3/device/xyz")).failureReason) == .badDeviceToken)
        #expect(try #require(Self.route(Self.head("POST", "/3/elsewhere")).failureReason) == .badPath)
        #expect(try #require(Self.route(Self.head("PUT", "/3/device/\(Self.token)")).failureReason) == .methodNotAllowed)
        #expect(!ProviderPortRoute.answersWithRequestID(Self.route(Self.head("POST", "/3/device/\(Self.token)")), role: .provider))
    }

    @Test("GET reads a receipt or a feedback list; any other GET is the wrong method or path")
    func queries() throws {
        let id = "123e4567-e89b-12d3-a456-426614174000"
        guard case .success(.query(.receipt(let apnsID))) = Self.route(Self.head("GET", "/3/notifications/\(id)")) else {
            Issue.record("not a receipt query")
            return
        }
        #expect(apnsID.description == id)
        guard case .success(.query(.feedback(let topic))) = Self.route(Self.head("GET", "/3/feedback/com.example.app")) else {
            Issue.record("not a feedback query")
            return
        }
        #expect(topic == "com.example.app")
        #expect(try #require(Self.route(Self.head("GET", "/3/device/\(Self.token)")).failureReason) == .methodNotAllowed)
        #expect(Self.route(Self.head("GET", "/3/notifications/nope")).failureReason == .badMessageId)
    }

    @Test("a broadcast path names its app and answers with apns-request-id; the channel port routes channel requests, refusals included")
    func broadcastsAndChannels() throws {
        let broadcast = Self.route(Self.head("POST", "/4/broadcasts/apps/com.example.app"))
        guard case .success(let route) = broadcast, case .broadcast(let bundleID) = route else {
            Issue.record("not a broadcast")
            return
        }
        #expect(bundleID == "com.example.app" && route.appOfChannelRequest == "com.example.app")
        #expect(ProviderPortRoute.answersWithRequestID(broadcast, role: .provider))
        let list = Self.route(Self.head("GET", "/1/apps/com.example.app/all-channels"), role: .channels)
        guard case .success(let channel) = list, case .channel = channel else {
            Issue.record("not a channel request: \(list)")
            return
        }
        #expect(channel.appOfChannelRequest == "com.example.app")
        let refused = Self.route(Self.head("POST", "/3/device/\(Self.token)"), role: .channels)
        #expect(try #require(refused.failureReason) == .badPath)
        #expect(ProviderPortRoute.answersWithRequestID(refused, role: .channels))
    }

    // MARK: the stream handler on an EmbeddedChannel

    /// A provider connection's ``HTTP2StreamTable`` on an `EmbeddedChannel`, with everything a provider port shares
    /// (an in-memory store; nothing runs the intake, so a test stays before the commit).
    struct Harness {
        let channel = EmbeddedChannel()
        let connection: ProviderPortConnection

        init() throws {
            let store = InMemoryStore()
            let clock = SystemWallClock()
            let logger = Logger(label: "test")
            let metrics = GatewayMetrics()
            let feed = DeliveryFeed()
            let registry = DeviceRegistry()
            let recorder = DeliveryRecorder(store: store, logger: logger)
            let intake = NotificationIntake(
                store: store, policy: .default, environment: .development, clock: clock, maximumBatchSize: 64,
                health: GatewayHealth(), registry: registry, recorder: recorder, feed: feed, metrics: metrics, logger: logger)
            let port = ProviderPort(
                environment: .development, clock: clock, directory: ProviderKeyDirectory(store: store, clock: clock), limiter: TokenRateLimiter(configuration: nil),
                intake: intake, store: store, inactivityPeriodMilliseconds: 86_400_000, metrics: metrics, logger: logger,
                faults: GatewayFaults(), limits: GatewayLimits(), connectionsPerAddress: ConnectionsPerAddress(limit: 100, budget: ConnectionBudget(limit: 1_000)), feed: feed)
            connection = ProviderPortConnection(channel: channel, environment: .development)
            try channel.pipeline.syncOperations.addHandler(ProviderPortStream.table(port: port, connection: connection))
        }

        /// Sends one request as a HEADERS frame that ends the stream, and reads the answer.
        func request(_ stream: Int, _ headers: [(String, String)]) throws -> (status: String?, headers: HPACKHeaders, body: String) {
            let id = HTTP2StreamID(stream)
            try channel.writeInbound(HTTP2Frame(streamID: id, payload: .headers(.init(headers: HPACKHeaders(headers), endStream: true))))
            var answer = (status: String?.none, headers: HPACKHeaders(), body: "")
            while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
                #expect(frame.streamID == id)
                switch frame.payload {
                case .headers(let h):
                    answer.headers = h.headers
                    answer.status = h.headers.first(name: ":status")
                case .data(let d):
                    if case .byteBuffer(let buffer) = d.data { answer.body += String(buffer: buffer) }
                default: break
                }
            }
            return answer
        }
    }

    static func push(path: String = "/3/device/\(token)", _ extra: [(String, String)] = []) -> [(String, String)] {
        [(":method", "POST"), (":path", path), (":scheme", "https"), (":authority", "localhost")] + extra
    }

    @Test("frames in, frames out: a refused route, a push without a token, and a draining connection each get APNs's answer on their stream")
    func streamHandler() throws {
        let harness = try Harness()
        let badPath = try harness.request(1, Self.push(path: "/3/nowhere"))
        #expect(badPath.status == "404" && badPath.body.contains("BadPath"), "\(badPath)")
        #expect(badPath.headers.first(name: "apns-id") != nil)

        let id = "123e4567-e89b-12d3-a456-426614174000"
        let unauthenticated = try harness.request(3, Self.push([("apns-id", id), ("apns-topic", "com.example.app")]))
        #expect(unauthenticated.status == "403" && unauthenticated.body.contains("MissingProviderToken"), "\(unauthenticated)")
        #expect(unauthenticated.headers.first(name: "apns-id") == id)

        let forged = try harness.request(5, Self.push([("authorization", "bearer not.a.token")]))
        #expect(forged.status == "403" && forged.body.contains("InvalidProviderToken"), "\(forged)")

        _ = harness.connection.http2.beginDraining()
        while try harness.channel.readOutbound(as: HTTP2Frame.self) != nil {}  // the GOAWAY
        let late = try harness.request(7, Self.push())
        #expect(late.status == "503" && late.body.contains("Shutdown"), "\(late)")
        _ = try harness.channel.finish(acceptAlreadyClosed: true)
    }
}

extension Result where Failure == APNsRejection {
    var failureReason: APNsReason? {
        if case .failure(let rejection) = self { return rejection.reason }
        return nil
    }
}
