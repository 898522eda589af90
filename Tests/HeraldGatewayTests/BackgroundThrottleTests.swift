import Testing

@testable import HeraldGateway

@Suite("Background throttle")
struct BackgroundThrottleTests {
    @Test("the budget per device and app: used up, then the instant the next one comes back")
    func budget() {
        let throttle = BackgroundThrottle(budget: .init(count: 2, windowMilliseconds: 1_000))
        #expect(throttle.take(deviceID: "d", topic: "t", nowMilliseconds: 0) == nil)
        #expect(throttle.take(deviceID: "d", topic: "t", nowMilliseconds: 0) == nil)
        #expect(throttle.take(deviceID: "d", topic: "t", nowMilliseconds: 0) == 500)
        #expect(throttle.take(deviceID: "d", topic: "other", nowMilliseconds: 0) == nil, "each app has its own")
        #expect(throttle.take(deviceID: "d", topic: "t", nowMilliseconds: 500) == nil)
        // A clock jump far ahead refills without overflowing.
        #expect(throttle.take(deviceID: "d", topic: "t", nowMilliseconds: .max / 2) == nil)
    }

    @Test("full buckets are forgotten: a stream of devices keeps the table small, and no budget is given back early")
    func bounded() {
        let throttle = BackgroundThrottle(budget: .init(count: 1, windowMilliseconds: 1_000), minimumPruneSize: 4)
        for i in 0..<10_000 {
            #expect(throttle.take(deviceID: "device-\(i)", topic: "t", nowMilliseconds: Int64(i) * 1_000) == nil)
        }
        #expect(throttle.count <= 8)
        // Buckets still in use survive a prune: five devices use their budget at the same instant,
        // the prune that follows keeps them, and each is still refused until its hour (here: second) is up.
        let now: Int64 = 100_000_000
        for i in 0..<5 { _ = throttle.take(deviceID: "busy-\(i)", topic: "t", nowMilliseconds: now) }
        for i in 0..<5 { #expect(throttle.take(deviceID: "busy-\(i)", topic: "t", nowMilliseconds: now + 1) == now + 1_000) }
    }
}
