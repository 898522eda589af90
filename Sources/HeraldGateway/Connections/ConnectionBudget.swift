#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// The connections every port of the gateway may hold together: the process's descriptor limit
/// less a reserve for everything else a gateway opens (its listeners, the store's connections and
/// files, TLS files at a reload, the event loops' own descriptors).
///
/// Past the limit a connection is closed as soon as it is accepted. Without it an accepted
/// connection could take the last descriptor, and a process out of descriptors is not merely
/// refusing connections: libdispatch (under Swift's concurrency on Linux) reads
/// `/proc/<tid>/stat` every second while work is queued and crashes the process when it cannot
/// open it ("workq: registered worker exited prematurely"). Seen in `bench scale --nodes 6
/// 100000`: the nodes that took a killed node's devices went past 20,000 descriptors and died
/// of SIGILL one after the other.
final class ConnectionBudget: Sendable {
    /// How many connections the ports may hold together.
    let limit: Int
    private let open = Atomic<Int>(0)

    init(limit: Int) { self.limit = max(1, limit) }

    /// This process's budget: its descriptor limit (`ulimit -n`, first raised to the hard limit,
    /// as servers do) less ``reserve(forLimit:)``.
    static func forThisProcess() -> ConnectionBudget {
        ConnectionBudget(limit: ConnectionCapacity(descriptorLimit: DescriptorLimit.raisedToHard(), maxMapCount: nil).connections)
    }

    /// Descriptors kept for what is not a connection: a quarter of a small limit, 1,024 of a large one.
    static func reserve(forLimit limit: Int) -> Int { min(1_024, max(16, limit / 4)) }

    /// Takes one connection's place; false when the ports already hold ``limit``.
    func take() -> Bool {
        if open.wrappingAdd(1, ordering: .relaxed).newValue <= limit { return true }
        open.wrappingSubtract(1, ordering: .relaxed)
        return false
    }

    /// Gives a place back (its connection closed).
    func give() { open.wrappingSubtract(1, ordering: .relaxed) }

    /// Connections held now.
    var held: Int { open.load(ordering: .relaxed) }
}

/// What a node's limits let it hold (`herald doctor` reports it): connections, by its descriptor
/// limit (less ``ConnectionBudget``'s reserve), and device connections whose TLS buffers are
/// mapped lazily, by the kernel's `vm.max_map_count` (two mappings each, ``LazyPages``). Past the
/// mappings the buffers come from the heap: they work, and cost more resident memory.
public struct ConnectionCapacity: Sendable, Equatable {
    /// Mappings kept for what is not a device's buffer: libraries, thread stacks, heaps.
    public static let otherMappings = 4_096

    public let descriptorLimit: Int
    public let maxMapCount: Int?
    /// Connections all ports may hold together.
    public let connections: Int

    public init(descriptorLimit: Int, maxMapCount: Int?) {
        self.descriptorLimit = descriptorLimit
        self.maxMapCount = maxMapCount
        connections = max(1, descriptorLimit - ConnectionBudget.reserve(forLimit: descriptorLimit))
    }

    /// Device connections whose buffers the mappings allow (nil when the count is unknown).
    public var mappedConnections: Int? {
        maxMapCount.map { max(0, ($0 - Self.otherMappings) / LazyPages.mappingsPerConnection) }
    }

    /// The `vm.max_map_count` that lets every connection map its buffers.
    public var neededMaxMapCount: Int { connections * LazyPages.mappingsPerConnection + Self.otherMappings }

    /// Whether every connection the descriptors allow can map its buffers.
    public var mappingsSuffice: Bool { (mappedConnections ?? Int.max) >= connections }

    /// What a gateway started like this process would hold: the hard descriptor limit (the
    /// gateway raises its soft limit to it) and the machine's `vm.max_map_count`.
    public static func forThisProcess() -> ConnectionCapacity {
        let text = try? String(contentsOfFile: "/proc/sys/vm/max_map_count", encoding: .utf8)
        return ConnectionCapacity(descriptorLimit: DescriptorLimit.hard(), maxMapCount: text.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
    }
}

/// The process's limit on open descriptors (`RLIMIT_NOFILE`), read in one place for the budget and
/// for `herald doctor`.
enum DescriptorLimit {
    /// The hard limit: what an unprivileged process may raise its soft limit to.
    static func hard() -> Int { read().map { count($0.rlim_max) } ?? 1_024 }

    /// The soft limit after raising it to the hard one (which needs no privilege), as servers do.
    static func raisedToHard() -> Int {
        guard var limits = read() else { return 1_024 }
        if limits.rlim_cur < limits.rlim_max {
            var raised = limits
            raised.rlim_cur = limits.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limits = raised }
        }
        return count(limits.rlim_cur)
    }

    private static func read() -> rlimit? {
        var limits = rlimit()
        return getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 ? limits : nil
    }

    /// `RLIM_INFINITY` (and anything past `Int`) as a count no arithmetic on it overflows.
    private static func count(_ value: rlim_t) -> Int { value >= rlim_t(Int.max / 2) ? Int.max / 4 : Int(value) }
}
