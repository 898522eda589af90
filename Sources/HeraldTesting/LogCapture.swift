import HeraldCore
import Logging

/// A log handler for tests that keeps what is logged at or above a level, so that a test can
/// say what an operator would see (and that a graceful stop logs no error).
public struct LogCapture: LogHandler {
    /// One logged message.
    public struct Entry: Sendable, CustomStringConvertible {
        public var level: Logger.Level
        public var message: String
        public var description: String { "\(level): \(message)" }
    }

    private let entries: Locked<[Entry]>
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]

    /// A logger whose messages at `level` and above are kept in the returned capture.
    public static func logger(level: Logger.Level = .warning) -> (Logger, LogCapture) {
        let capture = LogCapture(entries: Locked([]), logLevel: level)
        return (Logger(label: "test") { _ in capture }, capture)
    }

    /// What was logged so far.
    public var logged: [Entry] { entries.withLock { $0 } }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        entries.withLock { $0.append(Entry(level: event.level, message: "\(event.message)")) }
    }
}
