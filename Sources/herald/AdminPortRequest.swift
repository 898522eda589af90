import ArgumentParser
import Foundation
import HeraldCore
import HeraldOperations
import NIOCore
import NIOHTTP1
import NIOPosix

/// A `GET` to a running gateway's admin port: `herald gateway health`'s `/health` and
/// `herald bench delivery`'s `/metrics` (read whole, bounded in time and bytes), `herald gateway
/// watch`'s live feed (read by its own handler as it comes).
struct AdminPortRequest {
    /// The admin port as the operator gave it, `http://HOST:PORT`.
    let admin: String
    let host: String
    let port: Int

    /// What the admin port answered: `failure` says why there is no complete answer.
    struct Answer: Sendable {
        var status: Int?
        var body = ""
        var complete = false
        var failure: String?
    }

    /// `admin` checked: `http://HOST:PORT`, an IPv6 literal in brackets.
    init(admin: String) throws {
        guard let url = URLComponents(string: admin), url.scheme == "http", let host = url.host, let port = url.port,
              (1...65_535).contains(port) else {
            throw ValidationError("--admin must be http://HOST:PORT (the gateway's --admin-port), not \(admin)")
        }
        self.admin = admin
        // URLComponents keeps an IPv6 literal's brackets.
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = port
    }

    /// `GET path`, read whole up to `maximumBody` bytes; throws only when the port cannot be
    /// reached (`AdminPortUnreachable`).
    func get(_ path: String, timeout: TimeAmount, maximumBody: Int) async throws -> Answer {
        let answer = Locked(Answer())
        let channel = try await send(path, connectTimeout: timeout) { AdminAnswerReader(answer: answer, maximumBody: maximumBody) }
        let seconds = timeout.nanoseconds / 1_000_000_000
        let timer = channel.eventLoop.scheduleTask(in: timeout) {
            answer.withLock { $0.failure = $0.failure ?? "no answer within \(seconds) s" }
            channel.close(promise: nil)
        }
        try? await channel.closeFuture.get()
        timer.cancel()
        return answer.withLock { $0 }
    }

    /// Connects and sends `GET path`, the answer read by the handler `reader` makes (which closes
    /// the connection when it is done); the connection is returned once the request is written.
    func send(
        _ path: String, headers: [(String, String)] = [], connectTimeout: TimeAmount = .seconds(10),
        reader: @escaping @Sendable () -> any ChannelInboundHandler
    ) async throws -> Channel {
        let channel: Channel
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(connectTimeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(reader())
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            throw AdminPortUnreachable(description: "cannot reach the admin port at \(admin) (\(error))")
        }
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path)
        head.headers.add(name: "host", value: "\(host):\(port)")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        try? await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
        return channel
    }
}

struct AdminPortUnreachable: Error, CustomStringConvertible {
    let description: String
}

/// Reads one bounded answer and closes.
private final class AdminAnswerReader: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    let answer: Locked<AdminPortRequest.Answer>
    let maximumBody: Int
    private var bytes: [UInt8] = []

    init(answer: Locked<AdminPortRequest.Answer>, maximumBody: Int) {
        self.answer = answer
        self.maximumBody = maximumBody
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            answer.withLock { $0.status = Int(head.status.code) }
        case .body(var buffer):
            bytes += buffer.readBytes(length: min(buffer.readableBytes, maximumBody - bytes.count)) ?? []
            if bytes.count >= maximumBody {
                answer.withLock { [maximumBody] in $0.failure = "the admin port's answer is over \(maximumBody) bytes" }
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

extension AdminPortRequest {
    /// The gateway's `/metrics`, read for its histograms.
    func histograms() async throws -> LatencyHistograms {
        let answer = try await get("/metrics", timeout: .seconds(10), maximumBody: 4 << 20)
        guard answer.status == 200, answer.complete else {
            throw ValidationError("the admin port's /metrics did not answer 200: \(answer.failure ?? answer.status.map(String.init) ?? "no answer")")
        }
        return LatencyHistograms(exposition: answer.body)
    }
}
