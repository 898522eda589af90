import HeraldCore
@testable import HeraldGateway
import Testing

@Suite("Per-token rate limit, at fixed instants")
struct TokenRateLimiterTests {
    let token = DeviceToken(bytes: Array(repeating: 7, count: 32))!
    let other = DeviceToken(bytes: Array(repeating: 8, count: 32))!

    @Test("a burst, then the refill rate; each token has its own bucket")
    func bucket() {
        let limiter = TokenRateLimiter(configuration: .init(burst: 2, perSecond: 1))
        #expect(limiter.allow(token, nowMilliseconds: 0) && limiter.allow(token, nowMilliseconds: 0))
        #expect(!limiter.allow(token, nowMilliseconds: 500))
        #expect(limiter.allow(other, nowMilliseconds: 500))
        #expect(limiter.allow(token, nowMilliseconds: 1_000))
        #expect(!limiter.allow(token, nowMilliseconds: 1_000))
    }

    @Test("without a configuration nothing is limited")
    func none() {
        let limiter = TokenRateLimiter(configuration: nil)
        #expect((0..<10_000).allSatisfy { _ in limiter.allow(token, nowMilliseconds: 0) })
        #expect(limiter.configuration == nil)
    }

    @Test("reconfigured while running (SIGHUP): off lets the exhausted token through, on again starts full buckets, a new rate applies at once")
    func reconfigure() {
        let limiter = TokenRateLimiter(configuration: .init(burst: 1, perSecond: 0.001))
        #expect(limiter.allow(token, nowMilliseconds: 0) && !limiter.allow(token, nowMilliseconds: 1))
        limiter.reconfigure(nil)
        #expect(limiter.allow(token, nowMilliseconds: 2) && limiter.allow(token, nowMilliseconds: 2))
        limiter.reconfigure(.init(burst: 3, perSecond: 0.001))
        #expect(limiter.configuration == .init(burst: 3, perSecond: 0.001))
        #expect((0..<3).allSatisfy { _ in limiter.allow(token, nowMilliseconds: 3) })
        #expect(!limiter.allow(token, nowMilliseconds: 3))
        // A faster refill is used from the next push on: 1,000 a second refills one in 1 ms.
        limiter.reconfigure(.init(burst: 3, perSecond: 1_000))
        #expect(limiter.allow(token, nowMilliseconds: 4))
    }
}
