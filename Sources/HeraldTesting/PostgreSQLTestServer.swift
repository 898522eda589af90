import Foundation

/// The PostgreSQL server tests may use: `HERALD_TEST_POSTGRES_URL` names it
/// (`postgres://postgres@127.0.0.1:54329/postgres`; scripts/test.sh starts one and sets it).
/// Each test gets a database of its own, made with `psql`.
public enum PostgreSQLTestServer {
    public static var url: String? {
        guard let url = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }

    /// Whether the run must test PostgreSQL (`HERALD_REQUIRE_POSTGRES=1`, set by scripts/test.sh):
    /// then a missing server is a failure, not a skipped case.
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["HERALD_REQUIRE_POSTGRES"] == "1" }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Creates an empty database on the server and returns its URL.
    public static func freshDatabase() throws -> String {
        guard let url else { throw Failure(description: "HERALD_TEST_POSTGRES_URL is not set") }
        let query = url.firstIndex(of: "?").map { String(url[$0...]) } ?? ""
        let base = query.isEmpty ? url : String(url.dropLast(query.count))
        guard let slash = base.range(of: "/", options: .backwards), base[..<slash.lowerBound].hasSuffix("/") == false else {
            throw Failure(description: "HERALD_TEST_POSTGRES_URL \(url) names no database")
        }
        var random = SystemRandomNumberGenerator()
        let name = "herald_test_" + String(random.next() as UInt64, radix: 16)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", url, "-v", "ON_ERROR_STOP=1", "-q", "-c", "CREATE DATABASE \(name)"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "psql could not create a database: \(String(decoding: message, as: UTF8.self))")
        }
        return String(base[..<slash.upperBound]) + name + query
    }
}
