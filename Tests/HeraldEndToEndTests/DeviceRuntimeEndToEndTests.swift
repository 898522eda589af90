import Foundation
import HeraldClient
import HeraldCore
import HeraldDevice
import HeraldTesting
import Testing

/// The device runtime joined to a real device connection: pushes from a provider, through the
/// in-process gateway, presented by the runtime; tokens handed to the app and sent on to its
/// provider (scenarios 42 and 43).
@Suite("Device runtime end to end")
struct DeviceRuntimeEndToEndTests {
    /// What the app's provider was told: (token, language) pairs, as `sendProviderDeviceToken` /
    /// `sendProviderCurrentLanguage` would post them.
    final class ProviderRecorder: Sendable {
        let posts = Locked<[(token: String, language: String)]>([])
    }

    /// An app that sends its token and language to its provider at each token and language change.
    final class ProviderSyncingApp: AppNotificationDelegate {
        let recorder: ProviderRecorder
        let runtime: DeviceRuntime
        let lastToken = Locked<DeviceToken?>(nil)
        init(_ recorder: ProviderRecorder, _ runtime: DeviceRuntime) { (self.recorder, self.runtime) = (recorder, runtime) }
        func didRegisterForRemoteNotifications(token: DeviceToken) async {
            lastToken.withLock { $0 = token }
            let language = await runtime.preferredLanguages.first ?? "en"
            recorder.posts.withLock { $0.append((token.description, language)) }
        }
        func preferredLanguagesDidChange(_ languages: [String]) async {
            guard let token = lastToken.withLock({ $0 }) else { return }
            recorder.posts.withLock { $0.append((token.description, languages.first ?? "en")) }
        }
    }

    final class Delivered: Sendable {
        let items = Locked<[DeliveredNotification]>([])
        var observer: @Sendable (RuntimeEvent) -> Void { { [items] e in if case .delivered(_, let n) = e { items.withLock { $0.append(n) } } } }
    }

    struct Phone {
        let runtime: DeviceRuntime
        let delivered: Delivered
        let center: AppNotificationCenter
        let tasks: [Task<Void, Never>]

        static func start(_ gateway: TestGateway, storage: String, recorder: ProviderRecorder, languages: [String]) async throws -> Phone {
            let delivered = Delivered()
            let runtime = try DeviceRuntime(
                clock: SystemAlarmClock(), timeZone: TimeZone(identifier: "Europe/Paris")!, preferredLanguages: languages,
                user: AllowingUser(), storageDirectory: storage, observer: delivered.observer)
            let center = try await runtime.install("com.example.app", bundle: .init(localization: AlertLocalization(tables: [
                "fr": ["NEW_MESSAGE": "Nouveau message de %@"], "de": ["NEW_MESSAGE": "Neue Nachricht von %@"],
            ])))
            try await center.setDelegate(ProviderSyncingApp(recorder, runtime))
            try await runtime.userLaunched(app: "com.example.app")
            try await center.requestAuthorization([.alert, .sound, .badge])
            try await center.registerForRemoteNotifications()
            try await runtime.userLeftApp("com.example.app")  // in the background: pushes show as banners
            let connection = try gateway.makeDeviceConnection(identity: DeviceIdentity())
            let run = Task { await connection.run() }
            let follow = Task { await runtime.follow(connection.events) }
            return Phone(runtime: runtime, delivered: delivered, center: center, tasks: [run, follow])
        }

        func stop() async {
            tasks[0].cancel()
            await tasks[1].value
        }
    }

    @Test("42–43. a push is presented localized; a restore to a new device brings a new token, sent to the provider; fr→de is re-sent")
    func restoreAndLanguage() async throws {
        let gateway = try await TestGateway.start()
        let signer = try await gateway.makeKey(team: "TEAM000001", topics: ["com.example.app"])
        let connection = try await gateway.connect()
        let authorization = try gateway.bearer(signer)
        func push(_ token: DeviceToken, payload: String) async throws {
            let response = try await connection.send(.push(
                token: token, authorization: authorization, topic: "com.example.app", pushType: "alert", payload: payload, extraHeaders: []))
            #expect(response.status == 200)
        }
        let recorder = ProviderRecorder()
        let oldPhone = try TemporaryDirectory.make(prefix: "phone-old")
        let phone = try await Phone.start(gateway, storage: oldPhone, recorder: recorder, languages: ["fr"])
        try await eventually("the first token") { recorder.posts.withLock { $0.count } == 1 }
        let first = recorder.posts.withLock { $0[0] }
        #expect(first.language == "fr")

        // A push through the gateway is presented by the runtime, localized on the device.
        try await push(
            DeviceToken(hex: first.token)!, payload: #"{"aps":{"alert":{"loc-key":"NEW_MESSAGE","loc-args":["Ana"]},"badge":1}}"#)
        try await eventually("the push") { phone.delivered.items.withLock { $0.count } == 1 }
        let shown = phone.delivered.items.withLock { $0[0] }
        #expect(shown.content.body == "Nouveau message de Ana" && shown.presentation.badge == 1)
        #expect(try await phone.center.badge() == 1)
        await phone.stop()

        // Restore to a new device: the app's saved state comes along, the device key does not.
        let newPhone = try TemporaryDirectory.make(prefix: "phone-new")
        try FileManager.default.copyItem(atPath: oldPhone + "/apps", toPath: newPhone + "/apps")
        let restored = try await Phone.start(gateway, storage: newPhone, recorder: recorder, languages: ["fr"])
        try await eventually("the new token") { recorder.posts.withLock { $0.count } == 3 }
        let posts = recorder.posts.withLock { $0 }
        #expect(posts[1].token == first.token)  // registered before: the stored token at once
        #expect(posts[2].token != first.token && posts[2].language == "fr")  // the new device's token, sent on
        await restored.runtime.setPreferredLanguages(["de"])
        try await eventually("the language") { recorder.posts.withLock { $0.count } == 4 }
        #expect(recorder.posts.withLock { $0[3] } == (posts[2].token, "de"))

        try await push(DeviceToken(hex: posts[2].token)!, payload: #"{"aps":{"alert":{"loc-key":"NEW_MESSAGE","loc-args":["Ben"]}}}"#)
        try await eventually("the push on the new device") { restored.delivered.items.withLock { $0.count } == 1 }
        #expect(restored.delivered.items.withLock { $0[0].content.body } == "Neue Nachricht von Ben")

        await restored.stop()
        await connection.close()
        try await gateway.stop()
    }
}
