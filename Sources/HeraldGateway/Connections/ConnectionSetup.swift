import HeraldCore
import Logging
import NIOCore
import Prometheus
import Synchronization

// Socket options: Herald sets none but SO_REUSEADDR on the listeners. SwiftNIO's ServerBootstrap
// sets TCP_NODELAY on every listening socket and Linux copies it to the sockets accepted from it,
// so every port's connections send at once (Nagle's algorithm off); ConnectionSetupTests reads it
// back from accepted sockets. Do not set `.childChannelOption(.tcpOption(.tcp_nodelay), value: 0)`
// or `enableMPTCP(true)` (which drops the listener's option) without measuring delivery latency.

/// A connection refused on purpose by a bound (too many from one address, or in all), as opposed to one the
/// gateway failed to set up: only the second kind is a fault of the port.
protocol DeliberateRefusal: Error {}

extension TooManyHandshakesFromAddress: DeliberateRefusal {}

/// Connections each port accepted but could not set up (a socket option the kernel refused, a
/// pipeline that could not be built): every one logged with its reason and counted in
/// `herald_connection_setup_failures_total{port}`; a port whose last
/// ``ConnectionSetupWatch/failingAfter`` accepted connections all failed, with none set up since,
/// is named by `GET /health` with the last reason.
///
/// A connection set up is one relaxed atomic load on the fast path (no lock while no port fails).
public final class ConnectionSetupWatch: Sendable {
    /// Consecutive failures after which a port is reported as failing every connection.
    static let failingAfter = 3

    private struct Failing { var count: Int; var lastError: String }
    private let failing = Mutex([String: Failing]())
    /// Ports with at least one failure since their last connection set up.
    private let portsWithFailures = Atomic<Int>(0)
    private let counters = Locked([String: Counter]())
    private let makeCounter: @Sendable (String) -> Counter

    init(makeCounter: @escaping @Sendable (String) -> Counter) {
        self.makeCounter = makeCounter
    }

    /// A connection of `port` is set up: the port is no longer failing.
    func succeeded(port: String) {
        guard portsWithFailures.load(ordering: .relaxed) != 0 else { return }
        failing.withLock { failing in
            if failing.removeValue(forKey: port) != nil { portsWithFailures.subtract(1, ordering: .relaxed) }
        }
    }

    /// A connection of `port` could not be set up: logged (warning) with `error`, counted.
    func failed(port: String, error: any Error, peer: String, logger: Logger) {
        let reason = "\(error)"
        let count = failing.withLock { failing in
            var entry = failing[port] ?? Failing(count: 0, lastError: reason)
            if entry.count == 0 { portsWithFailures.add(1, ordering: .relaxed) }
            entry.count += 1
            entry.lastError = reason
            failing[port] = entry
            return entry.count
        }
        counter(port).increment()
        logger.warning("connection could not be set up", metadata: [
            "port": "\(port)", "peer": "\(peer)", "error": "\(reason)", "failures_in_a_row": "\(count)",
        ])
    }

    /// The ports failing every connection, in words (for `/health`); empty when none.
    func problems() -> [String] {
        guard portsWithFailures.load(ordering: .relaxed) != 0 else { return [] }
        return failing.withLock { failing in
            failing.filter { $0.value.count >= Self.failingAfter }.sorted { $0.key < $1.key }.map { port, entry in
                "the \(port) port could not set up its last \(entry.count) connections (none since): \(entry.lastError)"
            }
        }
    }

    private func counter(_ port: String) -> Counter {
        counters.withLock { counters in
            if let existing = counters[port] { return existing }
            let made = makeCounter(port)
            counters[port] = made
            return made
        }
    }

    /// The handler a listener's server channel gets: NIO reports a child connection whose options
    /// or initializer failed as an error on the server channel, after closing it.
    func reporter(port: String, logger: Logger) -> some ChannelInboundHandler & Sendable {
        SetupFailureReporter(port: port, watch: self, logger: logger)
    }

    /// Watches a bound listener: the reporter goes at the end of the server channel's pipeline,
    /// after NIO's accept handler, which is where a child that could not be set up is reported
    /// (a handler added by `serverChannelInitializer` would sit before it and never see it).
    /// The port's failure counter exists from then on, at 0, so that `increase()` in an alerting
    /// rule sees its first failure.
    func watch(_ serverChannel: Channel, port: String, logger: Logger) async throws {
        _ = counter(port)
        try await serverChannel.pipeline.addHandler(reporter(port: port, logger: logger)).get()
    }
}

/// Reports to a ``ConnectionSetupWatch`` what the listener's accept step fails to set up.
private final class SetupFailureReporter: ChannelInboundHandler, Sendable {
    typealias InboundIn = Any
    let port: String
    let watch: ConnectionSetupWatch
    let logger: Logger

    init(port: String, watch: ConnectionSetupWatch, logger: Logger) {
        self.port = port
        self.watch = watch
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A refusal by a bound was counted where it was made. Errors of accept(2) itself (EMFILE
        // and the like) arrive here too: they fail a connection just as surely.
        guard !(error is DeliberateRefusal) else { return }
        watch.failed(port: port, error: error, peer: "?", logger: logger)
    }
}
