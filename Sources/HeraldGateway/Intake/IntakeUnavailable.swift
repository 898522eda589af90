/// Why the intake could not take a notification now; the sender should retry. Each port says it
/// in its protocol (the APNs port: 503 `ServiceUnavailable` or `Shutdown`; the Web Push port:
/// 503 with `Retry-After`).
public enum IntakeUnavailable: Error, Sendable, Hashable, CustomStringConvertible {
    /// The store is behind: too much waits for a commit, a commit is stuck past its bound, or
    /// the store refused or lost the commit.
    case storeBehind
    /// The gateway is shutting down and takes nothing new.
    case shuttingDown

    public var description: String {
        switch self {
        case .storeBehind: "the gateway is behind its store"
        case .shuttingDown: "the gateway is shutting down"
        }
    }
}
