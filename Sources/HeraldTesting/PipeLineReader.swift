import Foundation
import Synchronization

/// Reads a child process's output line by line on a thread of its own, keeping every line, so
/// that a test can wait for one without blocking its task (`herald device run --json`,
/// `herald gateway watch`, `curl -N` following server-sent events).
public final class PipeLineReader: @unchecked Sendable {
    private let lock = Mutex(())
    private var collected: [String] = []

    /// Starts reading `handle` until it reaches its end.
    public init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            var buffer = [UInt8]()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                for byte in chunk {
                    if byte == UInt8(ascii: "\n") {
                        let line = String(decoding: buffer, as: UTF8.self)
                        lock.withLock { _ in collected.append(line) }
                        buffer.removeAll()
                    } else {
                        buffer.append(byte)
                    }
                }
            }
        }
    }

    /// Every complete line read so far.
    public var lines: [String] { lock.withLock { _ in collected } }
}
