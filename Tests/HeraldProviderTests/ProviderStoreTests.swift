import Foundation
import HeraldCore
import HeraldTesting
@testable import HeraldProvider
import Testing

/// The same expectations against both provider stores: orders, filters, pages and conflicts.
@Suite("Provider stores: SQLite and in memory alike")
struct ProviderStoreTests {
    enum Kind: String, CaseIterable, CustomStringConvertible, Sendable {
        case sqlite, memory
        var description: String { rawValue }
        func make() throws -> any ProviderStore {
            switch self {
            case .sqlite: try SQLiteProviderStore(directory: TemporaryDirectory.make(prefix: "provider-store"))
            case .memory: InMemoryProviderStore()
            }
        }
    }

    @Test("a stored Live Activity send reads as it was written before its content was a part of its own, and is written back flat")
    func liveActivitySendFormat() throws {
        // As the synthesized Codable of the flat struct wrote it (sends and schedules store it).
        let stored = #"{"attributes":{"team":"A"},"attributesType":"Score","contentState":{"s":1},"dismissalDate":30,"event":"start","#
            + #""inputPushChannel":"AAAAAAAAAAAAAAAAAAAAAA==","inputPushToken":true,"relevanceScore":0.5,"staleDate":20,"timestamp":10}"#
        let send = try JSONDecoder().decode(LiveActivitySend.self, from: Data(stored.utf8))
        #expect(send == LiveActivitySend(
            event: "start", timestamp: 10, contentState: ["s": .int(1)], staleDate: 20, dismissalDate: 30, relevanceScore: 0.5,
            attributesType: "Score", attributes: ["team": .string("A")], inputPushToken: true, inputPushChannel: "AAAAAAAAAAAAAAAAAAAAAA=="))
        #expect(send.contentState == ["s": .int(1)] && send.staleDate == 20)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(send), as: UTF8.self) == stored)
        // An update with no content: only the keys it has.
        let bare = try JSONDecoder().decode(LiveActivitySend.self, from: Data(#"{"event":"end","inputPushToken":false}"#.utf8))
        #expect(bare == LiveActivitySend(event: "end"))
        #expect(String(decoding: try encoder.encode(bare), as: UTF8.self) == #"{"event":"end","inputPushToken":false}"#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(LiveActivitySend.self, from: Data(#"{"event":"end"}"#.utf8)) }
    }

    static func registration(_ token: String, topic: String = "app", language: String = "en", zone: String = "UTC", user: String? = nil,
                             tags: [String] = [], at: Int64 = 1_000) -> Registration {
        Registration(token: token, topic: topic, language: language, timeZone: zone, userID: user, tags: tags, registeredAt: at)
    }

    @Test("registrations: replace, targets, filters, pages, topics, zones and counts", arguments: Kind.allCases)
    func registrations(kind: Kind) async throws {
        let store = try kind.make()
        try await store.upsert([
            Self.registration("cc", topic: "b", language: "fr-CA", zone: "America/Toronto", user: "u1", tags: ["news", "sport"]),
            Self.registration("aa", language: "fr", zone: "Europe/Paris", user: "u1", tags: ["news"]),
            Self.registration("bb", language: "EN-gb", user: "u2"),
            Self.registration("dd", language: "francais", zone: "Europe/Paris"),
        ])
        try await store.upsert(Self.registration("dd", language: "de", zone: "Europe/Paris", at: 5_000))  // replaced
        #expect(try await store.registration(token: "dd")?.language == "de")
        #expect(try await store.registration(token: "ee") == nil)

        #expect(try await store.registrations(for: .token("AA"), zone: nil)?.map(\.token) == ["aa"])
        #expect(try await store.registrations(for: .token("aa"), zone: "UTC")?.map(\.token) == [])
        #expect(try await store.registrations(for: .token("ee"), zone: nil) == nil)
        #expect(try await store.registrations(user: "u1").map(\.token) == ["aa", "cc"])
        #expect(try await store.registrations(user: "u1", zone: "Europe/Paris").map(\.token) == ["aa"])
        #expect(try await store.registrations(for: .segment(topic: nil, tags: ["news"], languages: ["FR"]), zone: nil)?.map(\.token) == ["aa", "cc"])
        #expect(try await store.registrations(for: .segment(topic: "app", tags: [], languages: ["en-us"]), zone: nil)?.map(\.token) == [])
        #expect(try await store.registrations(for: .segment(topic: "app", tags: [], languages: ["en-gb"]), zone: nil)?.map(\.token) == ["bb"])
        #expect(try await store.registrations(for: .segment(topic: "app", tags: [], languages: []), zone: "Europe/Paris")?.map(\.token) == ["aa", "dd"])

        #expect(try await store.registrations(RegistrationFilter(), after: nil, limit: 2).map(\.token) == ["aa", "bb"])
        #expect(try await store.registrations(RegistrationFilter(), after: "bb", limit: 0).map(\.token) == ["cc"])
        #expect(try await store.registrations(RegistrationFilter(language: "FR"), after: nil, limit: 10).map(\.token) == ["aa", "cc"])
        #expect(try await store.registrations(RegistrationFilter(tag: "sport"), after: nil, limit: 10).map(\.token) == ["cc"])
        #expect(try await store.registrations(RegistrationFilter(topic: "app", user: "u2"), after: nil, limit: 10).map(\.token) == ["bb"])
        #expect(try await store.registrations(RegistrationFilter(zone: "Europe/Paris"), after: "aa", limit: 10).map(\.token) == ["dd"])

        #expect(try await store.topics() == ["app", "b"])
        #expect(try await store.zones() == ["America/Toronto", "Europe/Paris", "UTC"])
        let counts = try await store.registrationCounts()
        #expect(counts.total == 4)
        #expect(try await store.registrationCount() == 4)
        #expect(counts.byZone.map(\.0) == ["Europe/Paris", "America/Toronto", "UTC"] && counts.byZone.map(\.1) == [2, 1, 1])
        #expect(counts.byTopic.map(\.0) == ["app", "b"] && counts.byLanguage.map(\.0) == ["EN-gb", "de", "fr", "fr-CA"])

        #expect(try await store.prune("dd", unregisteredAt: 4_000) == false)  // registered again after
        #expect(try await store.prune("dd", unregisteredAt: 6_000) == true)
        #expect(try await store.deleteRegistration("aa") == true)
        #expect(try await store.deleteRegistration("aa") == false)
        #expect(try await store.registrationCount() == 2)
    }

    @Test("badge counts: absent is 0, set, incremented once per key in one step, held at Int32.max", arguments: Kind.allCases)
    func badges(kind: Kind) async throws {
        let store = try kind.make()
        #expect(try await store.badges(keys: ["user:a", "token:bb"]) == [:])
        #expect(try await store.incrementBadges(keys: ["user:a", "user:a", "token:bb"], by: 2) == ["user:a": 2, "token:bb": 2])
        #expect(try await store.incrementBadges(keys: ["user:a"], by: 3) == ["user:a": 5])
        try await store.setBadges(keys: ["token:bb"], to: 0)
        #expect(try await store.badges(keys: ["user:a", "token:bb", "user:z"]) == ["user:a": 5, "token:bb": 0])
        try await store.setBadges(keys: ["user:a"], to: BadgeCount.maximum - 1)
        #expect(try await store.incrementBadges(keys: ["user:a"], by: 10_000) == ["user:a": BadgeCount.maximum])
        #expect(try await store.incrementBadges(keys: ["user:a"], by: 1) == ["user:a": BadgeCount.maximum])
        #expect(try await store.incrementBadges(keys: [], by: 1) == [:])
        #expect(Self.registration("cc", user: "u1").badgeKey == "user:u1" && Self.registration("cc").badgeKey == "token:cc")
    }

    @Test("templates: by id, paged in byte order, deleted once", arguments: Kind.allCases)
    func templates(kind: Kind) async throws {
        let store = try kind.make()
        for id in ["b", "a", "é", "Z"] { try await store.put(MessageTemplate(id: id, translations: ["en": .init(body: id)])) }
        try await store.put(MessageTemplate(id: "a", translations: ["en": .init(body: "again")]))
        #expect(try await store.template("a")?.translations["en"]?.body == "again")
        #expect(try await store.templates(after: nil, limit: 10).map(\.id) == ["Z", "a", "b", "é"])
        #expect(try await store.templates(after: "a", limit: 1).map(\.id) == ["b"])
        #expect(try await store.deleteTemplate("b") == true)
        #expect(try await store.deleteTemplate("b") == false)
        #expect(try await store.template("b") == nil)
    }

    @Test("sends: a key taken once, finished, listed newest first, interrupted at restart", arguments: Kind.allCases)
    func sends(kind: Kind) async throws {
        let store = try kind.make()
        #expect(try await store.beginSend(id: "s1", idempotencyKey: "k", fingerprint: "f", createdAt: 10))
        #expect(try await store.beginSend(id: "s2", idempotencyKey: "k", fingerprint: "g", createdAt: 11) == false)
        #expect(try await store.sendExists(id: "s2") == false)
        #expect(try await store.beginSend(id: "s3", idempotencyKey: nil, fingerprint: nil, createdAt: 10))
        #expect(try await store.beginSend(id: "s4", idempotencyKey: nil, fingerprint: nil, createdAt: 30))
        var report = SendReport(id: "s1", createdAt: 10, deliveries: [
            .init(token: "aa", language: "en", status: 200, reason: nil, apnsID: "x", attempts: 1),
        ], pruned: [])
        try await store.finishSend(report)
        report = SendReport(id: "r1", createdAt: 20, deliveries: [], pruned: [], scheduleID: "sch")
        try await store.save(report, idempotencyKey: nil)

        let record = try await store.sendRecord(idempotencyKey: "k")
        #expect(record?.state == .done && record?.fingerprint == "f" && record?.report.counts == ["accepted": 1])
        #expect(try await store.sendRecord(idempotencyKey: "other") == nil)
        #expect(try await store.sends(after: nil, scheduleID: nil, limit: 10).map(\.id) == ["s4", "r1", "s3", "s1"])
        #expect(try await store.sends(after: "r1", scheduleID: nil, limit: 1).map(\.id) == ["s3"])
        #expect(try await store.sends(after: "nope", scheduleID: nil, limit: 10).isEmpty)
        let runs = try await store.sends(after: nil, scheduleID: "sch", limit: 10)
        #expect(runs.map(\.id) == ["r1"] && runs.first?.scheduleID == "sch" && runs.first?.state == .done)
        #expect(try await store.send(id: "s1")?.deliveries.count == 1)
        #expect(try await store.send(id: "zz") == nil)

        let schedule = Schedule(id: "sch", timing: .instant(100), send: SendRequest(target: .user("u"), message: .none), createdAt: 1)
        try await store.put(schedule)
        try await store.save(ScheduleRun(scheduleID: "sch", zone: "", localDate: nil, dueAt: 100, startedAt: 100, finishedAt: 100,
                                         outcome: .started, sendID: nil, counts: [:]))
        let interrupted = try await store.markInterrupted(at: 500)
        #expect(interrupted.sends == 2 && interrupted.runs == 1)
        #expect(try await store.sends(after: nil, scheduleID: nil, limit: 10).map(\.state) == [.interrupted, .done, .interrupted, .done])
        let run = try await store.runs(scheduleID: "sch").first
        #expect(run?.outcome == .interrupted && run?.finishedAt == 500 && run?.error != nil)
    }

    @Test("schedules and runs: oldest first, by state; runs in due order, the last per zone", arguments: Kind.allCases)
    func schedules(kind: Kind) async throws {
        let store = try kind.make()
        let send = SendRequest(target: .user("u"), message: .none)
        try await store.put(Schedule(id: "b", timing: .instant(9), send: send, createdAt: 5))
        try await store.put(Schedule(id: "a", timing: .instant(9), send: send, createdAt: 5, state: .cancelled))
        try await store.put(Schedule(id: "c", timing: .instant(9), send: send, createdAt: 1))
        #expect(try await store.schedules(state: nil).map(\.id) == ["c", "a", "b"])
        #expect(try await store.schedules(state: .active).map(\.id) == ["c", "b"])
        #expect(try await store.schedule("a")?.state == .cancelled)
        #expect(try await store.schedule("zz") == nil)

        func run(_ zone: String, _ due: Int64, _ outcome: ScheduleRun.Outcome) -> ScheduleRun {
            ScheduleRun(scheduleID: "b", zone: zone, localDate: nil, dueAt: due, startedAt: due, finishedAt: due, outcome: outcome, sendID: nil, counts: [:])
        }
        for r in [run("Z", 20, .sent), run("A", 20, .sent), run("A", 10, .missed), run("A", 30, .started)] { try await store.save(r) }
        try await store.save(run("A", 30, .sent))  // the same run again: replaced
        #expect(try await store.runs(scheduleID: "b").map { "\($0.zone)\($0.dueAt)\($0.outcome)" } == ["A10missed", "A20sent", "Z20sent", "A30sent"])
        #expect(try await store.lastRuns(scheduleID: "b") == ["A": 30, "Z": 20])
        #expect(try await store.lastRuns(scheduleID: "c").isEmpty)
    }
}
