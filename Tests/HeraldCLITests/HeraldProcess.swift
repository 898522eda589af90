import Foundation
import HeraldTesting
import Synchronization

/// Runs the `herald` executable that the build put beside the test bundle.
enum Herald {
    static var executable: String {
        if let override = ProcessInfo.processInfo.environment["HERALD_BIN"] { return override }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        // swift-testing runs from the .xctest bundle (a file on Linux); the binary is its sibling.
        for candidate in [bundle, bundle.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("herald").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return bundle.appendingPathComponent("herald").path
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `herald ARGS…` to completion (`environment`: variables set or, with nil, removed).
    static func run(_ arguments: [String], environment changes: [String: String?] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !changes.isEmpty {
            var environment = ProcessInfo.processInfo.environment
            for (name, value) in changes { environment[name] = value }
            process.environment = environment
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines),
            stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// `herald gateway` as a child process.
final class GatewayProcess: @unchecked Sendable {
    let process = Process()
    let dataDirectory: String
    private let stdout = Pipe()
    private let stderrPath: String
    private(set) var startup: [String: Any] = [:]

    init(dataDirectory: String, extraArguments: [String] = []) throws {
        self.dataDirectory = dataDirectory
        stderrPath = (dataDirectory as NSString).appendingPathComponent("gateway.stderr")
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: Herald.executable)
        process.arguments = ["gateway", "--data-dir", dataDirectory, "--provider-port", "0", "--h2c-port", "0",
                             "--admin-port", "0", "--host", "127.0.0.1", "--log-level", "warning"] + extraArguments
        process.standardOutput = stdout
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
        let line = try readLine()
        guard let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw GatewayProcessError.badStartupLine(line)
        }
        startup = json
    }

    var providerPort: Int { startup["provider_port"] as? Int ?? 0 }
    var h2cPort: Int { startup["h2c_port"] as? Int ?? 0 }
    var adminPort: Int { startup["admin_port"] as? Int ?? 0 }
    var caPath: String { startup["ca"] as? String ?? "" }
    var devicePort: Int { startup["device_port"] as? Int ?? 0 }
    var stderrText: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    private func readLine() throws -> String {
        var bytes = [UInt8]()
        let handle = stdout.fileHandleForReading
        while true {
            let chunk = handle.readData(ofLength: 1)
            if chunk.isEmpty { throw GatewayProcessError.exited(stderrText) }
            if chunk.first == UInt8(ascii: "\n") { break }
            bytes.append(contentsOf: chunk)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Sends a signal and waits for the process to exit; returns its status.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32 {
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

enum GatewayProcessError: Error {
    case badStartupLine(String)
    case exited(String)
}

/// A `herald` command printing JSON lines with an `"event"` field (`herald device run --json`,
/// `herald gateway watch --json`) as a child process; its lines are collected by a thread.
final class DeviceProcess: @unchecked Sendable {
    let process = Process()
    private let stdout = Pipe()
    private let lock = Mutex(())
    private var reader: PipeLineReader!
    private var consumed = 0
    /// The lines that are JSON objects, in order.
    private var lines: [[String: Any]] {
        reader.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    convenience init(dataDirectory: String, gateway: String?, ca: String?, apps: [String], extraArguments: [String] = []) throws {
        var arguments = ["device", "run", "--data-dir", dataDirectory, "--json"]
        if let gateway { arguments += ["--gateway", gateway] }
        if let ca { arguments += ["--ca", ca] }
        for app in apps { arguments += ["--app", app] }
        try self.init(arguments: arguments + extraArguments)
    }

    init(arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: Herald.executable)
        process.arguments = arguments
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        reader = PipeLineReader(stdout.fileHandleForReading)
    }

    /// The next line (after those taken) whose event is `event`; earlier lines are skipped.
    func next(_ event: String, timeout: Duration = .seconds(20)) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let lines = self.lines
            let found = lock.withLock { _ -> Int? in
                while consumed < lines.count {
                    defer { consumed += 1 }
                    if lines[consumed]["event"] as? String == event { return consumed }
                }
                return nil
            }
            if let found { return lines[found] }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw GatewayProcessError.exited("no \(event) event within \(timeout); lines: \(lines)")
    }

    var allLines: [[String: Any]] { lines }

    /// `signal` SIGKILL for a command that installs no handler: a child of Foundation's
    /// `Process` here starts with SIGTERM blocked.
    func stop(signal: Int32 = SIGTERM) {
        if process.isRunning { kill(process.processIdentifier, signal) }
        process.waitUntilExit()
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
}
