import Foundation
import HeraldClient
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldTesting
import Testing

/// The provider port against reference §11, over real sockets with an HTTP/2 client.
@Suite("Provider port (reference §11)")
struct ProviderPortTests {
    /// A running gateway, one key, one token, one TLS connection.
    struct Fixture {
        let gateway: TestGateway
        let signer: ProviderTokenSigner
        let token: DeviceToken
        let connection: HTTP2Connection
        /// The provider token the fixture's pushes carry, signed when the fixture was made
        /// (providers reuse one token for up to an hour).
        let authorization: String

        static func make(
            environment: PushEnvironment = .development,
            configure: (inout GatewayConfiguration) -> Void = { _ in }
        ) async throws -> Fixture {
            let gateway = try await TestGateway.start(environment: environment, configure: configure)
            let signer = try await gateway.makeKey()
            let token = try await gateway.makeToken()
            let connection = try await gateway.connect()
            return Fixture(
                gateway: gateway, signer: signer, token: token, connection: connection,
                authorization: try gateway.bearer(signer))
        }

        func bearer(ageSeconds: Int64 = 0) throws -> String { try gateway.bearer(signer, ageSeconds: ageSeconds) }

        func push(
            payload: String = #"{"aps":{"alert":"hi"}}"#, topic: String? = "com.example.app", pushType: String? = "alert",
            headers: [(name: String, value: String)] = [], token: DeviceToken? = nil
        ) async throws -> HTTP2Response {
            try await connection.send(.push(
                token: token ?? self.token, authorization: authorization, topic: topic, pushType: pushType,
                payload: payload, extraHeaders: headers))
        }

        func stop() async throws {
            await connection.close()
            try await gateway.stop()
        }
    }

