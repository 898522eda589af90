import ArgumentParser
import Foundation
import HeraldCore
import Logging
import OTel
import Synchronization

/// `--log-format`: how the long-running commands (`gateway run`, `device run`, `provider`) write
/// their logs on standard error.
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    /// One line a person reads: `2026-11-24T09:00:00+0000 info herald.gateway : message`.
    case text
    /// One JSON object a line, for a log collector:
    /// `{"label":"herald.gateway","level":"info","message":"…","metadata":{…},"time":"2026-11-24T09:00:00.123Z"}`.
    case json

    /// Installs the process's log handler (once, before the first logger is made, the tracing
    /// exporter's own included: its warnings are then lines of the same format). With
    /// `traced` (an OTLP endpoint was given), each record made inside a span carries its
    /// `trace_id` and `span_id`.
    /// Whether the process writes JSON lines (set by ``bootstrap(traced:)``): `printError`'s
    /// notices are then JSON records too, so that every line on standard error is JSON.
    static let writesJSON = Atomic<Bool>(false)

    func bootstrap(traced: Bool = false) {
        let traced: Logger.MetadataProvider? = traced ? OTel.makeLoggingMetadataProvider() : nil
        switch self {
        case .text:
            LoggingSystem.bootstrap({ ProcessLevelHandler(StreamLogHandler.standardError(label: $0, metadataProvider: $1)) }, metadataProvider: traced)
        case .json:
            Self.writesJSON.store(true, ordering: .relaxed)
            LoggingSystem.bootstrap({ ProcessLevelHandler(JSONLogHandler(label: $0, metadataProvider: $1)) }, metadataProvider: traced)
        }
    }
}

/// The process's log level: `--log-level` sets it at start, and SIGHUP may change it while the
/// process runs (`herald gateway`, docs/operations.md). Every logger made by the bootstrapped
/// handlers follows it, unless that logger was given a level of its own (a quiet one).
enum ProcessLogLevel {
    /// The levels by code (read on every log call's level check: an index, no search).
    private static let levels = Logger.Level.allCases
    private static let raw = Atomic<Int>(levels.firstIndex(of: .info) ?? 0)

    static var level: Logger.Level {
        get { levels[raw.load(ordering: .relaxed)] }
        set { raw.store(levels.firstIndex(of: newValue) ?? 0, ordering: .relaxed) }
    }
}

/// A log handler whose level is the process's (``ProcessLogLevel``) until one is set on it.
struct ProcessLevelHandler: LogHandler {
    private var base: any LogHandler
    private var ownLevel: Logger.Level?

    init(_ base: any LogHandler) { self.base = base }

    var logLevel: Logger.Level {
        get { ownLevel ?? ProcessLogLevel.level }
        set { ownLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { base.metadataProvider }
        set { base.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) { base.log(event: event) }
}

/// The `--log-format` option, shared by the long-running commands.
struct LogFormatOption: ParsableArguments {
    @Option(help: "How logs on standard error are written: text (for people) or json (one object a line, for a log collector).")
    var logFormat: LogFormat = .text
}

/// Writes each log record as one line of JSON on standard error (one `write` a record, so lines
/// from several threads never interleave).
struct JSONLogHandler: LogHandler {
    let label: String
    /// Where the records' time comes from (the project's one wall clock).
    var clock: any WallClock = SystemWallClock()
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    /// Metadata of the task's context (the trace ids of its span): merged into every record.
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    private struct Record: Encodable {
        var time: String
        var level: String
        var label: String
        var message: String
        var source: String
        var metadata: [String: String]?
    }

    /// One of the command's own notices (`herald: …`) as a record, whatever the log level: a
    /// notice is always written, as in text mode.
    static func writeNotice(_ text: String) {
        let message = text.hasPrefix("herald: ") ? String(text.dropFirst("herald: ".count)) : text
        let level: Logger.Level = message.hasPrefix("warning: ") ? .warning : .notice
        JSONLogHandler(label: "herald").write(level: level, message: message, source: "herald", metadata: [:])
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        merged.merge(event.metadata ?? [:]) { _, new in new }
        if let error = event.error { merged["error"] = "\(error)" }
        write(level: event.level, message: event.message.description, source: event.source, metadata: merged)
    }

    private func write(level: Logger.Level, message: String, source: String, metadata merged: Logger.Metadata) {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let record = Record(
            time: formatter.string(from: Date(timeIntervalSince1970: Double(clock.nowMilliseconds()) / 1000)), level: level.rawValue, label: label, message: message, source: source,
            metadata: merged.isEmpty ? nil : merged.mapValues(\.description))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var line = try? encoder.encode(record) else { return }
        line.append(0x0A)
        FileHandle.standardError.write(line)
    }
}

/// `--log-level trace|debug|info|notice|warning|error|critical`.
extension Logger.Level: @retroactive ExpressibleByArgument {}
