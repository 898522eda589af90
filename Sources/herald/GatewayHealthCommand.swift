import ArgumentParser
import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import NIOPosix

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
        _ = try target()
    }

    private func target() throws -> (host: String, port: Int) {
        guard let url = URLComponents(string: admin), url.scheme == "http", let host = url.host, let port = url.port,
              (1...65_535).contains(port) else {
            throw ValidationError("--admin must be http://HOST:PORT (the gateway's --admin-port), not \(admin)")
        }
        // URLComponents keeps an IPv6 literal's brackets.
        return (host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host, port)
    }

    func run() async throws {
        let (host, port) = try target()
        let answer = Locked(HealthAnswer())
        let deadline = TimeAmount.seconds(Int64(timeout))
        let channel: Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(deadline)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(HealthReader(answer: answer))
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            printError("herald: unhealthy: cannot reach the admin port at \(admin) (\(error))")
            throw ExitCode(1)
        }
        let timer = channel.eventLoop.scheduleTask(in: deadline) {
            answer.withLock { $0.failure = $0.failure ?? "no answer within \(timeout) s" }
            channel.close(promise: nil)
        }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/health")
        head.headers.add(name: "host", value: "\(host):\(port)")
        head.headers.add(name: "connection", value: "close")
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        try? await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
        try? await channel.closeFuture.get()
        timer.cancel()
        let result = answer.withLock { $0 }
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

/// What the admin port answered so far.
private struct HealthAnswer: Sendable {
    var status: Int?
    var body = ""
    var complete = false
    var failure: String?
}

/// Reads one bounded answer and closes.
private final class HealthReader: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    let answer: Locked<HealthAnswer>
    private var bytes: [UInt8] = []

    init(answer: Locked<HealthAnswer>) {
        self.answer = answer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            answer.withLock { $0.status = Int(head.status.code) }
        case .body(var buffer):
            bytes += buffer.readBytes(length: min(buffer.readableBytes, GatewayHealthCommand.maximumBody - bytes.count)) ?? []
            if bytes.count >= GatewayHealthCommand.maximumBody {
                answer.withLock { $0.failure = "the admin port's answer is over \(GatewayHealthCommand.maximumBody) bytes" }
                context.close(promise: nil)
            }
        case .end:
            let text = String(decoding: bytes, as: UTF8.self)
            answer.withLock { $0.body = text; $0.complete = true }
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        answer.withLock { $0.failure = $0.failure ?? "the admin connection failed: \(error)" }
        context.close(promise: nil)
    }
}
