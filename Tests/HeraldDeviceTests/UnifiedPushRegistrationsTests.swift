import Crypto
import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

/// The UnifiedPush distributor's registrations, pure: `Register` and `Unregister` arguments as the
/// D-Bus specification (0.3.0) defines them, and the endpoints the gateway gives.
@Suite("UnifiedPush: the distributor's registrations")
struct UnifiedPushRegistrationsTests {
    static let key = Base64URL.encode(Array(P256.Signing.PrivateKey().publicKey.x963Representation))

    static func args(_ entries: [String: String]) -> [String: DBusArgument] { entries.mapValues { .string($0) } }

    @Test("Register: a new token makes a subscription, the same token again finds it, and every argument is checked")
    func register() {
        var registrations = UnifiedPushRegistrations()
        var made = 0
        func next() -> String { made += 1; return "0f8e3a52-6c1d-4b7e-9a2f-5d3c1b0e7a6\(made)" }
        guard case .registered(let first, true, nil) = registrations.register(
            Self.args(["service": "org.example.App", "token": "t1", "vapid": Self.key, "description": "work account"]), makeSubscription: next) else {
            Issue.record("a valid registration was refused")
            return
        }
        #expect(first.subscription == "0f8e3a52-6c1d-4b7e-9a2f-5d3c1b0e7a61" && first.vapid == Self.key && first.description == "work account")
        guard case .registered(let again, false, nil) = registrations.register(Self.args(["service": "org.example.App", "token": "t1", "vapid": Self.key]), makeSubscription: next) else {
            Issue.record("registering again was refused")
            return
        }
        #expect(again.subscription == first.subscription && made == 1)

        // Each refusal with the specification's answer: a malformed argument is a D-Bus
        // InvalidArgs error, another app's token AccessDenied, an unusable VAPID key
        // REGISTRATION_FAILED with VAPID_REQUIRED.
        let invalid = UnifiedPushRegistrations.invalidArgs, denied = UnifiedPushRegistrations.accessDenied
        let refusals: [([String: DBusArgument], String, String)] = [
            (Self.args(["token": "t2"]), invalid, "service"),
            (Self.args(["service": "noDots", "token": "t2"]), invalid, "service"),
            (Self.args(["service": "org.9example.App", "token": "t2"]), invalid, "service"),
            (Self.args(["service": "org.example.App.voip", "token": "t2"]), invalid, "service"),
            (["service": .string("org.example.App"), "token": .other], invalid, "token"),
            (Self.args(["service": "org.example.App", "token": ""]), invalid, "token"),
            (Self.args(["service": "org.example.App", "token": String(repeating: "t", count: 101)]), invalid, "token"),
            (Self.args(["service": "org.example.App", "token": "t2", "description": String(repeating: "d", count: 101)]), invalid, "description"),
            (Self.args(["service": "org.example.App", "token": "t2", "vapid": "AAAA"]), "VAPID_REQUIRED", "vapid"),
            (Self.args(["service": "org.other.App", "token": "t1", "vapid": Self.key]), denied, "another app"),
        ]
        for (args, answer, about) in refusals {
            let why: String
            switch registrations.register(args, makeSubscription: next) {
            case .refused(let error, let text) where error == answer: why = text
            case .failed(let reason, let text) where reason == answer: why = text
            case let other:
                Issue.record("\(args): \(other), not \(answer)")
                continue
            }
            #expect(why.contains(about), "\(why) does not name \(about)")
        }
        #expect(registrations.byToken.count == 1 && made == 1)

        // The same token with another VAPID key: a new subscription replaces the old one.
        let other = Base64URL.encode(Array(P256.Signing.PrivateKey().publicKey.x963Representation))
        guard case .registered(let replacement, true, let replaced?) = registrations.register(
            Self.args(["service": "org.example.App", "token": "t1", "vapid": other]), makeSubscription: next) else {
            Issue.record("another VAPID key did not replace the subscription")
            return
        }
        #expect(replaced.subscription == first.subscription && replacement.subscription != first.subscription
            && replacement.vapid == other && replacement.description == "work account" && registrations.byToken.count == 1)
    }

    @Test("at most 64 registrations (ACTION_REQUIRED beyond); endpoints reach their registration; Unregister forgets it")
    func boundsAndEndpoints() {
        var registrations = UnifiedPushRegistrations()
        for n in 0..<UnifiedPushRegistrations.maximumRegistrations {
            _ = registrations.register(Self.args(["service": "org.example.App", "token": "t\(n)"])) { UUID().uuidString.lowercased() }
        }
        guard case .failed("ACTION_REQUIRED", _) = registrations.register(Self.args(["service": "org.example.App", "token": "one-more"]), makeSubscription: { "x" }) else {
            Issue.record("a 65th registration was accepted")
            return
        }
        let first = registrations.byToken["t0"]!
        let endpoint = "https://push.example.com/wpush/" + String(repeating: "a", count: 64)
        #expect(registrations.endpoint(endpoint, gatewayToken: "ab", subscription: first.subscription)?.endpoint == endpoint)
        #expect(registrations.endpoint(endpoint, gatewayToken: "ab", subscription: first.subscription) == nil, "an unchanged endpoint is not news")
        #expect(registrations.endpoint(endpoint, gatewayToken: "cd", subscription: "unknown") == nil)
        #expect(registrations.registration(gatewayToken: "ab")?.token == "t0")
        #expect(registrations.unregister(Self.args(["token": "t0"]))?.service == "org.example.App")
        #expect(registrations.unregister(Self.args(["token": "t0"])) == nil)
        #expect(registrations.registration(gatewayToken: "ab") == nil)
    }
}
