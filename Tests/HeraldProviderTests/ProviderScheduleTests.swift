import Foundation
import HeraldClient
import HeraldCore
import HeraldDevice
@testable import HeraldProvider
import HeraldProviderServer
import HeraldTesting
import Testing

/// The provider's schedules: the rules (pure), restarts with missed occurrences (a recording
/// sender), and 09:00 local across zones and a DST change end to end (REST, APNs client, the
/// in-process gateway, device runtimes), all on a simulated clock.
@Suite("Provider schedules")
struct ProviderScheduleTests {
    static func at(_ text: String) -> Int64 { ProviderServiceTests.instant(text) }
    static let newYork = TimeZone(identifier: "America/New_York")!

    static func occurrences(_ rule: WallClockRule, createdAt: Int64, zone: TimeZone, count: Int) -> [Int64] {
        var result: [Int64] = []
        var after = createdAt - 1
        while result.count < count, let next = rule.next(after: after, createdAt: createdAt, in: zone) {
            result.append(next.at)
            after = next.at
        }
        return result
    }

    @Test("wall-clock rules: daily across spring forward, a time in the gap, a repeated time, weekly, monthly skipping short months, until, once")
    func rules() {
        #expect(LocalDate("2026-11-21")?.weekday == 7)  // a Saturday
        #expect(LocalDate(dayNumber: LocalDate("2027-03-14")!.dayNumber) == LocalDate("2027-03-14"))
        #expect(LocalDate("2027-02-29") == nil && LocalDate("2028-02-29") != nil && LocalDate("2027-3-1") == nil)
        #expect(LocalDate.of(Self.at("2027-03-13T03:00:00Z"), in: Self.newYork) == LocalDate("2027-03-12"))

        let created = Self.at("2027-03-12T12:00:00Z")
        let daily = WallClockRule(hour: 9, minute: 0, repeats: .daily, until: LocalDate("2027-03-15"))
        #expect(Self.occurrences(daily, createdAt: created, zone: Self.newYork, count: 10) == [
            Self.at("2027-03-12T14:00:00Z"), Self.at("2027-03-13T14:00:00Z"),  // EST, UTC−5
            Self.at("2027-03-14T13:00:00Z"), Self.at("2027-03-15T13:00:00Z"),  // EDT, UTC−4; until is inclusive
        ])
        // 02:30 does not exist on 14 March in New York: sent when the clock jumps over it (03:30 EDT).
        let gap = WallClockRule(hour: 2, minute: 30, repeats: .once, from: LocalDate("2027-03-14"))
        #expect(gap.next(after: created, createdAt: created, in: Self.newYork)?.at == Self.at("2027-03-14T07:30:00Z"))
        // 01:30 happens twice on 1 November 2026: the first (EDT).
        let repeated = WallClockRule(hour: 1, minute: 30, repeats: .once, from: LocalDate("2026-11-01"))
        let october = Self.at("2026-10-30T00:00:00Z")
        #expect(repeated.next(after: october, createdAt: october, in: Self.newYork)?.at == Self.at("2026-11-01T05:30:00Z"))

        let weekly = WallClockRule(hour: 18, minute: 15, timeZone: "Europe/Paris", repeats: .weekly(weekdays: [2, 6]))  // Mon, Fri
        let paris = TimeZone(identifier: "Europe/Paris")!
        #expect(Self.occurrences(weekly, createdAt: created, zone: paris, count: 3) == [
            Self.at("2027-03-12T17:15:00Z"), Self.at("2027-03-15T17:15:00Z"), Self.at("2027-03-19T17:15:00Z"),
        ])
        let monthly = WallClockRule(hour: 8, minute: 0, timeZone: "UTC", repeats: .monthly(day: 31))
        let january = Self.at("2027-01-01T00:00:00Z")
        #expect(Self.occurrences(monthly, createdAt: january, zone: TimeZone(identifier: "UTC")!, count: 4) == [
            Self.at("2027-01-31T08:00:00Z"), Self.at("2027-03-31T08:00:00Z"), Self.at("2027-05-31T08:00:00Z"), Self.at("2027-07-31T08:00:00Z"),
        ])
        // Once without a date: the next time 09:00 comes (tomorrow in Tokyo, where it has passed today).
        let once = WallClockRule(hour: 9, minute: 0, repeats: .once)
        #expect(Self.occurrences(once, createdAt: created, zone: TimeZone(identifier: "Asia/Tokyo")!, count: 5) == [Self.at("2027-03-13T00:00:00Z")])
        #expect(WallClockRule(hour: 24, minute: 0, repeats: .daily).problem != nil)
        #expect(WallClockRule(hour: 9, minute: 0, repeats: .weekly(weekdays: [])).problem != nil)
        #expect(WallClockRule(hour: 9, minute: 0, repeats: .daily, from: LocalDate("2027-02-01"), until: LocalDate("2027-01-01")).problem != nil)
    }

    /// A sender that answers 200 and remembers what it was asked to send and when.
    final class RecordingSender: PushSending {
        let clock: SimulatedAlarmClock
        let sent = Locked<[(token: String, at: Int64, payload: String)]>([])
        init(clock: SimulatedAlarmClock) { self.clock = clock }
        func send(_ notification: APNsNotification) async throws -> APNsResult {
            sent.withLock { $0.append((notification.token, clock.nowMilliseconds(), String(decoding: notification.payload, as: UTF8.self))) }
            return APNsResult(apnsID: notification.apnsID, status: 200, reason: nil, timestamp: nil, attempts: 1, transportError: nil)
        }
        var tokens: [String] { sent.withLock { $0.map(\.token) } }
    }

    /// A sender whose pushes never get an answer until it is released: a service stopped while
    /// sending leaves its database as this one's does.
    final class StalledSender: PushSending {
        let calls = Locked(0)
        private let waiting = Locked<[CheckedContinuation<Void, Error>]>([])
        func send(_ notification: APNsNotification) async throws -> APNsResult {
            try await withCheckedThrowingContinuation { continuation in
                waiting.withLock { $0.append(continuation) }
                calls.withLock { $0 += 1 }
            }
            return APNsResult(apnsID: notification.apnsID, status: 200)
        }
        /// Fails every waiting push (the stopped service never records them).
        func release() { for c in waiting.withLock({ w in defer { w = [] }; return w }) { c.resume(throwing: CancellationError()) } }
    }

    static func outcome<T: Sendable>(_ body: @Sendable () async throws(ProviderError) -> T) async -> Result<T, ProviderError> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    @Test("storage suspends the service and nothing interleaves: a second send with a key waits for the first (one send, both answered); a template deletion waits for a schedule being created with it (409, not both)")
    func storageSuspensionsDoNotInterleave() async throws {
        let clock = SimulatedAlarmClock(startMilliseconds: Self.at("2027-01-01T00:00:00Z"))
        let store = PausingStore()
        let sender = RecordingSender(clock: clock)
        let service = ProviderService(store: store, sender: sender, clock: clock)
        try await service.startSchedules()
        let token = String(repeating: "ab", count: 32)
        try await service.register(token: token, topic: "com.example.app", language: "en", timeZone: "UTC", userID: "u", tags: [])

        // The first send's idempotency check is held in the store; the second arrives meanwhile.
        var keyed = SendRequest(target: .user("u"), message: .alert(title: nil, subtitle: nil, body: "once"))
        keyed.idempotencyKey = "k"
        store.hold("sendRecord")
        let first = Task { try await service.send(keyed) }
        try await eventually("the first send's check is held") { store.calls("sendRecord") == 1 }
        let second = Task { try await service.send(keyed) }
        try await eventually("the second send joins the first") {
            String(decoding: service.metrics.exposition(), as: UTF8.self).contains("herald_provider_sends_joined_total 1")
        }
        #expect(store.calls("sendRecord") == 1)
        store.release("sendRecord")
        let (a, b) = (try await first.value, try await second.value)
        #expect(a.report.id == b.report.id && !a.replayed && b.replayed)
        #expect(sender.tokens == [token])

        // A schedule is being created with template t (its read of t is held); t is deleted meanwhile.
        try await service.putTemplate(MessageTemplate(id: "t", translations: ["en": .init(body: "hi")]))
        let send = SendRequest(target: .user("u"), message: .template(id: "t", arguments: []))
        let due = clock.nowMilliseconds() + 3_600_000
        store.hold("template")
        let created = Task { await Self.outcome { () async throws(ProviderError) in try await service.schedule(.instant(due), send: send, id: "s") } }
        try await eventually("the schedule's template read is held") { store.calls("template") == 1 }
        let deleted = Task { await Self.outcome { () async throws(ProviderError) in try await service.deleteTemplate("t") } }
        try await eventually("the deletion waits for its turn") { await service.scheduleLock.waiting.count == 1 || store.calls("deleteTemplate") == 1 }
        store.release("template")
        switch (await created.value, await deleted.value) {
        case (.success, .failure(let refusal)): #expect(refusal.kind == .conflict, "\(refusal)")
        case (let c, let d): Issue.record("schedule \(c), delete \(d): the deletion did not wait for the schedule")
        }
    }

    @Test("a restart never sends a scheduled occurrence or an idempotent send twice: what a stopped service left started is marked interrupted, a retry under its key is refused (409), the same key with another request 422")
    func restartDuringSends() async throws {
        let directory = try TemporaryDirectory.make(prefix: "herald-provider")
        let clock = SimulatedAlarmClock(startMilliseconds: Self.at("2027-03-12T12:00:00Z"))
        let stalled = StalledSender()
        let first = ProviderService(store: try SQLiteProviderStore(directory: directory), sender: stalled, clock: clock, missedSendWindow: 3_600_000)
        try await first.register(token: "aa01", topic: "com.example.app", language: "en", timeZone: "UTC", userID: "ana", tags: [])
        try await first.startSchedules()
        let (schedule, _) = try await first.schedule(
            .wallClock(WallClockRule(hour: 13, minute: 0, timeZone: "UTC", repeats: .daily)),
            send: SendRequest(target: .user("ana"), message: .alert(title: nil, subtitle: nil, body: "daily")), id: "daily")
        clock.advance(to: Self.at("2027-03-12T13:00:00Z"))
        let keyed = SendRequest(target: .user("ana"), message: .alert(title: nil, subtitle: nil, body: "once"), idempotencyKey: "k-1")
        let pending = Task { try await first.send(keyed) }
        try await eventually("the run and the send under way") { stalled.calls.withLock { $0 } == 2 }

        // The service "stops" here; another starts on the same database 10 minutes later, inside
        // the missed-send window.
        clock.advance(to: Self.at("2027-03-12T13:10:00Z"))
        let sender = RecordingSender(clock: clock)
        let second = ProviderService(store: try SQLiteProviderStore(directory: directory), sender: sender, clock: clock, missedSendWindow: 3_600_000)
        let caughtUp = try await second.startSchedules()
        await second.settle()
        #expect(caughtUp.late == 0 && caughtUp.missed == 0)
        #expect(sender.tokens.isEmpty)
        let runs = try await second.scheduleStatus(schedule.id).runs
        #expect(runs.map(\.outcome) == [.interrupted])
        #expect(runs.first?.error?.contains("not sent again") == true)
        #expect(String(decoding: second.metrics.exposition(), as: UTF8.self).contains(#"herald_provider_schedule_runs_total{outcome="interrupted"} 1"#))

        let retried = await #expect(throws: ProviderError.self) { try await second.send(keyed) }
        #expect(retried?.kind == .conflict && retried?.message.contains("interrupted") == true)
        var other = keyed
        other.message = .alert(title: nil, subtitle: nil, body: "something else")
        let reused = await #expect(throws: ProviderError.self) { try await second.send(other) }
        #expect(reused?.kind == .keyReused && reused?.message.contains("k-1") == true)
        let listed = try await second.store.sends(after: nil, scheduleID: nil, limit: 10)
        #expect(listed.map(\.state) == [.interrupted])
        #expect(sender.tokens.isEmpty)

        // The next day's occurrence is sent as usual.
        await second.advance(clock, to: Self.at("2027-03-13T13:00:01Z"))
        #expect(sender.tokens == ["aa01"])
        await second.stopSchedules()
        stalled.release()
        _ = await pending.result
        await first.stopSchedules()
    }

    @Test("schedules survive a restart: an occurrence missed inside the window is sent at start-up, older ones are recorded as missed")
    func restartWithMissedOccurrences() async throws {
        let directory = try TemporaryDirectory.make(prefix: "herald-provider")
        let clock = SimulatedAlarmClock(startMilliseconds: Self.at("2027-03-12T12:00:00Z"))
        let sender = RecordingSender(clock: clock)
        let first = ProviderService(store: try SQLiteProviderStore(directory: directory), sender: sender, clock: clock, missedSendWindow: 3_600_000)
        try await first.register(token: "aa01", topic: "com.example.app", language: "ja", timeZone: "Asia/Tokyo", userID: nil, tags: [])
        try await first.register(token: "bb02", topic: "com.example.app", language: "en-US", timeZone: "America/New_York", userID: nil, tags: [])
        try await first.startSchedules()
        let (schedule, _) = try await first.schedule(
            .wallClock(WallClockRule(hour: 9, minute: 0, repeats: .daily)),
            send: SendRequest(target: .segment(topic: "com.example.app", tags: [], languages: []), message: .alert(title: nil, subtitle: nil, body: "Good morning")),
            id: "morning")
        await first.advance(clock, to: Self.at("2027-03-13T01:00:00Z"))
        // New York at 14:00Z on the 12th, Tokyo at 00:00Z on the 13th.
        #expect(sender.tokens == ["bb02", "aa01"])

        // The service stops; the clock runs on without it past three occurrences.
        await first.stopSchedules()
        clock.advance(to: Self.at("2027-03-14T13:30:00Z"))
        #expect(sender.tokens.count == 2)
        let second = ProviderService(store: try SQLiteProviderStore(directory: directory), sender: sender, clock: clock, missedSendWindow: 3_600_000)
        let caughtUp = try await second.startSchedules()
        await second.settle()
        // New York 13th (14:00Z, 23.5 h ago) and Tokyo 14th (00:00Z, 13.5 h ago) are missed; New York 14th (13:00Z, DST began) is 30 min late: sent.
        #expect(caughtUp.late == 1 && caughtUp.missed == 2)
        #expect(sender.tokens == ["bb02", "aa01", "bb02"])
        await second.advance(clock, to: Self.at("2027-03-15T01:00:00Z"))
        #expect(sender.tokens == ["bb02", "aa01", "bb02", "aa01"])

        let status = try await second.scheduleStatus(schedule.id)
        let runs = status.runs.map { "\($0.zone) \($0.localDate?.description ?? "") \($0.outcome.rawValue)" }
        #expect(runs == [
            "America/New_York 2027-03-12 sent", "Asia/Tokyo 2027-03-13 sent", "America/New_York 2027-03-13 missed",
            "Asia/Tokyo 2027-03-14 missed", "America/New_York 2027-03-14 sent", "Asia/Tokyo 2027-03-15 sent",
        ])
        #expect(status.counts == ["accepted": 4, "missed": 2])
        #expect(status.next == ["America/New_York": Self.at("2027-03-15T13:00:00Z"), "Asia/Tokyo": Self.at("2027-03-16T00:00:00Z")])

        // A one-off at an instant finishes after its run; a cancelled schedule sends nothing more.
        let (oneOff, _) = try await second.schedule(
            .instant(Self.at("2027-03-15T02:00:00Z")), send: SendRequest(target: .token("AA01"), message: .alert(title: nil, subtitle: nil, body: "once")))
        await second.advance(clock, to: Self.at("2027-03-15T03:00:00Z"))
        #expect(try await second.scheduleStatus(oneOff.id).schedule.state == .finished)
        #expect(try await second.cancelSchedule("morning").state == .cancelled)
        await second.advance(clock, to: Self.at("2027-03-17T03:00:00Z"))
        #expect(sender.tokens == ["bb02", "aa01", "bb02", "aa01", "aa01"])
        #expect(try await second.schedules(state: .active).isEmpty)
        await second.stopSchedules()
    }

    @Test("09:00 local for everyone, end to end: each zone's devices get the template in their language at their own 09:00, across New York's DST change")
    func localMorningAcrossZones() async throws {
        let clock = SimulatedAlarmClock(startMilliseconds: Self.at("2027-03-12T12:00:00Z"))
        let gateway = try await TestGateway.start(clock: clock)
        let signer = try await gateway.makeKey(team: "TEAM000001", topics: ["com.example.app"])
        let client = APNsClient(
            configuration: .init(host: "localhost", port: gateway.ports.providerPort, tls: ClientTLS(trustRootsPath: gateway.certificates.caCertificatePath)),
            signer: signer, clock: clock)
        let service = ProviderService(store: try SQLiteProviderStore(directory: nil), sender: client, clock: clock, defaultLanguage: "en")
        try await service.startSchedules()
        let server = try await ProviderHTTPServer.start(service: service, port: 0, apiToken: ProviderServiceTests.apiToken)
        let base = "http://127.0.0.1:\(server.port)"
        let phones = [
            try await ProviderServiceTests.Phone.start(gateway, provider: base, language: "ja", zone: "Asia/Tokyo", user: "kenji"),
            try await ProviderServiceTests.Phone.start(gateway, provider: base, language: "en-US", zone: "America/New_York", user: "nia"),
            try await ProviderServiceTests.Phone.start(gateway, provider: base, language: "fr-FR", zone: "Europe/London", user: "lea"),
        ]
        try await eventually("three registrations") { phones.allSatisfy { $0.app.registered.withLock { $0 } == 1 } }
        let template = #"{"translations":{"en":{"body":"Good morning, %@"},"ja":{"body":"おはよう、%@"},"fr":{"body":"Bonjour, %@"}}}"#
        #expect(try await ProviderServiceTests.http("PUT", base + "/v1/templates/morning", template).status == 200)

        let create = #"{"id":"daily-morning","to":{"segment":{"topic":"com.example.app"}},"template":{"id":"morning","args":["Herald"]},"time":"09:00","repeat":"daily","until":"2027-03-15"}"#
        let created = try await ProviderServiceTests.http("POST", base + "/v1/schedules", create)
        #expect(created.status == 201)
        // The same create again (a retry) is the same schedule; another request under its id is refused.
        #expect(try await ProviderServiceTests.http("POST", base + "/v1/schedules", create).status == 200)
        #expect(try await ProviderServiceTests.http("POST", base + "/v1/schedules", create.replacingOccurrences(of: "09:00", with: "10:00")).status == 409)
        let bad = try await ProviderServiceTests.http("POST", base + "/v1/schedules", #"{"to":{"user":"nia"},"alert":{"body":"x"},"time":"9am"}"#)
        #expect(bad.status == 400 && bad.json?["error"]?.stringValue?.contains("HH:MM") == true)

        await service.advance(clock, to: Self.at("2027-03-16T00:00:00Z"))
        let status = try await service.scheduleStatus("daily-morning")
        func dues(_ zone: String) -> [Int64] { status.runs.filter { $0.zone == zone }.map(\.dueAt) }
        #expect(dues("Asia/Tokyo") == ["2027-03-13", "2027-03-14", "2027-03-15"].map { Self.at($0 + "T00:00:00Z") })
        #expect(dues("America/New_York") == [
            Self.at("2027-03-12T14:00:00Z"), Self.at("2027-03-13T14:00:00Z"), Self.at("2027-03-14T13:00:00Z"), Self.at("2027-03-15T13:00:00Z"),
        ])
        #expect(dues("Europe/London") == ["2027-03-13", "2027-03-14", "2027-03-15"].map { Self.at($0 + "T09:00:00Z") })
        #expect(status.runs.allSatisfy { $0.startedAt == $0.dueAt })  // on the simulated clock: not a millisecond late
        #expect(status.counts == ["accepted": 10])
        #expect(status.schedule.state == .active)  // until 2027-03-15 has not ended everywhere yet (UTC−12)

        try await eventually("ten deliveries") { phones.map(\.shown.bodies.count) == [3, 4, 3] }
        #expect(Set(phones[0].shown.bodies) == ["おはよう、Herald"])
        #expect(Set(phones[1].shown.bodies) == ["Good morning, Herald"])
        #expect(Set(phones[2].shown.bodies) == ["Bonjour, Herald"])  // fr-FR → fr

        let read = try await ProviderServiceTests.http("GET", base + "/v1/schedules/daily-morning")
        #expect(read.json?["counts"] == .object(["accepted": .int(10)]))
        let cancelled = try await ProviderServiceTests.http("DELETE", base + "/v1/schedules/daily-morning")
        #expect(cancelled.json?["state"] == .string("cancelled"))
        let list = try await ProviderServiceTests.http("GET", base + "/v1/schedules?state=cancelled")
        if case .object(let o)? = list.json, case .array(let items)? = o["schedules"] { #expect(items.count == 1) } else { Issue.record("no list") }

        for phone in phones { await phone.stop() }
        await service.stopSchedules()
        await server.close()
        await client.close()
        try await gateway.stop()
    }
}
