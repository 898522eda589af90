import ArgumentParser
import Foundation

/// heaptrack (the Debian package `heaptrack`) around a gateway `bench scale` starts: its preload
/// library records every allocation of the child into a raw file, and its interpreter turns that
/// into the file `heaptrack_print` reads (issue 48: what a connection holds).
struct HeapProfiler {
    /// Where heaptrack's Debian and upstream packages put their helpers.
    private static let libraryDirectories = ["/usr/lib/heaptrack", "/usr/lib/x86_64-linux-gnu/heaptrack", "/usr/local/lib/heaptrack"]

    let output: String
    private let preload: String
    private let interpreter: String

    init(output: String) throws {
        guard let directory = Self.libraryDirectories.first(where: {
            FileManager.default.isReadableFile(atPath: $0 + "/libheaptrack_preload.so")
                && FileManager.default.isExecutableFile(atPath: $0 + "/libexec/heaptrack_interpret")
        }) else {
            throw ValidationError("--heap-profile needs heaptrack (apt-get install heaptrack); looked in \(Self.libraryDirectories.joined(separator: ", "))")
        }
        self.output = output
        preload = directory + "/libheaptrack_preload.so"
        interpreter = directory + "/libexec/heaptrack_interpret"
    }

    /// The child's raw record, before `interpret()`.
    var rawPath: String { output + ".raw" }

    /// What the profiled process's environment adds.
    var environment: [String: String] { ["LD_PRELOAD": preload, "DUMP_HEAPTRACK_OUTPUT": rawPath] }

    /// Turns the raw record into `output` (the process must have ended); returns its path.
    func interpret() throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: interpreter)
        process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: rawPath))
        guard FileManager.default.createFile(atPath: output, contents: nil) else { throw ValidationError("cannot write \(output)") }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ValidationError("heaptrack_interpret failed on \(rawPath) (status \(process.terminationStatus))") }
        try? FileManager.default.removeItem(atPath: rawPath)
        return output
    }
}
