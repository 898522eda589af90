import Foundation
import HeraldClient
import HeraldCore
import HeraldDevice
import HeraldGateway
import HeraldStore
import HeraldStoreSQLite
import HeraldTesting
import NIOSSL
import Testing

/// Devices end to end: a provider pushes over HTTP/2, devices receive over the device port
/// (WebSocket over TLS), all over real sockets against an in-process gateway.
@Suite("Devices (issue 3)")
struct DeviceTests {
    struct Provider {
        let gateway: TestGateway
        let signer: ProviderTokenSigner
        let connection: HTTP2Connection
        let authorization: String

        static func make(_ gateway: TestGateway, team: String = "TEAM000001", topics: [String] = ["com.example.app"]) async throws -> Provider {
            let signer = try await gateway.makeKey(team: team, topics: topics)
            return Provider(
                gateway: gateway, signer: signer, connection: try await gateway.connect(), authorization: try gateway.bearer(signer))
        }

        @discardableResult
        func push(
            _ token: DeviceToken, payload: String = #"{"aps":{"alert":"hi"}}"#, topic: String = "com.example.app",
            pushType: String = "alert", headers: [(name: String, value: String)] = [], expect status: Int = 200,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws -> HTTP2Response {
            let response = try await connection.send(.push(
                token: token, authorization: authorization, topic: topic, pushType: pushType, payload: payload, extraHeaders: headers))
            #expect(response.status == status, "\(response.status) \(response.rejection.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
            return response
        }

        func get(_ path: String) async throws -> HTTP2Response {
            try await connection.send(HTTP2Request(method: "GET", path: path, headers: [("authorization", authorization)], body: []))
        }

        func receipt(_ id: String) async throws -> [String: Any]? {
            let response = try await get("/3/notifications/\(id)")
            guard response.status == 200 else { return nil }
            return try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        }

        /// The statuses of the receipt's first delivery, polled until `last` appears.
        func receiptStatuses(_ id: String, until last: String) async throws -> [String] {
            for _ in 0..<500 {
                let deliveries = try await receipt(id)?["deliveries"] as? [[String: Any]]
                let events = (deliveries?.first?["events"] as? [[String: Any]]) ?? []
                let statuses = events.compactMap { $0["status"] as? String }
                if statuses.last == last { return statuses }
                try await Task.sleep(for: .milliseconds(10))
            }
            return ((try await receipt(id)?["deliveries"] as? [[String: Any]])?.first?["events"] as? [[String: Any]] ?? [])
                .compactMap { $0["status"] as? String }
        }

        func stop() async { await connection.close() }
    }

    static func payloadText(_ n: DeviceNotification) -> String? {
        guard case .object(let object) = n.payload, case .string(let text)? = object["n"] else { return nil }
        return text
    }

    @Test("a push reaches a connected device, which acks it; the receipt shows accepted → acked")
    func pushDeliverAck() async throws {
        let gateway = try await TestGateway.start()
        let provider = try await Provider.make(gateway)
        let device = try gateway.startDevice()
        let token = try await device.token()
        #expect(token.bytes.count == 32)

        let response = try await provider.push(token, payload: #"{"aps":{"alert":"hello"},"custom":[1,2.5,"x"]}"#)
        let id = try #require(response.apnsID)
        let n = try await device.notification()
        #expect(n.apnsID.description == id)
        #expect(n.topic == "com.example.app" && n.priority == .immediate && n.pushType == .alert)
        #expect(n.payload == .object([
            "aps": .object(["alert": .string("hello")]),
            "custom": .array([.int(1), .double(2.5), .string("x")]),
        ]))
        #expect(try await provider.receiptStatuses(id, until: "acked") == ["accepted", "stored", "delivered", "acked"])

        // Another team may not read the receipt.
        let stranger = try await Provider.make(gateway, team: "TEAM000002", topics: ["com.other.app"])
        let hidden = try await stranger.get("/3/notifications/\(id)")
        #expect(hidden.status == 404 && hidden.rejection?.reason == .notFound)
        #expect(try await provider.get("/3/notifications/not-a-uuid").rejection?.reason == .badMessageId)

