import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HeraldCore

/// Plain HTTP/1.1 requests for tests of the admin port and the provider service's REST API.
public enum TestHTTP {
    /// Sends one request; the answer's status and its body read as JSON (`nil` when empty or not JSON).
    public static func request(
        _ method: String, _ url: String, _ body: String? = nil, headers: [String: String] = [:], bearer: String? = nil
    ) async throws -> (status: Int, json: JSONValue?) {
        guard let target = URL(string: url) else { throw URLError(.badURL) }
        var request = URLRequest(url: target)
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "content-type")
        }
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (http.statusCode, data.isEmpty ? nil : try? JSONReader.parse(data))
    }

    /// curl with `arguments`, sending the target exactly as written (`--path-as-is --globoff`), and
    /// its answer: status, headers (lowercased names), body. curl runs and is read on a thread
    /// of its own: blocking a task's thread would starve the in-process gateway's handlers.
    public static func curl(_ arguments: [String]) async throws -> (status: Int, headers: [String: String], body: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try runCurl(arguments) }) }
        }
    }

    private static func runCurl(_ arguments: [String]) throws -> (status: Int, headers: [String: String], body: String) {
        let process = Process()
        let out = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-s", "-i", "--path-as-is", "--globoff", "--max-time", "10"] + arguments
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let head = parts.first?.components(separatedBy: "\r\n") ?? []
        let status = head.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers, parts.dropFirst().joined(separator: "\r\n\r\n"))
    }
}

/// Waits until `condition` holds, checking every 10 ms for up to 15 s; throws naming `what`
/// when it never does. For state another process or task reaches in its own time (a token
/// registered, a push presented), where the test has no event to wait on.
public func eventually(_ what: String, _ condition: () async -> Bool) async throws {
    for _ in 0..<1500 {
        if await condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    throw NeverHappened(description: "timed out waiting for \(what)")
}

/// What ``eventually(_:_:)`` throws when the condition never held.
public struct NeverHappened: Error, CustomStringConvertible {
    public var description: String
}
