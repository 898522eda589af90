import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice
import HeraldTesting

/// The runtime as a whole: its alarm on a simulated clock, apps with delegates, persistence,
/// remote notifications and registration. Scenario numbers refer to the reference's list.
@Suite("Device runtime")
struct DeviceRuntimeTests {
    static let newYork = TimeZone(identifier: "America/New_York")!
    static func at(_ text: String) -> Int64 { PlanFormat.parseDateTime(text)!.instant! }

    struct Allow: UserSettingsSource {
        var granted: AuthorizationOptions = [.alert, .sound, .badge]
        func answerPrompt(appID: String, requested: AuthorizationOptions) async -> AuthorizationOptions { granted }
    }

    /// Records what the runtime does.
    final class Journal: Sendable {
        let events = Locked<[RuntimeEvent]>([])
        var observer: @Sendable (RuntimeEvent) -> Void { { [events] e in events.withLock { $0.append(e) } } }
        var delivered: [DeliveredNotification] {
            events.withLock { $0.compactMap { if case .delivered(_, let n) = $0 { n } else { nil } } }
        }
        var violations: [String] {
            events.withLock { $0.compactMap { if case .contractViolation(_, let m) = $0 { m } else { nil } } }
        }
        var dismissed: [String] {
            events.withLock { $0.compactMap { if case .dismissed(_, let id) = $0 { id } else { nil } } }
        }
    }

    /// An app's delegate that records every call and answers as told.
    final class App: AppNotificationDelegate {
        struct Behaviour: Sendable {
            var foreground: DeliveryByAppState.ForegroundOptions? = nil
            var completeActions = true
            var fetchResult: SilentPushes.FetchResult? = .newData
        }
        let calls = Locked<[String]>([])
        let silentPayloads = Locked<[JSONValue]>([])
        let behaviour: Locked<Behaviour>
        init(_ behaviour: Behaviour = Behaviour()) { self.behaviour = Locked(behaviour) }
        func log(_ s: String) { calls.withLock { $0.append(s) } }
        var log: [String] { calls.withLock { $0 } }

        func willPresent(_ n: DeliveredNotification, completion: CallbackHandler<DeliveryByAppState.ForegroundOptions>) async {
            log("willPresent \(n.id)")
            if let options = behaviour.withLock({ $0.foreground }) { completion(options) } else { completion([]) }
        }
        func didReceive(_ response: NotificationResponse, for n: DeliveredNotification, completion: CallbackHandler<Void>) async {
            log("didReceive \(n.id) \(response.actionIdentifier)\(response.userText.map { " text=\($0)" } ?? "")")
            if behaviour.withLock({ $0.completeActions }) { completion() }
        }
        func didReceiveLegacy(_ n: DeliveredNotification, state: DeliveryByAppState.LegacyState) async { log("legacy \(n.id) \(state)") }
        func didLaunch(with n: DeliveredNotification?) async { log("launch \(n?.id ?? "-")") }
        func didDeliverWithoutPresentation(_ n: DeliveredNotification) async { log("unpresented \(n.id)") }
        func didReceiveSilentPush(_ payload: JSONValue, completion: CallbackHandler<SilentPushes.FetchResult>) async {
            log("silent")
            silentPayloads.withLock { $0.append(payload) }
            if let result = behaviour.withLock({ $0.fetchResult }) { completion(result) }
        }
        func didRegisterForRemoteNotifications(token: DeviceToken) async { log("token \(token)") }
        func preferredLanguagesDidChange(_ languages: [String]) async { log("languages \(languages.joined(separator: ","))") }
    }

    struct Fixture {
        let clock: SimulatedAlarmClock
        let runtime: DeviceRuntime
        let journal: Journal
        let center: AppNotificationCenter
        let app: App

        init(start: String = "2026-03-07T12:00:00Z", api: DeliveryByAppState.API = .userNotifications, zone: TimeZone = newYork,
             storage: String? = nil, granted: AuthorizationOptions = [.alert, .sound, .badge], behaviour: App.Behaviour = .init()) async throws {
            clock = SimulatedAlarmClock(startMilliseconds: DeviceRuntimeTests.at(start))
            journal = Journal()
            runtime = try DeviceRuntime(clock: clock, timeZone: zone, user: Allow(granted: granted), storageDirectory: storage, observer: journal.observer)
            center = try await runtime.install("com.example.app", bundle: .init(api: api))
            app = App(behaviour)
            try await center.setDelegate(app)
            try await center.requestAuthorization([.alert, .sound, .badge])
        }

