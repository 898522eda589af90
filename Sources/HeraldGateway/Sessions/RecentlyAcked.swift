/// The last ``capacity`` sequence numbers a session took out of flight by an ack.
///
/// What the store holds for a device is read as a snapshot — the cluster's sweep, a session's
/// reload after the in-flight bound — and offered to the session one store round trip later. An
/// ack that arrives in between takes the push out of flight before the stale snapshot offers it,
/// and the session would send it again. The session skips what it acked lately: the last 128
/// acks, more than a device acks in one round trip to the store (acks are recorded before a
/// snapshot is read, so only the ones during the read race it). Beyond that bound the push goes
/// again — delivery is at least once, and the device drops a repeated apns-id — never lost.
///
/// Empty until the first ack and released when the session is quiet (``DeviceSession/quiet()``),
/// so an idle connection holds nothing here.
struct RecentlyAcked {
    static let capacity = 128
    private var seqs: [Int64] = []
    private var next = 0

    mutating func insert(_ seq: Int64) {
        if seqs.count < Self.capacity {
            if seqs.isEmpty { seqs.reserveCapacity(Self.capacity) }
            seqs.append(seq)
        } else {
            seqs[next] = seq
            next = (next + 1) % Self.capacity
        }
    }

    func contains(_ seq: Int64) -> Bool {
        seqs.contains(seq)
    }
}
