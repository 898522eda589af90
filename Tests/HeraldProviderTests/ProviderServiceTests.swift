import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HeraldClient
import HeraldCore
import HeraldDevice
import HeraldProvider
import HeraldProviderServer
import HeraldStore
import HeraldTesting
import Testing

/// The provider service end to end: its REST API over HTTP, an APNs client, the in-process
/// gateway, and device runtimes whose apps register with the provider.
@Suite("Provider service")
struct ProviderServiceTests {
    /// Milliseconds since 1970 of an ISO 8601 instant.
    static func instant(_ text: String) -> Int64 {
        let formatter = ISO8601DateFormatter()
        return Int64(formatter.date(from: text)!.timeIntervalSince1970 * 1000)
    }

    /// The in-process gateway with a key for com.example.app, a provider service (the in-memory
    /// store, English default; the other tests here run on SQLite) sending through an APNs client, and its REST API on port 0.
    struct Stack {
        let gateway: TestGateway
        let signer: ProviderTokenSigner
        let client: APNsClient
        let service: ProviderService
        let server: ProviderHTTPServer
        var base: String { "http://127.0.0.1:\(server.port)" }

        static func start() async throws -> Stack {
            let gateway = try await TestGateway.start()
            let signer = try await gateway.makeKey(team: "TEAM000001", topics: ["com.example.app"])
            let client = APNsClient(
                configuration: .init(host: "localhost", port: gateway.ports.providerPort, tls: ClientTLS(trustRootsPath: gateway.certificates.caCertificatePath)),
                signer: signer, clock: gateway.clock)
            let service = ProviderService(store: InMemoryProviderStore(), sender: client, clock: gateway.clock, defaultLanguage: "en")
            return Stack(gateway: gateway, signer: signer, client: client, service: service,
                         server: try await ProviderHTTPServer.start(service: service, port: 0, apiToken: ProviderServiceTests.apiToken))
        }
    }

    /// The REST API's bearer token in these tests.
    static let apiToken = "test-api-token-0123456789abcdef"

    static func http(_ method: String, _ url: String, _ body: String? = nil, headers: [String: String] = [:]) async throws -> (status: Int, json: JSONValue?) {
        try await TestHTTP.request(method, url, body, headers: headers, bearer: apiToken)
    }

    /// An app that registers with its provider at launch and whenever its token or language changes.
    final class RegisteringApp: AppNotificationDelegate {
        let provider: String
        let runtime: DeviceRuntime
        let user: String
        let registered = Locked(0)
        init(provider: String, runtime: DeviceRuntime, user: String) { (self.provider, self.runtime, self.user) = (provider, runtime, user) }
        func didRegisterForRemoteNotifications(token: DeviceToken) async {
            let language = await runtime.preferredLanguages.first ?? "en"
            let zone = await runtime.timeZone.identifier
            let body = #"{"token":"\#(token.hex)","topic":"com.example.app","language":"\#(language)","timeZone":"\#(zone)","userId":"\#(user)","tags":["beta"]}"#
            if (try? await ProviderServiceTests.http("POST", provider + "/v1/registrations", body))?.status == 200 {
                registered.withLock { $0 += 1 }
            }
        }
    }

    final class Shown: Sendable {
        let items = Locked<[DeliveredNotification]>([])
        var observer: @Sendable (RuntimeEvent) -> Void { { [items] e in if case .delivered(_, let n) = e { items.withLock { $0.append(n) } } } }
        var bodies: [String] { items.withLock { $0.compactMap(\.content.body) } }
    }

    struct Phone {
        let runtime: DeviceRuntime
        let shown: Shown
        let app: RegisteringApp
        let identity: DeviceIdentity
        let tasks: [Task<Void, Never>]

        static func start(_ gateway: TestGateway, provider: String, language: String, zone: String, user: String) async throws -> Phone {
            let shown = Shown()
            let runtime = try DeviceRuntime(clock: SystemAlarmClock(), timeZone: TimeZone(identifier: zone)!, preferredLanguages: [language],
                                            user: AllowingUser(), observer: shown.observer)
            let center = try await runtime.install("com.example.app")
            let app = RegisteringApp(provider: provider, runtime: runtime, user: user)
            try await center.setDelegate(app)
            try await center.requestAuthorization([.alert, .badge])
            try await center.registerForRemoteNotifications()
            let identity = DeviceIdentity()
            let connection = try gateway.makeDeviceConnection(identity: identity)
            let tasks = [Task { await connection.run() }, Task { await runtime.follow(connection.events) }]
            return Phone(runtime: runtime, shown: shown, app: app, identity: identity, tasks: tasks)
        }

        func stop() async {
            tasks[0].cancel()
            await tasks[1].value
        }
    }

