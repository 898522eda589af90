import HeraldCore
import NIOCore
import NIOTLS

/// The connections a listener has open, so that shutdown can wait for them and then close what
/// is left. A connection is forgotten when it closes.
final class OpenConnections: Sendable {
    private let channels = Locked([ObjectIdentifier: Channel]())

    /// Keeps `channel` until it closes.
    func track(_ channel: Channel) {
        let id = ObjectIdentifier(channel)
        channels.withLock { $0[id] = channel }
        channel.closeFuture.whenComplete { [channels] _ in channels.withLock { $0[id] = nil } }
    }

    /// Waits (up to `timeout`) for every connection to close, then closes what is left.
    func waitUntilClosed(timeout: TimeAmount) async {
        let deadline = NIODeadline.now() + timeout
        while NIODeadline.now() < deadline {
            if channels.withLock({ $0.isEmpty }) { return }
            try? await Task.sleep(for: .milliseconds(20))
        }
        for channel in channels.withLock({ Array($0.values) }) { try? await channel.close() }
    }
}