    static func expect(_ response: HTTP2Response, _ reason: APNsReason, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == reason.status, sourceLocation: sourceLocation)
        #expect(response.rejection?.reason == reason, sourceLocation: sourceLocation)
        #expect(response.header("content-type") == "application/json", sourceLocation: sourceLocation)
        #expect(response.apnsID.flatMap(NotificationID.init(header:)) != nil, "every answer carries an apns-id", sourceLocation: sourceLocation)
    }

    @Test("1. valid push: 200, empty body, generated apns-id, stream ended on HEADERS")
    func validPush() async throws {
        let f = try await Fixture.make()
        let response = try await f.push()
        #expect(response.status == 200)
        #expect(response.body.isEmpty)
        #expect(response.endedWithHeaders)
        let id = try #require(response.apnsID.flatMap(NotificationID.init(header:)))
        let stored = try await f.gateway.store.storedNotifications(for: f.token, policy: .default, nowMilliseconds: f.gateway.clock.nowMilliseconds())
        #expect(stored.map(\.id) == [id])
        #expect(stored.first?.payload == Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        try await f.stop()
    }

    @Test("2. apns-id is echoed, compared case-insensitively")
    func echoesID() async throws {
        let f = try await Fixture.make()
        let id = "EABEAE54-14A8-11E5-B60B-1697F925EC7B"
        let response = try await f.push(headers: [("apns-id", id)])
        #expect(response.status == 200)
        #expect(response.apnsID.map { NotificationID(header: $0) } == NotificationID(header: id))
        try await f.stop()
    }

    @Test("3. apns-id that is not a UUID: 400 BadMessageId")
    func badMessageID() async throws {
        let f = try await Fixture.make()
        Self.expect(try await f.push(headers: [("apns-id", "abc")]), .badMessageId)
        try await f.stop()
    }

    @Test("4-6. method and path: 405 MethodNotAllowed, 400 MissingDeviceToken, 404 BadPath")
    func methodAndPath() async throws {
        let f = try await Fixture.make()
        let bearer = try f.bearer()
        Self.expect(try await f.connection.send(.pushRaw(method: "GET", path: "/3/device/\(f.token.hex)", authorization: bearer, payload: [])), .methodNotAllowed)
        Self.expect(try await f.connection.send(.pushRaw(path: "/3/device/", authorization: bearer, payload: Array("{}".utf8))), .missingDeviceToken)
        Self.expect(try await f.connection.send(.pushRaw(path: "/3/devices/\(f.token.hex)", authorization: bearer, payload: Array("{}".utf8))), .badPath)
        try await f.stop()
    }

    @Test("7-9. tokens: non-hex, other environment, other bundle")
    func tokenChecks() async throws {
        let f = try await Fixture.make()
        let bearer = try f.bearer()
        let nonHex = String(repeating: "z", count: 64)
        Self.expect(try await f.connection.send(.pushRaw(path: "/3/device/\(nonHex)", authorization: bearer, payload: Array("{}".utf8))), .badDeviceToken)
        let production = try await f.gateway.makeToken(environment: .production)
        Self.expect(try await f.push(token: production), .badDeviceToken)
        let unknown = DeviceToken.random()
        Self.expect(try await f.push(token: unknown), .badDeviceToken)
        try await f.gateway.store.registerKey(
            ProviderKey(keyID: "OTHERKEY01", teamID: "TEAM000001", publicKey: f.signer.privateKey.publicKey),
            topics: ["com.example.other"], atMilliseconds: 0)
        let other = try await f.gateway.makeToken(topic: "com.example.other")
        Self.expect(try await f.push(token: other), .deviceTokenNotForTopic)
        // Upper-case hex names the same token.
        let upper = try await f.connection.send(.pushRaw(path: "/3/device/\(f.token.hex.uppercased())", authorization: bearer, payload: Array(#"{"aps":{}}"#.utf8)))
        #expect(upper.status == 200)
        try await f.stop()
    }

    @Test("10-11. unregistered and expired tokens: 410 with a timestamp in milliseconds")
    func goneTokens() async throws {
        let f = try await Fixture.make()
        let removedAt = f.gateway.clock.nowMilliseconds()
        #expect(try await f.gateway.store.unregisterToken(f.token, atMilliseconds: removedAt))
        let response = try await f.push()
        Self.expect(response, .unregistered)
        #expect(response.rejection?.timestampMilliseconds == removedAt)
        let body = String(decoding: response.body, as: UTF8.self)
        #expect(body == #"{"reason":"Unregistered","timestamp":\#(removedAt)}"#)

        let expired = DeviceToken.random()
        try await f.gateway.store.registerToken(TokenRegistration(
            token: expired, scope: TokenScope(bundleID: "com.example.app"), environment: .development,
            createdAtMilliseconds: 0, expiredAtMilliseconds: removedAt - 5000))
        let expiredResponse = try await f.push(token: expired)
        Self.expect(expiredResponse, .expiredToken)
        #expect(expiredResponse.rejection?.timestampMilliseconds == removedAt - 5000)
        try await f.stop()
    }

    @Test("12-14. topic and push type: MissingTopic, TopicDisallowed, InvalidPushType, BadTopic")
    func topicAndPushType() async throws {
        let f = try await Fixture.make()
        Self.expect(try await f.push(topic: nil), .missingTopic)
        Self.expect(try await f.push(topic: "com.someone.else"), .topicDisallowed)
        Self.expect(try await f.push(pushType: "banana"), .invalidPushType)
        Self.expect(try await f.push(pushType: "voip"), .badTopic)
        try await f.stop()
    }

    @Test("15. no apns-push-type: 200")
    func noPushType() async throws {
        let f = try await Fixture.make()
        #expect(try await f.push(pushType: nil).status == 200)
        try await f.stop()
    }

    @Test("16. priorities 1, 5, 10 accepted; 7 is BadPriority; 10 on a background push is BadPriority")
    func priorities() async throws {
        let f = try await Fixture.make()
        for p in ["1", "5", "10"] { #expect(try await f.push(headers: [("apns-priority", p)]).status == 200) }
        Self.expect(try await f.push(headers: [("apns-priority", "7")]), .badPriority)
        let silent = #"{"aps":{"content-available":1}}"#
        #expect(try await f.push(payload: silent, pushType: "background", headers: [("apns-priority", "5")]).status == 200)
        Self.expect(try await f.push(payload: silent, pushType: "background", headers: [("apns-priority", "10")]), .badPriority)
        try await f.stop()
    }

    @Test("17. apns-expiration 0 is accepted and never stored; 'tomorrow' is BadExpirationDate")
    func expiration() async throws {
        let f = try await Fixture.make()
        let zero = try await f.push(headers: [("apns-expiration", "0")])
        #expect(zero.status == 200)
        let past = try await f.push(headers: [("apns-expiration", String(f.gateway.clock.nowSeconds() - 1))])
        #expect(past.status == 200)
        #expect(try await f.gateway.store.storedNotificationCount() == 0)
        Self.expect(try await f.push(headers: [("apns-expiration", "tomorrow")]), .badExpirationDate)
        let future = try await f.push(headers: [("apns-expiration", String(f.gateway.clock.nowSeconds() + 60))])
        #expect(future.status == 200)
        #expect(try await f.gateway.store.storedNotificationCount() == 1)
        try await f.stop()
    }

    @Test("18. collapse id: 64 bytes accepted, 65 is BadCollapseId")
    func collapseID() async throws {
        let f = try await Fixture.make()
        #expect(try await f.push(headers: [("apns-collapse-id", String(repeating: "c", count: 64))]).status == 200)
        Self.expect(try await f.push(headers: [("apns-collapse-id", String(repeating: "c", count: 65))]), .badCollapseId)
        try await f.stop()
    }

    @Test("19. a repeated apns-topic: 400 DuplicateHeaders")
    func duplicateHeaders() async throws {
        let f = try await Fixture.make()
        Self.expect(try await f.push(headers: [("apns-topic", "com.example.app")]), .duplicateHeaders)
        try await f.stop()
    }

    @Test("20-22. payload: empty, size limits for alert (4096) and voip (5120), not JSON")
    func payloadLimits() async throws {
        let f = try await Fixture.make()
        Self.expect(try await f.push(payload: ""), .payloadEmpty)
        func payload(size: Int) -> String {
            let prefix = #"{"aps":{"alert":""#, suffix = #""}}"#
            return prefix + String(repeating: "a", count: size - prefix.utf8.count - suffix.utf8.count) + suffix
        }
        #expect(try await f.push(payload: payload(size: 4096)).status == 200)
        Self.expect(try await f.push(payload: payload(size: 4097)), .payloadTooLarge)
        // A VoIP push goes to the app's VoIP token (PushKit's own), never to its APNs token.
        let voip = DeviceToken.random()
        try await f.gateway.store.registerToken(TokenRegistration(
            token: voip, scope: TokenScope(bundleID: "com.example.app", kind: .pushKit(.voip)), environment: .development, createdAtMilliseconds: 0))
        Self.expect(try await f.push(payload: payload(size: 100), topic: "com.example.app.voip", pushType: "voip"), .deviceTokenNotForTopic)
        #expect(try await f.push(payload: payload(size: 5120), topic: "com.example.app.voip", pushType: "voip", token: voip).status == 200)
        Self.expect(try await f.push(payload: payload(size: 5121), topic: "com.example.app.voip", pushType: "voip", token: voip), .payloadTooLarge)
        // Bodies past the 64 KiB flow-control windows are read to their end (the gateway returns
        // the window, per stream and per connection) and answered, twice on one connection.
        Self.expect(try await f.push(payload: payload(size: 300_000)), .payloadTooLarge)
        Self.expect(try await f.push(payload: payload(size: 200_000)), .payloadTooLarge)
        Self.expect(try await f.push(payload: "not json"), .payloadEmpty)
        Self.expect(try await f.push(payload: "[1,2]"), .payloadEmpty)
        try await f.stop()
    }

    @Test("23-26. provider tokens: missing, malformed, unknown key, wrong signer, HS256")
    func providerTokens() async throws {
        let f = try await Fixture.make()
        Self.expect(try await f.connection.send(.push(token: f.token, authorization: nil)), .missingProviderToken)
        Self.expect(try await f.connection.send(.push(token: f.token, authorization: "bearer x.y")), .invalidProviderToken)
        let unknownKey = ProviderTokenSigner(keyID: "UNKNOWN001", teamID: "TEAM000001", privateKey: .init())
        Self.expect(try await f.connection.send(.push(token: f.token, authorization: try f.gateway.bearer(unknownKey))), .invalidProviderToken)
        let forged = ProviderTokenSigner(keyID: f.signer.keyID, teamID: "TEAM000001", privateKey: .init())
        Self.expect(try await f.connection.send(.push(token: f.token, authorization: try f.gateway.bearer(forged))), .invalidProviderToken)
        let hs256 = JWTFixtures.token(header: #"{"alg":"HS256","kid":"\#(f.signer.keyID)"}"#, claims: #"{"iss":"TEAM000001","iat":\#(f.gateway.clock.nowSeconds())}"#, signature: Array(repeating: 1, count: 32))
        Self.expect(try await f.connection.send(.push(token: f.token, authorization: "bearer " + hs256)), .invalidProviderToken)
        try await f.stop()
    }

    @Test("27. iat 3601 s old: ExpiredProviderToken; 3599 s old: 200")
    func tokenAge() async throws {
        let f = try await Fixture.make()
        Self.expect(try await f.connection.send(.push(token: f.token, authorization: try f.bearer(ageSeconds: 3601))), .expiredProviderToken)
        let almostExpired = try f.bearer(ageSeconds: 3599)
        #expect(try await f.connection.send(.push(token: f.token, authorization: almostExpired)).status == 200)
        // The same token, cached on the connection, expires as the clock moves.
        f.gateway.clock.advance(seconds: 2)
        Self.expect(try await f.connection.send(.push(token: f.token, authorization: almostExpired)), .expiredProviderToken)
        try await f.stop()
    }

    @Test("28-29. lenient JWTs: iat as string or float, extra fields, DER signature")
    func lenientTokens() async throws {
        let now = 1_795_262_400 as Int64
        let variants: [(String, String, Bool)] = [
            (#"{"alg":"ES256","kid":"KID","typ":"JWT"}"#, #"{"iss":"TEAM000001","iat":"\#(now)","kid":"KID"}"#, false),
            (#"{"alg":"ES256","kid":"KID"}"#, #"{"iss":"TEAM000001","iat":\#(now).25}"#, false),
            (#"{"alg":"ES256","kid":"KID"}"#, #"{"iss":"TEAM000001","iat":\#(now)}"#, true),
        ]
        for (header, claims, der) in variants {
            // A fresh connection for each: a connection may switch tokens only every 20 minutes.
            let f = try await Fixture.make()
            let jwt = try JWTFixtures.signed(
                header: header.replacingOccurrences(of: "KID", with: f.signer.keyID),
                claims: claims.replacingOccurrences(of: "KID", with: f.signer.keyID),
                key: f.signer.privateKey, der: der)
            let response = try await f.connection.send(.push(token: f.token, authorization: "bearer " + jwt))
            #expect(response.status == 200, "\(header) \(claims) der=\(der): \(response.rejection?.description ?? "")")
            try await f.stop()
        }
    }

    @Test("30. a new token on one connection: 429 within 20 minutes, 200 after 21")
    func tokenRefreshRate() async throws {
        let f = try await Fixture.make()
        #expect(try await f.push().status == 200)
        f.gateway.clock.advance(seconds: 5 * 60)
        Self.expect(try await f.connection.send(.push(token: f.token, authorization: try f.bearer())), .tooManyProviderTokenUpdates)
        // The first token still works meanwhile.
        #expect(try await f.push().status == 200)
        f.gateway.clock.advance(seconds: 16 * 60)
        #expect(try await f.connection.send(.push(token: f.token, authorization: try f.bearer())).status == 200)
        try await f.stop()
    }

    @Test("31. another key of the team after the first push: UnrelatedKeyIdInToken; another team: InvalidProviderToken")
    func keyBinding() async throws {
        let f = try await Fixture.make()
        #expect(try await f.push().status == 200)
        f.gateway.clock.advance(seconds: 21 * 60)
        let sibling = try await f.gateway.makeKey(team: "TEAM000001", topics: [])
        Self.expect(try await f.connection.send(.push(token: f.token, authorization: try f.gateway.bearer(sibling))), .unrelatedKeyIdInToken)
        let stranger = try await f.gateway.makeKey(team: "TEAM000002", topics: ["com.stranger.app"])
        Self.expect(try await f.connection.send(.push(token: f.token, authorization: try f.gateway.bearer(stranger))), .invalidProviderToken)
        try await f.stop()
    }

    @Test("32. a key restricted to development used on a production gateway: BadEnvironmentKeyIdInToken")
    func environmentKey() async throws {
        let gateway = try await TestGateway.start(environment: .production)
        let signer = try await gateway.makeKey(environment: .development)
        let token = try await gateway.makeToken()
        let connection = try await gateway.connect()
        let response = try await connection.send(.push(token: token, authorization: try gateway.bearer(signer)))
        Self.expect(response, .badEnvironmentKeyIdInToken)
        // A production gateway does not send apns-unique-id; the sandbox does (case 38).
        #expect(response.header("apns-unique-id") == nil)
        await connection.close()
        try await gateway.stop()
    }

    @Test("33. one concurrent stream until the first valid token, then 1000")
    func streamLimit() async throws {
        let f = try await Fixture.make()
        await f.connection.waitForServerMaxConcurrentStreams(1)
        Self.expect(try await f.connection.send(.push(token: f.token, authorization: nil)), .missingProviderToken)
        #expect(f.connection.serverMaxConcurrentStreams == 1)
        #expect(try await f.push().status == 200)
        await f.connection.waitForServerMaxConcurrentStreams(1000)
        // Now many streams at once.
        let connection = f.connection, token = f.token, bearer = try f.bearer()
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask { try await connection.send(.push(token: token, authorization: bearer)).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 200 })
        try await f.stop()
    }

    @Test("36. a burst to one token: 429 TooManyRequests")
    func perTokenRateLimit() async throws {
        let f = try await Fixture.make { $0.tokenRateLimit = .init(burst: 3, perSecond: 1) }
        for _ in 0..<3 { #expect(try await f.push().status == 200) }
        Self.expect(try await f.push(), .tooManyRequests)
        f.gateway.clock.advance(seconds: 1)
        #expect(try await f.push().status == 200)
        try await f.stop()
    }

    @Test("37. draining: GOAWAY {\"reason\":\"Shutdown\"}, late streams 503 Shutdown, accepted pushes kept")
    func draining() async throws {
        let f = try await Fixture.make()
        #expect(try await f.push().status == 200)
        let late = try await f.connection.begin(.push(token: f.token, authorization: f.authorization))
        // The server reads frames in order: once the PING is acked, it has opened the late stream.
        try await f.connection.ping()
        await f.gateway.beginShutdown()
        let goAway = await f.connection.waitForGoAway()
        #expect(goAway.debugData == #"{"reason":"Shutdown"}"#)
        #expect(goAway.errorCode == 0)
        let response = try await late.finish(body: Array(#"{"aps":{"alert":"late"}}"#.utf8))
        Self.expect(response, .shutdown)
        #expect(try await f.gateway.store.storedNotificationCount() == 1)
        try await f.stop()
    }

    @Test("38. the sandbox adds apns-unique-id")
    func uniqueID() async throws {
        let f = try await Fixture.make()
        let response = try await f.push()
        #expect(response.header("apns-unique-id").flatMap(NotificationID.init(header:)) != nil)
        try await f.stop()
    }

    @Test("39. ALPN http/1.1,h2 gets h2; PING is acked; PRIORITY is ignored")
    func alpnPingPriority() async throws {
        let gateway = try await TestGateway.start()
        let signer = try await gateway.makeKey()
        let token = try await gateway.makeToken()
        let connection = try await gateway.connect(applicationProtocols: ["http/1.1", "h2"])
        #expect(connection.negotiatedProtocol == "h2")
        try await connection.ping()
        try await connection.sendPriority(streamID: 101)
        #expect(try await connection.send(.push(token: token, authorization: try gateway.bearer(signer))).status == 200)
        await connection.close()
        try await gateway.stop()
    }

    @Test("40. an offline device keeps only the newest notification; collapse ids and expiry")
    func storeAndForward() async throws {
        let f = try await Fixture.make()
        var last: HTTP2Response?
        for i in 1...3 { last = try await f.push(payload: #"{"aps":{"alert":"n\#(i)"}}"#) }
        let now = f.gateway.clock.nowMilliseconds()
        var stored = try await f.gateway.store.storedNotifications(for: f.token, policy: .default, nowMilliseconds: now)
        #expect(stored.count == 1)
        #expect(stored.first?.id.description == last?.apnsID?.lowercased())
        #expect(stored.first?.payload == Array(#"{"aps":{"alert":"n3"}}"#.utf8))
        // One that expires in a minute replaces it, and is gone once the minute has passed.
        _ = try await f.push(headers: [("apns-expiration", String(f.gateway.clock.nowSeconds() + 60))])
        f.gateway.clock.advance(seconds: 61)
        stored = try await f.gateway.store.storedNotifications(for: f.token, policy: .default, nowMilliseconds: f.gateway.clock.nowMilliseconds())
        #expect(stored.isEmpty)
        try await f.stop()
    }

    @Test("h2c development port speaks the same protocol")
    func h2c() async throws {
        let gateway = try await TestGateway.start()
        let signer = try await gateway.makeKey()
        let token = try await gateway.makeToken()
        let connection = try await gateway.connectH2C()
        #expect(try await connection.send(.push(token: token, authorization: try gateway.bearer(signer))).status == 200)
        await connection.close()
        try await gateway.stop()
    }
}
