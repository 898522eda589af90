import ArgumentParser
import Foundation

/// `herald gateway health`: asks a running gateway's admin port `GET /health` and exits 0 when it
/// answers 200: the container image's health check, and a probe for scripts, with nothing else
/// installed (no curl in the image).
struct GatewayHealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Ask a running gateway whether it is healthy (its admin port's GET /health): exit 0 if so, 1 if not.",
        discussion: """
            Prints what the gateway answered (`ok`, or what is wrong: the store not answering, a port
            failing every connection, the cluster lease lost). Exits 1 when it answers anything but
            200, or does not answer within --timeout. The container image's HEALTHCHECK runs it.
            Example: herald gateway health --admin http://127.0.0.1:9090
            """)

    @Option(help: ArgumentHelp("The gateway's admin port.", valueName: "http://HOST:PORT"))
    var admin = "http://127.0.0.1:9090"

    @Option(help: ArgumentHelp("Seconds to wait for the answer (1 to 60).", valueName: "SECONDS"))
    var timeout = 5

    /// The most of the answer read: /health's body is a few lines.
    static let maximumBody = 64 * 1024

    func validate() throws {
        guard (1...60).contains(timeout) else { throw ValidationError("--timeout is 1 to 60 seconds, not \(timeout)") }
        _ = try AdminPortRequest(admin: admin)
    }

    func run() async throws {
        let result: AdminPortRequest.Answer
        do {
            result = try await AdminPortRequest(admin: admin).get("/health", timeout: .seconds(Int64(timeout)), maximumBody: Self.maximumBody)
        } catch {
            printError("herald: unhealthy: \(error)")
            throw ExitCode(1)
        }
        let body = result.body.trimmingCharacters(in: .whitespacesAndNewlines)
        if result.status == 200, result.complete {
            print(body.isEmpty ? "ok" : body)
            return
        }
        let why = result.failure ?? result.status.map { "the admin port answered \($0)" + (body.isEmpty ? "" : ": \(body)") }
            ?? "the admin port closed the connection without an answer"
        printError("herald: unhealthy: \(why)")
        throw ExitCode(1)
    }
}
