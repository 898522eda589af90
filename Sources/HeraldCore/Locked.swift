import Synchronization

/// A value behind Herald's one lock type, the standard library's `Mutex`, in a class so that it
/// can be shared: captured by closures, handed to several objects. Where a lock is a stored
/// property of one object, that object holds a `Mutex` itself or uses this box alike.
///
/// Hold the lock for a few instructions only: never across an `await`, I/O or a callback.
public final class Locked<Value: Sendable>: Sendable {
    @usableFromInline
    let mutex: Mutex<Value>

    public init(_ value: Value) {
        mutex = Mutex(value)
    }

    /// Runs `body` with the value, under the lock. Inlinable: called on the hot paths of other
    /// modules, it is specialized there instead of going through a generic call.
    @inlinable
    public func withLock<Result: Sendable, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try mutex.withLock { (value: inout sending Value) throws(Failure) -> Result in try body(&value) }
    }
}
