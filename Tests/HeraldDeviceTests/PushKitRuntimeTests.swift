import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

/// PushKit's push types on the device runtime, without sockets and at fixed instants: each kind's
/// token, VoIP's report contract, Push to Talk's channel, location's authorization, the
/// complication budget, pushes held for an app that is not running, calls answered and declined.
@Suite("PushKit on the device runtime")
struct PushKitRuntimeTests {
    static let app = "com.example.call"

    final class Journal: Sendable {
        let events = Locked<[RuntimeEvent]>([])
        var observer: @Sendable (RuntimeEvent) -> Void { { [events] e in events.withLock { $0.append(e) } } }
        var pushKit: [PushKitEvent] { events.withLock { $0 }.compactMap { if case .pushKit(_, let e) = $0 { e } else { nil } } }
        var violations: [String] { events.withLock { $0 }.compactMap { if case .contractViolation(_, let m) = $0 { m } else { nil } } }
        func notDelivered() -> [String] { pushKit.compactMap { if case .notDelivered(_, _, let reason) = $0 { reason } else { nil } } }
        func completed() -> [String] { pushKit.compactMap { if case .completed(_, _, let result) = $0 { result } else { nil } } }
    }

    /// The app: answers each push as `answer` says (reporting a call first when `reports`), or
    /// keeps the handler without answering when `answer` is nil.
    final class App: AppNotificationDelegate {
        let runtime: Locked<DeviceRuntime?> = Locked(nil)
        let reports = Locked(true)
        let answer = Locked<PushKitAnswer?>(.done)
        let pushes = Locked<[PushKitPush]>([])
        let kept = Locked<[CallbackHandler<PushKitAnswer>]>([])
        let tokens = Locked<[(PushKitKind, DeviceToken)]>([])
        let callActions = Locked<[String]>([])
        let terminated = Locked<[String]>([])

        func didReceivePushKit(_ push: PushKitPush, completion: CallbackHandler<PushKitAnswer>) async {
            pushes.withLock { $0.append(push) }
            if push.kind == .voip, reports.withLock({ $0 }), let runtime = runtime.withLock({ $0 }) {
                try? await runtime.reportIncomingCall(app: PushKitRuntimeTests.app, IncomingCall(uuid: push.apnsID, handle: "+15551234567", caller: "Ada"))
            }
            if let answer = answer.withLock({ $0 }) { completion(answer) } else { kept.withLock { $0.append(completion) } }
        }
        func didUpdatePushToken(_ token: DeviceToken, for kind: PushKitKind) async { tokens.withLock { $0.append((kind, token)) } }
        func performCallAction(_ action: CallAction, call uuid: String) async { callActions.withLock { $0.append("\(action.rawValue) \(uuid)") } }
        func wasTerminated(reason: String) async { terminated.withLock { $0.append(reason) } }
    }

    static let number = Locked<UInt8>(0)

    static func push(_ type: PushType, _ payload: String = #"{"aps":{}}"#) -> DeviceNotification {
        let n = number.withLock { $0 &+= 1; return $0 }
        return DeviceNotification(
            apnsID: NotificationID(UUID(uuid: (n, 1, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, n))), topic: app, pushType: type,
            priority: .immediate, collapseID: nil, expiration: 0, payload: try! JSONReader.parse(Array(payload.utf8)))
    }

    struct Device {
        let runtime: DeviceRuntime
        let clock: SimulatedAlarmClock
        let journal: Journal
        let app: App
        let requests: LiveActivityTests.Requests
        let center: AppNotificationCenter

        /// Registers `kinds` and has the gateway issue each a token.
        func issue(_ kinds: [PushKitKind]) async throws {
            for kind in kinds {
                switch kind {
                case .pushToTalk: try await runtime.joinChannel(app: PushKitRuntimeTests.app, channel: "B3F1A0C2-0000-4000-8000-000000000001")
                case .location: try await runtime.monitorLocationPushes(app: PushKitRuntimeTests.app, true)
                default: break
                }
            }
            let registry = Set(kinds).intersection([.voip, .complication, .fileProvider])
            if !registry.isEmpty { try await runtime.setDesiredPushTypes(app: PushKitRuntimeTests.app, registry) }
            for kind in kinds {
                await runtime.gatewayIssued(pushKitToken: DeviceToken(bytes: Array(repeating: UInt8(kinds.firstIndex(of: kind)! + 1), count: 32))!, kind: kind, topic: PushKitRuntimeTests.app)
            }
        }

        func receive(_ n: DeviceNotification) async -> Bool {
            let acked = Locked(false)
            await runtime.receive(n) { acked.withLock { $0 = true } }
            await runtime.settle()
            return acked.withLock { $0 }
        }
    }

