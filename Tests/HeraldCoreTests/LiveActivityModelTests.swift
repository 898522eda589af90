import Crypto
import Foundation
import HeraldCore
import Testing

/// Device protocol version 2's frames, token scopes, channel ids and the Live Activity checks.
@Suite("Live Activity and broadcast models")
struct LiveActivityModelTests {
    @Test("version 2 client frames round-trip; hostile ones are refused with what is wrong")
    func clientFrames() throws {
        let frames: [DeviceClientFrame] = [
            .registerActivity(topic: "com.a", activity: .pushToStart),
            .registerActivity(topic: "com.a", activity: .activity("6f1c-2a.b_c")),
            .unregisterActivity(topic: "com.a", activity: .activity("x")),
            .subscribe(topic: "com.a", channel: "AAECAwQFBgcICQoLDA0ODw=="),
            .unsubscribe(topic: "com.a", channel: "AAECAwQFBgcICQoLDA0ODw=="),
            .registerWidgets(topic: "com.a"),
            .unregisterWidgets(topic: "com.a"),
        ]
        for frame in frames {
            #expect(try DeviceClientFrame.decode(frame.encoded()).get() == frame)
            #expect(frame.minimumVersion == 2)
        }
        #expect(DeviceClientFrame.register(topic: "com.a").minimumVersion == 1)
        for bad in [
            #"{"type":"register","topic":"com.a","activity":"a b"}"#,
            #"{"type":"register","topic":"com.a","activity":""}"#,
            #"{"type":"register","topic":"com.a","activity":7}"#,
            #"{"type":"register","topic":"com.a","activity":"\#(String(repeating: "a", count: 129))"}"#,
            #"{"type":"subscribe","topic":"com.a","channel":"not-a-channel"}"#,
            #"{"type":"subscribe","topic":"com.a"}"#,
            #"{"type":"subscribe","channel":"AAECAwQFBgcICQoLDA0ODw=="}"#,
            #"{"type":"register","topic":"com.a","widgets":"yes"}"#,
        ] {
            guard case .failure(let error) = DeviceClientFrame.decode(Array(bad.utf8)) else {
                Issue.record("accepted \(bad)")
                continue
            }
            #expect(!error.message.isEmpty)
        }
    }

