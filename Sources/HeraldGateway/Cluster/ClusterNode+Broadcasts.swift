import HeraldCore
import HeraldStore
import NIOCore

/// Broadcasts across nodes: one hint per node for each broadcast, whatever the number of
/// subscribers (issue 66). The accepting node hands a broadcast to its own subscribers; every
/// other live node is hinted its key (``Delivery/key(ofBroadcast:)``), reads it once and hands
/// it to the subscribers connected there. A lost hint is made good by the sweep, whose window of
/// sequence numbers covers broadcasts too (``ClusterStore/heldDeliveries(onNode:seqAbove:seqAtMost:nowMilliseconds:limit:)``).
extension ClusterNode {
    /// Takes a broadcast this node stored, to hint to the others.
    func forward(_ broadcast: StoredBroadcast) {
        // Closed only while the node stops: the other nodes' sweeps deliver it then.
        _ = outgoingBroadcasts.append(broadcast.seq)
    }

    func sendBroadcastHints() async {
        while let seqs = await outgoingBroadcasts.nextBatch() {
            guard configuration.hints else { continue }
            do {
                let store = self.store, now = clock.nowMilliseconds()
                let nodes = try await withDeadline(storeTimeout) { try await store.liveNodes(nowMilliseconds: now) }
                let keys = seqs.map(Delivery.key(ofBroadcast:))
                var hints: [String: [Int64]] = [:]
                for node in nodes where node.nodeID != nodeID { hints[node.nodeID] = keys }
                guard !hints.isEmpty else { continue }
                try await store.sendHints(hints)
                metrics.clusterHintsSent.increment(by: Int64(hints.count * keys.count))
            } catch {
                logger.warning("could not hint broadcasts to other nodes (their sweeps deliver them)", metadata: [
                    "count": "\(seqs.count)", "error": "\(error)",
                ])
            }
        }
    }

    /// Hinted broadcasts (their keys): each read once and handed to its subscribers connected here.
    func deliverHinted(broadcasts keys: [Int64]) async throws {
        for key in Set(keys) {
            guard let broadcast = try await store.broadcast(seq: -key) else { continue }
            registry.deliver(broadcast)
        }
    }
}
