import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice
import HeraldTesting

/// Focus, interruption levels, critical alerts and the scheduled summary: the pure rules at fixed
/// instants, then through the runtime on a simulated clock.
@Suite("Focus and the scheduled summary")
struct FocusTests {
    static let paris = TimeZone(identifier: "Europe/Paris")!
    static func at(_ text: String) -> Int64 { PlanFormat.parseDateTime(text)!.instant! }

    static func settings(_ text: String) throws -> FocusSettings {
        try FocusSettings(json: try JSONReader.parse(Array(text.utf8), limits: JSONLimits(maximumBytes: 16 << 20, maximumDepth: 16)))
    }

    static func refusal(_ text: String) -> String {
        do {
            _ = try settings(text)
            return "accepted"
        } catch let error as RuntimeError { return error.message } catch { return "not JSON" }
    }

    // MARK: pure rules

    @Test("a schedule is on inside its window in the device's zone, overnight windows run into the next day, only on its days")
    func schedules() throws {
        let s = try Self.settings(#"""
            {"modes": [{"name": "Sleep", "state": "scheduled", "schedule": {"start": "22:30", "end": "07:00", "days": ["fri"]}},
                       {"name": "Work", "state": "scheduled", "schedule": {"start": "09:00", "end": "17:00", "days": ["mon","tue","wed","thu","fri"]}}]}
            """#)
        func active(_ utc: String) -> String? { s.activeMode(at: Self.at(utc), in: Self.paris)?.name }
        // Friday 2026-11-27 in Paris (UTC+1).
        #expect(active("2026-11-27T08:00:00Z") == "Work")      // 09:00 Friday
        #expect(active("2026-11-27T07:59:59Z") == nil)         // 08:59
        #expect(active("2026-11-27T16:00:00Z") == nil)         // 17:00: the end is not inside
        #expect(active("2026-11-27T21:30:00Z") == "Sleep")     // 22:30 Friday
        #expect(active("2026-11-28T05:59:00Z") == "Sleep")     // 06:59 Saturday, the night that began Friday
        #expect(active("2026-11-28T06:00:00Z") == nil)         // 07:00 Saturday
        #expect(active("2026-11-28T21:30:00Z") == nil)         // 22:30 Saturday: not one of its days
        #expect(active("2026-11-28T08:00:00Z") == nil)         // 09:00 Saturday: Work is weekdays only
        // A Focus turned on by hand wins over the schedules.
        var manual = s
        manual.modes.append(FocusMode(name: "Driving", state: .on))
        #expect(manual.activeMode(at: Self.at("2026-11-27T08:00:00Z"), in: Self.paris)?.name == "Driving")
    }

    @Test("the next summary time is the next listed local time, and a time that a DST change skips comes at the next instant")
    func summaryTimes() throws {
        let s = try Self.settings(#"{"summary": {"times": ["18:00", "08:00", "02:30"], "apps": ["com.example.news"]}}"#)
        #expect(s.summary?.times == [150, 480, 1080])
        #expect(s.nextSummary(after: Self.at("2026-11-27T07:00:00Z"), in: Self.paris) == Self.at("2026-11-27T17:00:00Z"))  // 08:00 just passed
        #expect(s.nextSummary(after: Self.at("2026-11-27T17:00:00Z"), in: Self.paris) == Self.at("2026-11-28T01:30:00Z"))  // strictly after
        // 2027-03-28: Paris springs forward at 02:00 to 03:00; 02:30 does not exist that night.
        #expect(s.nextSummary(after: Self.at("2027-03-27T20:00:00Z"), in: Self.paris) == Self.at("2027-03-28T01:00:00Z"))
        #expect(FocusSettings().nextSummary(after: 0, in: Self.paris) == nil)
    }

    @Test("what a Focus and the summary do with each level, person, allowed app and filter")
    func decisions() {
        let work = FocusMode(
            name: "Work", state: .on, allowedApps: ["mail"], allowedPeople: ["+33612345678"], allowsTimeSensitive: true,
            filters: ["chat": ["work"], "mail": ["work"]])
        let strict = FocusMode(name: "Strict", state: .on, allowsTimeSensitive: false)
        let summary = ScheduledSummary(times: [480], apps: ["news", "chat"])
        func decide(_ app: String, _ level: NotificationGrouping.InterruptionLevel = .active, criteria: String? = nil, sender: String? = nil,
                    focus: FocusMode? = work, summary: ScheduledSummary? = nil) -> Interruption.Outcome {
            Interruption.decide(app: app, level: level, criteria: criteria, sender: sender, focus: focus, summary: summary)
        }
        #expect(decide("games") == .silence(focus: "Work"))
        #expect(decide("games", focus: nil) == .deliver(through: nil))
        #expect(decide("mail") == .deliver(through: .allowedApp))
        #expect(decide("mail", criteria: "home") == .silence(focus: "Work"))     // the filter narrows an allowed app
        #expect(decide("chat", criteria: "work") == .deliver(through: .filter))  // and widens one that is not
        #expect(decide("chat") == .silence(focus: "Work"))                       // no criteria: the app's rule
        #expect(decide("games", sender: "+33612345678") == .deliver(through: .person))
        #expect(decide("games", sender: "+33600000000") == .silence(focus: "Work"))
        #expect(decide("games", .timeSensitive) == .deliver(through: .timeSensitive))
        #expect(decide("games", .timeSensitive, focus: strict) == .silence(focus: "Strict"))
        #expect(decide("games", .critical, focus: strict) == .deliver(through: .critical))
        #expect(decide("games", .passive) == .silence(focus: "Work"))
        // The summary holds what is not time-sensitive, critical or from a person, Focus or not.
        #expect(decide("news", focus: nil, summary: summary) == .holdForSummary)
        #expect(decide("news", .passive, focus: nil, summary: summary) == .holdForSummary)
        #expect(decide("news", summary: summary) == .holdForSummary)
        #expect(decide("news", .timeSensitive, focus: nil, summary: summary) == .deliver(through: .timeSensitive))
        #expect(decide("news", .critical, focus: nil, summary: summary) == .deliver(through: .critical))
        #expect(decide("chat", sender: "+33600000000", focus: nil, summary: summary) == .deliver(through: nil))
        #expect(decide("games", focus: nil, summary: summary) == .deliver(through: nil))
    }

    @Test("critical and time-sensitive need their entitlement and setting; without them a notification is active")
    func effectiveLevels() {
        var settings = NotificationSettings()
        settings.criticalAlert = .enabled
        settings.timeSensitive = .enabled
        #expect(Interruption.effectiveLevel(.critical, entitlements: [.criticalAlert], settings: settings) == .critical)
        #expect(Interruption.effectiveLevel(.critical, entitlements: [], settings: settings) == .active)
        #expect(Interruption.effectiveLevel(.timeSensitive, entitlements: [.timeSensitive], settings: settings) == .timeSensitive)
        #expect(Interruption.effectiveLevel(.timeSensitive, entitlements: [], settings: settings) == .active)
        settings.criticalAlert = .disabled
        settings.timeSensitive = .disabled
        #expect(Interruption.effectiveLevel(.critical, entitlements: [.criticalAlert], settings: settings) == .active)
        #expect(Interruption.effectiveLevel(.timeSensitive, entitlements: [.timeSensitive], settings: settings) == .active)
        #expect(Interruption.effectiveLevel(.passive, entitlements: [], settings: settings) == .passive)
    }

    @Test("hostile settings are refused with a message that names the field")
    func refusals() throws {
        #expect(Self.refusal(#"{"modes": [{"name": "Work", "state": "scheduled", "schedule": {"start": "25:00", "end": "07:00"}}]}"#)
            .contains("modes[0].schedule.start"))
        #expect(Self.refusal(#"{"modes": [{"name": "Work", "state": "scheduled", "schedule": {"start": "9:00", "end": "17:00"}}]}"#)
            .contains("is not a time of day"))
        #expect(Self.refusal(#"{"modes": [{"name": "W", "state": "scheduled", "schedule": {"start": "09:00", "end": "09:00"}}]}"#)
            .contains("start and end are both 09:00"))
        #expect(Self.refusal(#"{"modes": [{"name": "W", "state": "scheduled"}]}"#).contains("needs a \"schedule\""))
        #expect(Self.refusal(#"{"modes": [{"name": "W", "schedule": {"start": "09:00", "end": "10:00", "days": ["funday"]}}]}"#)
            .contains("schedule.days"))
        let many = "{\"modes\": [" + (0..<10_000).map { "{\"name\": \"m\($0)\"}" }.joined(separator: ",") + "]}"
        #expect(Self.refusal(many).contains("10000 Focus modes; at most 32"))
        let huge = String(repeating: "x", count: 1 << 20)
        #expect(Self.refusal(#"{"modes": [{"name": "W", "filters": {"mail": [""# + huge + #""]}}]}"#).contains("modes[0].filters.mail"))
        #expect(Self.refusal(#"{"modes": [{"name": "W"}, {"name": "W"}]}"#).contains("two Focus modes are named \"W\""))
        #expect(Self.refusal(#"{"modes": [{"name": "A", "state": "on"}, {"name": "B", "state": "on"}]}"#).contains("only one Focus"))
        #expect(Self.refusal(#"{"modes": [{"name": "A", "color": "red"}]}"#).contains("unknown key \"color\""))
        #expect(Self.refusal(#"{"summary": {"times": [], "apps": []}}"#).contains("summary.times"))
        #expect(Self.refusal(#"{"summary": {"times": ["08:00","09:00","10:00","11:00","12:00","13:00","14:00","15:00","16:00","17:00","18:00","19:00","20:00"]}}"#)
            .contains("1 to 12"))
        #expect(Self.refusal(#"{"summary": {"times": ["08:60"]}}"#).contains("summary.times[0]"))
        #expect(Self.refusal(#"[1]"#).contains("must be a JSON object"))
        // What is accepted comes back the same through its JSON form.
        let s = try Self.settings(#"""
            {"modes": [{"name": "Work", "state": "scheduled", "schedule": {"start": "09:00", "end": "17:30", "days": ["mon", "fri"]},
                        "allowedApps": ["mail"], "allowedPeople": ["a@example.com"], "timeSensitive": false, "filters": {"mail": ["work"]}}],
             "summary": {"times": ["18:00", "08:05"], "apps": ["news"]}}
            """#)
        #expect(try FocusSettings(json: s.json) == s)
    }

    // MARK: through the runtime

    struct Device {
        let clock: SimulatedAlarmClock
        let runtime: DeviceRuntime
        let journal = DeviceRuntimeTests.Journal()

        /// `also`: told of each event after the journal, with the clock's time.
        init(start: String = "2026-11-27T10:00:00Z", zone: TimeZone = FocusTests.paris, storage: String? = nil,
             also: (@Sendable (RuntimeEvent, Int64) -> Void)? = nil) throws {
            let clock = SimulatedAlarmClock(startMilliseconds: FocusTests.at(start))
            self.clock = clock
            let record = journal.observer
            runtime = try DeviceRuntime(
                clock: clock, timeZone: zone, user: DeviceRuntimeTests.Allow(granted: [.alert, .sound, .badge, .criticalAlert, .timeSensitive]),
                storageDirectory: storage, observer: { event in
                    record(event)
                    also?(event, clock.nowMilliseconds())
                })
        }

        @discardableResult
        func install(_ app: String, entitlements: AuthorizationOptions = []) async throws -> AppNotificationCenter {
            let center = try await runtime.install(app, bundle: .init(entitlements: entitlements))
            try await center.requestAuthorization([.alert, .sound, .badge, .criticalAlert])
            return center
        }

        func show(_ center: AppNotificationCenter, _ id: String, _ content: [String: JSONValue]) async throws {
            var c = content
            c["body"] = c["body"] ?? .string(id)
            c["sound"] = c["sound"] ?? .string("default")
            try await center.add(LocalRequest(id: id, content: .object(c), trigger: nil))
        }

        func delivered(_ id: String) -> DeliveredNotification? { journal.delivered.last { $0.id == id } }

        var summaries: [(at: Int64, ids: [String])] {
            journal.events.withLock { $0.compactMap { if case .summary(let at, let items) = $0 { (at, items.map(\.id)) } else { nil } } }
        }
    }

    @Test("a Focus silences what it does not allow (listed, no banner, no sound); time-sensitive and allowed people break through")
    func focusThroughTheRuntime() async throws {
        let d = try Device()
        let games = try await d.install("com.example.games", entitlements: [.timeSensitive])
        let mail = try await d.install("com.example.mail")
        try await d.runtime.setFocus(try Self.settings(#"""
            {"modes": [{"name": "Work", "state": "on", "allowedApps": ["com.example.mail"], "allowedPeople": ["+33612345678"]}]}
            """#))
        try await d.show(games, "g1", [:])
        try await d.show(mail, "m1", [:])
        try await d.show(games, "g2", ["interruptionLevel": .string("time-sensitive")])
        try await d.show(mail, "m2", ["interruptionLevel": .string("time-sensitive")])  // no entitlement: active, allowed app
        try await d.show(games, "g3", ["communication": .object(["sender": .object(["name": .string("Ana"), "handle": .string("+33612345678")])])])
        try await d.show(games, "g4", ["communication": .object(["sender": .object(["name": .string("Bob"), "handle": .string("+33699999999")])])])
        try await d.show(games, "g5", ["interruptionLevel": .string("passive")])
        await d.runtime.settle()
        func shown(_ id: String) -> String {
            guard let n = d.delivered(id) else { return "none" }
            let p = n.presentation
            return [p.banner ? "banner" : nil, p.listed ? "list" : nil, p.sound ? "sound" : nil].compactMap { $0 }.joined(separator: "+")
                + (n.attention.silenced ? " silenced" : "") + (n.attention.through.map { " through \($0.rawValue)" } ?? "")
        }
        #expect(shown("g1") == "list silenced")
        #expect(shown("m1") == "banner+list+sound through allowed-app")
        #expect(shown("g2") == "banner+list+sound through time-sensitive")
        #expect(d.delivered("g2")?.attention.level == .timeSensitive)
        #expect(d.delivered("m2")?.attention.level == .active)
        #expect(shown("g3") == "banner+list+sound through person")
        #expect(shown("g4") == "list silenced")
        #expect(shown("g5") == "list silenced")
        #expect(d.delivered("g1")?.attention.focus == "Work")
        // Turning the Focus off: delivered as usual again; the change is an event.
        try await d.runtime.setFocus(FocusSettings())
        try await d.show(games, "g6", [:])
        #expect(shown("g6") == "banner+list+sound")
        let focusEvents = d.journal.events.withLock { $0.compactMap { if case .focus(let active, _) = $0 { active ?? "-" } else { nil } } }
        #expect(focusEvents == ["Work", "-"])
    }

    @Test("passive: listed without banner, sound or waking the screen; critical plays when muted, at its volume, only with entitlement and authorization")
    func levelsAndMute() async throws {
        let d = try Device()
        let alarm = try await d.install("com.example.alarm", entitlements: [.criticalAlert])
        let plain = try await d.install("com.example.plain")
        try await d.show(plain, "p", ["interruptionLevel": .string("passive")])
        let passive = try #require(d.delivered("p"))
        #expect(passive.presentation.listed && !passive.presentation.banner && !passive.presentation.sound && passive.playedSound == nil)
        await d.runtime.setMuted(true)
        try await d.show(alarm, "c", ["interruptionLevel": .string("critical"), "critical": .bool(true), "volume": .double(0.7)])
        try await d.show(plain, "n", ["interruptionLevel": .string("critical"), "critical": .bool(true), "volume": .double(0.7)])
        try await d.show(plain, "a", [:])
        let critical = try #require(d.delivered("c"))
        #expect(critical.presentation.sound && critical.playedSound == "default")
        #expect(critical.attention.level == .critical && critical.attention.criticalVolume == 0.7)
        let notEntitled = try #require(d.delivered("n"))
        #expect(notEntitled.attention.level == .active && !notEntitled.presentation.sound && notEntitled.attention.criticalVolume == nil)
        #expect(notEntitled.presentation.banner)  // muted is about sound only
        #expect(d.delivered("a")?.presentation.sound == false)
        await d.runtime.setMuted(false)
        try await d.show(plain, "b", [:])
        #expect(d.delivered("b")?.presentation.sound == true)
    }

    @Test("the summary holds what is not time-sensitive and delivers it all at the next summary time, most relevant first, across a restart")
    func summaryThroughTheRuntime() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-focus-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let d = try Device(storage: dir)
            let news = try await d.install("com.example.news", entitlements: [.timeSensitive])
            let shop = try await d.install("com.example.shop")
            try await d.runtime.setFocus(try Self.settings(#"{"summary": {"times": ["08:00", "18:00"], "apps": ["com.example.news", "com.example.shop"]}}"#))
            try await d.show(news, "low", ["relevance": .double(0.2)])
            try await d.show(shop, "high", ["relevance": .double(0.9)])
            try await d.show(news, "mid", ["relevance": .double(0.5)])
            try await d.show(news, "urgent", ["interruptionLevel": .string("time-sensitive")])
            #expect(d.delivered("urgent")?.presentation.banner == true)
            #expect(d.delivered("low") == nil && d.delivered("high") == nil)
            let held = d.journal.events.withLock { $0.compactMap { if case .heldForSummary(_, let id, _, let until) = $0 { "\(id)@\(PlanFormat.utcString(until))" } else { nil } } }
            #expect(held == ["low@2026-11-27T17:00:00Z", "high@2026-11-27T17:00:00Z", "mid@2026-11-27T17:00:00Z"])
            #expect(d.clock.nextAlarm == Self.at("2026-11-27T17:00:00Z"))
        }
        // The runtime stops and starts again after 18:00 Paris: what was held is delivered at once.
        let d = try Device(start: "2026-11-27T17:30:00Z", storage: dir)
        try await d.install("com.example.news", entitlements: [.timeSensitive])
        try await d.install("com.example.shop")
        #expect(await d.runtime.focus.summary?.times == [480, 1080])
        await d.runtime.advance(d.clock, to: Self.at("2026-11-27T17:30:00Z"))
        #expect(d.summaries.count == 1)
        #expect(d.summaries.first?.ids == ["high", "mid", "low"])
        for id in ["low", "mid", "high"] {
            let n = try #require(d.delivered(id))
            #expect(n.presentation.listed && !n.presentation.banner && !n.presentation.sound)
            #expect(n.attention.summaryAt == Self.at("2026-11-27T17:30:00Z"))
        }
        // Taking an app out of the summary delivers what it holds at once.
        let news = try #require(await d.runtime.center(for: "com.example.news"))
        try await d.show(news, "later", [:])
        #expect(d.delivered("later") == nil)
        try await d.runtime.setFocus(try Self.settings(#"{"summary": {"times": ["08:00"], "apps": ["com.example.shop"]}}"#))
        #expect(d.delivered("later")?.presentation.listed == true)
        #expect(d.summaries.last?.ids == ["later"])
    }

    // MARK: promises at every edge

    static func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("herald-focus-\(UUID().uuidString)").path
    }

    /// Copies a device directory as it is on disk at this instant (a kill here leaves exactly this).
    static func snapshot(_ dir: String) -> String {
        let copy = temporaryDirectory()
        try? FileManager.default.copyItem(atPath: dir, toPath: copy)
        return copy
    }

    @Test("saved, then announced: held-for-summary, delivered and a widget reload are each on disk when their event comes; a kill between the two announces again at start, and a summary time passed while stopped delivers at once, never a day late")
    func savedThenAnnounced() async throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Each event: what the app's file says at that instant, and a copy of the directory.
        let seen = Locked<[String: (onDisk: Bool, copy: String)]>([:])
        @Sendable func onDisk(_ app: String, _ key: String, _ id: String) -> Bool {
            guard let data = FileManager.default.contents(atPath: "\(dir)/apps/\(app).json"),
                  case .object(let root)? = try? JSONReader.parse(Array(data)), case .array(let list)? = root[key] else { return false }
            return list.contains { $0["id"]?.stringValue == id }
        }
        do {
            let d = try Device(storage: dir, also: { event, _ in
                switch event {
                case .heldForSummary(let app, let id, _, _): seen.withLock { $0["held \(id)"] = (onDisk(app, "summaryHeld", id), Self.snapshot(dir)) }
                case .delivered(let app, let n): seen.withLock { $0["delivered \(n.id)"] = (onDisk(app, "delivered", n.id), Self.snapshot(dir)) }
                default: break
                }
            })
            let news = try await d.install("com.example.news")
            try await d.runtime.setFocus(try Self.settings(#"{"summary": {"times": ["12:00"], "apps": ["com.example.news"]}}"#))
            try await d.show(news, "quiet", [:])
            let other = try await d.install("com.example.other")
            try await d.show(other, "loud", [:])
            await d.runtime.settle()
        }
        let copies = seen.withLock { $0 }
        defer { for (_, c) in copies { try? FileManager.default.removeItem(atPath: c.copy) } }
        #expect(copies["held quiet"]?.onDisk == true, "held-for-summary came before the state that holds it was written")
        #expect(copies["delivered loud"]?.onDisk == true)

        // A kill right after the hold's state was written and before its event: at start the
        // event comes (its journal does not record it), once, and the hold is kept.
        let killed = try #require(copies["held quiet"]?.copy)
        let restarted = try Device(start: "2026-11-27T10:30:00Z", storage: killed)
        try await restarted.install("com.example.news")
        try await restarted.install("com.example.other")
        await restarted.runtime.settle()
        let held = restarted.journal.events.withLock { $0.compactMap { if case .heldForSummary(_, let id, _, let until) = $0 { "\(id)@\(PlanFormat.utcString(until))" } else { nil } } }
        #expect(held == ["quiet@2026-11-27T11:00:00Z"])
        #expect(restarted.clock.nextAlarm == Self.at("2026-11-27T11:00:00Z"))

        // Stopped across the summary time (12:00 Paris = 11:00Z), started at 11:20Z: delivered at
        // once, in the summary, as held — not held again until tomorrow.
        let late = try Device(start: "2026-11-27T11:20:00Z", storage: killed)
        try await late.install("com.example.news")
        await late.runtime.advance(late.clock, to: Self.at("2026-11-27T11:20:00Z"))
        #expect(late.summaries.map(\.ids) == [["quiet"]])
        #expect(late.delivered("quiet")?.attention.summaryAt == Self.at("2026-11-27T11:20:00Z"))
        #expect(late.journal.events.withLock { $0.contains { if case .heldForSummary = $0 { true } else { false } } } == false)
    }

    @Test("the summary event is journaled: a kill between the saves and the event emits it at start, once; without the kill nothing comes again")
    func summaryJournaled() async throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let copy = Locked<String?>(nil)
        do {
            let d = try Device(storage: dir, also: { event, _ in
                // The instant the event is written and before its parts are journaled.
                if case .summary = event { copy.withLock { $0 = Self.snapshot(dir) } }
            })
            let news = try await d.install("com.example.news")
            let shop = try await d.install("com.example.shop")
            try await d.runtime.setFocus(try Self.settings(#"{"summary": {"times": ["12:00"], "apps": ["com.example.news", "com.example.shop"]}}"#))
            try await d.show(news, "n1", ["relevance": .double(0.1)])
            try await d.show(shop, "s1", ["relevance": .double(0.8)])
            await d.runtime.advance(d.clock, to: Self.at("2026-11-27T11:00:00Z"))
            #expect(d.summaries.map(\.ids) == [["s1", "n1"]])
        }
        let killed = try #require(copy.withLock { $0 })
        defer { try? FileManager.default.removeItem(atPath: killed) }
        // Killed there: each app's part comes back at its install, once (as its own summary).
        let restarted = try Device(start: "2026-11-27T11:05:00Z", storage: killed)
        try await restarted.install("com.example.news")
        try await restarted.install("com.example.shop")
        await restarted.runtime.settle()
        #expect(restarted.summaries.map(\.ids) == [["n1"], ["s1"]])
        #expect(restarted.summaries.allSatisfy { $0.at == Self.at("2026-11-27T11:00:00Z") }, "at the summary's own time")
        #expect(restarted.delivered("n1") == nil, "the notifications themselves were announced before the kill")
        let again = try Device(start: "2026-11-27T11:06:00Z", storage: killed)
        try await again.install("com.example.news")
        try await again.install("com.example.shop")
        #expect(again.summaries.isEmpty, "announced once")
        // Not killed: a restart emits nothing again.
        let clean = try Device(start: "2026-11-27T11:05:00Z", storage: dir)
        try await clean.install("com.example.news")
        try await clean.install("com.example.shop")
        #expect(clean.summaries.isEmpty)
    }

    @Test("what was applied is kept: a time-sensitive entry's level, breakthrough and lit screen, a critical one's volume, and a hold's applied level read back unchanged after a restart")
    func appliedAttentionSurvivesRestart() async throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var before: [String: DeliveredNotification] = [:]
        do {
            let d = try Device(storage: dir)
            let urgent = try await d.install("com.example.urgent", entitlements: [.timeSensitive, .criticalAlert])
            let plain = try await d.install("com.example.plain")
            try await d.runtime.setFocus(try Self.settings(#"""
                {"modes": [{"name": "Work", "state": "on"}], "summary": {"times": ["12:00"], "apps": ["com.example.plain"]}}
                """#))
            try await d.show(urgent, "ts", ["interruptionLevel": .string("time-sensitive")])
            try await d.show(urgent, "crit", ["interruptionLevel": .string("critical"), "critical": .bool(true), "volume": .double(0.4)])
            try await d.show(urgent, "quiet", [:])
            // Asks for time-sensitive without the entitlement: applied as active, and held as such.
            try await d.show(plain, "held", ["interruptionLevel": .string("time-sensitive")])
            await d.runtime.settle()
            for id in ["ts", "crit", "quiet"] {
                let shown = try #require(d.delivered(id))
                before[id] = shown
            }
            #expect(before["ts"]?.attention.through == .timeSensitive && before["ts"]?.presentation.banner == true)
            #expect(before["crit"]?.attention.level == .critical && before["crit"]?.attention.criticalVolume == 0.4)
            #expect(before["quiet"]?.attention.silenced == true)
        }
        let d = try Device(start: "2026-11-27T10:05:00Z", storage: dir)
        let urgent = try await d.install("com.example.urgent", entitlements: [.timeSensitive, .criticalAlert])
        try await d.install("com.example.plain")
        let after = Dictionary(uniqueKeysWithValues: try await urgent.deliveredNotifications().map { ($0.id, $0) })
        for id in ["ts", "crit", "quiet"] {
            #expect(after[id]?.attention == before[id]?.attention, "\(id)")
            #expect(after[id]?.presentation.banner == before[id]?.presentation.banner && after[id]?.presentation.sound == before[id]?.presentation.sound, "\(id)")
            #expect(after[id]?.playedSound == before[id]?.playedSound, "\(id)")
        }
        let json = try #require(after["ts"].map { RuntimeJSON.json($0, in: Self.paris) })
        #expect(json["attention"]?["level"] == .string("time-sensitive") && json["attention"]?["screen"] == .bool(true))
        await d.runtime.advance(d.clock, to: Self.at("2026-11-27T11:00:00Z"))
        let released = try #require(d.delivered("held"))
        #expect(released.attention.level == .active && released.attention.focus == "Work")
    }

    @Test("a scheduled Focus is announced at its edges by the alarm, in the device's zone, with nothing else happening; across a DST change; and at start when one is on")
    func focusAtItsInstant() async throws {
        let kolkata = TimeZone(identifier: "Asia/Kolkata")!
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let times = Locked<[String]>([])
        let d = try Device(start: "2026-11-27T11:00:00Z", zone: kolkata, storage: dir, also: { event, now in
            if case .focus(let active, _) = event { times.withLock { $0.append("\(active ?? "-")@\(PlanFormat.utcString(now))") } }
        })
        try await d.install("com.example.app")
        try await d.runtime.setFocus(try Self.settings(#"""
            {"modes": [{"name": "Short", "state": "scheduled", "schedule": {"start": "16:52", "end": "16:53"}}]}
            """#))
        // 16:52 in Kolkata (UTC+5:30) is 11:22Z.
        #expect(d.clock.nextAlarm == Self.at("2026-11-27T11:22:00Z"))
        await d.runtime.advance(d.clock, to: Self.at("2026-11-27T11:30:00Z"))
        #expect(times.withLock { $0 } == ["-@2026-11-27T11:00:00Z", "Short@2026-11-27T11:22:00Z", "-@2026-11-27T11:23:00Z"])
        #expect(d.clock.nextAlarm == Self.at("2026-11-28T11:22:00Z"))

        // Started while the Focus is on: announced at once; started after an edge passed while
        // stopped: the Focus now (none) is announced at once too.
        let again = Locked<[String]>([])
        _ = try Device(start: "2026-11-28T11:22:30Z", zone: kolkata, storage: dir, also: { event, _ in
            if case .focus(let active, _) = event { again.withLock { $0.append(active ?? "-") } }
        })
        _ = try Device(start: "2026-11-28T11:40:00Z", zone: kolkata, storage: dir, also: { event, _ in
            if case .focus(let active, _) = event { again.withLock { $0.append(active ?? "-") } }
        })
        #expect(again.withLock { $0 } == ["Short", "-"])

        // Paris springs forward at 02:00 on 2027-03-28: a Focus from 02:30 starts at 03:00 local (01:00Z).
        let spring = Locked<[String]>([])
        let p = try Device(start: "2027-03-27T20:00:00Z", also: { event, now in
            if case .focus(let active, _) = event { spring.withLock { $0.append("\(active ?? "-")@\(PlanFormat.utcString(now))") } }
        })
        try await p.install("com.example.app")
        try await p.runtime.setFocus(try Self.settings(#"{"modes": [{"name": "Night", "state": "scheduled", "schedule": {"start": "02:30", "end": "06:00"}}]}"#))
        await p.runtime.advance(p.clock, to: Self.at("2027-03-28T05:00:00Z"))
        #expect(spring.withLock { $0 } == ["-@2027-03-27T20:00:00Z", "Night@2027-03-28T01:00:00Z", "-@2027-03-28T04:00:00Z"])
    }
}

/// Widget pushes in the runtime: the token, the reload budget at fixed instants, refusals.
@Suite("Widget pushes")
struct WidgetPushTests {
    @Test("the budget: 70 reloads in a rolling day, the 71st refused until the oldest is a day old")
    func budget() {
        var budget = WidgetReloadBudget()
        let start: Int64 = 1_795_830_000_000
        func take(_ at: Int64) -> Bool { budget.take(now: at) }
        for i in 0..<70 { #expect(take(start + Int64(i) * 60_000)) }
        #expect(!take(start + 70 * 60_000))
        #expect(budget.remaining(now: start + 70 * 60_000) == 0)
        #expect(budget.nextAvailable(now: start + 70 * 60_000) == start + WidgetReloadBudget.windowMilliseconds)
        #expect(!take(start + WidgetReloadBudget.windowMilliseconds - 1))
        #expect(take(start + WidgetReloadBudget.windowMilliseconds))
        #expect(budget.remaining(now: start + WidgetReloadBudget.windowMilliseconds) == 0)
    }

    @Test("a widgets push reloads only for an app that configured its widgets, with content-changed, within the budget; each outcome is an event and acked")
    func reloads() async throws {
        let clock = SimulatedAlarmClock(startMilliseconds: 1_795_830_000_000)
        let journal = DeviceRuntimeTests.Journal()
        let runtime = try DeviceRuntime(clock: clock, timeZone: TimeZone(identifier: "UTC")!, user: DeviceRuntimeTests.Allow(), observer: journal.observer)
        _ = try await runtime.install("com.example.weather")
        let requests = Locked<[String]>([])
        await runtime.setRequester { want, keep in requests.withLock { $0.append("\(want) \(keep)") } }
        let acked = Locked(0)
        func push(_ payload: String) async {
            let n = DeviceNotification(
                apnsID: .random(), topic: "com.example.weather", pushType: .widgets, priority: .immediate, collapseID: nil, expiration: nil,
                payload: try! JSONReader.parse(Array(payload.utf8)), token: nil)
            await runtime.receive(n) { acked.withLock { $0 += 1 } }
        }
        func outcomes() -> [String] {
            journal.events.withLock { $0.compactMap { event -> String? in
                guard case .widgets(_, let e) = event else { return nil }
                switch e {
                case .token: return "token"
                case .reloaded(_, let remaining): return "reloaded \(remaining)"
                case .refused(_, let reason, _): return "refused: \(reason)"
                }
            } }
        }
        await push(#"{"aps":{"content-changed":true}}"#)
        try await runtime.configureWidgetPushes(app: "com.example.weather", enabled: true)
        #expect(requests.withLock { $0 } == ["widgets(topic: \"com.example.weather\") true"])
        await runtime.gatewayIssued(widgetToken: .random(), topic: "com.example.weather")
        await push(#"{"aps":{"content-changed":true}}"#)
        await push(#"{"aps":{"alert":"x"}}"#)
        for _ in 0..<70 { await push(#"{"aps":{"content-changed":true}}"#) }
        await runtime.settle()
        let all = outcomes()
        #expect(all.first == "refused: the app's widgets are not configured for pushes")
        #expect(all[1] == "token")
        #expect(all[2] == "reloaded 69")
        #expect(all[3].hasPrefix("refused: the payload is not"))
        #expect(all.last?.hasPrefix("refused: over the budget of 70 widget reloads a day until") == true)
        #expect(all.filter { $0.hasPrefix("reloaded") }.count == 70)
        #expect(acked.withLock { $0 } == 73)
    }
}
