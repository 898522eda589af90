import HeraldCore
import NIOConcurrencyHelpers

/// A wall clock that stands still until a test moves it.
public final class TestWallClock: WallClock, Sendable {
    private let milliseconds: NIOLockedValueBox<Int64>

    /// Starts at `startMilliseconds` (by default 2026-11-21T12:00:00Z).
    public init(startMilliseconds: Int64 = 1_795_262_400_000) {
        milliseconds = NIOLockedValueBox(startMilliseconds)
    }

    public func nowMilliseconds() -> Int64 { milliseconds.withLockedValue { $0 } }

    public func advance(seconds: Int64) { advance(milliseconds: seconds * 1000) }
    public func advance(milliseconds delta: Int64) { milliseconds.withLockedValue { $0 += delta } }
    public func set(milliseconds value: Int64) { milliseconds.withLockedValue { $0 = value } }
}
