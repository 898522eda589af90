import HeraldCore

/// The states of a stored notification, as the stores record them.
public enum NotificationState: Int, Sendable, Hashable {
    /// Waiting for its device (possibly sent already, not yet acked).
    case held = 0
    case acked = 2
    case expired = 3
    case replaced = 4
    case dropped = 5
}
