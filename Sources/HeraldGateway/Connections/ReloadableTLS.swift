import HeraldCore
import NIOSSL

/// A port's TLS context, replaceable while the port runs: each new connection takes the current
/// one, connections already open keep the one they started with (`herald gateway` reloads on
/// SIGHUP: a renewed certificate without dropping a single device).
public final class ReloadableTLSContext: Sendable {
    private let context: Locked<NIOSSLContext>
    private let make: @Sendable () throws -> NIOSSLContext

    init(_ make: @escaping @Sendable () throws -> NIOSSLContext) throws {
        self.make = make
        context = Locked(try make())
    }

    /// What a new connection uses.
    var current: NIOSSLContext { context.withLock { $0 } }

    /// A context built anew from the files (throws, changing nothing, when they do not make one).
    func prepare() throws -> NIOSSLContext { try make() }

    func install(_ fresh: NIOSSLContext) { context.withLock { $0 = fresh } }
}

/// Every TLS context a gateway's ports use, reloaded together or not at all.
final class GatewayTLS: Sendable {
    private let contexts: Locked<[ReloadableTLSContext]> = Locked([])

    func add(_ context: ReloadableTLSContext) -> ReloadableTLSContext {
        contexts.withLock { $0.append(context) }
        return context
    }

    /// Reads the certificate and key files again and, when every port's context builds, installs
    /// them all; otherwise throws and every port keeps the one it has.
    func reload() throws -> Int {
        let all = contexts.withLock { $0 }
        let fresh = try all.map { try $0.prepare() }
        for (context, new) in zip(all, fresh) { context.install(new) }
        return all.count
    }
}