        func advance(to text: String) async { await runtime.advance(clock, to: DeviceRuntimeTests.at(text)) }
        func settle() async { await runtime.settle() }
    }

    static func request(_ id: String, _ trigger: NotificationTrigger?, body: String = "hello", badge: Int? = nil, category: String? = nil) -> LocalRequest {
        var content: [String: JSONValue] = ["body": .string(body)]
        if let badge { content["badge"] = .int(Int64(badge)) }
        if let category { content["category"] = .string(category) }
        return LocalRequest(id: id, content: .object(content), trigger: trigger)
    }

    static let daily0900 = NotificationTrigger.calendar(.init(hour: 9, minute: 0), repeats: true)

    @Test("an app's old process ending after its new one bound its delegate (a reconnect whose hello overtook the old connection's end) leaves the new one in place; its own end terminates it")
    func oldProcessEndAfterNewBinding() async throws {
        let f = try await Fixture(behaviour: .init(foreground: [.banner, .list]))
        let newer = App(.init(foreground: [.banner, .list]))
        // The interleaving forced: the new process's hello binds first, then the old one's end arrives.
        try await f.center.setDelegate(newer)
        try await f.runtime.userLaunched(app: "com.example.app")
        #expect(try await f.runtime.appProcessEnded("com.example.app", delegate: f.app) == false)
        try await f.center.presentNow(Self.request("after", nil))
        await f.settle()
        #expect(newer.log == ["launch -", "willPresent after"] && f.app.log.isEmpty, "the new process still answers: \(newer.log)")
        #expect(f.journal.delivered.last?.presentation.banner == true)
        // The new process's own end does end the app: nothing answers a foreground presentation.
        #expect(try await f.runtime.appProcessEnded("com.example.app", delegate: newer))
        try await f.center.presentNow(Self.request("ended", nil))
        await f.settle()
        #expect(newer.log == ["launch -", "willPresent after"])
    }

    @Test("the run loop: one alarm at the soonest due time across apps, each fire at its own instant, across a DST change")
    func alarmLoop() async throws {
        let f = try await Fixture()
        let other = try await f.runtime.install("com.example.other")
        try await other.requestAuthorization([.alert])
        try await f.center.add(Self.request("daily", Self.daily0900))
        try await other.add(Self.request("hourly", .interval(seconds: 3600, repeats: true)))
        // Both apps share the one alarm, armed for the sooner (13:00Z, an hour from 12:00Z).
        #expect(f.clock.nextAlarm == Self.at("2026-03-07T13:00:00Z"))
        await f.advance(to: "2026-03-09T12:00:00Z")
        let daily = f.journal.delivered.filter { $0.id == "daily" }.map(\.deliveredAt)
        #expect(daily == [Self.at("2026-03-07T14:00:00Z"), Self.at("2026-03-08T13:00:00Z")])
        let hourly = f.journal.delivered.filter { $0.id == "hourly" }
        #expect(hourly.count == 48)
        #expect(f.journal.delivered.allSatisfy { $0.deliveredAt == $0.dueAt })  // never late
        // It slept between due times: one alarm rang per distinct due instant (48 hourly, of which
        // 2 coincide with the daily fires at 14:00Z and 13:00Z).
        #expect(f.clock.alarmCounts.rung == 48)
    }

