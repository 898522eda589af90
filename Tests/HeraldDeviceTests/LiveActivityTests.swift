import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

/// The runtime's ActivityKit model on a simulated clock: tokens, push-to-start, timestamp order,
/// stale and dismissal dates, the priority-10 budget, the running limit, channels, persistence.
@Suite("Live Activities on the device runtime")
struct LiveActivityTests {
    static let app = "com.example.live"
    static let startToken = DeviceToken(bytes: Array(repeating: 1, count: 32))!
    static let updateToken = DeviceToken(bytes: Array(repeating: 2, count: 32))!
    static let channelToken = DeviceToken(bytes: Array(repeating: 3, count: 32))!
    static let channel = "AAECAwQFBgcICQoLDA0ODw=="

    final class Journal: Sendable {
        let events = Locked<[LiveActivityEvent]>([])
        var observer: @Sendable (RuntimeEvent) -> Void {
            { [events] e in if case .liveActivity(_, let event) = e { events.withLock { $0.append(event) } } }
        }
        var all: [LiveActivityEvent] { events.withLock { $0 } }
        var ignored: [String] { all.compactMap { if case .ignored(_, let reason) = $0 { reason } else { nil } } }
        var updates: [(LiveActivity, Bool)] { all.compactMap { if case .updated(let a, _, _, let t) = $0 { (a, t) } else { nil } } }
    }

    /// What the runtime asked the connection for.
    final class Requests: Sendable {
        let list = Locked<[(DeviceConnection.Want, Bool)]>([])
        var requester: @Sendable (DeviceConnection.Want, Bool) -> Void { { [list] w, k in list.withLock { $0.append((w, k)) } } }
        var all: [(DeviceConnection.Want, Bool)] { list.withLock { $0 } }
    }

    static let pushNumber = Locked<UInt8>(0)

