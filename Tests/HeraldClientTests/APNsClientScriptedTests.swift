import Foundation
import HeraldClient
import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import Testing

/// An HTTP/2 (h2c) server that answers what a test scripts, for what a real gateway will not say
/// on demand: every reason of reference §2, reasons nobody knows yet, and GOAWAY mid-load.
final class ScriptedAPNsServer: Sendable {
    struct Answer: Sendable {
        var status: Int
        var reason: String?
        var timestamp: Int64?
    }
    /// The answer for a device token (the last path component), given how many times it was asked.
    let script: @Sendable (_ token: String, _ attempt: Int) -> Answer
    /// After this many requests on one connection the server sends GOAWAY (nil: never).
    let goAwayAfter: Int?
    let attempts = Locked<[String: Int]>([:])
    let apnsIDs = Locked<[String: Set<String>]>([:])
    let connections = Locked(0)
    private let channel = Locked<Channel?>(nil)

    init(goAwayAfter: Int? = nil, script: @escaping @Sendable (String, Int) -> Answer) {
        self.script = script
        self.goAwayAfter = goAwayAfter
    }

    func start() async throws -> Int {
        let server = self
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                server.connections.withLock { $0 += 1 }
                let served = Locked(0)
                return channel.configureHTTP2Pipeline(mode: .server) { stream in
                    stream.pipeline.addHandler(StreamHandler(server: server, served: served))
                }.map { _ in }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        self.channel.withLock { $0 = channel }
        return channel.localAddress!.port!
    }

    func stop() async { try? await channel.withLock({ $0 })?.close() }

    final class StreamHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload
        let server: ScriptedAPNsServer
        let served: Locked<Int>
        var path = ""
        var apnsID: String?
        init(server: ScriptedAPNsServer, served: Locked<Int>) { (self.server, self.served) = (server, served) }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .headers(let h):
                for (name, value, _) in h.headers {
                    if name == ":path" { path = value }
                    if name == "apns-id" { apnsID = value }
                }
                if h.endStream { answer(context) }
            case .data(let d): if d.endStream { answer(context) }
            default: break
            }
        }

        func answer(_ context: ChannelHandlerContext) {
            let token = String(path.split(separator: "/").last ?? "")
            let attempt = server.attempts.withLock { $0[token, default: 0] += 1; return $0[token]! }
            if let apnsID { server.apnsIDs.withLock { _ = $0[token, default: []].insert(apnsID) } }
            let answer = server.script(token, attempt)
            var headers = HPACKHeaders([(":status", String(answer.status))])
            if let apnsID { headers.add(name: "apns-id", value: apnsID) }
            if let reason = answer.reason {
                headers.add(name: "content-type", value: "application/json")
                context.write(wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
                let body = answer.timestamp.map { #"{"reason":"\#(reason)","timestamp":\#($0)}"# } ?? #"{"reason":"\#(reason)"}"#
                context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true))), promise: nil)
            } else {
                context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
            }
            let count = served.withLock { $0 += 1; return $0 }
            if let limit = server.goAwayAfter, count == limit, let parent = context.channel.parent {
                // No new streams on this connection: the client must open another.
                parent.writeAndFlush(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil)), promise: nil)
            }
        }
    }
}

@Suite("APNs client against a scripted server")
struct APNsClientScriptedTests {
    static func client(port: Int, connections: Int = 1, sleeps: Locked<[Duration]>) -> APNsClient {
        APNsClient(configuration: .init(host: "127.0.0.1", port: port, tls: nil, connections: connections), signer: nil,
                   sleep: { d in sleeps.withLock { $0.append(d) } })
    }

    @Test("every reason of reference §2 decodes with its status, an unknown one keeps its text; retried exactly when the policy says, with one apns-id")
    func everyReason() async throws {
        let reasons = APNsReason.allKnown.map { ($0.rawValue, $0.status) } + [("SomethingAppleAddsNextYear", 400), ("NewOutage", 503)]
        let byToken = Dictionary(uniqueKeysWithValues: reasons.enumerated().map { (String(format: "%04x", $0.offset), $0.element) })
        let server = ScriptedAPNsServer { token, _ in
            guard let (reason, status) = byToken[token] else { return .init(status: 200) }
            return .init(status: status, reason: reason, timestamp: status == 410 ? 1_795_262_400_123 : nil)
        }
        let port = try await server.start()
        let sleeps = Locked<[Duration]>([])
        let client = Self.client(port: port, sleeps: sleeps)
        for (token, (reason, status)) in byToken.sorted(by: { $0.key < $1.key }) {
            let result = try await client.send(APNsNotification(token: token, topic: "com.example.app", payload: Array(#"{"aps":{}}"#.utf8)))
            #expect(result.status == status, "\(reason)")
            #expect(result.reason?.rawValue == reason)
            #expect(result.reason?.isKnown == APNsReason.allKnown.contains { $0.rawValue == reason })
            #expect(result.timestamp == (status == 410 ? 1_795_262_400_123 : nil), "\(reason)")
            let retried = status == 429 || status >= 500
            // ExpiredProviderToken without a signer: nothing to renew, so not sent again.
            #expect(result.attempts == (retried ? 5 : 1), "\(reason): \(result.attempts) attempts")
            let ids = server.apnsIDs.withLock { $0[token]?.count }
            #expect(ids == 1, "\(reason): one apns-id over every attempt")
        }
        let waits = sleeps.withLock { $0.count }
        #expect(waits == 4 * byToken.values.filter { $0.1 == 429 || $0.1 >= 500 }.count)
        await client.close()
        await server.stop()
    }

    @Test("GOAWAY: the connection takes no new streams and the client continues on a new one; nothing lost, nothing sent twice")
    func goAway() async throws {
        let server = ScriptedAPNsServer(goAwayAfter: 25) { _, _ in .init(status: 200) }
        let port = try await server.start()
        let sleeps = Locked<[Duration]>([])
        let client = Self.client(port: port, sleeps: sleeps)
        var results: [APNsResult] = []
        for i in 0..<100 {
            results.append(try await client.send(APNsNotification(token: String(format: "%04x", i), topic: "com.example.app", payload: Array(#"{"aps":{}}"#.utf8))))
        }
        #expect(results.allSatisfy { $0.isAccepted })
        let attempts = server.attempts.withLock { $0 }
        #expect(attempts.count == 100 && attempts.values.allSatisfy { $0 == 1 })
        let connections = server.connections.withLock { $0 }
        #expect(connections == 4 && client.connectionsOpened == 4)
        await client.close()
        await server.stop()
    }
}