    @Test("a time-zone change re-arms the alarm for wall-clock and calendar triggers, not for intervals")
    func timeZoneChange() async throws {
        let f = try await Fixture(start: "2026-06-10T03:00:00Z")
        try await f.center.add(Self.request("alarm", .date(.wallClock(.init(year: 2026, month: 6, day: 10, hour: 9, minute: 0, second: 0)), repeat: nil)))
        try await f.center.add(Self.request("countdown", .interval(seconds: 7 * 3600, repeats: false)))
        #expect(f.clock.nextAlarm == Self.at("2026-06-10T10:00:00Z"))
        await f.runtime.setTimeZone(TimeZone(identifier: "America/Los_Angeles")!)
        await f.advance(to: "2026-06-11T00:00:00Z")
        #expect(f.journal.delivered.map { "\($0.id)@\(PlanFormat.utcString($0.deliveredAt))" } == [
            "countdown@2026-06-10T10:00:00Z", "alarm@2026-06-10T16:00:00Z",
        ])
    }

    @Test("28. cancelling a pending request: it never fires; cancelling a shown one: its alert goes away")
    func cancel() async throws {
        let f = try await Fixture(api: .legacy)
        try await f.center.add(Self.request("a", .interval(seconds: 60, repeats: false)))
        try await f.center.add(Self.request("b", .interval(seconds: 120, repeats: false)))
        try await f.center.cancelLocalNotifications(["a"])
        await f.advance(to: "2026-03-07T12:05:00Z")
        #expect(f.journal.delivered.map(\.id) == ["b"])
        #expect(try await f.center.deliveredNotifications().map(\.id) == ["b"])
        try await f.center.cancelLocalNotifications(["b"])
        #expect(try await f.center.deliveredNotifications().isEmpty)
        #expect(f.journal.dismissed == ["b"])
        await #expect(throws: RuntimeError.self) { try await f.runtime.userTapped(app: "com.example.app", notification: "b") }
    }

    @Test("UserNotifications removal: pending only; delivered entries are removed separately")
    func removalKinds() async throws {
        let f = try await Fixture()
        try await f.center.add(Self.request("a", nil))
        try await f.center.add(Self.request("b", .interval(seconds: 60, repeats: false)))
        try await f.center.removePendingRequests(["a", "b"])
        #expect(try await f.center.pendingRequests().isEmpty)
        #expect(try await f.center.deliveredNotifications().map(\.id) == ["a"])
        try await f.center.removeAllDeliveredNotifications()
        #expect(try await f.center.deliveredNotifications().isEmpty)
    }

    @Test("30, 32 through the runtime: the 64 limit drops the latest for good and says so")
    func pendingLimit() async throws {
        let f = try await Fixture()
        for i in 1...64 { try await f.center.add(Self.request("n\(i)", .interval(seconds: Double(i) * 3600 + 3600, repeats: false))) }
        let dropped = try await f.center.add(Self.request("soonest", .interval(seconds: 60, repeats: false)))
        #expect(dropped == ["n64"])
        let pending = try await f.center.pendingRequests()
        #expect(pending.count == 64 && pending.first?.request.id == "soonest")
    }

    @Test("33. not running: a tap launches the app (UserNotifications: didReceive with the default id)")
    func tapLaunches() async throws {
        let f = try await Fixture()
        try await f.center.add(Self.request("a", .interval(seconds: 60, repeats: false)))
        await f.advance(to: "2026-03-07T12:01:00Z")
        #expect(f.journal.delivered.first?.presentation.banner == true)
        try await f.runtime.userTapped(app: "com.example.app", notification: "a")
        await f.settle()
        #expect(f.app.log.contains("launch -"))
        #expect(f.app.log.contains("didReceive a \(NotificationResponse.defaultActionIdentifier)"))
        #expect(try await f.center.deliveredNotifications().isEmpty)  // a tapped entry leaves Notification Center
    }

    @Test("33–35 legacy: launch options when not running; inactive in the background; active, no banner, listed in the foreground")
    func legacyStates() async throws {
        let f = try await Fixture(api: .legacy)
        try await f.center.add(Self.request("cold", nil))
        try await f.runtime.userTapped(app: "com.example.app", notification: "cold")
        await f.settle()
        #expect(f.app.log == ["launch cold"])
        try await f.runtime.userLeftApp("com.example.app")
        try await f.center.add(Self.request("warm", nil))
        try await f.runtime.userTapped(app: "com.example.app", notification: "warm")
        await f.settle()
        #expect(f.app.log.last == "legacy warm inactive")
        try await f.center.add(Self.request("hot", nil, badge: 3))
        await f.settle()
        let hot = try #require(f.journal.delivered.last)
        #expect(!hot.presentation.banner && !hot.presentation.sound && hot.presentation.listed && hot.presentation.badge == 3)
        #expect(f.app.log.last == "legacy hot active")
    }

    @Test("36. UserNotifications foreground: willPresent [] shows nothing; [.banner, .sound] a banner with sound")
    func foregroundOptions() async throws {
        let f = try await Fixture()
        try await f.runtime.userLaunched(app: "com.example.app")
        var content: [String: JSONValue] = ["body": .string("x"), "sound": .string("default")]
        try await f.center.add(LocalRequest(id: "quiet", content: .object(content), trigger: nil))
        await f.settle()
        f.app.behaviour.withLock { $0.foreground = [.banner, .sound] }
        content["body"] = .string("y")
        try await f.center.add(LocalRequest(id: "loud", content: .object(content), trigger: nil))
        await f.settle()
        let byID = Dictionary(uniqueKeysWithValues: f.journal.delivered.map { ($0.id, $0) })
        #expect(byID["quiet"]?.presentation == .init())
        #expect(byID["loud"]?.presentation.banner == true && byID["loud"]?.presentation.sound == true)
        #expect(byID["loud"]?.playedSound == "default")
    }

    @Test("37–38. an icon tap passes no notification and leaves entries and badge; the badge is absolute")
    func iconTapAndBadge() async throws {
        let f = try await Fixture()
        try await f.center.add(Self.request("a", nil, badge: 5))
        try await f.runtime.userLaunched(app: "com.example.app")
        await f.settle()
        #expect(f.app.log == ["launch -"])
        #expect(try await f.center.badge() == 5)
        #expect(try await f.center.deliveredNotifications().map(\.id) == ["a"])
        try await f.runtime.userLeftApp("com.example.app")
        try await f.center.add(Self.request("keep", nil))  // no badge: unchanged
        #expect(try await f.center.badge() == 5)
        try await f.center.add(Self.request("clear", nil, badge: 0))
        #expect(try await f.center.badge() == 0)
        try await f.center.setBadge(2)
        #expect(try await f.center.badge() == 2)
    }

    @Test("a badge needs badge authorization; a legacy app setting 0 clears its Notification Center entries")
    func badgeRules() async throws {
        let denied = try await Fixture(granted: [.alert])
        await #expect(throws: RuntimeError.self) { try await denied.center.setBadge(1) }
        let legacy = try await Fixture(api: .legacy)
        try await legacy.center.add(Self.request("a", nil, badge: 1))
        try await legacy.center.setBadge(0)
        #expect(try await legacy.center.deliveredNotifications().isEmpty)
    }

    @Test("3–4 through the runtime: sound off drops only the sound; nothing allowed shows nothing and the running app is handed it")
    func disabledTypes() async throws {
        let f = try await Fixture()
        try await f.runtime.userChangedSetting(app: "com.example.app", .sound, to: .disabled)
        try await f.center.add(LocalRequest(id: "a", content: .object(["body": .string("x"), "sound": .string("default")]), trigger: nil))
        let a = try #require(f.journal.delivered.last)
        #expect(a.presentation.banner && !a.presentation.sound && a.playedSound == nil)
        try await f.runtime.userChangedSetting(app: "com.example.app", [.alert, .badge], to: .disabled)
        try await f.runtime.userLaunched(app: "com.example.app")
        try await f.runtime.userLeftApp("com.example.app")
        try await f.center.add(LocalRequest(id: "b", content: .object(["body": .string("x"), "sound": .string("default")]), trigger: nil))
        await f.settle()
        #expect(f.journal.delivered.last?.presentation == .init())
        #expect(f.app.log.last == "unpresented b")
    }

    @Test("9–11 through the runtime: a text action reaches the app with its text; dismiss only with customDismissAction")
    func actions() async throws {
        let f = try await Fixture()
        let reply = try NotificationAction(identifier: "reply", title: "Reply", textInput: .init(buttonTitle: "Send"))
        try await f.center.setCategories([
            try NotificationCategory(identifier: "chat", actions: [reply], options: [.customDismissAction]),
            try NotificationCategory(identifier: "plain", actions: []),
        ])
        try await f.center.add(Self.request("m1", nil, category: "chat"))
        try await f.center.add(Self.request("m2", nil, category: "chat"))
        try await f.center.add(Self.request("m3", nil, category: "plain"))
        #expect(f.journal.delivered.first?.actions.map(\.identifier) == ["reply"])
        try await f.runtime.userChoseAction(app: "com.example.app", notification: "m1", action: "reply", text: "ok")
        try await f.runtime.userDismissed(app: "com.example.app", notification: "m2")
        try await f.runtime.userDismissed(app: "com.example.app", notification: "m3")
        await f.settle()
        #expect(f.app.log == ["didReceive m1 reply text=ok", "didReceive m2 \(NotificationResponse.dismissActionIdentifier)"])
        await #expect(throws: RuntimeError.self) { try await f.runtime.userChoseAction(app: "com.example.app", notification: "m3", action: "nope") }
    }

    @Test("39. an action handler that never calls its completion is reported at its time-out, not before")
    func actionTimeout() async throws {
        let f = try await Fixture(behaviour: .init(completeActions: false))
        try await f.center.setCategories([try NotificationCategory(identifier: "c", actions: [try NotificationAction(identifier: "ok", title: "OK")])])
        try await f.center.add(Self.request("a", nil, category: "c"))
        try await f.runtime.userChoseAction(app: "com.example.app", notification: "a", action: "ok")
        await f.settle()
        await f.runtime.advance(f.clock, to: f.clock.nowMilliseconds() + 29_999)
        #expect(f.journal.violations.isEmpty)
        await f.runtime.advance(f.clock, to: f.clock.nowMilliseconds() + 1)
        #expect(f.journal.violations.count == 1)
        #expect(f.journal.violations.first?.contains("completion handler of action ok on a was not called within 30 s") == true)
    }

    @Test("a willPresent handler never called: nothing shown at 30 s, and reported; a handler called twice is reported")
    func willPresentTimeout() async throws {
        struct Silent: AppNotificationDelegate {
            func willPresent(_ n: DeliveredNotification, completion: CallbackHandler<DeliveryByAppState.ForegroundOptions>) async {}
        }
        struct Twice: AppNotificationDelegate {
            func didReceive(_ r: NotificationResponse, for n: DeliveredNotification, completion: CallbackHandler<Void>) async {
                completion(); completion()
            }
        }
        let f = try await Fixture()
        try await f.center.setDelegate(Silent())
        try await f.runtime.userLaunched(app: "com.example.app")
        try await f.center.add(Self.request("a", nil))
        await f.settle()
        #expect(f.journal.delivered.isEmpty)
        await f.runtime.advance(f.clock, to: f.clock.nowMilliseconds() + 30_000)
        #expect(f.journal.delivered.map(\.id) == ["a"] && f.journal.delivered[0].presentation == .init())
        #expect(f.journal.violations.count == 1)
        try await f.center.setDelegate(Twice())
        try await f.runtime.userLeftApp("com.example.app")
        try await f.center.add(Self.request("b", nil))
        try await f.runtime.userTapped(app: "com.example.app", notification: "b")
        await f.settle()
        #expect(f.journal.violations.last?.contains("more than once") == true)
    }

    static func token(_ byte: UInt8) -> DeviceToken { DeviceToken(bytes: [UInt8](repeating: byte, count: 32))! }

    @Test("40–41. no network at first registration: neither callback until a token comes; registered before: the stored token at once, offline")
    func registration() async throws {
        let dir = try Self.tempDir()
        do {
            let f = try await Fixture(storage: dir)
            try await f.center.registerForRemoteNotifications()
            await f.settle()
            #expect(!f.app.log.contains { $0.hasPrefix("token") })
            await f.runtime.setConnectivity(true)
            await f.runtime.gatewayIssued(token: Self.token(1), topic: "com.example.app")
            await f.settle()
            #expect(f.app.log.filter { $0.hasPrefix("token") } == ["token \(Self.token(1))"])
        }
        // A later launch, offline: the stored token comes back at once.
        let f = try await Fixture(storage: dir)
        #expect(await f.runtime.isOnline == false)
        try await f.center.registerForRemoteNotifications()
        await f.settle()
        #expect(f.app.log.filter { $0.hasPrefix("token") } == ["token \(Self.token(1))"])
        // 42 (the runtime's part): a different token later is reported unprompted.
        await f.runtime.gatewayIssued(token: Self.token(2), topic: "com.example.app")
        await f.runtime.gatewayIssued(token: Self.token(2), topic: "com.example.app")
        await f.settle()
        #expect(f.app.log.filter { $0.hasPrefix("token") } == ["token \(Self.token(1))", "token \(Self.token(2))"])
    }

    @Test("43. the preferred language changes fr→de: running apps are told")
    func languageChange() async throws {
        let f = try await Fixture()
        await f.runtime.setPreferredLanguages(["fr"])
        try await f.runtime.userLaunched(app: "com.example.app")
        await f.runtime.setPreferredLanguages(["de", "fr"])
        await f.settle()
        #expect(f.app.log.filter { $0.hasPrefix("languages") } == ["languages de,fr"])
    }

    @Test("persistence: settings, categories, pending requests, delivered entries and badge survive a restart; a missed fire comes once")
    func persistence() async throws {
        let dir = try Self.tempDir()
        do {
            let f = try await Fixture(storage: dir)
            try await f.center.setCategories([try NotificationCategory(identifier: "c", actions: [try NotificationAction(identifier: "ok", title: "OK")])])
            try await f.center.add(Self.request("daily", Self.daily0900))
            try await f.center.add(Self.request("once", .interval(seconds: 3600, repeats: false), category: "c"))
            try await f.center.add(Self.request("now", nil, badge: 4))
        }
        // Restarted five hours later: the one-shot (13:00Z) and the daily fire (14:00Z) were missed.
        let clock = SimulatedAlarmClock(startMilliseconds: Self.at("2026-03-07T17:00:00Z"))
        let journal = Journal()
        let runtime = try DeviceRuntime(clock: clock, timeZone: Self.newYork, user: Allow(granted: []), storageDirectory: dir, observer: journal.observer)
        let center = try await runtime.install("com.example.app")
        let (granted, _, prompted) = try await center.requestAuthorization([.alert, .sound, .badge])
        #expect(granted && !prompted)
        #expect(try await center.categories().map(\.identifier) == ["c"])
        #expect(try await center.badge() == 4)
        await runtime.settle()
        #expect(try await center.deliveredNotifications().map(\.id).sorted() == ["daily", "now", "once"])
        // The missed fires (once at 13:00Z, daily at 14:00Z) are delivered at start, once each.
        #expect(journal.delivered.map(\.id).sorted() == ["daily", "once"])
        #expect(journal.delivered.allSatisfy { $0.deliveredAt == Self.at("2026-03-07T17:00:00Z") })
        let pending = try await center.pendingRequests()
        #expect(pending.map(\.request.id) == ["daily"] && pending[0].nextFire == Self.at("2026-03-08T13:00:00Z"))
    }

    static func payload(_ json: String) -> JSONValue { try! JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)) }

    static func push(_ json: String, id: UInt8 = 1) -> DeviceNotification {
        DeviceNotification(
            apnsID: NotificationID(UUID(uuid: (id, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, id))), topic: "com.example.app", pushType: .alert, priority: .immediate,
            collapseID: nil, expiration: nil, payload: payload(json))
    }

    @Test("remote alerts: localized from the app's tables, presented by app state like local ones")
    func remoteAlert() async throws {
        let clock = SimulatedAlarmClock()
        let journal = Journal()
        let runtime = try DeviceRuntime(clock: clock, timeZone: Self.newYork, preferredLanguages: ["de-AT", "en"], user: Allow(), observer: journal.observer)
        let center = try await runtime.install("com.example.app", bundle: .init(localization: AlertLocalization(tables: [
            "de": ["GREET": "%2$@ grüßt %1$@"], "en": ["GREET": "%2$@ greets %1$@"],
        ])))
        try await center.requestAuthorization([.alert, .badge])
        await runtime.receive(Self.push(#"{"aps":{"alert":{"loc-key":"GREET","loc-args":["Ana","Ben"],"title-loc-key":"MISSING"},"badge":2}}"#))
        let n = try #require(journal.delivered.first)
        #expect(n.content.body == "Ben grüßt Ana" && n.content.title == "MISSING")
        #expect(n.presentation.banner && n.presentation.badge == 2)
        #expect(n.origin == .remote(apnsID: n.id))
    }

    /// A service extension that never calls its content handler.
    struct SilentExtension: NotificationServiceExtension {
        func didReceive(_ payload: JSONValue, contentHandler: CallbackHandler<ExtensionContent>) async {}
    }

    /// Acks a test hands to the runtime, by apns-id.
    final class Acks: Sendable {
        let ids = Locked<[String]>([])
        func ack(_ push: DeviceNotification) -> @Sendable () -> Void { { [ids] in ids.withLock { $0.append(push.apnsID.description) } } }
        var all: [String] { ids.withLock { $0 } }
    }

    @Test("a push is acked only once its outcome is saved; a repeat is acked and dropped, also after a restart; one held by its service extension is acked when shown")
    func ackAfterSaved() async throws {
        let dir = try Self.tempDir()
        let acks = Acks()
        let first = Self.push(#"{"aps":{"alert":"one","badge":1e300}}"#, id: 1)
        let second = Self.push(#"{"aps":{"alert":"two","mutable-content":1}}"#, id: 2)
        do {
            // The app answers willPresent only when told: the push waits in between, not acked.
            let f = try await Fixture(storage: dir, behaviour: .init(foreground: nil))
            await f.runtime.receive(first, acknowledge: acks.ack(first))
            #expect(acks.all == [first.apnsID.description])
            #expect(f.journal.delivered.count == 1 && f.journal.delivered[0].content.badge == nil, "a badge of 1e300 is ignored")
            // The saved state names it: a file written before the ack.
            let saved = try String(contentsOfFile: dir + "/apps/com.example.app.json", encoding: .utf8)
            #expect(saved.contains(first.apnsID.description))
            // The gateway sends it again (its ack was lost): acked at once, not shown twice.
            await f.runtime.receive(first, acknowledge: acks.ack(first))
            #expect(acks.all == [first.apnsID.description, first.apnsID.description])
            #expect(f.journal.delivered.count == 1)
            // A service extension that never calls its handler holds the outcome for 30 s: no ack
            // until then, and a repeat meanwhile is not acked either.
            try await f.center.setServiceExtension(SilentExtension())
            await f.runtime.receive(second, acknowledge: acks.ack(second))
            await f.settle()
            await f.runtime.receive(second, acknowledge: acks.ack(second))
            await f.settle()
            #expect(acks.all.filter { $0 == second.apnsID.description }.isEmpty)
            await f.runtime.advance(f.clock, to: f.clock.nowMilliseconds() + 30_000)
            await f.settle()
            #expect(acks.all.filter { $0 == second.apnsID.description }.count == 1)
            #expect(f.journal.delivered.map(\.content.body) == ["one", "two"])
        }
        // Restarted: what was handled before is still known, and acked without being shown again.
        let journal = Journal()
        let runtime = try DeviceRuntime(clock: SimulatedAlarmClock(), timeZone: Self.newYork, user: Allow(), storageDirectory: dir, observer: journal.observer)
        _ = try await runtime.install("com.example.app")
        await runtime.receive(first, acknowledge: acks.ack(first))
        await runtime.receive(second, acknowledge: acks.ack(second))
        #expect(journal.delivered.isEmpty)
        #expect(acks.all.count == 5)
        // A push for an app the device does not have is acked (nothing to keep) and reported dropped.
        var stranger = Self.push(#"{"aps":{"alert":"x"}}"#, id: 3)
        stranger.topic = "com.example.unknown"
        await runtime.receive(stranger, acknowledge: acks.ack(stranger))
        #expect(acks.all.last == stranger.apnsID.description)
    }

    @Test("44, 45, 55 through the runtime: a silent push wakes, launches a terminated app, not a force-quit one; no report in 30 s terminates")
    func silentPushes() async throws {
        let f = try await Fixture(behaviour: .init(fetchResult: nil))
        let silent = Self.push(#"{"aps":{"content-available":1},"sync":true}"#)
        await f.runtime.receive(silent)  // terminated by the system (never launched): launched in the background
        await f.settle()
        #expect(f.app.log == ["launch -", "silent"])
        await f.runtime.advance(f.clock, to: f.clock.nowMilliseconds() + 30_000)
        #expect(f.journal.violations.last?.contains("fetch completion handler was not called within 30 s") == true)
        try await f.runtime.userForceQuit("com.example.app")
        await f.runtime.receive(silent)
        await f.settle()
        #expect(f.app.log.filter { $0 == "silent" }.count == 1)
    }

    @Test("46 through the runtime: over the budget the newest is held and handed over when the hour allows")
    func silentBudget() async throws {
        let f = try await Fixture()
        try await f.runtime.userLaunched(app: "com.example.app")
        try await f.runtime.userLeftApp("com.example.app")
        for i in 1...5 { await f.runtime.receive(Self.push(#"{"aps":{"content-available":1},"n":\#(i)}"#, id: UInt8(i))) }
        await f.settle()
        #expect(f.app.log.filter { $0 == "silent" }.count == 3)
        await f.runtime.advance(f.clock, to: f.clock.nowMilliseconds() + 3_600_000)
        #expect(f.app.log.filter { $0 == "silent" }.count == 4)
    }

    @Test("a silent push held over the budget is acked when held and survives a restart: the next run hands it over when the hour allows")
    func silentHeldAcrossRestart() async throws {
        let dir = try Self.tempDir()
        let acks = Acks()
        let pushes = (1...5).map { Self.push(#"{"aps":{"content-available":1},"n":\#($0)}"#, id: UInt8($0)) }
        do {
            let f = try await Fixture(storage: dir)
            try await f.runtime.userLaunched(app: "com.example.app")
            try await f.runtime.userLeftApp("com.example.app")
            for push in pushes { await f.runtime.receive(push, acknowledge: acks.ack(push)) }
            await f.settle()
            #expect(f.app.log.filter { $0 == "silent" }.count == 3)
            #expect(acks.all.count == 5, "handled, held and replaced pushes are all decided, so all acked")
        }
        // Stopped and started again half an hour later: the budget's uses and the held push (n = 5) are back.
        let f = try await Fixture(start: "2026-03-07T12:30:00Z", storage: dir)
        await f.settle()
        #expect(f.app.log.filter { $0 == "silent" }.isEmpty, "the three uses of the last hour still count")
        await f.advance(to: "2026-03-07T13:00:01Z")
        await f.settle()
        #expect(f.app.silentPayloads.withLock { $0 }.map { $0["n"]?.integer(Int.self) } == [5])
        // Handed over once: it is not held any more.
        await f.advance(to: "2026-03-07T15:00:00Z")
        #expect(f.app.silentPayloads.withLock { $0 }.count == 1)
    }

    @Test("47. the service extension: a rewrite in time is shown; no handler in 30 s ⇒ timeWillExpire and the original")
    func serviceExtension() async throws {
        final class Ext: NotificationServiceExtension {
            let rewrite: Bool
            let expired = Locked(0)
            init(rewrite: Bool) { self.rewrite = rewrite }
            func didReceive(_ payload: JSONValue, contentHandler: CallbackHandler<ExtensionContent>) async {
                if rewrite { contentHandler(ExtensionContent(payload: DeviceRuntimeTests.payload(#"{"aps":{"alert":"decrypted"}}"#))) }
            }
            func timeWillExpire() async { expired.withLock { $0 += 1 } }
        }
        let f = try await Fixture()
        let ext = Ext(rewrite: true)
        try await f.center.setServiceExtension(ext)
        await f.runtime.receive(Self.push(#"{"aps":{"alert":"secret","mutable-content":1}}"#, id: 1))
        await f.settle()
        #expect(f.journal.delivered.last?.content.body == "decrypted")
        let slow = Ext(rewrite: false)
        try await f.center.setServiceExtension(slow)
        await f.runtime.receive(Self.push(#"{"aps":{"alert":"original","mutable-content":1}}"#, id: 2))
        await f.settle()
        #expect(f.journal.delivered.count == 1)
        await f.runtime.advance(f.clock, to: f.clock.nowMilliseconds() + 30_000)
        #expect(f.journal.delivered.last?.content.body == "original" && slow.expired.withLock { $0 } == 1)
        await f.runtime.receive(Self.push(#"{"aps":{"badge":1,"mutable-content":1}}"#, id: 3))  // 48: badge-only: no extension
        #expect(f.journal.delivered.count == 3)
    }

    @Test("sounds through the runtime: a missing custom sound plays the default and says why")
    func soundReplaced() async throws {
        let f = try await Fixture()
        try await f.center.add(LocalRequest(id: "a", content: .object(["body": .string("x"), "sound": .string("chime.caf")]), trigger: nil))
        #expect(f.journal.delivered.last?.playedSound == "default")
        let reasons = f.journal.events.withLock { $0.compactMap { if case .soundReplaced(_, let name, let reason) = $0 { "\(name): \(reason)" } else { nil } } }
        #expect(reasons.count == 1 && reasons[0].hasPrefix("chime.caf: no sound named"))
    }

    @Test("locations through the runtime: a region entered fires once; denied authorization delivers nothing")
    func regions() async throws {
        let f = try await Fixture()
        let region = NotificationTrigger.location(.init(latitude: 48.8584, longitude: 2.2945, radius: 200), onEntry: true, onExit: false, repeats: false)
        try await f.center.add(Self.request("tower", region))
        await f.runtime.setLocation(latitude: 48.87, longitude: 2.33)
        await f.runtime.setLocation(latitude: 48.8585, longitude: 2.2946)
        await f.runtime.setLocation(latitude: 48.87, longitude: 2.33)
        await f.runtime.setLocation(latitude: 48.8585, longitude: 2.2946)
        #expect(f.journal.delivered.map(\.id) == ["tower"])
        try await f.center.add(Self.request("tower2", region))
        try await f.runtime.setLocationAuthorization(app: "com.example.app", authorized: false)
        await f.runtime.setLocation(latitude: 48.87, longitude: 2.33)
        await f.runtime.setLocation(latitude: 48.8585, longitude: 2.2946)
        #expect(f.journal.delivered.map(\.id) == ["tower"])
    }

    static func tempDir() throws -> String {
        try TemporaryDirectory.make(prefix: "herald-runtime")
    }
}