    static func push(_ aps: String, token: DeviceToken, priority: Priority = .immediate) -> DeviceNotification {
        let n = pushNumber.withLock { $0 &+= 1; return $0 }
        return DeviceNotification(
            apnsID: NotificationID(UUID(uuid: (n, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, n))), topic: app, pushType: .liveactivity,
            priority: priority, collapseID: nil, expiration: nil,
            payload: try! JSONDecoder().decode(JSONValue.self, from: Data(#"{"aps":\#(aps)}"#.utf8)), token: token)
    }

    /// A runtime with the app installed, its push-to-start token issued, and a started activity
    /// with its update token.
    static func started(
        clock: SimulatedAlarmClock, journal: Journal, requests: Requests = Requests(), storage: String? = nil
    ) async throws -> (DeviceRuntime, String) {
        let runtime = try DeviceRuntime(
            clock: clock, timeZone: TimeZone(identifier: "UTC")!, user: DeviceRuntimeTests.Allow(), storageDirectory: storage,
            observer: journal.observer)
        _ = try await runtime.install(app)
        await runtime.setRequester(requests.requester)
        try await runtime.requestPushToStartToken(app: app)
        await runtime.gatewayIssued(activityToken: startToken, topic: app, activity: .pushToStart)
        let now = clock.nowMilliseconds() / 1000
        await runtime.receive(push(#"{"event":"start","timestamp":\#(now),"attributes-type":"Score","attributes":{"home":"Lions"},"content-state":{"score":0},"alert":"Kick-off","input-push-token":1}"#, token: startToken))
        guard case .started(let activity, _, let alert)? = journal.all.first(where: { if case .started = $0 { true } else { false } }) else {
            Issue.record("no activity started: \(journal.all)")
            throw RuntimeError("not started")
        }
        #expect(alert == "Kick-off")
        await runtime.gatewayIssued(activityToken: updateToken, topic: app, activity: .activity(activity.id))
        return (runtime, activity.id)
    }

    @Test("push-to-start starts an activity and asks for its update token; updates apply in timestamp order")
    func startAndOrder() async throws {
        let clock = SimulatedAlarmClock()
        let journal = Journal()
        let requests = Requests()
        let (runtime, id) = try await Self.started(clock: clock, journal: journal, requests: requests)
        #expect(requests.all.contains { $0.0 == .activityToken(topic: Self.app, .pushToStart) && $0.1 })
        #expect(requests.all.contains { $0.0 == .activityToken(topic: Self.app, .activity(id)) && $0.1 })
        let t = clock.nowMilliseconds() / 1000
        await runtime.receive(Self.push(#"{"event":"update","timestamp":\#(t + 10),"content-state":{"score":1}}"#, token: Self.updateToken))
        await runtime.receive(Self.push(#"{"event":"update","timestamp":\#(t + 5),"content-state":{"score":9}}"#, token: Self.updateToken))
        #expect(journal.updates.map(\.0.contentState) == [["score": .int(1)]])
        #expect(journal.ignored.contains { $0.contains("out of order") })
        #expect(try await runtime.liveActivities(app: Self.app).first?.contentState == ["score": .int(1)])
        // A start to an update token, an update to the push-to-start token, an unknown token: ignored.
        await runtime.receive(Self.push(#"{"event":"update","timestamp":\#(t + 20),"content-state":{}}"#, token: Self.startToken))
        await runtime.receive(Self.push(#"{"event":"update","timestamp":\#(t + 20),"content-state":{}}"#, token: DeviceToken(bytes: Array(repeating: 9, count: 32))!))
        await runtime.receive(Self.push(#"{"event":"update","timestamp":"soon"}"#, token: Self.updateToken))
        #expect(journal.ignored.count == 4)
    }

    @Test("stale at the stale-date, ended by push, dismissed at the dismissal-date or four hours later")
    func staleEndDismiss() async throws {
        let clock = SimulatedAlarmClock()
        let journal = Journal()
        let requests = Requests()
        let (runtime, id) = try await Self.started(clock: clock, journal: journal, requests: requests)
        let t = clock.nowMilliseconds() / 1000
        await runtime.receive(Self.push(#"{"event":"update","timestamp":\#(t + 1),"content-state":{"score":2},"stale-date":\#(t + 60)}"#, token: Self.updateToken))
        await runtime.advance(clock, to: clock.nowMilliseconds() + 59_000)
        #expect(!journal.all.contains { if case .stale = $0 { true } else { false } })
        await runtime.advance(clock, to: clock.nowMilliseconds() + 1_000)
        #expect(journal.all.contains { if case .stale(let a) = $0 { a.id == id && a.state == .stale } else { false } })
        // An update with a new stale date makes it current again.
        await runtime.receive(Self.push(#"{"event":"update","timestamp":\#(t + 2),"content-state":{"score":3},"stale-date":\#(t + 600)}"#, token: Self.updateToken))
        #expect(try await runtime.liveActivities(app: Self.app).first?.state == .active)
        // An end without a dismissal-date: on screen four hours.
        await runtime.receive(Self.push(#"{"event":"end","timestamp":\#(t + 3),"content-state":{"score":4}}"#, token: Self.updateToken))
        #expect(requests.all.contains { $0.0 == .activityToken(topic: Self.app, .activity(id)) && !$0.1 })
        await runtime.receive(Self.push(#"{"event":"update","timestamp":\#(t + 4),"content-state":{"score":5}}"#, token: Self.updateToken))
        #expect(journal.ignored.contains { $0.contains("ended") })
        await runtime.advance(clock, to: clock.nowMilliseconds() + 4 * 3_600_000 - 10_000)
        #expect(!journal.all.contains { if case .dismissed = $0 { true } else { false } })
        await runtime.advance(clock, to: clock.nowMilliseconds() + 10_000)
        #expect(journal.all.contains { if case .dismissed(let a) = $0 { a.id == id && a.contentState == ["score": .int(4)] } else { false } })
    }

    @Test("priority-10 updates beyond the hourly budget are applied without their alert; priority 5 is never counted")
    func budget() async throws {
        let clock = SimulatedAlarmClock()
        let journal = Journal()
        let (runtime, _) = try await Self.started(clock: clock, journal: journal)
        let t = clock.nowMilliseconds() / 1000
        for i in 1...LiveActivityBook.highPriorityBudgetPerHour + 1 {
            await runtime.receive(Self.push(#"{"event":"update","timestamp":\#(t + Int64(i)),"content-state":{"n":\#(i)},"alert":"goal"}"#, token: Self.updateToken))
        }
        await runtime.receive(Self.push(#"{"event":"update","timestamp":\#(t + 100),"content-state":{"n":100}}"#, token: Self.updateToken, priority: .conservePower))
        let throttled = journal.updates.map(\.1)
        #expect(throttled == Array(repeating: false, count: LiveActivityBook.highPriorityBudgetPerHour) + [true, false])
        // An hour later the budget is back.
        clock.advance(milliseconds: 3_600_000)
        await runtime.receive(Self.push(#"{"event":"update","timestamp":\#(t + 200),"content-state":{"n":200}}"#, token: Self.updateToken))
        #expect(journal.updates.last?.1 == false)
    }

    @Test("at most five activities run at once; channel activities subscribe once and take broadcasts")
    func limitAndChannels() async throws {
        let clock = SimulatedAlarmClock()
        let journal = Journal()
        let requests = Requests()
        let (runtime, _) = try await Self.started(clock: clock, journal: journal, requests: requests)
        var ids: [String] = []
        for _ in 0..<(LiveActivityBook.maximumRunning - 1) {
            ids.append(try await runtime.startActivity(
                app: Self.app, attributesType: "Score", attributes: [:], contentState: ["score": .int(0)], pushMode: .channel(Self.channel)).id)
        }
        #expect(requests.all.filter { $0.0 == .channel(topic: Self.app, channel: Self.channel) && $0.1 }.count == 1)
        await #expect(throws: RuntimeError.self) {
            _ = try await runtime.startActivity(app: Self.app, attributesType: "Score", attributes: [:], contentState: [:], pushMode: .none)
        }
        await runtime.gatewaySubscribed(topic: Self.app, channel: Self.channel, token: Self.channelToken)
        await runtime.receive(Self.push(#"{"event":"update","timestamp":1,"content-state":{"score":7}}"#, token: Self.channelToken))
        #expect(Set(journal.updates.map(\.0.id)) == Set(ids))
        // The last channel activity to go takes the subscription with it.
        for id in ids { try await runtime.endActivity(app: Self.app, id: id, dismissalDate: 0) }
        #expect(requests.all.filter { $0.0 == .channel(topic: Self.app, channel: Self.channel) && !$0.1 }.count == 1)
    }

    @Test("activities, tokens and the budget survive a restart, and their tokens are asked for again")
    func persistence() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-live-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = SimulatedAlarmClock()
        let (first, id) = try await Self.started(clock: clock, journal: Journal(), storage: directory)
        _ = first
        let journal = Journal()
        let requests = Requests()
        let again = try DeviceRuntime(
            clock: clock, timeZone: TimeZone(identifier: "UTC")!, user: DeviceRuntimeTests.Allow(), storageDirectory: directory,
            observer: journal.observer)
        _ = try await again.install(Self.app)
        await again.setRequester(requests.requester)
        #expect(try await again.liveActivities(app: Self.app).map(\.id) == [id])
        #expect(requests.all.contains { $0.0 == .activityToken(topic: Self.app, .pushToStart) && $0.1 })
        #expect(requests.all.contains { $0.0 == .activityToken(topic: Self.app, .activity(id)) && $0.1 })
        let t = clock.nowMilliseconds() / 1000
        await again.receive(Self.push(#"{"event":"update","timestamp":\#(t + 1),"content-state":{"score":1}}"#, token: Self.updateToken))
        #expect(journal.updates.count == 1)
    }

    @Test("a Live Activity push's outcome is journaled: a kill between the save and the event emits it at start, once; the gateway's repeat is acked without a second")
    func outcomeJournaled() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-live-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = SimulatedAlarmClock()
        let (first, _) = try await Self.started(clock: clock, journal: Journal(), storage: directory)
        let t = clock.nowMilliseconds() / 1000
        let update = Self.push(#"{"event":"update","timestamp":\#(t + 1),"content-state":{"score":7}}"#, token: Self.updateToken)
        let acks = Locked(0)
        await first.receive(update) { acks.withLock { $0 += 1 } }
        await first.settle()
        #expect(acks.withLock { $0 } == 1)
        // What a kill right after the save and before the event leaves: the journal without it.
        try? FileManager.default.removeItem(atPath: directory + "/apps/\(Self.app).json.announced")
        let journal = Journal()
        let again = try DeviceRuntime(
            clock: clock, timeZone: TimeZone(identifier: "UTC")!, user: DeviceRuntimeTests.Allow(), storageDirectory: directory,
            observer: journal.observer)
        _ = try await again.install(Self.app)
        #expect(journal.updates.map(\.0.contentState) == [["score": .int(7)]], "the outcome comes at start")
        await again.receive(update) { acks.withLock { $0 += 1 } }
        await again.settle()
        #expect(journal.updates.count == 1, "the repeat changes nothing and says nothing")
        #expect(acks.withLock { $0 } == 2, "the repeat is acked")
        let later = Journal()
        let third = try DeviceRuntime(
            clock: clock, timeZone: TimeZone(identifier: "UTC")!, user: DeviceRuntimeTests.Allow(), storageDirectory: directory,
            observer: later.observer)
        _ = try await third.install(Self.app)
        #expect(later.all.isEmpty, "announced once")
    }
}
