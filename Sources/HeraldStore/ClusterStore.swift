import HeraldCore

/// A gateway node of a cluster, as its lease records it.
public struct NodeRecord: Sendable, Hashable {
    public var nodeID: String
    public var startedAtMilliseconds: Int64
    /// The node counts as alive until then; it renews the lease while it runs.
    public var leaseUntilMilliseconds: Int64

    public init(nodeID: String, startedAtMilliseconds: Int64, leaseUntilMilliseconds: Int64) {
        self.nodeID = nodeID
        self.startedAtMilliseconds = startedAtMilliseconds
        self.leaseUntilMilliseconds = leaseUntilMilliseconds
    }
}

/// A store that several gateway nodes share (PostgreSQL): besides everything a ``GatewayStore``
/// keeps, the nodes and their leases, which node holds each connected device (its presence), and
/// a channel for hints, the "a push for your device was just stored" messages from the node that
/// accepted a push to the node that holds its device.
///
/// Hints are only hints. What a device must receive is always read from the notifications
/// table — when it connects, and by each node's periodic sweep of its connected devices — so a
/// lost hint, a dead listener or a dead node delays a delivery and never loses it.
public protocol ClusterStore: GatewayStore {
    /// A node's heartbeat, in one transaction: records the node as alive until `untilMilliseconds`
    /// (registering it on the first call), removes the nodes whose lease ended before
    /// `nowMilliseconds` with their devices' presence (a node being renewed or reaped by another
    /// at that moment is left to it), and counts the nodes alive then.
    @discardableResult
    func renewLease(node: String, startedAtMilliseconds: Int64, untilMilliseconds: Int64, nowMilliseconds: Int64) async throws -> LeaseRenewal
    /// Removes the node and the presence of its devices (graceful shutdown, or a restart under the
    /// same id, whose connections are gone).
    func endLease(node: String) async throws
    /// The nodes whose lease has not ended, by id.
    func liveNodes(nowMilliseconds: Int64) async throws -> [NodeRecord]

    /// Records that `node` holds the device's connection now: the newer connection wins, whichever
    /// node held the device before. Returns who held it before (any node, this one included).
    func claimPresence(deviceID: String, node: String, connection: Int64, atMilliseconds: Int64) async throws -> PresenceHolder?
    /// Takes back a claim that landed after its session had closed (a claim queued behind a
    /// recovering pool, landing after the device moved to another node): if the device's
    /// presence is still this claim's (`node`, `connection`), it goes back to `previous` (the holder
    /// the claim replaced, when the caller knows it still holds the device: another node, or a
    /// newer connection to this one), or is removed (`nil`). A newer claim is never touched.
    func withdrawClaim(deviceID: String, node: String, connection: Int64, restoring previous: PresenceHolder?) async throws
    /// Claims presence again for devices still connected to `node` after its lease lapsed (or
    /// its record was reaped): a device with no presence, or presence on this node, is claimed;
    /// one that another node holds is left there (the device moved: this node must not steal it
    /// back). Returns the devices another node holds.
    func reclaimPresence(node: String, devices: [PresenceClaim], atMilliseconds: Int64) async throws -> Set<String>
    /// Forgets the device's presence if it is still this connection's.
    func releasePresence(deviceID: String, node: String, connection: Int64) async throws
    /// The node holding each of these devices, for those that are connected somewhere.
    func presence(deviceIDs: [String]) async throws -> [String: String]

    /// The deliveries with these sequence numbers that are still held (a hint's content).
    func heldDeliveries(seqs: [Int64]) async throws -> [Delivery]
    /// What is held for the devices connected to `node` with a sequence number above
    /// `seqAbove` and at most `seqAtMost`, not discarded, oldest first, at most `limit` (the
    /// node's sweep for lost hints: a window of recent sequence numbers, or from 0, all of them).
    /// A full sweep (`seqAbove` 0) includes the broadcasts the node's subscribers have not acked.
    func heldDeliveries(onNode node: String, seqAbove: Int64, seqAtMost: Int64, nowMilliseconds: Int64, limit: Int) async throws -> [Delivery]
    /// The broadcasts numbered above `seqAbove` and at most `seqAtMost` that are still their
    /// channel's newest and not past their time: a window sweep hands them to the node's
    /// connected subscribers from its own index (their sessions skip what they have in flight
    /// or acked), with no read per subscriber.
    func broadcasts(seqAbove: Int64, seqAtMost: Int64, nowMilliseconds: Int64) async throws -> [StoredBroadcast]
    /// The newest sequence number given to a notification, 0 when none. The sweep leaves what
    /// is newer than its previous look to the hint: an age by sequence, which no node's clock
    /// (a jump, a skew between nodes) can make wrong.
    func newestSeq() async throws -> Int64

    /// Sends hints: for each node, the sequence numbers of notifications just stored for devices
    /// it holds. Never inside the transaction that stored them.
    func sendHints(_ hints: [String: [Int64]]) async throws
    /// Receives the hints sent to `node` until the task is cancelled or the channel fails (the
    /// caller listens again); `onListening` runs once the node is subscribed.
    func receiveHints(
        node: String, onListening: @escaping @Sendable () -> Void, _ handle: @escaping @Sendable ([Int64]) -> Void
    ) async throws
}

/// What a node's heartbeat found (``ClusterStore/renewLease(node:startedAtMilliseconds:untilMilliseconds:nowMilliseconds:)``).
public struct LeaseRenewal: Sendable, Hashable {
    /// Whether the node's record was still there: `false` on the first renewal, and when its
    /// lease had lapsed and another node reaped it, with its devices' presence (which the node
    /// must then claim again, ``ClusterStore/reclaimPresence(node:devices:atMilliseconds:)``).
    public var continued: Bool
    /// The nodes whose lease had ended, removed with their devices' presence, by id.
    public var reaped: [String]
    /// How many nodes are alive, this one included.
    public var liveNodes: Int

    public init(continued: Bool, reaped: [String], liveNodes: Int) {
        self.continued = continued
        self.reaped = reaped
        self.liveNodes = liveNodes
    }
}

/// A device connected to a node, by the connection that holds it.
/// Who held a device's presence: a node and its connection.
public struct PresenceHolder: Sendable, Hashable {
    public var node: String
    public var connection: Int64
    public init(node: String, connection: Int64) {
        self.node = node
        self.connection = connection
    }
}

public struct PresenceClaim: Sendable, Hashable {
    public var deviceID: String
    public var connection: Int64
    public init(deviceID: String, connection: Int64) {
        self.deviceID = deviceID
        self.connection = connection
    }
}

/// Node ids name a PostgreSQL notification channel and appear in logs: short, plain ASCII.
public enum NodeID {
    public static let maximumLength = 40

    /// Why `id` is not a valid node id, or `nil` when it is.
    public static func problem(_ id: String) -> String? {
        if id.isEmpty { return "a node id may not be empty" }
        if id.utf8.count > maximumLength { return "a node id is at most \(maximumLength) characters" }
        let allowed = id.utf8.allSatisfy { byte in
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x5F
        }
        return allowed ? nil : "a node id may contain only a-z, 0-9, '-' and '_'"
    }
}
