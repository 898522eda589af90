import Logging
import ServiceLifecycle

/// One part of a running gateway, as a `Service` of the gateway's own `ServiceGroup`: work that
/// runs until shutdown (the intake, the recorder, the sweeper…) and the step that stops it.
///
/// `Gateway.run` lists the parts in start order; graceful shutdown stops them in reverse, each
/// only after the one before it has returned. That order is the gateway's shutdown contract:
/// stop accepting, drain the provider ports, commit what was accepted, disconnect devices,
/// record the last acks, leave the cluster, stop sweeping, close the admin port.
struct GatewayPart: Service, CustomStringConvertible {
    let description: String
    /// Runs until ``stop`` makes it return, or until it is cancelled when ``cancelsWork``.
    let work: (@Sendable () async -> Void)?
    /// Cancels ``work`` at shutdown (a loop that ends on cancellation) before ``stop`` runs.
    let cancelsWork: Bool
    /// The shutdown step: closes what the part holds (and so ends ``work``).
    let stop: @Sendable () async -> Void
    /// Where each step of the shutdown is said (info), so that a stop that hangs names its part.
    var logger: Logger?

    init(
        _ description: String, work: (@Sendable () async -> Void)? = nil, cancelsWork: Bool = false,
        stop: @escaping @Sendable () async -> Void = {}
    ) {
        self.description = description
        self.work = work
        self.cancelsWork = cancelsWork
        self.stop = stop
    }

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            if let work { group.addTask { await work() } }
            // Returns at graceful shutdown, or throws when the group is cancelled: stop either way.
            try? await gracefulShutdown()
            logger?.info("stopping", metadata: ["part": "\(description)"])
            if cancelsWork { group.cancelAll() }
            await stop()
            await group.waitForAll()
            logger?.info("stopped", metadata: ["part": "\(description)"])
        }
    }
}
