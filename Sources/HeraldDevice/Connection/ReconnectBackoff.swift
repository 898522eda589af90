/// Exponential backoff with jitter for reconnecting: the n-th attempt in a row waits a random
/// time between half and all of `min(maximum, initial × 2ⁿ)` ("equal jitter"), so that devices
/// cut off together do not come back together. A pure value: the caller sleeps.
public struct ReconnectBackoff: Sendable, Hashable {
    public var initialMilliseconds: Int64
    public var maximumMilliseconds: Int64
    /// Failed attempts since the last successful connection.
    public private(set) var attempts = 0

    public init(initialMilliseconds: Int64 = 500, maximumMilliseconds: Int64 = 30_000) {
        precondition(initialMilliseconds > 0 && maximumMilliseconds >= initialMilliseconds)
        self.initialMilliseconds = initialMilliseconds
        self.maximumMilliseconds = maximumMilliseconds
    }

    /// The wait before the next attempt; counts the attempt.
    public mutating func nextDelay<G: RandomNumberGenerator>(using generator: inout G) -> Int64 {
        let exponent = min(attempts, 30)
        attempts += 1
        let ceiling = min(maximumMilliseconds, initialMilliseconds << exponent)
        let half = ceiling / 2
        return half + Int64.random(in: 0...(ceiling - half), using: &generator)
    }

    public mutating func nextDelay() -> Int64 {
        var generator = SystemRandomNumberGenerator()
        return nextDelay(using: &generator)
    }

    /// A connection succeeded: the next failure starts from the initial delay again.
    public mutating func reset() { attempts = 0 }
}