    @Test("version 2 server frames round-trip; a Live Activity notification carries its token")
    func serverFrames() throws {
        let token = DeviceToken.random()
        let frames: [DeviceServerFrame] = [
            .registeredActivity(topic: "com.a", activity: .pushToStart, token: token),
            .unregisteredActivity(topic: "com.a", activity: .activity("id1"), atMilliseconds: 5),
            .subscribed(topic: "com.a", channel: "AAECAwQFBgcICQoLDA0ODw==", token: token),
            .unsubscribed(topic: "com.a", channel: "AAECAwQFBgcICQoLDA0ODw=="),
            .registeredWidgets(topic: "com.a", token: token),
            .unregisteredWidgets(topic: "com.a", atMilliseconds: 9),
            .notification(DeviceNotification(
                apnsID: .random(), topic: "com.a", pushType: .liveactivity, priority: .immediate, collapseID: nil, expiration: nil,
                payload: .object(["aps": .object(["event": .string("update")])]), token: token)),
        ]
        for frame in frames { #expect(try DeviceServerFrame.decode(frame.encoded()).get() == frame) }
    }

    @Test("a widget token's scope: stored as <app>.push-type.widgets, takes widgets pushes only; the app token takes none")
    func widgetScope() {
        let scope = TokenScope(bundleID: "com.a", kind: .widgets)
        #expect(scope.stored == "com.a.push-type.widgets")
        #expect(TokenScope(stored: scope.stored) == scope)
        #expect(scope.accepts(bundleID: "com.a", pushType: .widgets))
        for other: PushType in [.alert, .background, .liveactivity, .webpush, .voip] { #expect(!scope.accepts(bundleID: "com.a", pushType: other)) }
        #expect(!scope.accepts(bundleID: "com.b", pushType: .widgets))
        #expect(!TokenScope(bundleID: "com.a").accepts(bundleID: "com.a", pushType: .widgets))
        #expect(TokenScope(bundleID: "com.a").accepts(bundleID: "com.a", pushType: .alert))
        // A Live Activity scope whose id happens to end like a widget scope stays a Live Activity's.
        let activity = TokenScope(bundleID: "com.a", kind: .activity("x.push-type.widgets"))
        #expect(TokenScope(stored: activity.stored) == activity)
    }

    @Test("version 4 frames (PushKit tokens) round-trip; an unknown kind is refused; a PushKit scope takes only its own push type and an app token none of them")
    func pushKitFramesAndScopes() throws {
        let token = DeviceToken.random()
        for kind in PushKitKind.allCases {
            for frame: DeviceClientFrame in [.registerPushKit(topic: "com.a", kind: kind), .unregisterPushKit(topic: "com.a", kind: kind)] {
                #expect(try DeviceClientFrame.decode(frame.encoded()).get() == frame)
                #expect(frame.minimumVersion == 4)
            }
            for frame: DeviceServerFrame in [.registeredPushKit(topic: "com.a", kind: kind, token: token), .unregisteredPushKit(topic: "com.a", kind: kind, atMilliseconds: 3)] {
                #expect(try DeviceServerFrame.decode(frame.encoded()).get() == frame)
            }
            let scope = TokenScope(bundleID: "com.a", kind: .pushKit(kind))
            #expect(scope.stored == "com.a.pushkit/" + kind.rawValue)
            #expect(TokenScope(stored: scope.stored) == scope)
            for type in PushType.allKnown + [.webpush] {
                #expect(scope.accepts(bundleID: "com.a", pushType: type) == (type == kind.pushType))
            }
            #expect(!TokenScope(bundleID: "com.a").accepts(bundleID: "com.a", pushType: kind.pushType))
            #expect(!scope.accepts(bundleID: "com.b", pushType: kind.pushType))
        }
        for bad in [#"{"type":"register","topic":"com.a","pushkit":"mdm"}"#, #"{"type":"register","topic":"com.a","pushkit":true}"#] {
            guard case .failure(let error) = DeviceClientFrame.decode(Array(bad.utf8)) else { Issue.record("accepted \(bad)"); continue }
            #expect(error.message.contains("pushkit"))
        }
        // No app topic reads back as another app's PushKit or Web Push scope.
        #expect(!DeviceProtocol.isValidTopic("com.a.pushkit/voip"))
        #expect(!DeviceProtocol.isValidTopic("com.a.push-type.webpush/x"))
        #expect(TokenScope(stored: "com.a.pushkit/unknown") == TokenScope(bundleID: "com.a.pushkit/unknown"))
    }

    @Test("version 3 frames (Web Push subscriptions) round-trip; a bad subscription id or application server key is refused")
    func webPushFrames() throws {
        let subscription = "0f8e3a52-6c1d-4b7e-9a2f-5d3c1b0e7a64"
        let key = Array(P256.Signing.PrivateKey().publicKey.x963Representation)
        let client: [DeviceClientFrame] = [
            .webPushSubscribe(topic: "com.a", subscription: subscription, applicationServerKey: key),
            .webPushSubscribe(topic: "com.a", subscription: subscription, applicationServerKey: nil),
            .webPushUnsubscribe(topic: "com.a", subscription: subscription),
        ]
        for frame in client {
            #expect(try DeviceClientFrame.decode(frame.encoded()).get() == frame)
            #expect(frame.minimumVersion == 3)
        }
        var notPoint = key
        notPoint[64] ^= 1
        for bad in [
            #"{"type":"webpush-subscribe","topic":"com.a","subscription":"not-a-uuid"}"#,
            #"{"type":"webpush-subscribe","topic":"com.a"}"#,
            #"{"type":"webpush-subscribe","subscription":"\#(subscription)"}"#,
            #"{"type":"webpush-subscribe","topic":"com.a","subscription":"\#(subscription)","application-server-key":"AAAA"}"#,
            #"{"type":"webpush-subscribe","topic":"com.a","subscription":"\#(subscription)","application-server-key":"\#(Base64URL.encode(notPoint))"}"#,
            #"{"type":"webpush-subscribe","topic":"com.a","subscription":"\#(subscription)","application-server-key":7}"#,
            #"{"type":"webpush-unsubscribe","topic":"com.a","subscription":"\#(String(repeating: "a", count: 100))"}"#,
        ] {
            guard case .failure(let error) = DeviceClientFrame.decode(Array(bad.utf8)) else {
                Issue.record("accepted \(bad)")
                continue
            }
            #expect(!error.message.isEmpty)
        }
        let token = DeviceToken.random()
        let server: [DeviceServerFrame] = [
            .webPushSubscribed(topic: "com.a", subscription: subscription, endpoint: "https://push.example.com/wpush/" + token.hex, token: token),
            .webPushUnsubscribed(topic: "com.a", subscription: subscription),
            .notification(DeviceNotification(
                apnsID: .random(), topic: "com.a", pushType: .webpush, priority: .conservePower, collapseID: nil, expiration: 100,
                payload: .object(["channel": .string(subscription)]), token: token)),
        ]
        for frame in server { #expect(try DeviceServerFrame.decode(frame.encoded()).get() == frame) }
    }

    @Test("reconnect-within: any version's error frame may carry it; read back, bounded to an hour, absent when not sent")
    func reconnectWithin() throws {
        let frames: [DeviceServerFrame] = [
            .error(code: .shutdown, message: "stopping", reconnectWithinMilliseconds: 36_000),
            .error(code: .shutdown, message: "stopping", reconnectWithinMilliseconds: 0),
            .error(code: .shutdown, message: "stopping"),
        ]
        for frame in frames { #expect(try DeviceServerFrame.decode(frame.encoded()).get() == frame) }
        #expect(!String(decoding: frames[2].encoded(), as: UTF8.self).contains("reconnect-within"))
        for bad in [#"-1"#, #"3600001"#, #""soon""#, #"1e300"#] {
            let text = #"{"type":"error","code":"shutdown","message":"x","reconnect-within":"# + bad + "}"
            guard case .failure(let error) = DeviceServerFrame.decode(Array(text.utf8)) else { Issue.record("accepted \(bad)"); continue }
            #expect(error.message.contains("reconnect-within"))
        }
    }

    @Test("token scopes: stored forms read by their markers, wherever they fall", arguments: [
        ("com.a", TokenScope(bundleID: "com.a")),
        ("com.a.push-type.liveactivity", TokenScope(bundleID: "com.a", kind: .pushToStart)),
        ("com.a.push-type.liveactivity/x.push-type.widgets", TokenScope(bundleID: "com.a", kind: .activity("x.push-type.widgets"))),
        ("com.a.push-type.liveactivity#c/d", TokenScope(bundleID: "com.a", kind: .channel("c/d"))),
        ("com.a.push-type.liveactivityZ", TokenScope(bundleID: "com.a.push-type.liveactivityZ")),
        ("com.a.push-type.liveactivity.push-type.widgets", TokenScope(bundleID: "com.a.push-type.liveactivity.push-type.widgets")),
        ("com.a.push-type.widgets", TokenScope(bundleID: "com.a", kind: .widgets)),
        (".push-type.widgets", TokenScope(bundleID: "", kind: .widgets)),
        ("com.a.push-type.widget", TokenScope(bundleID: "com.a.push-type.widget")),
        ("com.a.push-type.webpush/ch", TokenScope(bundleID: "com.a", kind: .webPush(channel: "ch", applicationServerKey: nil))),
        ("com.a.push-type.webpush/ch/k/ey", TokenScope(bundleID: "com.a", kind: .webPush(channel: "ch", applicationServerKey: "k/ey"))),
        ("é.app.push-type.push-type.liveactivity#ç", TokenScope(bundleID: "é.app.push-type", kind: .channel("ç"))),
        ("com.p.push-type.liveactivit", TokenScope(bundleID: "com.p.push-type.liveactivit")),
        ("ü.pushkit.pushkit/voip", TokenScope(bundleID: "ü.pushkit", kind: .pushKit(.voip))),
        (".pushkit/fileprovider", TokenScope(bundleID: "", kind: .pushKit(.fileProvider))),
        ("com.a.push-type.webpus", TokenScope(bundleID: "com.a.push-type.webpus")),
        ("", TokenScope(bundleID: "")),
    ])
    func storedScopes(stored: String, scope: TokenScope) {
        #expect(TokenScope(stored: stored) == scope)
    }

    @Test("token scopes: stored forms read back; app topics can never look like one")
    func scopes() {
        let scopes = [
            TokenScope(bundleID: "com.a"), TokenScope(bundleID: "com.a", kind: .pushToStart),
            TokenScope(bundleID: "com.a", kind: .activity("x-1")), TokenScope(bundleID: "com.a", kind: .channel("AAECAwQFBgcICQoLDA0ODw==")),
        ]
        for scope in scopes { #expect(TokenScope(stored: scope.stored) == scope) }
        #expect(!DeviceProtocol.isValidTopic("com.a.push-type.liveactivity"))
        #expect(!DeviceProtocol.isValidTopic("com.a.push-type.liveactivity/x"))
        #expect(!DeviceProtocol.isValidTopic("com.a.push-type.liveactivity#x"))
        #expect(scopes[1].accepts(bundleID: "com.a", pushType: .liveactivity))
        #expect(!scopes[1].accepts(bundleID: "com.a", pushType: .alert))
        #expect(!scopes[0].accepts(bundleID: "com.a", pushType: .liveactivity))
        #expect(!scopes[2].accepts(bundleID: "com.b", pushType: .liveactivity))
    }

    @Test("channel ids are base64 of 16 bytes")
    func channelIDs() {
        #expect(BroadcastChannelID(BroadcastChannelID.random().value) != nil)
        for bad in ["", "AAAA", "AAECAwQFBgcICQoLDA0ODw", "AAECAwQFBgcICQoLDA0ODw==x", "!!ECAwQFBgcICQoLDA0ODw=="] {
            #expect(BroadcastChannelID(bad) == nil, "\(bad)")
        }
    }

    @Test("Live Activity payloads are checked as ActivityKit checks them")
    func updates() throws {
        func check(_ aps: String) -> String? {
            do {
                _ = try LiveActivityUpdate(payload: NotificationPayload.decode(Array(#"{"aps":\#(aps)}"#.utf8)))
                return nil
            } catch let invalid as LiveActivityUpdate.Invalid {
                return invalid.description
            } catch {
                return "\(error)"
            }
        }
        #expect(check(#"{"event":"update","timestamp":1,"content-state":{"a":1}}"#) == nil)
        #expect(check(#"{"event":"end","timestamp":1}"#) == nil)
        #expect(check(#"{"event":"start","timestamp":1,"attributes-type":"T","attributes":{},"content-state":{},"alert":"x","input-push-token":1}"#) == nil)
        #expect(check(#"{"timestamp":1}"#)?.contains("event") == true)
        #expect(check(#"{"event":"pause","timestamp":1}"#)?.contains("pause") == true)
        #expect(check(#"{"event":"update","content-state":{}}"#)?.contains("timestamp") == true)
        #expect(check(#"{"event":"update","timestamp":1}"#)?.contains("content-state") == true)
        #expect(check(#"{"event":"start","timestamp":1,"attributes":{},"content-state":{},"alert":"x"}"#)?.contains("attributes-type") == true)
        #expect(check(#"{"event":"start","timestamp":1,"attributes-type":"T","attributes":{},"content-state":{},"alert":"x","input-push-channel":"nope"}"#)?.contains("channel") == true)
        let big = String(repeating: "x", count: 4_100)
        #expect(check(#"{"event":"update","timestamp":1,"content-state":{"a":"\#(big)"}}"#)?.contains("4096") == true)
    }

    @Test("device tokens encode as their hex")
    func tokenCoding() throws {
        let token = DeviceToken.random()
        let data = try JSONEncoder().encode([token])
        #expect(String(decoding: data, as: UTF8.self) == #"["\#(token.description)"]"#)
        #expect(try JSONDecoder().decode([DeviceToken].self, from: data) == [token])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([DeviceToken].self, from: Data(#"["zz"]"#.utf8)) }
    }
}
