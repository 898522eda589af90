import Foundation

/// The source of the current wall-clock time. Every rule that reads time (JWT age, expiry,
/// rate limits, 410 timestamps) reads it from an injected `WallClock`, never from the system
/// directly, so that tests can fix and advance it.
public protocol WallClock: Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    func nowMilliseconds() -> Int64
}

extension WallClock {
    /// Whole seconds since 1970.
    public func nowSeconds() -> Int64 { nowMilliseconds() / 1000 }
}

/// The system's real-time clock: the one place where Herald reads the machine's time.
public struct SystemWallClock: WallClock {
    public init() {}
    public func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
