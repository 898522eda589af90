import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldDevice

/// The agent's local socket, used as an app in another language would: JSON lines over a Unix
/// domain socket, against a runtime on a simulated clock.
@Suite("Device agent socket")
struct AgentSocketTests {
    static func json(_ text: String) -> JSONValue { try! JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }

    struct Setup {
        let clock = SimulatedAlarmClock(startMilliseconds: DeviceRuntimeTests.at("2026-06-10T12:00:00Z"))
        let runtime: DeviceRuntime
        let agent: AgentSocket
        let journal = DeviceRuntimeTests.Journal()

        init() async throws {
            runtime = try DeviceRuntime(clock: clock, timeZone: TimeZone(identifier: "Asia/Tokyo")!, user: DeviceRuntimeTests.Allow(), observer: journal.observer)
            _ = try await runtime.install("com.example.app")
            let path = NSTemporaryDirectory() + "herald-agent-\(UUID().uuidString.prefix(8)).sock"
            agent = try await AgentSocket.start(path: path, runtime: runtime)
        }
    }

    @Test("Live Activity ops: wrong types, fractional and absurd numbers, unknown push types and channels are refused with what is wrong; a valid start is listed and ended")
    func liveActivityOps() async throws {
        let s = try await Setup()
        let app = try await AgentClient.connect(path: s.agent.path)
        let before = try await app.request(["op": .string("activities")])
        #expect(before["ok"] == .bool(false), "ops of an app need hello first")
        try await app.request(["op": .string("hello"), "app": .string("com.example.app")])
        let valid: [String: JSONValue] = [
            "op": .string("startActivity"), "attributesType": .string("Score"), "attributes": Self.json(#"{"home":"Lions"}"#),
            "contentState": Self.json(#"{"score":0}"#),
        ]
        for (key, value) in [
            ("attributesType", JSONValue.string("")), ("attributesType", .int(7)), ("attributes", .string("home")),
            ("contentState", .array([])), ("staleDate", .double(1.5)), ("staleDate", .double(1e300)), ("staleDate", .string("soon")),
            ("pushType", .string("banana")), ("pushType", Self.json(#"{"channel":"nope"}"#)), ("pushType", .int(1)),
        ] {
            var message = valid
            message[key] = value
            let answer = try await app.request(message)
            #expect(answer["ok"] == .bool(false) && answer["error"]?.stringValue?.isEmpty == false, "\(key)=\(value): \(answer)")
        }
        let started = try await app.request(valid)
        guard case .string(let id)? = started["activity"]?["id"] else { Issue.record("\(started)"); return }
        for bad: [String: JSONValue] in [
            ["op": .string("endActivity")], ["op": .string("endActivity"), "activity": .string("no-such-activity")],
            ["op": .string("endActivity"), "activity": .string(id), "dismissalDate": .string("later")],
            ["op": .string("endActivity"), "activity": .string(id), "dismissalDate": .double(-1e300)],
            ["op": .string("endActivity"), "activity": .string(id), "contentState": .string("final")],
        ] {
            let answer = try await app.request(bad)
            #expect(answer["ok"] == .bool(false), "\(bad): \(answer)")
        }
        let listed = try await app.request(["op": .string("activities")])
        #expect(listed["activities"]?.arrayValue?.count == 1 && listed["activities"]?.arrayValue?.first?["state"] == .string("active"))
        let ended = try await app.request(["op": .string("endActivity"), "activity": .string(id), "contentState": Self.json(#"{"score":3}"#), "dismissalDate": .int(0)])
        #expect(ended["ok"] == .bool(true), "\(ended)")
        let after = try await app.request(["op": .string("activities")])
        #expect(after["activities"]?.arrayValue?.first?["state"] == .string("dismissed"))
        await s.agent.close()
    }

    @Test("an app that closes its write side after its requests (printf … | socat) gets every answer, then the agent closes")
    func halfClosedClient() async throws {
        let s = try await Setup()
        let app = try await AgentClient.connect(path: s.agent.path)
        for line in [#"{"id":1,"op":"hello","app":"com.example.app","state":"background"}"#, #"{"id":2,"op":"requestAuthorization","options":["alert","sound"]}"#,
                     #"{"id":3,"op":"add","request":{"id":"standup","content":{"body":"Stand-up"},"trigger":{"type":"calendar","components":{"hour":9,"minute":55},"repeats":true}}}"#,
                     #"{"id":4,"op":"pending"}"#] {
            try await app.write(line: line)
        }
        try await app.closeWrite()
        try await app.waitUntilClosed()
        #expect(app.all.map { $0["id"] } == [.int(1), .int(2), .int(3), .int(4)])
        #expect(app.all.allSatisfy { $0["ok"] == .bool(true) }, "\(app.all)")
        await s.agent.close()
    }

    @Test("an app over the socket: hello, authorization, categories, a scheduled request, willPresent answered, an action completed")
    func appSession() async throws {
        let s = try await Setup()
        let app = try await AgentClient.connect(path: s.agent.path)
        let hello = try await app.request(["op": .string("hello"), "app": .string("com.example.app")])
        #expect(hello["ok"] == .bool(true))
        let auth = try await app.request(["op": .string("requestAuthorization"), "options": Self.json(#"["alert","sound","badge"]"#)])
        #expect(auth["granted"] == .bool(true) && auth["prompted"] == .bool(true))
        try await app.request(["op": .string("setCategories"), "categories": Self.json(
            #"[{"id":"chat","actions":[{"id":"reply","title":"Reply","textInput":{"buttonTitle":"Send"}}],"options":["customDismissAction"]}]"#)])
        let added = try await app.request(["op": .string("add"), "request": Self.json(
            #"{"id":"standup","content":{"title":"Stand-up","body":"in 5","category":"chat","sound":"default"},"trigger":{"type":"calendar","components":{"hour":9,"minute":55},"repeats":true}}"#)])
        #expect(added["ok"] == .bool(true) && added["dropped"] == .array([]))
        let pending = try await app.request(["op": .string("pending")])
        guard case .array(let requests)? = pending["requests"], case .object(let first)? = requests.first else { Issue.record("\(pending)"); return }
        #expect(first["nextFire"] == .string("2026-06-11T00:55:00Z"))  // 09:55 in Tokyo

        // The app is in the foreground: willPresent comes as a callback, answered with options.
        await s.runtime.advance(s.clock, to: DeviceRuntimeTests.at("2026-06-11T00:55:00Z"))
        let willPresent = try await app.event("willPresent", notification: "standup")
        try await app.request(["op": .string("complete"), "callback": willPresent["callback"]!, "options": Self.json(#"["banner","sound","list"]"#)])
        await s.runtime.settle()
        let shown = try #require(s.journal.delivered.last)
        #expect(shown.presentation.banner && shown.presentation.sound && shown.presentation.listed)
        #expect(shown.deliveredAt == DeviceRuntimeTests.at("2026-06-11T00:55:00Z"))

        // The user answers with text from another connection (a test tool).
        let user = try await AgentClient.connect(path: s.agent.path)
        let acted = try await user.request(["op": .string("user"), "action": .string("action"), "app": .string("com.example.app"),
                                            "notification": .string("standup"), "actionId": .string("reply"), "text": .string("on my way")])
        #expect(acted["ok"] == .bool(true))
        let didReceive = try await app.event("didReceive", notification: "standup")
        #expect(didReceive["actionId"] == .string("reply") && didReceive["text"] == .string("on my way"))
        let completed = try await app.request(["op": .string("complete"), "callback": didReceive["callback"]!])
        #expect(completed["ok"] == .bool(true))
        await s.runtime.advance(s.clock, to: s.clock.nowMilliseconds() + 60_000)
        #expect(s.journal.violations.isEmpty)

        // Errors are specific and the connection lives on.
        let bad = try await app.request(["op": .string("add"), "request": Self.json(#"{"id":"x","trigger":{"type":"interval","seconds":30,"repeats":true}}"#)])
        #expect(bad["ok"] == .bool(false) && bad["error"]?.stringValue?.contains("at least 60 seconds") == true)
        try await app.write(line: "not json")
        let garbled = try await app.first("the error for a garbled line") { $0["ok"] == .bool(false) && $0["id"] == .null }
        #expect(garbled["error"]?.stringValue?.contains("JSON object") == true)
        let unknown = try await user.request(["op": .string("hello"), "app": .string("com.not.installed")])
        #expect(unknown["error"]?.stringValue?.contains("--app com.not.installed") == true)

        await app.close()
        await user.close()
        await s.agent.close()
    }

    @Test("a callback never answered is reported at its time-out; a silent push answered with a result; the app leaving terminates it")
    func callbacksAndLifecycle() async throws {
        let s = try await Setup()
        let app = try await AgentClient.connect(path: s.agent.path)
        try await app.request(["op": .string("hello"), "app": .string("com.example.app"), "state": .string("background")])
        try await app.request(["op": .string("requestAuthorization"), "options": Self.json(#"["alert"]"#)])
        try await app.request(["op": .string("presentNow"), "request": Self.json(#"{"id":"n","content":{"body":"hi"}}"#)])
        let user = try await AgentClient.connect(path: s.agent.path)
        try await user.request(["op": .string("user"), "action": .string("tap"), "app": .string("com.example.app"), "notification": .string("n")])
        _ = try await app.event("didReceive", notification: "n")
        await s.runtime.advance(s.clock, to: s.clock.nowMilliseconds() + 30_000)
        #expect(s.journal.violations.count == 1)

        await s.runtime.receive(DeviceRuntimeTests.push(#"{"aps":{"content-available":1}}"#))
        let silent = try await app.event("silentPush")
        try await app.request(["op": .string("complete"), "callback": silent["callback"]!, "result": .string("newData")])
        await s.runtime.settle()
        let outcomes = s.journal.events.withLock { $0.compactMap { if case .silentPush(_, let o) = $0 { o } else { nil } } }
        #expect(outcomes.last == "finished: newData")

        await app.close()
        _ = try await user.first("nothing") { _ in true }  // the user connection has answers
        for _ in 0..<200 where await s.runtime.center(for: "com.example.app") != nil {
            let states = s.journal.events.withLock { $0.compactMap { if case .lifecycleChanged(_, let l) = $0 { l } else { nil } } }
            if states.last == .terminatedBySystem { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        let states = s.journal.events.withLock { $0.compactMap { if case .lifecycleChanged(_, let l) = $0 { l } else { nil } } }
        #expect(states.last == .terminatedBySystem)
        await user.close()
        await s.agent.close()
    }
}