    @Test("register, send a template localized with fallback to a user's devices, idempotent retries, prune on 410, OpenAPI served")
    func endToEnd() async throws {
        let stack = try await Stack.start()
        let (gateway, client, service, server, base) = (stack.gateway, stack.client, stack.service, stack.server, stack.base)

        let paris = try await Phone.start(gateway, provider: base, language: "fr-CA", zone: "America/Montreal", user: "ana")
        let madrid = try await Phone.start(gateway, provider: base, language: "es", zone: "Europe/Madrid", user: "ana")
        try await eventually("both registrations") {
            paris.app.registered.withLock { $0 } == 1 && madrid.app.registered.withLock { $0 } == 1
        }
        let template = #"{"translations":{"en":{"title":"Hello","body":"%1$@ sent you %2$@"},"fr":{"title":"Bonjour","body":"%1$@ vous a envoyé %2$@"}}}"#
        #expect(try await Self.http("PUT", base + "/v1/templates/gift", template).status == 200)

        let send = #"{"to":{"user":"ana"},"template":{"id":"gift","args":["Ben","a gift"]},"badge":1}"#
        let first = try await Self.http("POST", base + "/v1/sends", send, headers: ["Idempotency-Key": "gift-1"])
        #expect(first.status == 200)
        guard case .object(let report)? = first.json else { Issue.record("no report"); return }
        #expect(report["counts"] == .object(["accepted": .int(2)]))
        try await eventually("both devices") { !paris.shown.bodies.isEmpty && !madrid.shown.bodies.isEmpty }
        #expect(paris.shown.bodies == ["Ben vous a envoyé a gift"])  // fr-CA → fr
        #expect(madrid.shown.bodies == ["Ben sent you a gift"])  // es → the default, en

        // The same request again (a retry after a lost answer): the first report, nothing sent.
        let again = try await Self.http("POST", base + "/v1/sends", send, headers: ["Idempotency-Key": "gift-1"])
        guard case .object(let replay)? = again.json else { Issue.record("no replay"); return }
        #expect(replay["replayed"] == .bool(true) && replay["id"] == report["id"])
        // A barrier instead of a wait: a push sent after the replay reaches each device after
        // anything the replay could have sent (one connection each, in commit order).
        #expect(try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"ana"},"alert":{"body":"barrier"}}"#).status == 200)
        try await eventually("the barrier") { paris.shown.bodies.last == "barrier" && madrid.shown.bodies.last == "barrier" }
        #expect(paris.shown.bodies == ["Ben vous a envoyé a gift", "barrier"] && madrid.shown.bodies == ["Ben sent you a gift", "barrier"])

        // Every alert APNs accepts: a title only, a subtitle only, a localized title only
        // (apns.md: the alert dictionary's keys are each optional). One with no text is refused by name.
        for alert in [#""alert":{"title":"Only a title"}"#, #""alert":{"subtitle":"Only a subtitle"}"#, #""locKey":{"titleKey":"GREETING","titleArgs":["Ana"]}"#] {
            let sent = try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"ana"},\#(alert)}"#)
            #expect(sent.status == 200 && sent.json?["counts"] == .object(["accepted": .int(2)]), "\(alert): \(String(describing: sent.json))")
        }
        try await eventually("the three alerts without a body") { paris.shown.items.withLock { $0.count } == 5 }
        let lastThree = paris.shown.items.withLock { Array($0.suffix(3)) }
        #expect(lastThree.map(\.content.title) == ["Only a title", nil, "GREETING"])
        #expect(lastThree.map(\.content.subtitle) == [nil, "Only a subtitle", nil])
        #expect(lastThree.allSatisfy { $0.content.body == nil })
        let empty = try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"ana"},"alert":{"title":""}}"#)
        #expect(empty.status == 400 && empty.json?["error"]?.stringValue == #""alert" needs a "title", "subtitle" or "body" that is not empty"#)
        let emptyKey = try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"ana"},"locKey":{"args":["x"]}}"#)
        #expect(emptyKey.status == 400 && emptyKey.json?["error"]?.stringValue == #""locKey" needs a "key" (the body's) or a "titleKey" that is not empty"#)

        // The Madrid app is removed: the next send gets 410 and the provider prunes the token.
        await madrid.stop()
        guard case .array(let deliveries)? = report["deliveries"] else { Issue.record("no deliveries"); return }
        let tokens = deliveries.compactMap { d -> String? in if case .object(let o) = d { o["token"]?.stringValue } else { nil } }
        let madridRegistration = try await service.store.registrations(user: "ana").first { $0.language == "es" }
        let removedToken = try #require(madridRegistration?.token)
        #expect(tokens.contains(removedToken))
        gateway.clock.advance(seconds: 5)
        _ = try await DeviceConnection.unregister(
            topic: "com.example.app", identity: madrid.identity, host: "localhost", port: gateway.ports.devicePort!,
            tls: try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath))
        let afterRemoval = try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"ana"},"alert":{"body":"still there?"}}"#)
        guard case .object(let pruneReport)? = afterRemoval.json else { Issue.record("no report"); return }
        #expect(pruneReport["counts"] == .object(["accepted": .int(1), "410 Unregistered": .int(1)]))
        #expect(pruneReport["pruned"] == .array([.string(removedToken)]))
        #expect(try await Self.http("GET", base + "/v1/registrations/\(removedToken)").status == 404)

        // A stored report reads back, with the gateway's receipts for it.
        guard case .string(let id)? = report["id"] else { return }
        #expect(try await Self.http("GET", base + "/v1/sends/\(id)").status == 200)
        let receipts = try await Self.http("GET", base + "/v1/sends/\(id)/receipts")
        guard case .object(let statuses)? = receipts.json?["tokens"] else { Issue.record("no receipts"); return }
        #expect(statuses.count == 2)
        #expect(statuses.values.allSatisfy { ["delivered", "acked"].contains($0.stringValue ?? "") }, "\(statuses)")

        // The gateway's feedback list: the Paris app is removed too; polling prunes its token
        // (Madrid's, listed as well, was pruned already on its 410).
        let parisToken = try #require(try await service.store.registrations(user: "ana").first?.token)
        gateway.clock.advance(seconds: 5)
        _ = try await DeviceConnection.unregister(
            topic: "com.example.app", identity: paris.identity, host: "localhost", port: gateway.ports.devicePort!,
            tls: try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath))
        let poll = try await Self.http("POST", base + "/v1/feedback/poll")
        #expect(poll.json?["read"] == .int(2))
        #expect(poll.json?["pruned"] == .array([.string(parisToken)]))
        #expect(try await service.store.registrations(user: "ana").isEmpty)
        // Read and cleared: the next poll finds nothing.
        #expect(try await Self.http("POST", base + "/v1/feedback/poll").json?["read"] == .int(0))

        // Errors say what to fix.
        let bad = try await Self.http("POST", base + "/v1/registrations", #"{"token":"xyz","topic":"com.example.app","language":"fr","timeZone":"Europe/Paris"}"#)
        #expect(bad.status == 400)
        let badZone = try await Self.http("POST", base + "/v1/registrations", #"{"token":"abcd","topic":"com.example.app","language":"fr","timeZone":"Mars/Base"}"#)
        if case .object(let e)? = badZone.json { #expect(e["error"]?.stringValue?.contains("IANA") == true) } else { Issue.record("no error body") }
        #expect(try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"ana"},"template":{"id":"nope"}}"#).status == 404)

        // Every path of the OpenAPI document is routed.
        let openapi = try await Self.http("GET", base + "/openapi.json")
        guard case .object(let doc)? = openapi.json, case .object(let paths)? = doc["paths"] else { Issue.record("no document"); return }
        for (path, value) in paths {
            guard case .object(let methods) = value else { continue }
            for method in methods.keys where method != "parameters" {
                let concrete = path.replacingOccurrences(of: "{token}", with: "00").replacingOccurrences(of: "{id}", with: "x")
                let answer = try await Self.http(method.uppercased(), base + concrete, method == "get" || method == "delete" ? nil : "{}")
                if case .object(let e)? = answer.json, let message = e["error"]?.stringValue { #expect(!message.hasPrefix("no route"), "\(method) \(path)") }
            }
        }

        await paris.stop()
        await server.close()
        await client.close()
        try await gateway.stop()
    }

    @Test("badge counts: sends increment per user (a user's devices share one count) or per device, set them, leave them; the app resets its count; each device gets the absolute number; hostile counts are refused by name")
    func badgeCounts() async throws {
        let stack = try await Stack.start()
        let (gateway, server, base) = (stack.gateway, stack.server, stack.base)
        defer { Task { await server.close() } }
        let phone = try await Phone.start(gateway, provider: base, language: "en", zone: "Europe/Paris", user: "ana")
        let tablet = try await Phone.start(gateway, provider: base, language: "en", zone: "Europe/Paris", user: "ana")
        let other = try await Phone.start(gateway, provider: base, language: "en", zone: "Europe/Paris", user: "ben")
        try await eventually("three registrations") { [phone, tablet, other].allSatisfy { $0.app.registered.withLock { $0 } == 1 } }
        func badges(_ p: Phone) -> [Int?] { p.shown.items.withLock { $0.map(\.content.badge) } }
        func send(_ body: String) async throws -> Int { try await Self.http("POST", base + "/v1/sends", body).status }
        func arrived(_ count: Int) async throws {
            try await eventually("\(count) notifications each") { [phone, tablet, other].allSatisfy { $0.shown.items.withLock { $0.count } >= count } }
        }

        #expect(try await send(#"{"to":{"segment":{"topic":"com.example.app"}},"alert":{"body":"one"},"badgeIncrement":1}"#) == 200)
        try await arrived(1)
        #expect(try await send(#"{"to":{"user":"ana"},"alert":{"body":"two"},"badgeIncrement":2}"#) == 200)
        #expect(try await send(#"{"to":{"user":"ben"},"alert":{"body":"two"},"badgeIncrement":2}"#) == 200)
        try await arrived(2)
        #expect(try await send(#"{"to":{"segment":{"topic":"com.example.app"}},"alert":{"body":"no badge"}}"#) == 200)
        try await arrived(3)
        #expect(badges(phone) == [1, 3, nil] && badges(tablet) == [1, 3, nil] && badges(other) == [1, 3, nil])

        // Ana opens the app on her phone: it resets her count (both devices share it).
        let phoneToken = try #require(try await stack.service.store.registrations(user: "ana").first?.token)
        let reset = try await Self.http("POST", base + "/v1/registrations/\(phoneToken)/badge", "")
        #expect(reset.status == 200 && reset.json?["badge"] == .int(0), "\(reset.status) \(String(describing: reset.json))")
        #expect(try await send(#"{"to":{"segment":{"topic":"com.example.app"}},"alert":{"body":"after"},"badgeIncrement":1}"#) == 200)
        try await arrived(4)
        #expect(badges(phone).last == 1 && badges(tablet).last == 1 && badges(other).last == 4)
        let listed = try await Self.http("GET", base + "/v1/registrations?user=ben")
        #expect(listed.json?["items"]?.arrayValue?.first?["badge"] == .int(4))
        // Setting the number sets the count.
        #expect(try await send(#"{"to":{"user":"ben"},"alert":{"body":"set"},"badge":10}"#) == 200)
        #expect(try await send(#"{"to":{"user":"ben"},"alert":{"body":"plus"},"badgeIncrement":5}"#) == 200)
        try await eventually("ben's two") { other.shown.items.withLock { $0.count } >= 6 }
        #expect(badges(other).suffix(2) == [10, 15])
        let set = try await Self.http("POST", base + "/v1/registrations/\(phoneToken)/badge", #"{"badge":7}"#)
        #expect(set.json?["badge"] == .int(7))

        // Hostile counts: refused, naming the field; nothing sent.
        for (body, field) in [
            (#"{"to":{"user":"ana"},"badgeIncrement":-1}"#, "badgeIncrement"), (#"{"to":{"user":"ana"},"badgeIncrement":0}"#, "badgeIncrement"),
            (#"{"to":{"user":"ana"},"badgeIncrement":10001}"#, "badgeIncrement"), (#"{"to":{"user":"ana"},"badge":2147483648}"#, "badge"),
            (#"{"to":{"user":"ana"},"badge":1,"badgeIncrement":1}"#, "badgeIncrement"),
        ] {
            let answer = try await Self.http("POST", base + "/v1/sends", body)
            #expect(answer.status == 400 && (answer.json?["error"]?.stringValue ?? "").contains(field), "\(body): \(String(describing: answer.json))")
        }
        for body in [#"{"badge":2147483648}"#, #"{"badge":-5}"#, #"{"badge":"zero"}"#] {
            let answer = try await Self.http("POST", base + "/v1/registrations/\(phoneToken)/badge", body)
            #expect(answer.status == 400 && (answer.json?["error"]?.stringValue ?? "").contains("badge"), "\(body): \(String(describing: answer.json))")
        }
        #expect(try await Self.http("POST", base + "/v1/registrations/00ff/badge").status == 404)
        // At the top, a count stays there.
        #expect(try await Self.http("POST", base + "/v1/registrations/\(phoneToken)/badge", #"{"badge":2147483647}"#).status == 200)
        #expect(try await send(#"{"to":{"user":"ana"},"alert":{"body":"top"},"badgeIncrement":10000}"#) == 200)
        try await eventually("the top") { phone.shown.items.withLock { $0.last?.content.body } == "top" }
        #expect(badges(phone).last == 2147483647)
        for p in [phone, tablet, other] { await p.stop() }
    }

    @Test("503 from the gateway (faults injected on its admin port): the send is retried with the same apns-id and arrives once")
    func retryOn503WithoutDuplicates() async throws {
        let gateway = try await TestGateway.start { $0.faultInjection = true }
        let signer = try await gateway.makeKey(team: "TEAM000001", topics: ["com.example.app"])
        let waits = Locked<[Duration]>([])
        let client = APNsClient(
            configuration: .init(host: "localhost", port: gateway.ports.providerPort, tls: ClientTLS(trustRootsPath: gateway.certificates.caCertificatePath)),
            signer: signer, clock: gateway.clock, sleep: { duration in waits.withLock { $0.append(duration) } })
        let service = ProviderService(store: try SQLiteProviderStore(directory: nil), sender: client, clock: gateway.clock)
        let server = try await ProviderHTTPServer.start(service: service, port: 0, apiToken: Self.apiToken)
        let base = "http://127.0.0.1:\(server.port)"
        let phone = try await Phone.start(gateway, provider: base, language: "en", zone: "Europe/Dublin", user: "ray")
        try await eventually("registration") { phone.app.registered.withLock { $0 } == 1 }

        let admin = "http://127.0.0.1:\(gateway.ports.adminPort!)"
        let injected = try await Self.http("POST", admin + "/faults", #"{"reason":"ServiceUnavailable","count":2,"topic":"com.example.app"}"#)
        #expect(injected.status == 200)
        #expect(try await Self.http("POST", admin + "/faults", #"{"reason":"BadDeviceToken","count":1}"#).status == 400)

        let sent = try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"ray"},"alert":{"body":"third time lucky"}}"#)
        #expect(sent.json?["counts"] == .object(["accepted": .int(1)]))
        guard case .array(let deliveries)? = sent.json?["deliveries"], let delivery = deliveries.first else { Issue.record("no delivery"); return }
        #expect(delivery["attempts"] == .int(3))
        #expect(waits.withLock { $0.count } == 2)  // two backoffs, one per 503
        try await eventually("the push") { phone.shown.bodies == ["third time lucky"] }
        // The gateway took it once: one receipt for the apns-id all three attempts carried, and nothing more arrives.
        let apnsID = try #require(delivery["apnsId"]?.stringValue)
        let receipt = try #require(try await client.receipt(apnsID: apnsID))
        #expect(receipt.deliveries.count == 1)
        #expect(try await Self.http("GET", admin + "/faults").json?["faults"] == .array([]))
        // A barrier instead of a wait: nothing of the retried send arrives after a later push.
        #expect(try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"ray"},"alert":{"body":"barrier 1"}}"#).status == 200)
        try await eventually("the first barrier") { phone.shown.bodies.last == "barrier 1" }
        #expect(phone.shown.bodies == ["third time lucky", "barrier 1"])

        // More 503s than attempts: the report says so, and nothing arrives.
        _ = try await Self.http("POST", admin + "/faults", #"{"reason":"ServiceUnavailable","count":5}"#)
        let failed = try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"ray"},"alert":{"body":"never"}}"#)
        #expect(failed.json?["counts"] == .object(["503 ServiceUnavailable": .int(1)]))
        // The two faults the three attempts left are cleared; then a barrier.
        #expect(try await Self.http("DELETE", admin + "/faults").status == 200)
        #expect(try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"ray"},"alert":{"body":"barrier 2"}}"#).status == 200)
        try await eventually("the second barrier") { phone.shown.bodies.last == "barrier 2" }
        #expect(phone.shown.bodies == ["third time lucky", "barrier 1", "barrier 2"])

        await phone.stop()
        await server.close()
        await client.close()
        try await gateway.stop()
    }

    @Test("Live Activity sends: a liveActivity send goes to a registered Live Activity token as push type liveactivity on the suffixed topic; one ActivityKit would drop is refused with why")
    func liveActivitySend() async throws {
        let stack = try await Stack.start()
        // A push-to-start token, as a version 2 device gets it, registered with the provider like an app token.
        let token = DeviceToken.random()
        try await stack.gateway.store.registerToken(TokenRegistration(
            token: token, scope: TokenScope(bundleID: "com.example.app", kind: .pushToStart), environment: .development,
            createdAtMilliseconds: stack.gateway.clock.nowMilliseconds()))
        let registered = try await Self.http("POST", stack.base + "/v1/registrations", #"{"token":"\#(token.hex)","topic":"com.example.app","language":"en","timeZone":"UTC"}"#)
        #expect(registered.status == 200)
        let start = #"{"to":{"token":"\#(token.hex)"},"alert":{"body":"Kick-off"},"liveActivity":{"event":"start","attributesType":"Score","attributes":{"home":"Lions"},"contentState":{"score":0},"inputPushToken":true}}"#
        let sent = try await Self.http("POST", stack.base + "/v1/sends", start)
        #expect(sent.status == 200, "\(String(describing: sent.json))")
        guard case .array(let deliveries)? = sent.json?["deliveries"], let delivery = deliveries.first else { Issue.record("no delivery"); return }
        #expect(delivery["status"] == .int(200), "\(delivery)")
        guard case .string(let apnsID)? = delivery["apnsId"], let receipt = try await stack.client.receipt(apnsID: apnsID) else {
            Issue.record("no receipt"); return
        }
        #expect(receipt.deliveries.first?.topic == "com.example.app")
        let held = try await stack.gateway.store.storedNotifications(for: token, policy: StorePolicy(), nowMilliseconds: stack.gateway.clock.nowMilliseconds())
        #expect(held.first?.pushType == .liveactivity)
        let payload = try NotificationPayload.decode(held.first?.payload ?? [])
        #expect(payload.aps.event == "start" && payload.aps.attributesType == "Score" && payload.aps.inputPushToken == 1 && payload.aps.timestamp != nil)
        // An update without its content state would be dropped by the device: refused before sending.
        let bad = try await Self.http("POST", stack.base + "/v1/sends", #"{"to":{"token":"\#(token.hex)"},"liveActivity":{"event":"update"}}"#)
        #expect(bad.status == 400 && bad.json?["error"]?.stringValue?.contains("content-state") == true, "\(String(describing: bad.json))")
        await stack.server.close()
        await stack.client.close()
        try await stack.gateway.stop()
    }

    @Test("a token registered again after its unregistration stays; the language fallback chain")
    func pruningAndFallback() async throws {
        let database = try SQLiteProviderStore(directory: nil)
        try await database.upsert(Registration(token: "aa", topic: "t", language: "en", timeZone: "UTC", registeredAt: 2_000))
        #expect(try await database.prune("aa", unregisteredAt: 1_000) == false)  // registered again after it was unregistered
        #expect(try await database.prune("aa", unregisteredAt: 3_000) == true)
        let template = MessageTemplate(id: "x", translations: ["en": .init(body: "en"), "pt-BR": .init(body: "pt-BR"), "fr": .init(body: "fr")])
        #expect(template.text(for: "fr-CA", fallback: "en")?.language == "fr")
        #expect(template.text(for: "PT-br", fallback: "en")?.language == "pt-BR")
        #expect(template.text(for: "de", fallback: "en")?.language == "en")
        #expect(MessageTemplate(id: "y", translations: ["ja": .init(body: "ja")]).text(for: "de", fallback: "en")?.language == "ja")
    }

    @Test("the REST API's lists and refusals: templates listed, read and deleted (not while a schedule uses one), the wrong number of template args, a reused Idempotency-Key, a target that matches nobody, registrations filtered and paged, sends paged, a transport error in a report")
    func listsAndRefusals() async throws {
        let stack = try await Stack.start()
        let (gateway, signer, server, base) = (stack.gateway, stack.signer, stack.server, stack.base)
        defer { Task { await server.close() } }

        // Five registrations the gateway knows (offline devices: their pushes are stored).
        var tokens: [String] = []
        for (language, zone, tags) in [("fr", "Europe/Paris", "beta"), ("fr-CA", "America/Montreal", "beta"), ("en", "Europe/Paris", ""),
                                       ("es", "Europe/Madrid", "beta"), ("en-GB", "Europe/London", "")] {
            let token = try await gateway.makeToken().hex
            tokens.append(token)
            let body = #"{"token":"\#(token)","topic":"com.example.app","language":"\#(language)","timeZone":"\#(zone)","userId":"u-\#(language)","tags":[\#(tags.isEmpty ? "" : "\"\(tags)\"")]}"#
            #expect(try await Self.http("POST", base + "/v1/registrations", body).status == 200)
        }
        func items(_ path: String) async throws -> (tokens: [String], next: String?) {
            let answer = try await Self.http("GET", base + path)
            #expect(answer.status == 200, "\(path): \(String(describing: answer.json))")
            return ((answer.json?["items"]?.arrayValue ?? []).compactMap { $0["token"]?.stringValue ?? $0["id"]?.stringValue }, answer.json?["next"]?.stringValue)
        }
        // Filters: a base language matches its regional ones; a zone with a slash, percent-encoded; a tag.
        #expect(Set(try await items("/v1/registrations?language=fr").tokens) == [tokens[0], tokens[1]])
        #expect(Set(try await items("/v1/registrations?zone=Europe%2FParis").tokens) == [tokens[0], tokens[2]])
        #expect(Set(try await items("/v1/registrations?tag=beta&language=fr-CA").tokens) == [tokens[1]])
        #expect(try await items("/v1/registrations?user=u-es").tokens == [tokens[3]])
        // A malformed query is refused naming the problem, never read half-decoded (curl sends it as written).
        let refused = try await TestHTTP.curl(["-H", "Authorization: Bearer \(Self.apiToken)", base + "/v1/registrations?zone=Europe%2Paris"])
        #expect(refused.status == 400 && refused.body.contains("not valid percent-encoding"), "\(refused)")
        // Paging two at a time reaches every registration once, in token order.
        var seen: [String] = []
        var next: String? = nil
        repeat {
            let page = try await items("/v1/registrations?limit=2" + (next.map { "&after=\($0)" } ?? ""))
            seen += page.tokens
            next = page.next
        } while next != nil
        #expect(seen == tokens.sorted())
        #expect(try await Self.http("GET", base + "/v1/registrations?limit=0").status == 400)
        #expect(try await Self.http("GET", base + "/v1/registrations?limit=99999999999999999999").status == 400)
        let typo = try await Self.http("GET", base + "/v1/registrations?langauge=fr")
        #expect(typo.status == 400 && typo.json?["error"]?.stringValue?.contains("unknown parameter langauge") == true)

        // Templates: stored, listed, read with how many args they take.
        let welcome = #"{"translations":{"en":{"title":"Hi %1$@","body":"%1$@, you have %2$@ messages"},"fr":{"body":"%@, vous avez %@ messages"}}}"#
        #expect(try await Self.http("PUT", base + "/v1/templates/welcome", welcome).status == 200)
        #expect(try await Self.http("PUT", base + "/v1/templates/plain", #"{"translations":{"en":{"body":"100%% plain"}}}"#).status == 200)
        #expect(try await items("/v1/templates").tokens == ["plain", "welcome"])
        let read = try await Self.http("GET", base + "/v1/templates/welcome")
        #expect(read.json?["arguments"] == .int(2) && read.json?["translations"]?["fr"]?["body"] == .string("%@, vous avez %@ messages"))
        #expect(try await Self.http("GET", base + "/v1/templates/nope").status == 404)
        // The wrong number of args: 400 naming the template and both counts; nothing is sent.
        let short = try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"u-fr"},"template":{"id":"welcome","args":["Ana"]}}"#)
        #expect(short.status == 400)
        #expect(short.json?["error"]?.stringValue?.contains(#"template "welcome" takes 2 arguments ("args"), this send gives 1"#) == true, "\(String(describing: short.json))")
        let tooMany = try await Self.http("PUT", base + "/v1/templates/huge", #"{"translations":{"en":{"body":"%101$@"}}}"#)
        #expect(tooMany.status == 400)

        // A target that matches nobody says so, and sends nothing.
        let nobody = try await Self.http("POST", base + "/v1/sends", #"{"to":{"segment":{"topic":"com.example.app","languages":["ja"]}},"alert":{"body":"hi"}}"#)
        #expect(nobody.status == 404 && nobody.json?["error"]?.stringValue?.contains("no registration matches the segment with topic com.example.app; languages ja") == true,
                "\(String(describing: nobody.json))")
        #expect(try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"nobody"},"alert":{"body":"hi"}}"#).status == 404)

        // An Idempotency-Key: the same request replays, another request under it is 422.
        let send = #"{"to":{"user":"u-fr"},"template":{"id":"welcome","args":["Ana",3]}}"#
        let first = try await Self.http("POST", base + "/v1/sends", send, headers: ["Idempotency-Key": "w-1"])
        #expect(first.status == 200 && first.json?["counts"] == .object(["accepted": .int(1)]))
        #expect(try await Self.http("POST", base + "/v1/sends", send, headers: ["Idempotency-Key": "w-1"]).json?["replayed"] == .bool(true))
        let reused = try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"u-fr"},"template":{"id":"welcome","args":["Ben",3]}}"#,
                                         headers: ["Idempotency-Key": "w-1"])
        #expect(reused.status == 422 && reused.json?["error"]?.stringValue?.contains("w-1") == true)

        // A template an active schedule uses cannot be deleted; once cancelled, it can.
        let scheduled = try await Self.http("POST", base + "/v1/schedules",
                                            #"{"id":"weekly","to":{"user":"u-fr"},"template":{"id":"welcome","args":["Ana",1]},"time":"09:00","repeat":"daily"}"#)
        #expect(scheduled.status == 201)
        let inUse = try await Self.http("DELETE", base + "/v1/templates/welcome")
        #expect(inUse.status == 409 && inUse.json?["error"]?.stringValue?.contains(#"schedule "weekly""#) == true)
        #expect(try await Self.http("DELETE", base + "/v1/schedules/weekly").status == 200)
        #expect(try await Self.http("DELETE", base + "/v1/templates/welcome").status == 204)
        #expect(try await Self.http("DELETE", base + "/v1/templates/welcome").status == 404)
        #expect(try await items("/v1/templates").tokens == ["plain"])

        // Sends, newest first, paged.
        for n in 0..<3 {
            gateway.clock.advance(seconds: 1)
            #expect(try await Self.http("POST", base + "/v1/sends", #"{"to":{"user":"u-en"},"alert":{"body":"n\#(n)"}}"#).status == 200)
        }
        let firstPage = try await Self.http("GET", base + "/v1/sends?limit=2")
        let ids = firstPage.json?["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        #expect(ids.count == 2 && firstPage.json?["items"]?.arrayValue?.first?["state"] == .string("done"))
        let rest = try await items("/v1/sends?limit=2&after=\(try #require(firstPage.json?["next"]?.stringValue))")
        #expect(rest.tokens.count == 2 && Set(rest.tokens).isDisjoint(with: ids))  // the third alert, then the template send
        #expect(try await Self.http("GET", base + "/v1/sends?after=no-such-send").status == 400)

        // No gateway behind the client: the report says why each push got no answer.
        let closed = APNsClient(
            configuration: .init(host: "127.0.0.1", port: 1, tls: nil, retry: APNsRetryPolicy(maximumAttempts: 1)), signer: signer, clock: gateway.clock)
        let offline = ProviderService(store: try SQLiteProviderStore(directory: nil), sender: closed, clock: gateway.clock)
        try await offline.register(token: tokens[0], topic: "com.example.app", language: "fr", timeZone: "Europe/Paris", userID: nil, tags: [])
        let (report, _) = try await offline.send(SendRequest(target: .token(tokens[0]), message: .alert(title: nil, subtitle: nil, body: "hi")))
        #expect(report.counts == ["no-answer": 1])
        #expect(report.deliveries.first?.status == 0 && report.deliveries.first?.error?.isEmpty == false, "\(report.deliveries)")

        // Prometheus metrics, with the API token only.
        var scrape = URLRequest(url: URL(string: base + "/metrics")!)
        #expect((try await URLSession.shared.data(for: scrape).1 as! HTTPURLResponse).statusCode == 401)
        scrape.setValue("Bearer \(Self.apiToken)", forHTTPHeaderField: "authorization")
        let (data, response) = try await URLSession.shared.data(for: scrape)
        let text = String(decoding: data, as: UTF8.self)
        #expect((response as! HTTPURLResponse).statusCode == 200)
        // Four pushes accepted: the keyed template send and the three alerts (the replay and every refusal sent nothing).
        #expect(text.contains(#"herald_provider_pushes_total{status="200",reason=""} 4"#), "\(text)")
        #expect(text.contains("herald_provider_registrations 5"))
        #expect(text.contains(#"herald_provider_sends_total{origin="api"} 4"#))
        try await gateway.stop()
    }

    /// The real client, with a gate in front: each push waits until the test opens it.
    final class GatedSender: PushSending {
        let client: APNsClient
        let arrived = AsyncStream<Void>.makeStream()
        let gate = AsyncStream<Void>.makeStream()
        init(client: APNsClient) { self.client = client }
        func send(_ notification: APNsNotification) async throws -> APNsResult {
            arrived.continuation.yield()
            var opened = gate.stream.makeAsyncIterator()
            _ = await opened.next()
            return try await client.send(notification)
        }
    }

    @Test("shutting the REST API down lets a send under way finish and record its report, and refuses new connections meanwhile; a send is listed and reported with the time it started")
    func gracefulShutdownFinishesSends() async throws {
        let stack = try await Stack.start()
        let gated = GatedSender(client: stack.client)
        let service = ProviderService(store: try SQLiteProviderStore(directory: nil), sender: gated, clock: stack.gateway.clock)
        let server = try await ProviderHTTPServer.start(service: service, port: 0, apiToken: Self.apiToken)
        let base = "http://127.0.0.1:\(server.port)"
        let device = try await stack.gateway.makeToken(topic: "com.example.app")
        try await service.register(token: device.hex, topic: "com.example.app", language: "en", timeZone: "UTC", userID: nil, tags: [])

        let sending = Task { try await Self.http("POST", base + "/v1/sends", #"{"to":{"token":"\#(device.hex)"},"alert":{"body":"last"}}"#) }
        var arrivals = gated.arrived.stream.makeAsyncIterator()
        _ = await arrivals.next()  // the push is at the gate: the request is under way
        let closing = Task { await server.close() }
        // The listener closes first: a new connection is refused while the send is still held.
        try await eventually("the listener closed") {
            (try? await Self.http("GET", base + "/health")) == nil
        }
        stack.gateway.clock.advance(seconds: 5)  // the send takes 5 s: it is listed by when it started
        gated.gate.continuation.yield()
        let answer = try await sending.value
        await closing.value
        #expect(answer.status == 200 && answer.json?["counts"] == .object(["accepted": .int(1)]), "\(String(describing: answer.json))")
        let id = try #require(answer.json?["id"]?.stringValue)
        let report = try await service.report(id: id)
        #expect(report.counts == ["accepted": 1])
        let listed = try await service.store.sends(after: nil, scheduleID: nil, limit: 1)
        #expect(listed.first?.id == id && listed.first?.createdAt == report.createdAt, "\(listed) vs \(report.createdAt)")
        await stack.server.close()
        await stack.client.close()
        try await stack.gateway.stop()
    }

    @Test("the spec is the source of truth: /openapi.yaml is the committed file, /openapi.json the same document; requests are checked against it before decoding, with errors that name the field; every error is {\"error\": …}")
    func specFirst() async throws {
        let stack = try await Stack.start()
        let base = stack.base

        // The file the server was generated from, served as written, and the same document as JSON.
        let specFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/HeraldProviderAPI/openapi.yaml")
        let onDisk = try String(contentsOf: specFile, encoding: .utf8)
        let (yaml, yamlResponse) = try await URLSession.shared.data(from: URL(string: base + "/openapi.yaml")!)
        #expect((yamlResponse as! HTTPURLResponse).statusCode == 200)
        #expect(String(decoding: yaml, as: UTF8.self) == onDisk.trimmingCharacters(in: .newlines),
                "OpenAPIDocument.swift is stale: run scripts/generate-openapi.sh")
        let json = try await Self.http("GET", base + "/openapi.json")
        #expect(json.json?["info"]?["title"]?.stringValue == "Herald provider service")
        #expect(ProviderSpec.current.operations.count == 24)

        func error(_ method: String, _ path: String, _ body: String? = nil, headers: [String: String] = [:]) async throws -> (Int, String) {
            let answer = try await Self.http(method, base + path, body, headers: headers)
            return (answer.status, answer.json?["error"]?.stringValue ?? "no error field in \(String(describing: answer.json))")
        }
        // Bodies: strict JSON, types, required fields, enums, bounds, named by their path.
        let comma = try await error("POST", "/v1/sends", #"{"to":{"token":"00"},"badge":1,}"#)
        #expect(comma.0 == 400 && comma.1.hasPrefix("the body must be a JSON object (RFC 8259): ") && comma.1.contains("byte"), "\(comma)")
        #expect(try await error("POST", "/v1/sends", #"{"to":{"token":"00"},"badge":1e300}"#) == (400, #""badge" must be an integer"#))
        #expect(try await error("POST", "/v1/sends", #"{"to":{"token":"00"},"badge":-1}"#) == (400, #""badge" must be at least 0 and at most 2147483647"#))
        #expect(try await error("POST", "/v1/sends", #"{"alert":{"body":"hi"}}"#) == (400, #""to" is required"#))
        #expect(try await error("POST", "/v1/sends", #"{"to":{"token":"00"},"template":{"id":"t","args":["a",null]}}"#)
            == (400, #""template.args[1]" must be a string or a number"#))
        #expect(try await error("POST", "/v1/schedules", #"{"to":{"token":"00"},"alert":{"body":"hi"},"time":"09:00","repeat":"yearly"}"#)
            == (400, #""repeat" must be one of once, daily, weekly, monthly"#))
        #expect(try await error("POST", "/v1/registrations", #"{"token":"00","topic":"com.example.app","language":"en","timeZone":"UTC","tags":["a",7]}"#)
            == (400, #""tags[1]" must be a string"#))
        #expect(try await error("POST", "/v1/sends", "[]") == (400, "the body must be a JSON object (RFC 8259)"))
        #expect(try await error("POST", "/v1/sends", #"{"to":{"token":"00"},"badge":1}"#, headers: ["content-type": "text/csv"]).0 == 415)
        // Query parameters: undeclared ones refused, numbers checked.
        #expect(try await error("GET", "/v1/registrations?users=ana") == (400, "unknown parameter users; this list takes after, language, limit, tag, topic, user, zone"))
        #expect(try await error("GET", "/v1/templates?limit=ten") == (400, #"limit must be an integer, not "ten""#))
        #expect(try await error("GET", "/v1/templates?limit=1001") == (400, "limit must be at most 1000 and at least 1"))
        #expect(try await error("GET", "/v1/schedules/x/plan?hours=0").0 == 400)
        // The router's own refusals have the same shape.
        #expect(try await error("GET", "/v1/nothing-here") == (404, "no route GET /v1/nothing-here (see /openapi.json)"))
        let patch = try await error("PATCH", "/v1/templates/x")
        #expect(patch == (404, "no route PATCH /v1/templates/x (see /openapi.json)"))

        // A provider whose key the gateway does not hold: the report says what to check, not a bare 403.
        let stranger = APNsClient(
            configuration: .init(host: "localhost", port: stack.gateway.ports.providerPort,
                                 tls: ClientTLS(trustRootsPath: stack.gateway.certificates.caCertificatePath)),
            signer: ProviderTokenSigner(keyID: "UNKNOWN001", teamID: "TEAM000001", privateKey: .init()), clock: stack.gateway.clock)
        let refused = ProviderService(store: try SQLiteProviderStore(directory: nil), sender: stranger, clock: stack.gateway.clock)
        try await refused.register(token: "00aa", topic: "com.example.app", language: "en", timeZone: "UTC", userID: nil, tags: [])
        let (report, _) = try await refused.send(SendRequest(target: .token("00aa"), message: .alert(title: nil, subtitle: nil, body: "hi")))
        #expect(report.deliveries.first?.reason == "InvalidProviderToken")
        #expect(report.deliveries.first?.error?.contains("check the key id (--key-id), the team (--team) and the key file (--key)") == true)
        await stranger.close()

        await stack.server.close()
        await stack.client.close()
        try await stack.gateway.stop()
    }
}