    static func device(directory: String? = nil, locationPush: Bool = true, delegate: Bool = true) async throws -> Device {
        let clock = SimulatedAlarmClock(startMilliseconds: 1_795_830_000_000)
        let journal = Journal(), app = App(), requests = LiveActivityTests.Requests()
        let runtime = try DeviceRuntime(
            clock: clock, timeZone: TimeZone(identifier: "UTC")!, user: DeviceRuntimeTests.Allow(), storageDirectory: directory, observer: journal.observer)
        let center = try await runtime.install(Self.app, bundle: .init(locationPushEntitlement: locationPush))
        app.runtime.withLock { $0 = runtime }
        await runtime.setRequester(requests.requester)
        if delegate { try await center.setDelegate(app) }
        return Device(runtime: runtime, clock: clock, journal: journal, app: app, requests: requests, center: center)
    }

    @Test("each kind asks the gateway for its own token; the registry gives only VoIP, complication and File Provider; location needs its entitlement")
    func tokens() async throws {
        let d = try await Self.device(locationPush: false)
        try await d.issue([.voip, .complication])
        #expect(d.requests.all.map { "\($0.0) \($0.1)" } == [
            "pushKit(topic: \"com.example.call\", HeraldCore.PushKitKind.complication) true", "pushKit(topic: \"com.example.call\", HeraldCore.PushKitKind.voip) true",
        ])
        await d.runtime.settle()
        #expect(d.app.tokens.withLock { $0.map(\.0) }.sorted { $0.rawValue < $1.rawValue } == [.complication, .voip])
        #expect(try await d.runtime.pushKitTokens(app: Self.app).count == 2)
        await #expect(throws: RuntimeError.self) { try await d.runtime.setDesiredPushTypes(app: Self.app, [.pushToTalk]) }
        await #expect(throws: RuntimeError.self) { try await d.runtime.monitorLocationPushes(app: Self.app, true) }
        // Dropping a type from the registry gives its token up.
        try await d.runtime.setDesiredPushTypes(app: Self.app, [.voip])
        #expect(d.requests.all.last.map { "\($0.0) \($0.1)" } == "pushKit(topic: \"com.example.call\", HeraldCore.PushKitKind.complication) false")
        #expect(try await d.runtime.pushKitTokens(app: Self.app).keys.sorted { $0.rawValue < $1.rawValue } == [.voip])
    }

    @Test("VoIP: a reported call completes the push; an unreported one terminates the app; three in a row stop VoIP pushes until it registers again")
    func voipContract() async throws {
        let d = try await Self.device()
        try await d.issue([.voip])
        #expect(await d.receive(Self.push(.voip)))
        #expect(d.journal.completed() == ["call reported"])
        #expect(d.app.pushes.withLock { $0.first?.mustReport } == true)
        // The call ends: with one going on, another push need not be reported.
        try await d.runtime.endCall(app: Self.app, uuid: d.app.pushes.withLock { $0[0].apnsID })
        // Not reported, three times: terminated each time (the app is started again by its next push).
        d.app.reports.withLock { $0 = false }
        for round in 1...3 {
            try await d.center.setDelegate(d.app)
            #expect(await d.receive(Self.push(.voip)))
            #expect(d.app.terminated.withLock { $0.count } == round)
        }
        #expect(d.journal.pushKit.contains(.voipStopped(failures: 3)))
        try await d.center.setDelegate(d.app)
        #expect(await d.receive(Self.push(.voip)))
        #expect(d.journal.notDelivered().last?.hasPrefix("VoIP pushes stopped reaching the app after 3") == true)
        // Registering again lets them through.
        try await d.runtime.setDesiredPushTypes(app: Self.app, [.voip])
        d.app.reports.withLock { $0 = true }
        #expect(await d.receive(Self.push(.voip)))
        #expect(d.journal.completed().last == "call reported")
    }

    @Test("VoIP: an app in the foreground need not report (mustReport false); a handler never called terminates it at 30 s")
    func voipForegroundAndTimeout() async throws {
        let d = try await Self.device()
        try await d.issue([.voip])
        try await d.runtime.userLaunched(app: Self.app)
        d.app.reports.withLock { $0 = false }
        #expect(await d.receive(Self.push(.voip)))
        #expect(d.app.pushes.withLock { $0.last?.mustReport } == false)
        #expect(d.journal.completed().last == "completed without a call (mustReport was false)")
        #expect(d.app.terminated.withLock { $0 }.isEmpty)
        try await d.runtime.userLeftApp(Self.app)
        d.app.reports.withLock { $0 = true }
        d.app.answer.withLock { $0 = nil }
        #expect(await d.receive(Self.push(.voip)))
        d.clock.advance(to: d.clock.nowMilliseconds() + PushKitContract.voipTimeLimitMilliseconds)
        await d.runtime.settle()
        #expect(d.app.terminated.withLock { $0.last?.contains("was not called within 30 s") } == true)
    }

    @Test("Push to Talk: no channel, no delivery; joined, the app names the speaker or leaves, and leaving ends the token")
    func pushToTalk() async throws {
        let d = try await Self.device()
        try await d.issue([.pushToTalk])
        try await d.runtime.leaveChannel(app: Self.app)
        // The gateway's token is still on its way: a push for it finds no channel.
        await d.runtime.gatewayIssued(pushKitToken: DeviceToken(bytes: Array(repeating: 9, count: 32))!, kind: .pushToTalk, topic: Self.app)
        #expect(await d.receive(Self.push(.pushtotalk)))
        #expect(d.journal.notDelivered().last?.hasPrefix("the app holds no pushtotalk token") == true)
        try await d.issue([.pushToTalk])
        d.app.answer.withLock { $0 = .activeRemoteParticipant("Grace") }
        #expect(await d.receive(Self.push(.pushtotalk)))
        #expect(d.app.pushes.withLock { $0.last?.channel } == "B3F1A0C2-0000-4000-8000-000000000001")
        #expect(d.journal.completed().last == "active remote participant: Grace")
        d.app.answer.withLock { $0 = .leaveChannel }
        #expect(await d.receive(Self.push(.pushtotalk)))
        #expect(d.journal.completed().last == "left the channel")
        #expect(try await d.runtime.pushKitTokens(app: Self.app)[.pushToTalk] == nil)
        #expect(d.journal.pushKit.contains(.channelLeft("B3F1A0C2-0000-4000-8000-000000000001")))
        // A bare completion is not a Push to Talk answer.
        try await d.issue([.pushToTalk])
        d.app.answer.withLock { $0 = .done }
        #expect(await d.receive(Self.push(.pushtotalk)))
        #expect(d.journal.violations.last?.hasPrefix("a Push to Talk push is answered with") == true)
    }

    @Test("location: handed with the device's position when authorized; not delivered, with the reason, when not or with location services off")
    func location() async throws {
        let d = try await Self.device()
        try await d.issue([.location])
        await d.runtime.setLocation(latitude: 48.8566, longitude: 2.3522)
        #expect(await d.receive(Self.push(.location)))
        #expect(d.app.pushes.withLock { $0.last?.location } == DeviceLocation(latitude: 48.8566, longitude: 2.3522))
        try await d.runtime.setLocationAuthorization(app: Self.app, authorized: false)
        #expect(await d.receive(Self.push(.location)))
        #expect(d.journal.notDelivered().last == "the app is not authorized to use the device's location")
        try await d.runtime.setLocationAuthorization(app: Self.app, authorized: true)
        await d.runtime.setLocationServices(enabled: false)
        #expect(await d.receive(Self.push(.location)))
        #expect(d.journal.notDelivered().last == "location services are off")
        #expect(d.app.pushes.withLock { $0.count } == 1)
    }

    @Test("complication: 50 a day, the 51st refused until the first leaves the window")
    func complicationBudget() async throws {
        let d = try await Self.device()
        try await d.issue([.complication])
        for _ in 0..<51 { #expect(await d.receive(Self.push(.complication))) }
        #expect(d.app.pushes.withLock { $0.count } == 50)
        #expect(d.journal.notDelivered().last?.hasPrefix("over the budget of 50 complication pushes a day until") == true)
    }

    @Test("an app that is not running: its pushes are held, saved, and handed over when it starts, after a restart too")
    func heldUntilStart() async throws {
        let directory = NSTemporaryDirectory() + "herald-pushkit-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let d = try await Self.device(directory: directory)
        try await d.issue([.voip, .fileProvider])
        try await d.center.setDelegate(nil)
        #expect(await d.receive(Self.push(.fileprovider, #"{"container-identifier":"NSFileProviderWorkingSetContainerItemIdentifier"}"#)))
        #expect(d.journal.pushKit.contains { if case .held(.fileProvider, _) = $0 { true } else { false } })
        // A restart: the held push and the tokens come back.
        let again = try await Self.device(directory: directory, delegate: false)
        #expect(try await again.runtime.pushKitTokens(app: Self.app).count == 2)
        try await again.center.setDelegate(again.app)
        await again.runtime.settle()
        #expect(again.app.pushes.withLock { $0.map(\.kind) } == [.fileProvider])
        #expect(again.journal.completed() == ["completed"])
    }

    @Test("a reported call is answered or declined by the user: the app hears CallKit's answer or end action")
    func calls() async throws {
        let d = try await Self.device()
        try await d.runtime.reportIncomingCall(app: Self.app, IncomingCall(uuid: "C1", handle: "+15550000001", caller: "Ada", video: true))
        try await d.runtime.reportIncomingCall(app: Self.app, IncomingCall(uuid: "C2", handle: "+15550000002"))
        await #expect(throws: RuntimeError.self) { try await d.runtime.reportIncomingCall(app: Self.app, IncomingCall(uuid: "C1", handle: "x")) }
        try await d.runtime.userChoseAction(app: Self.app, notification: "call:C1", action: "answer")
        try await d.runtime.userAnsweredCall(app: Self.app, uuid: "C2", answer: false)
        await d.runtime.settle()
        #expect(d.app.callActions.withLock { $0 } == ["answer C1", "end C2"])
        #expect(d.journal.pushKit.contains(.callEnded(uuid: "C2", reason: "declined by the user")))
        try await d.runtime.endCall(app: Self.app, uuid: "C1")
        await #expect(throws: RuntimeError.self) { try await d.runtime.userAnsweredCall(app: Self.app, uuid: "C1", answer: true) }
    }
}
