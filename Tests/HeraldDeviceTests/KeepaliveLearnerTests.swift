import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice

/// What a device learns about its network's keep-alive from how its connections end, without a
/// socket or a clock.
@Suite("device: the keep-alive interval learned from disconnects")
struct KeepaliveLearnerTests {
    @Test("asks for nothing at first; a connection that went silent halves the interval, down to the floor")
    func silenceHalves() {
        var learner = KeepaliveLearner()
        #expect(learner.requestedSeconds == nil)
        learner.welcomed(pingIntervalSeconds: 1_500)
        #expect(learner.gatewaySeconds == 1_500)
        learner.ended(silent: true, livedSeconds: 3_002)
        #expect(learner.requestedSeconds == 750)
        for expected in [375, 187, 93, 46, 23, 15, 15] {
            learner.welcomed(pingIntervalSeconds: learner.requestedSeconds!)
            learner.ended(silent: true, livedSeconds: 10)
            #expect(learner.requestedSeconds == expected)
        }
        #expect(learner.gatewaySeconds == 1_500, "asking for less teaches nothing about the gateway's own")
    }

    @Test("a connection that lived eight intervals and ended otherwise doubles it, back to the gateway's own")
    func longLifeDoubles() {
        var learner = KeepaliveLearner()
        learner.welcomed(pingIntervalSeconds: 1_500)
        learner.ended(silent: true, livedSeconds: 100)
        learner.welcomed(pingIntervalSeconds: 750)
        learner.ended(silent: true, livedSeconds: 100)
        #expect(learner.requestedSeconds == 375)

        learner.welcomed(pingIntervalSeconds: 375)
        learner.ended(silent: false, livedSeconds: 8 * 375 - 1)
        #expect(learner.requestedSeconds == 375, "not long enough")
        learner.welcomed(pingIntervalSeconds: 375)
        learner.ended(silent: false, livedSeconds: 8 * 375)
        #expect(learner.requestedSeconds == 750)
        learner.welcomed(pingIntervalSeconds: 750)
        learner.ended(silent: false, livedSeconds: 10_000)
        #expect(learner.requestedSeconds == nil, "1,500 is the gateway's own: ask for nothing")
    }

    @Test("the gateway's grant counts: a floor above the request, a ceiling below it; nothing without a welcome")
    func grants() {
        var learner = KeepaliveLearner(requestedSeconds: 5)
        #expect(learner.requestedSeconds == 15, "never below the device's floor")
        learner.ended(silent: true, livedSeconds: 0)
        #expect(learner.requestedSeconds == 15, "a connection never welcomed teaches nothing")

        learner = KeepaliveLearner(requestedSeconds: 600)
        learner.welcomed(pingIntervalSeconds: 300)  // the gateway's own is shorter
        #expect(learner.gatewaySeconds == 300)
        learner.ended(silent: false, livedSeconds: 8 * 300)
        #expect(learner.requestedSeconds == nil)

        learner.welcomed(pingIntervalSeconds: 0)
        #expect(learner.grantedSeconds == nil, "an interval outside the protocol's range is ignored")
    }

    @Test("the hello carries the learned interval; the gateway reads it back, and refuses one out of range")
    func helloField() throws {
        let identity = DeviceIdentity()
        let hello = try identity.hello(nonce: "n", keepaliveSeconds: 120)
        #expect(try DeviceClientFrame.decode(hello.encoded()).get() == hello)
        guard case .hello(_, _, _, _, 120) = hello else {
            Issue.record("no keepalive in \(hello)")
            return
        }
        let plain = try identity.hello(nonce: "n")
        #expect(!String(decoding: plain.encoded(), as: UTF8.self).contains("keepalive"))
        for bad in ["0", "86401", "-3", "1.5", "\"60\"", "null", "[60]", "99999999999999999999"] {
            var text = String(decoding: hello.encoded(), as: UTF8.self)
            text = text.replacingOccurrences(of: "\"keepalive\":120", with: "\"keepalive\":\(bad)")
            guard case .failure(let error) = DeviceClientFrame.decode(Array(text.utf8)) else {
                Issue.record("keepalive \(bad) was accepted")
                continue
            }
            #expect(error.message == "\"keepalive\" must be an integer from 1 to 86400 (seconds)")
        }
    }
}
