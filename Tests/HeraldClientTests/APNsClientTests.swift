import Foundation
import HeraldClient
import HeraldCore
import HeraldDevice
import HeraldTesting
import Testing

/// The APNs client against the in-process gateway over TLS (the client does not know it is
/// Herald: host, port and trust root are all that differ from Apple's service).
@Suite("APNs client")
struct APNsClientTests {
    static func client(_ gateway: TestGateway, signer: ProviderTokenSigner, clock: WallClock? = nil,
                       connections: Int = 2, maximumInFlight: Int = 1_000, sleeps: Locked<[Duration]>? = nil) -> APNsClient {
        APNsClient(
            configuration: .init(host: "localhost", port: gateway.ports.providerPort,
                                 tls: ClientTLS(trustRootsPath: gateway.certificates.caCertificatePath),
                                 connections: connections, maximumInFlight: maximumInFlight),
            signer: signer, clock: clock ?? gateway.clock,
            sleep: { duration in sleeps?.withLock { $0.append(duration) } })
    }

    static func alert(_ token: DeviceToken, _ text: String = "hi") -> APNsNotification {
        APNsNotification(token: token.hex, topic: "com.example.app", payload: Array(#"{"aps":{"alert":"\#(text)"}}"#.utf8))
    }

    @Test("many pushes at once: all accepted over the pool, never more in flight than allowed, one connection per pool slot")
    func backpressure() async throws {
        let gateway = try await TestGateway.start(configure: { $0.tokenRateLimit = nil })
        let signer = try await gateway.makeKey(team: "TEAM000001", topics: ["com.example.app"])
        let token = try await gateway.makeToken()
        let client = Self.client(gateway, signer: signer, connections: 2, maximumInFlight: 40)
        let results = try await withThrowingTaskGroup(of: APNsResult.self) { group in
            for i in 0..<600 { group.addTask { try await client.send(Self.alert(token, "n\(i)")) } }
            return try await group.reduce(into: [APNsResult]()) { $0.append($1) }
        }
        let odd = results.filter { !($0.isAccepted && $0.attempts == 1) }
        #expect(results.count == 600 && odd.isEmpty, "\(odd.prefix(3))")
        #expect(Set(results.compactMap(\.apnsID)).count == 600)
        #expect(client.inFlight.peak <= 40 && client.inFlight.now == 0)
        #expect(client.connectionsOpened == 2)
        await client.close()
        try await gateway.stop()
    }

    @Test("429 TooManyRequests is retried after a backoff (the gateway's clock moves during it) and then accepted")
    func tooManyRequestsRetried() async throws {
        let gateway = try await TestGateway.start(configure: { $0.tokenRateLimit = .init(burst: 5, perSecond: 0.1) })
        let signer = try await gateway.makeKey(team: "TEAM000001", topics: ["com.example.app"])
        let token = try await gateway.makeToken()
        let sleeps = Locked<[Duration]>([])
        let client = APNsClient(
            configuration: .init(host: "localhost", port: gateway.ports.providerPort, tls: ClientTLS(trustRootsPath: gateway.certificates.caCertificatePath)),
            signer: signer, clock: gateway.clock,
            sleep: { duration in
                sleeps.withLock { $0.append(duration) }
                gateway.clock.advance(milliseconds: Int64(duration.components.seconds * 1000) + 60_000)
            })
        var results: [APNsResult] = []
        for i in 0..<12 { results.append(try await client.send(Self.alert(token, "n\(i)"))) }
        #expect(results.allSatisfy { $0.isAccepted })
        #expect(results.contains { $0.attempts > 1 }, "the per-token limit was reached and retried through")
        #expect(!sleeps.withLock { $0 }.isEmpty)
        await client.close()
        try await gateway.stop()
    }

    @Test("rejections are typed and never retried: BadDeviceToken, 410 Unregistered with its timestamp")
    func rejections() async throws {
        let gateway = try await TestGateway.start()
        let signer = try await gateway.makeKey(team: "TEAM000001", topics: ["com.example.app"])
        let sleeps = Locked<[Duration]>([])
        let client = Self.client(gateway, signer: signer, sleeps: sleeps)
        let bad = try await client.send(APNsNotification(token: "00ff", topic: "com.example.app", payload: Array(#"{"aps":{}}"#.utf8)))
        #expect(bad.status == 400 && bad.reason == .badDeviceToken && bad.attempts == 1)

        let identity = DeviceIdentity()
        let device = try gateway.startDevice(identity: identity)
        let token = try await device.token()
        await device.stop()
        let at = try await DeviceConnection.unregister(
            topic: "com.example.app", identity: identity, host: "localhost", port: gateway.ports.devicePort!,
            tls: try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath))
        let gone = try await client.send(Self.alert(token))
        #expect(gone.status == 410 && gone.reason == .unregistered && gone.timestamp == at && gone.attempts == 1)
        #expect(sleeps.withLock { $0 }.isEmpty)
        await client.close()
        try await gateway.stop()
    }

    @Test("the provider token: reused, refreshed after its interval, renewed once on ExpiredProviderToken when 20 minutes old")
    func providerToken() async throws {
        let gateway = try await TestGateway.start()
        let signer = try await gateway.makeKey(team: "TEAM000001", topics: ["com.example.app"])
        let token = try await gateway.makeToken()
        let clientClock = SimulatedAlarmClock(startMilliseconds: gateway.clock.nowMilliseconds())
        let client = Self.client(gateway, signer: signer, clock: clientClock)
        #expect(try await client.send(Self.alert(token)).isAccepted)
        let first = try #require(client.tokens?.issuedAt)
        clientClock.advance(seconds: 10 * 60)
        gateway.clock.advance(seconds: 10 * 60)
        #expect(try await client.send(Self.alert(token)).isAccepted)
        #expect(client.tokens?.issuedAt == first, "not re-signed within the interval")

        // The gateway's clock runs ahead: at 61 minutes by its clock the token is expired, while the
        // client thinks it 30 minutes old. The client signs a new one once and the push goes through.
        clientClock.advance(seconds: 20 * 60)
        gateway.clock.advance(seconds: 51 * 60)
        let renewed = try await client.send(Self.alert(token))
        #expect(renewed.isAccepted && renewed.attempts == 2)
        #expect(client.tokens?.issuedAt == first + 30 * 60)
        await client.close()
        try await gateway.stop()
    }

    @Test("a server that cannot be reached: retried with exponential backoff and jitter, then a result with the transport error")
    func transportRetries() async throws {
        let sleeps = Locked<[Duration]>([])
        let client = APNsClient(
            configuration: .init(host: "127.0.0.1", port: 1, tls: nil, retry: APNsRetryPolicy(maximumAttempts: 4, initialDelay: .seconds(1), maximumDelay: .seconds(3))),
            signer: nil, sleep: { duration in sleeps.withLock { $0.append(duration) } })
        let result = try await client.send(APNsNotification(token: "aa", topic: "t", payload: Array("{}".utf8)))
        #expect(result.status == 0 && result.attempts == 4 && result.transportError != nil && result.apnsID != nil)
        let waits = sleeps.withLock { $0 }
        #expect(waits.count == 3)
        // Equal jitter: between half and all of 1 s, 2 s, then 3 s (capped).
        for (wait, step) in zip(waits, [Duration.seconds(1), .seconds(2), .seconds(3)]) { #expect(wait >= step / 2 && wait <= step) }
        await client.close()
    }

    @Test("the retry policy: 429 and 5xx back off, ExpiredProviderToken renews, every other status is final")
    func retryPolicy() {
        #expect(APNsRetryPolicy.decide(status: 429, reason: .tooManyRequests) == .retryAfterBackoff)
        #expect(APNsRetryPolicy.decide(status: 503, reason: .shutdown) == .retryAfterBackoff)
        #expect(APNsRetryPolicy.decide(status: 500, reason: .internalServerError) == .retryAfterBackoff)
        #expect(APNsRetryPolicy.decide(status: 403, reason: .expiredProviderToken) == .retryWithNewToken)
        for (status, reason) in [(400, APNsReason.badDeviceToken), (400, .deviceTokenNotForTopic), (403, .forbidden), (410, .expiredToken),
                                 (410, .unregistered), (413, .payloadTooLarge), (400, APNsReason(rawValue: "SomethingNew"))] {
            #expect(APNsRetryPolicy.decide(status: status, reason: reason) == .done, "\(reason)")
        }
        let policy = APNsRetryPolicy(initialDelay: .milliseconds(500), maximumDelay: .seconds(60))
        #expect(policy.delay(afterAttempt: 1, random: 1) == .milliseconds(500))
        #expect(policy.delay(afterAttempt: 4, random: 0) == .seconds(2))
        #expect(policy.delay(afterAttempt: 20, random: 1) == .seconds(60))
    }
}
