/// Which sequence numbers a node's sweep reads at each look, from the newest sequence number
/// at each look (pure: the sweep loop feeds it what the store said).
///
/// What was stored before the previous look has had a sweep interval for its hint; what was
/// stored after it is left to the hint. A look reads what was numbered over the two intervals
/// before the previous look, so each sequence number is read by two sweeps (a commit up to an
/// interval later than its numbering, as when two nodes commit out of order, is still read
/// once committed), and every `fullEvery`-th look reads from 0: everything held (a commit later
/// still, from an overloaded database, and what a window's `limit` left).
///
/// A range the sweep could not read (``unread(_:)``: the database restarting, the recorder behind)
/// is not left behind: every later look reads from its floor until one is read (issue 63,
/// suspicion 2: the window once moved on, and a held row whose hint was lost while the listener
/// reconnected waited for the full sweep, a minute later).
struct SweepWindow: Sendable {
    let fullEvery: Int
    /// The newest sequence number at the last three looks, the latest last.
    private var newest: [Int64] = []
    private var looks = 0
    /// The floor of the oldest range handed out and not read since.
    private var unreadFloor: Int64?

    init(fullEvery: Int) { self.fullEvery = max(1, fullEvery) }

    /// A full sweep every `fullSweepMilliseconds`, for a sweep every `sweepMilliseconds`
    /// (at least every look when the full interval is the shorter).
    init(sweepMilliseconds: Int64, fullSweepMilliseconds: Int64) {
        self.init(fullEvery: Int(clamping: fullSweepMilliseconds / max(1, sweepMilliseconds)))
    }

    /// The sequence numbers to read now (above `above`, at most `atMost`), or nil: nothing was
    /// stored before the previous look, or nothing in the window (a quiet cluster's sweep reads
    /// nothing between its full looks).
    mutating func look(newest current: Int64) -> (above: Int64, atMost: Int64)? {
        defer {
            newest.append(current)
            if newest.count > 3 { newest.removeFirst() }
            looks += 1
        }
        guard let ceiling = newest.last, ceiling > 0 else { return nil }
        let full = looks % fullEvery == 0 || newest.count < 3
        let floor = min(full ? 0 : newest[newest.count - 3], unreadFloor ?? .max)
        return floor < ceiling ? (floor, ceiling) : nil
    }

    /// The range of the last look was read: what it covered needs no other look.
    mutating func read(_ range: (above: Int64, atMost: Int64)) {
        if let floor = unreadFloor, floor >= range.above { unreadFloor = nil }
    }

    /// The range of the last look could not be read: later looks read from its floor.
    mutating func unread(_ range: (above: Int64, atMost: Int64)) {
        unreadFloor = min(unreadFloor ?? .max, range.above)
    }
}
