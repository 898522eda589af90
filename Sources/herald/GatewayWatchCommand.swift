import ArgumentParser
import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1

/// `herald gateway watch`: follows the admin port's live feed (`GET /v1/events`) and prints one
/// line per event, until interrupted or the gateway goes away.
struct GatewayWatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follow what happens to notifications live: refused, accepted, sent to a device, acked.",
        discussion: """
            Reads the running gateway's admin port (start it with --admin-port). One line per event:
              2026-11-24T09:00:00.125Z  accepted  com.example.app  <apns-id>  token=<token> delivering device=<id>
            Web Push traffic (the Web Push port, browsers) is marked [webpush].
            With --json, the events' JSON as the admin port's GET /v1/events sends it.
            Example: herald gateway watch --admin http://127.0.0.1:9090 --topic com.example.app
            """)

    @Option(help: ArgumentHelp("The gateway's admin port.", valueName: "http://HOST:PORT"))
    var admin: String

    @Option(help: "Only this app's notifications (bundle id).")
    var topic: String?

    @Flag(help: "Print each event's JSON instead of a line of text.")
    var json = false

    func validate() throws {
        _ = try AdminPortRequest(admin: admin)
    }

    func run() async throws {
        let request = try AdminPortRequest(admin: admin)
        var path = "/v1/events"
        if let topic {
            guard DeviceProtocol.isValidTopic(topic) else { throw ValidationError("--topic \"\(topic)\" is not a bundle id") }
            path += "?topic=" + (topic.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? topic)
        }
        let failure = Locked<String?>(nil)
        let json = self.json
        let channel: Channel
        do {
            channel = try await request.send(path, headers: [("accept", "text/event-stream")]) { FeedPrinter(json: json, failure: failure) }
        } catch {
            // Not a usage error: the flags are fine, the gateway is not there.
            printError("herald: \(error); is the gateway running with --admin-port \(request.port)?")
            throw ExitCode(1)
        }
        try await channel.closeFuture.get()
        if let failure = failure.withLock({ $0 }) {
            printError("herald: \(failure)")
            throw ExitCode(1)
        }
    }
}

/// Splits the event stream into events and prints them.
private final class FeedPrinter: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    let json: Bool
    private var pending: [UInt8] = []
    /// Why the watch ended other than by the gateway closing it.
    let failure: Locked<String?>
    /// The most an event line may be before the stream is considered broken.
    static let maximumLine = 1 << 20

    init(json: Bool, failure: Locked<String?>) {
        self.json = json
        self.failure = failure
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if head.status != .ok {
                failure.withLock { $0 = "the admin port answered \(head.status.code) to GET /v1/events (an older gateway without the live feed?)" }
                context.close(promise: nil)
            }
        case .body(var buffer):
            pending += buffer.readBytes(length: buffer.readableBytes) ?? []
            var output = ""
            while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending[..<end]
                pending.removeSubrange(...end)
                guard line.starts(with: Array("data: ".utf8)) else { continue }
                output += render(Array(line.dropFirst(6))) + "\n"
            }
            if pending.count > Self.maximumLine {
                failure.withLock { $0 = "the admin port sent a line over \(Self.maximumLine) bytes" }
                context.close(promise: nil)
            }
            if !output.isEmpty { FileHandle.standardOutput.write(Data(output.utf8)) }
        case .end:
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // The gateway going away mid-stream reads as an HTTP body cut short.
        let cutShort = (error as? HTTPParserError) == .invalidEOFState
        failure.withLock { $0 = cutShort ? "the gateway closed the feed (it stopped or restarted)" : "the admin connection failed: \(error)" }
        context.close(promise: nil)
    }

    private func render(_ bytes: [UInt8]) -> String {
        if json { return String(decoding: bytes, as: UTF8.self) }
        guard let event = try? JSONReader.parse(bytes, limits: .standard) else { return String(decoding: bytes, as: UTF8.self) }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let at = event["at"]?.integer(Int64.self).map { formatter.string(from: Date(timeIntervalSince1970: Double($0) / 1000)) } ?? "-"
        var parts = [at, (event["event"]?.stringValue ?? "?").padding(toLength: 8, withPad: " ", startingAt: 0)]
        if let proto = event["protocol"]?.stringValue { parts.append("[" + proto + "]") }
        if let topic = event["topic"]?.stringValue { parts.append(topic) }
        if let id = event["apnsId"]?.stringValue { parts.append(id) }
        if let token = event["token"]?.stringValue { parts.append("token=" + token) }
        if let status = event["status"]?.integer(Int.self) { parts.append(String(status) + " " + (event["reason"]?.stringValue ?? "")) }
        if let why = event["why"]?.stringValue { parts.append("(" + why + ")") }
        if let outcome = event["outcome"]?.stringValue { parts.append(outcome) }
        if let device = event["device"]?.stringValue { parts.append("device=" + device) }
        if let count = event["count"]?.integer(Int.self) { parts.append("\(count) events lost: this watcher read too slowly") }
        return parts.joined(separator: "  ")
    }
}