        await device.stop()
        await stranger.stop()
        await provider.stop()
        try await gateway.stop()
    }

    @Test("same topic again gives the same token; many topics on one connection; token change reported")
    func tokens() async throws {
        let gateway = try await TestGateway.start()
        let identity = DeviceIdentity()
        var device = try gateway.startDevice(identity: identity, topics: ["com.a", "com.b"])
        let a = try await device.token(for: "com.a")
        let b = try await device.token(for: "com.b")
        #expect(a != b)
        await device.stop()
        // A new launch asks again and gets the same tokens; a stale cached one is reported as changed.
        let stale = DeviceToken.random()
        device = try gateway.startDevice(identity: identity, topics: ["com.a", "com.b"], knownTokens: ["com.a": stale, "com.b": b])
        let changed = try await device.next("token-changed") { event -> DeviceToken? in
            if case .tokenChanged("com.a", stale, let current) = event { return current }
            return nil
        }
        #expect(changed == a)
        #expect(try await device.token(for: "com.b") == b)
        let registration = try await gateway.store.registration(of: a)
        #expect(registration?.deviceID == identity.deviceID && registration?.environment == .development)
        await device.stop()
        try await gateway.stop()
    }

    @Test("offline: only the newest per app is kept and arrives on reconnect, in order")
    func offlineNewestPerApp() async throws {
        try await offline(queue: 1, expect: ["a3", "b2"])
    }

    @Test("offline with --offline-queue 3: up to 3 per app, in order")
    func offlineDeeperQueue() async throws {
        try await offline(queue: 3, expect: ["a2", "a3", "b1", "b2", "a4"])
    }

    func offline(queue: Int, expect expected: [String]) async throws {
        let gateway = try await TestGateway.start { $0.storePolicy = StorePolicy(maximumPerApp: queue) }
        let provider = try await Provider.make(gateway, topics: ["com.a", "com.b"])
        let identity = DeviceIdentity()
        var device = try gateway.startDevice(identity: identity, topics: ["com.a", "com.b"])
        let a = try await device.token(for: "com.a")
        let b = try await device.token(for: "com.b")
        await device.stop()
        for (token, topic, text) in [(a, "com.a", "a1"), (a, "com.a", "a2"), (a, "com.a", "a3"), (b, "com.b", "b1"), (b, "com.b", "b2")] {
            try await provider.push(token, payload: #"{"aps":{"alert":"x"},"n":"\#(text)"}"#, topic: topic)
        }
        if queue > 1 { try await provider.push(a, payload: #"{"aps":{"alert":"x"},"n":"a4"}"#, topic: "com.a") }
        device = try gateway.startDevice(identity: identity, topics: ["com.a", "com.b"])
        var received: [String] = []
        for _ in expected { received.append(Self.payloadText(try await device.notification()) ?? "?") }
        #expect(received == expected)
        #expect(try await device.notifications(arrivingWithin: .milliseconds(300)).isEmpty, "nothing else arrives")
        await device.stop()
        await provider.stop()
        try await gateway.stop()
    }

    @Test("expiry is honoured, apns-expiration 0 reaches only a connected device, collapse id replaces")
    func expiryAndCollapse() async throws {
        let gateway = try await TestGateway.start { $0.storePolicy = StorePolicy(maximumPerApp: 5) }
        let provider = try await Provider.make(gateway)
        let identity = DeviceIdentity()
        var device = try gateway.startDevice(identity: identity)
        let token = try await device.token()
        // Online: apns-expiration 0 is delivered.
        try await provider.push(token, payload: #"{"aps":{"alert":"x"},"n":"now"}"#, headers: [("apns-expiration", "0")])
        #expect(Self.payloadText(try await device.notification()) == "now")
        await device.stop()

        let soon = gateway.clock.nowSeconds() + 10
        let zero = try await provider.push(token, payload: #"{"aps":{"alert":"x"},"n":"zero"}"#, headers: [("apns-expiration", "0")])
        try await provider.push(token, payload: #"{"aps":{"alert":"x"},"n":"expires"}"#, headers: [("apns-expiration", String(soon))])
        try await provider.push(token, payload: #"{"aps":{"alert":"x"},"n":"c1"}"#, headers: [("apns-collapse-id", "score")])
        try await provider.push(token, payload: #"{"aps":{"alert":"x"},"n":"keep"}"#)
        try await provider.push(token, payload: #"{"aps":{"alert":"x"},"n":"c2"}"#, headers: [("apns-collapse-id", "score")])
        gateway.clock.advance(seconds: 20)
        device = try gateway.startDevice(identity: identity)
        var received: [String] = []
        for _ in 0..<2 { received.append(Self.payloadText(try await device.notification()) ?? "?") }
        #expect(received == ["keep", "c2"])
        #expect(try await device.notifications(arrivingWithin: .milliseconds(300)).isEmpty)
        #expect(try await provider.receiptStatuses(try #require(zero.apnsID), until: "dropped") == ["accepted", "dropped"])
        await device.stop()
        await provider.stop()
        try await gateway.stop()
    }

    @Test("unregister: 410 Unregistered with the timestamp, once in the feedback list; reinstall gives a new token")
    func unregisterAndFeedback() async throws {
        let gateway = try await TestGateway.start()
        let provider = try await Provider.make(gateway)
        let identity = DeviceIdentity()
        let device = try gateway.startDevice(identity: identity)
        let token = try await device.token()
        await device.stop()
        gateway.clock.advance(seconds: 5)
        let at = try await DeviceConnection.unregister(
            topic: "com.example.app", identity: identity, host: "localhost", port: gateway.ports.devicePort!,
            tls: try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath))
        #expect(at == gateway.clock.nowMilliseconds())
        let gone = try await provider.push(token, expect: 410)
        #expect(gone.rejection == APNsRejection(.unregistered, timestampMilliseconds: at))

        let feedback = try await provider.get("/3/feedback/com.example.app")
        #expect(feedback.status == 200)
        let list = try JSONSerialization.jsonObject(with: Data(feedback.body)) as? [[String: Any]]
        #expect(list?.count == 1)
        #expect(list?.first?["token"] as? String == token.description)
        #expect((list?.first?["timestamp"] as? NSNumber)?.int64Value == at)
        let again = try await provider.get("/3/feedback/com.example.app")
        #expect(String(decoding: again.body, as: UTF8.self) == "[]", "read and cleared")
        #expect(try await provider.get("/3/feedback/com.not.mine").rejection?.reason == .topicDisallowed)

        let reinstalled = try gateway.startDevice(identity: identity)
        #expect(try await reinstalled.token() != token)
        await reinstalled.stop()
        await provider.stop()
        try await gateway.stop()
    }

    @Test("the legacy feedback port: binary tuples for the app named by the client certificate, read and cleared")
    func legacyFeedbackPort() async throws {
        let gateway = try await TestGateway.start()
        let identity = DeviceIdentity()
        let device = try gateway.startDevice(identity: identity, topics: ["com.example.app", "com.other.app"])
        let token = try await device.token(for: "com.example.app")
        _ = try await device.token(for: "com.other.app")
        await device.stop()
        let tls = try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath)
        let at = try await DeviceConnection.unregister(
            topic: "com.example.app", identity: identity, host: "localhost", port: gateway.ports.devicePort!, tls: tls)
        _ = try await DeviceConnection.unregister(
            topic: "com.other.app", identity: identity, host: "localhost", port: gateway.ports.devicePort!, tls: tls)

        let issued = try DevelopmentCertificates.issueClientCertificate(topic: "com.example.app", in: gateway.directory, clock: SystemWallClock())
        let certPath = gateway.directory + "/feedback.pem", keyPath = gateway.directory + "/feedback-key.pem"
        try issued.certificatePEM.write(toFile: certPath, atomically: true, encoding: .utf8)
        try issued.privateKeyPEM.write(toFile: keyPath, atomically: true, encoding: .utf8)
        func fetch() async throws -> [LegacyFeedbackClient.Entry] {
            try await LegacyFeedbackClient.fetch(
                host: "127.0.0.1", port: gateway.ports.feedbackPort!, certificatePath: certPath, privateKeyPath: keyPath,
                trustRootsPath: gateway.certificates.caCertificatePath)
        }
        // A certificate that names no app (the server's own) gets nothing, and clears nothing.
        let stranger = try? await LegacyFeedbackClient.fetch(
            host: "127.0.0.1", port: gateway.ports.feedbackPort!, certificatePath: gateway.certificates.serverCertificatePath,
            privateKeyPath: gateway.certificates.serverKeyPath, trustRootsPath: gateway.certificates.caCertificatePath)
        #expect(stranger == nil || stranger == [])
        #expect(try await fetch() == [.init(timestampSeconds: UInt32(at / 1000), token: token)], "only this app's tokens")
        #expect(try await fetch().isEmpty, "read and cleared")
        try await gateway.stop()
    }

    @Test("a device not seen for the inactivity period is in the feedback list")
    func inactivityFeedback() async throws {
        let gateway = try await TestGateway.start { $0.inactivityPeriodMilliseconds = 30 * 86_400_000 }
        let provider = try await Provider.make(gateway)
        let device = try gateway.startDevice()
        let token = try await device.token()
        await device.stop()
        let lastSeen = gateway.clock.nowMilliseconds()
        #expect(String(decoding: try await provider.get("/3/feedback/com.example.app").body, as: UTF8.self) == "[]")
        gateway.clock.advance(seconds: 31 * 86_400)
        let provider2 = try await Provider.make(gateway, team: "TEAM000001", topics: [])
        let list = try JSONSerialization.jsonObject(with: Data(try await provider2.get("/3/feedback/com.example.app").body)) as? [[String: Any]]
        #expect(list?.first?["token"] as? String == token.description)
        #expect((list?.first?["timestamp"] as? NSNumber)?.int64Value == lastSeen + 30 * 86_400_000)
        await provider.stop()
        await provider2.stop()
        try await gateway.stop()
    }

    @Test("background pushes are throttled per device and app; the newest held one is sent when the budget allows")
    func backgroundThrottle() async throws {
        let gateway = try await TestGateway.start {
            $0.backgroundBudget = .init(count: 1, windowMilliseconds: 3_600_000)
            $0.lowPriorityDelay = .milliseconds(1)
        }
        let provider = try await Provider.make(gateway)
        let device = try gateway.startDevice()
        let token = try await device.token()
        let background = #"{"aps":{"content-available":1},"n":"%@"}"#
        for text in ["b1", "b2", "b3"] {
            try await provider.push(token, payload: background.replacingOccurrences(of: "%@", with: text), pushType: "background")
        }
        #expect(Self.payloadText(try await device.notification()) == "b1")
        let held = try await device.notifications(arrivingWithin: .milliseconds(300))
        #expect(held.isEmpty, "over budget: held")
        gateway.clock.advance(seconds: 3600)
        let released = try await device.next(timeout: .seconds(10), "released background push") { event -> String? in
            if case .frame(.notification(let n)) = event { return Self.payloadText(n) }
            return nil
        }
        #expect(released == "b3", "only the newest held one is sent")
        await device.stop()
        await provider.stop()
        try await gateway.stop()
    }

    @Test("bad frames get a precise error frame; oversized ones close only that connection; bad signatures are refused")
    func badFrames() async throws {
        let gateway = try await TestGateway.start()
        let provider = try await Provider.make(gateway)
        let bystander = try gateway.startDevice()
        let bystanderToken = try await bystander.token()
        let tls = try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath)
        let port = gateway.ports.devicePort!

        func nextFrame(_ socket: DeviceSocket, _ iterator: inout AsyncStream<DeviceSocket.Event>.Iterator) async -> DeviceSocket.Event? {
            await iterator.next()
        }

        // Authenticate by hand, then misbehave.
        let identity = DeviceIdentity()
        let socket = try await DeviceSocket.connect(host: "localhost", port: port, tls: tls)
        var events = socket.events.makeAsyncIterator()
        guard case .frame(.challenge(let version, let nonce))? = await events.next() else { Issue.record("no challenge"); return }
        #expect(version == 1)
        socket.sendRaw(text: Array(#"{"type":"register","topic":"com.x"}"#.utf8))
        guard case .frame(.error(.notAuthenticated, _, _))? = await events.next() else { Issue.record("expected not-authenticated"); return }
        socket.send(try identity.hello(nonce: nonce))
        guard case .frame(.welcome(let id, .development, true, _))? = await events.next() else { Issue.record("no welcome"); return }
        #expect(id == identity.deviceID)
        socket.sendRaw(text: Array("not json".utf8))
        guard case .frame(.error(.malformedFrame, let message, _))? = await events.next() else { Issue.record("expected malformed-frame"); return }
        #expect(message.contains("JSON"))
        socket.sendRaw(text: Array(#"{"type":"register"}"#.utf8))
        guard case .frame(.error(.malformedFrame, let missing, _))? = await events.next() else { Issue.record("expected malformed-frame"); return }
        #expect(missing.contains("topic"))
        socket.sendRaw(text: Array(#"{"type":"register","topic":"bad topic"}"#.utf8))
        guard case .frame(.error(.invalidTopic, _, _))? = await events.next() else { Issue.record("expected invalid-topic"); return }
        socket.sendRaw(text: Array(#"{"type":"register","topic":"com.still.works"}"#.utf8))
        guard case .frame(.registered("com.still.works", _))? = await events.next() else { Issue.record("the connection should survive"); return }
        socket.sendRaw(text: Array(repeating: UInt8(ascii: "x"), count: DeviceProtocol.maximumFrameSize + 1))
        guard case .frame(.error(.frameTooLarge, _, _))? = await events.next() else { Issue.record("expected frame-too-large"); return }
        guard case .closed? = await events.next() else { Issue.record("expected the connection to close"); return }

        // A wrong signature.
        let forged = try await DeviceSocket.connect(host: "localhost", port: port, tls: tls)
        var forgedEvents = forged.events.makeAsyncIterator()
        guard case .frame(.challenge)? = await forgedEvents.next() else { Issue.record("no challenge"); return }
        forged.send(try identity.hello(nonce: "another nonce"))
        guard case .frame(.error(.authenticationFailed, _, _))? = await forgedEvents.next() else { Issue.record("expected authentication-failed"); return }

        // The bystander never noticed.
        try await provider.push(bystanderToken, payload: #"{"aps":{"alert":"x"},"n":"still here"}"#)
        #expect(Self.payloadText(try await bystander.notification()) == "still here")
        #expect(!bystander.allEvents.contains { if case .disconnected = $0 { return true } else { return false } })
        await bystander.stop()
        await provider.stop()
        try await gateway.stop()
    }

    @Test("a second connection of the same device replaces the first")
    func replacement() async throws {
        let gateway = try await TestGateway.start()
        let identity = DeviceIdentity()
        let socket = try await DeviceSocket.connect(
            host: "localhost", port: gateway.ports.devicePort!,
            tls: try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath))
        var events = socket.events.makeAsyncIterator()
        guard case .frame(.challenge(_, let nonce))? = await events.next() else { Issue.record("no challenge"); return }
        socket.send(try identity.hello(nonce: nonce))
        guard case .frame(.welcome)? = await events.next() else { Issue.record("no welcome"); return }
        let second = try gateway.startDevice(identity: identity)
        _ = try await second.token()
        guard case .frame(.error(.replaced, _, _))? = await events.next() else { Issue.record("expected replaced"); return }
        guard case .closed? = await events.next() else { Issue.record("expected close"); return }
        await second.stop()
        try await gateway.stop()
    }

    @Test("a graceful stop tells each device to come back within connected ÷ reconnect rate seconds")
    func shutdownSpreadsReconnects() async throws {
        let gateway = try await TestGateway.start { $0.limits.deviceReconnectRate = 2 }
        let tls = try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath)
        var sockets: [(DeviceSocket, AsyncStream<DeviceSocket.Event>.Iterator)] = []
        for _ in 0..<3 {
            let socket = try await DeviceSocket.connect(host: "localhost", port: gateway.ports.devicePort!, tls: tls)
            var events = socket.events.makeAsyncIterator()
            guard case .frame(.challenge(_, let nonce))? = await events.next() else { Issue.record("no challenge"); return }
            socket.send(try DeviceIdentity().hello(nonce: nonce))
            guard case .frame(.welcome)? = await events.next() else { Issue.record("no welcome"); return }
            sockets.append((socket, events))
        }
        try await gateway.stop()
        for var (_, events) in sockets {
            // 3 devices at 2 handshakes a second: within 1.5 s.
            guard case .frame(.error(.shutdown, _, 1_500?))? = await events.next() else { Issue.record("expected shutdown within 1500 ms"); return }
        }
    }

    @Test("closed enrollment: a new device needs the secret, an enrolled one does not; too many topics and bad secrets are refused")
    func closedEnrollment() async throws {
        let secret = "enroll-0123456789abcdef"
        let gateway = try await TestGateway.start { $0.enrollmentSecret = secret; $0.limits.topicsPerDevice = 2 }
        let tls = try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath)
        let identity = DeviceIdentity()
        func hello(_ secret: String?) async throws -> (DeviceSocket, AsyncStream<DeviceSocket.Event>.Iterator, DeviceSocket.Event?) {
            let socket = try await DeviceSocket.connect(host: "localhost", port: gateway.ports.devicePort!, tls: tls)
            var events = socket.events.makeAsyncIterator()
            guard case .frame(.challenge(_, let nonce))? = await events.next() else { throw DeviceError("no challenge") }
            socket.send(try identity.hello(nonce: nonce, enrollmentSecret: secret))
            let answer = await events.next()
            return (socket, events, answer)
        }
        // Without the secret, or with another one: refused and closed.
        for attempt in [nil, "wrong-secret-0123456789"] {
            var (_, events, answer) = try await hello(attempt)
            guard case .frame(.error(.enrollmentRefused, _, _))? = answer else { Issue.record("expected enrollment-refused, got \(String(describing: answer))"); return }
            guard case .closed? = await events.next() else { Issue.record("expected close"); return }
        }
        // With it: enrolled.
        var (socket, events, answer) = try await hello(secret)
        guard case .frame(.welcome(_, _, true, _))? = answer else { Issue.record("expected an enrolling welcome, got \(String(describing: answer))"); return }
        // Topics per device are bounded.
        for topic in ["com.a", "com.b", "com.c"] { socket.send(.register(topic: topic)) }
        var registered = 0
        var refused = 0
        while registered + refused < 3, let event = await events.next() {
            if case .frame(.registered) = event { registered += 1 }
            if case .frame(.error(.tooManyTopics, _, _)) = event { refused += 1 }
        }
        #expect(registered == 2 && refused == 1)
        await socket.close()
        // Enrolled now: no secret needed any more.
        (socket, events, answer) = try await hello(nil)
        guard case .frame(.welcome(_, _, false, _))? = answer else { Issue.record("expected a welcome, got \(String(describing: answer))"); return }
        // The bound is the device's, not the connection's: a new connection may not add a third app.
        socket.send(.register(topic: "com.c"))
        socket.send(.register(topic: "com.a"))
        var answers: [String] = []
        while answers.count < 2, let event = await events.next() {
            if case .frame(.registered(let topic, _)) = event { answers.append("registered \(topic)") }
            if case .frame(.error(.tooManyTopics, _, _)) = event { answers.append("too-many-topics") }
        }
        #expect(answers.sorted() == ["registered com.a", "too-many-topics"])
        await socket.close()
        try await gateway.stop()
    }

    @Test("device protocol versions: a version 1 device keeps working and is refused version 2 frames; a version 2 device gets Live Activity tokens whose pushes carry the token")
    func protocolVersions() async throws {
        let gateway = try await TestGateway.start()
        let provider = try await Provider.make(gateway)
        let tls = try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath)
        func session(version: Int) async throws -> (DeviceSocket, AsyncStream<DeviceSocket.Event>.Iterator) {
            let identity = DeviceIdentity()
            let socket = try await DeviceSocket.connect(host: "localhost", port: gateway.ports.devicePort!, tls: tls)
            var events = socket.events.makeAsyncIterator()
            guard case .frame(.challenge(let challengeVersion, let nonce))? = await events.next() else { throw DeviceError("no challenge") }
            #expect(challengeVersion == 1, "the challenge stays version 1, so older devices keep answering it")
            let signature = try identity.privateKey.signature(for: DeviceProtocol.challengeMessage(nonce: nonce))
            socket.send(.hello(version: version, publicKey: identity.publicKey, signature: Array(signature.rawRepresentation)))
            guard case .frame(.welcome)? = await events.next() else { throw DeviceError("no welcome") }
            return (socket, events)
        }
        func next(_ events: inout AsyncStream<DeviceSocket.Event>.Iterator) async -> DeviceServerFrame? {
            while let event = await events.next() { if case .frame(let frame) = event { return frame } }
            return nil
        }

        var (old, oldEvents) = try await session(version: 1)
        old.send(.registerActivity(topic: "com.example.app", activity: .pushToStart))
        guard case .error(.unsupportedFrameForVersion, _, _)? = await next(&oldEvents) else { Issue.record("a version 1 device was not refused a version 2 frame"); return }
        old.send(.register(topic: "com.example.app"))
        guard case .registered(_, let oldToken)? = await next(&oldEvents) else { Issue.record("no token for the version 1 device"); return }
        try await provider.push(oldToken)
        guard case .notification(let n)? = await next(&oldEvents) else { Issue.record("no notification for the version 1 device"); return }
        #expect(n.token == nil, "a version 1 device's frames are what they were")

        var (new, newEvents) = try await session(version: 2)
        new.send(.registerActivity(topic: "com.example.app", activity: .pushToStart))
        guard case .registeredActivity("com.example.app", .pushToStart, let startToken)? = await next(&newEvents) else { Issue.record("no push-to-start token"); return }
        new.send(.registerActivity(topic: "com.example.app", activity: .pushToStart))
        guard case .registeredActivity(_, _, let again)? = await next(&newEvents) else { Issue.record("no second answer"); return }
        #expect(again == startToken, "asking again gives the same token")
        try await provider.push(startToken, payload: #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#,
                                topic: "com.example.app.push-type.liveactivity", pushType: "liveactivity", headers: [("apns-priority", "1")], expect: 400)
        try await provider.push(startToken, payload: #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#,
                                topic: "com.example.app.push-type.liveactivity", pushType: "liveactivity")
        guard case .notification(let live)? = await next(&newEvents) else { Issue.record("no Live Activity push"); return }
        #expect(live.token == startToken && live.pushType == .liveactivity)
        new.send(.subscribe(topic: "com.example.app", channel: BroadcastChannelID.random().value))
        guard case .error(.unknownChannel, _, _)? = await next(&newEvents) else { Issue.record("subscribing to a channel that does not exist was not refused"); return }
        await old.close()
        await new.close()
        await provider.stop()
        try await gateway.stop()
    }

    @Test("HTTP on the device port is told where the WebSocket is")
    func plainHTTP() async throws {
        let gateway = try await TestGateway.start()
        await #expect(throws: DeviceError.self) {
            // Upgrading at the right path works; this checks the refusal of a wrong one through the client's error.
            _ = try await DeviceSocket.connectForTesting(path: "/elsewhere", host: "localhost", port: gateway.ports.devicePort!,
                tls: try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath))
        }
        try await gateway.stop()
    }
}
