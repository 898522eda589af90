/// `transform` applied to every element, at most `limit` at once, results in the input's order:
/// a million-element input holds `limit` tasks, not a million. Inlinable: the provider service and
/// the CLI call it from other modules, where an unspecialized generic call would cost per element.
@inlinable
public func concurrentMap<Element: Sendable, Result: Sendable>(
    _ elements: [Element], limit: Int, _ transform: @escaping @Sendable (Element) async throws -> Result
) async throws -> [Result] {
    try await withThrowingTaskGroup(of: (Int, Result).self) { group in
        var next = 0
        func startNext() {
            guard next < elements.count else { return }
            let (index, element) = (next, elements[next])
            next += 1
            group.addTask { (index, try await transform(element)) }
        }
        for _ in 0..<max(1, limit) { startNext() }
        var results = [Result?](repeating: nil, count: elements.count)
        while let (index, result) = try await group.next() {
            results[index] = result
            startNext()
        }
        return results.map { $0! }
    }
}
