/// A min-heap of due instants with a payload each: the soonest is on top. Used with lazy
/// invalidation (an entry whose payload is stale is popped and skipped when it surfaces), so that
/// rescheduling is one push, never a search.
public struct DueHeap<Payload> {
    public struct Entry {
        public var due: Int64
        public var payload: Payload
    }
    private var items: [Entry] = []

    public init() {}

    public var top: Entry? { items.first }
    public var count: Int { items.count }
    public var isEmpty: Bool { items.isEmpty }

    public mutating func push(due: Int64, _ payload: Payload) {
        items.append(Entry(due: due, payload: payload))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i].due < items[parent].due else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    @discardableResult
    public mutating func pop() -> Entry? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let entry = items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < items.count, items[l].due < items[m].due { m = l }
            if r < items.count, items[r].due < items[m].due { m = r }
            if m == i { break }
            items.swapAt(i, m)
            i = m
        }
        return entry
    }
}

extension DueHeap: Sendable where Payload: Sendable {}
extension DueHeap.Entry: Sendable where Payload: Sendable {}
