import HeraldCore

/// A queue that many producers append to and one consumer drains in batches: while the consumer
/// works on a batch, the next one accumulates, so batches grow with load by themselves. There is
/// no task per item. Used by the intake (accepted pushes → store) and the delivery recorder
/// (acks → store).
final class BatchQueue<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var waiter: CheckedContinuation<Void, Never>?
        var isClosed = false
    }

    private enum Next { case batch([Item]), finished, wait }

    private let state = Locked(State())
    private let maximumBatchSize: Int

    init(maximumBatchSize: Int = .max) {
        precondition(maximumBatchSize > 0)
        self.maximumBatchSize = maximumBatchSize
    }

    /// Appends items; `false` (and nothing appended) once the queue is closed.
    @discardableResult
    func append(contentsOf items: some Collection<Item>) -> Bool {
        let (accepted, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !state.isClosed else { return (false, nil) }
            state.items.append(contentsOf: items)
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        waiter?.resume()
        return accepted
    }

    @discardableResult
    func append(_ item: Item) -> Bool { append(contentsOf: CollectionOfOne(item)) }

    enum Admission { case accepted, full, closed }

    /// Appends an item only while fewer than `limit` are queued (the queue's high-water mark).
    func append(_ item: Item, limit: Int) -> Admission {
        let (admission, waiter) = state.withLock { state -> (Admission, CheckedContinuation<Void, Never>?) in
            guard !state.isClosed else { return (.closed, nil) }
            guard state.items.count < limit else { return (.full, nil) }
            state.items.append(item)
            defer { state.waiter = nil }
            return (.accepted, state.waiter)
        }
        waiter?.resume()
        return admission
    }

    /// Refuses new items; ``nextBatch()`` returns `nil` once what is queued has been taken.
    func close() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.isClosed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Takes everything queued now, without waiting (the intake answers it when the store stalls).
    func takeAll() -> [Item] {
        state.withLock { state in
            defer { state.items.removeAll(keepingCapacity: false) }
            return state.items
        }
    }

    /// The next batch (at most `maximumBatchSize` items, oldest first), waiting for one if the
    /// queue is empty; `nil` when closed and drained. One consumer at a time.
    func nextBatch() async -> [Item]? {
        while true {
            let next = state.withLock { state -> Next in
                if !state.items.isEmpty {
                    if state.items.count <= maximumBatchSize {
                        defer { state.items.removeAll(keepingCapacity: true) }
                        return .batch(state.items)
                    }
                    let batch = Array(state.items.prefix(maximumBatchSize))
                    state.items.removeFirst(maximumBatchSize)
                    return .batch(batch)
                }
                return state.isClosed ? .finished : .wait
            }
            switch next {
            case .batch(let batch): return batch
            case .finished: return nil
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if !state.items.isEmpty || state.isClosed { return true }
                        state.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }
}
