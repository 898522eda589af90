/// The life of one HTTP/2 server connection, without a channel or a clock: how many streams are
/// open, whether it serves, drains for a shutdown, or is going away; and what each event asks of
/// the connection (``HTTP2ServerConnection`` does it). Both HTTP/2 ports use it: the provider port
/// and the Web Push port.
struct HTTP2ConnectionStateMachine: Sendable, Hashable {
    enum Phase: Sendable, Hashable {
        /// Taking streams; with none open, the idle timer runs.
        case serving
        /// GOAWAY `Shutdown` sent: the open streams are answered, then the connection closes.
        case draining
        /// GOAWAY sent for a reason of its own (idle, a refused certificate): closing once written.
        case goingAway
    }

    /// What the connection does next.
    enum Action: Sendable, Hashable {
        case none
        /// Start (or restart) the idle timer.
        case armIdleTimer
        /// Stop the idle timer.
        case cancelIdleTimer
        /// Send GOAWAY with this reason and close the connection once it is written.
        case goAwayAndClose(reason: String)
        /// Send GOAWAY `Shutdown` (the open streams go on).
        case sendShutdownGoAway
        /// Send GOAWAY `Shutdown`; nothing is open, so the drain is already complete.
        case sendShutdownGoAwayDrained
        /// The last open stream of a draining connection closed.
        case drained
    }

    private(set) var phase = Phase.serving
    private(set) var openStreams = 0

    var isDraining: Bool { phase != .serving }

    /// The connection is set up: with no stream yet, the idle timer starts.
    func started() -> Action { phase == .serving ? .armIdleTimer : .none }

    mutating func streamOpened() -> Action {
        openStreams += 1
        return openStreams == 1 && phase == .serving ? .cancelIdleTimer : .none
    }

    mutating func streamClosed() -> Action {
        // NIO reports each stream's close once; a close without an open (a table reset) is ignored.
        guard openStreams > 0 else { return .none }
        openStreams -= 1
        guard openStreams == 0 else { return .none }
        switch phase {
        case .serving: return .armIdleTimer
        case .draining: return .drained
        case .goingAway: return .none
        }
    }

    /// The idle timer rang. A stream opened meanwhile (its cancel raced the timer) keeps the
    /// connection; so does a drain already under way.
    mutating func idleTimerFired() -> Action {
        guard phase == .serving, openStreams == 0 else { return .none }
        phase = .goingAway
        return .goAwayAndClose(reason: "IdleTimeout")
    }

    /// Refuses the rest of the connection for `reason` (once).
    mutating func refuse(reason: String) -> Action {
        guard phase == .serving else { return .none }
        phase = .goingAway
        return .goAwayAndClose(reason: reason)
    }

    /// A graceful shutdown: GOAWAY, then the drain completes when no stream is open.
    mutating func beginDraining() -> Action {
        switch phase {
        case .serving:
            phase = .draining
            return openStreams == 0 ? .sendShutdownGoAwayDrained : .sendShutdownGoAway
        case .draining, .goingAway:
            return .none
        }
    }
}
