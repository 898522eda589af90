import ArgumentParser
import Foundation
import HeraldClient
import HeraldCore
import HeraldProvider
import HeraldProviderServer
import Logging
import ServiceLifecycle

struct ProviderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provider",
        abstract: "Run the provider service: the app's own server (registrations, localized sends, schedules in each user's time zone, pruning) with a REST API.",
        discussion: """
            Keeps its state in DIR/provider.sqlite and sends through an APNs client to --gateway (a Herald
            gateway's provider port, or Apple's https://api.push.apple.com). Schedules survive restarts:
            occurrences missed while stopped are sent at start-up when at most --missed-window old. The REST
            API and its spec (GET /openapi.yaml, /openapi.json) are described in docs/provider-service.md. Prints
            one JSON line when ready: {"api_token_file":"DIR/api-token","port":N}.

            Example: herald provider --data-dir ./provider --gateway https://localhost:2197 --ca ./herald-data/tls/ca.pem \\
                       --key key.p8 --key-id KEYID --team TEAM123456
            """)

    @Option(name: .customLong("data-dir"), help: ArgumentHelp("Where the provider keeps its database.", valueName: "DIR"))
    var dataDirectory: String

    @Option(help: "The port of the REST API (0: any free port).")
    var port: Int = 8443

    @Option(help: ArgumentHelp("The file holding the REST API's bearer token. Default: DIR/api-token, created with a random token at first start (mode 0600).", valueName: "FILE"))
    var apiTokenFile: String?

    @Option(help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "The APNs server: https://HOST:PORT.")
    var gateway: String


    @OptionGroup var credentials: ProviderCredentialOptions



    @Option(help: "The language templates fall back to when neither a device's language nor its base language is translated.")
    var defaultLanguage: String = "en"

    @Option(help: "Requests to the gateway in flight at once.")
    var concurrency: Int = 500

    @Option(help: ArgumentHelp("How late a schedule's occurrence missed while the service was stopped may still be sent at start-up; older ones are recorded as missed.", valueName: "SECONDS"))
    var missedWindow: Int = 3600

    @Option(help: ArgumentHelp("How often to read the gateway's feedback lists and prune the tokens they name (0: never; Apple's service has no such list).", valueName: "SECONDS"))
    var feedbackInterval: Int = 600

    @OptionGroup(title: "Web Push (registrations that are Web Push subscriptions)") var vapid: VAPIDKeyOptions

    @Option(help: "Log level for diagnostics on standard error.")
    var logLevel: Logger.Level = .warning

    @OptionGroup var logging: LogFormatOption
    @OptionGroup var tracing: TracingOptions

    @OptionGroup var configuration: ConfigurationOptions

    func validate() throws {
        try credentials.validateCredentials()
        guard let url = URLComponents(string: gateway), url.scheme == "https" || url.scheme == "http", url.host != nil else {
            throw ValidationError("--gateway must be https://HOST:PORT (or http:// for a gateway's h2c port), not \"\(gateway)\"")
        }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0…65535") }
        guard (0...31_536_000).contains(missedWindow) else { throw ValidationError("--missed-window must be from 0 to 31536000 seconds") }
        guard (0...31_536_000).contains(feedbackInterval) else { throw ValidationError("--feedback-interval must be from 0 (off) to 31536000 seconds") }
        guard (1...100_000).contains(concurrency) else { throw ValidationError("--concurrency must be from 1 to 100000") }
        try vapid.validateSubject()
    }

    func run() async throws {
        let tokenPath = apiTokenFile ?? ProviderAPIToken.defaultPath(in: dataDirectory)
        let apiToken: String
        do { apiToken = try ProviderAPIToken.load(path: tokenPath, create: apiTokenFile == nil) } catch {
            throw ValidationError("\(error)")
        }
        let url = URLComponents(string: gateway)!
        let isTLS = url.scheme == "https"
        let signer = try credentials.signer()
        let client = APNsClient(
            configuration: .init(host: url.host!, port: url.port ?? (isTLS ? 443 : 80), tls: isTLS ? credentials.clientTLS : nil,
                                 maximumInFlight: concurrency),
            signer: signer)
        let store = try SQLiteProviderStore(directory: dataDirectory)
        // Web Push registrations are sent to their push services directly, signed with the VAPID key.
        let webPushClient = try vapid.signer().map { try WebPushClient(vapid: $0, trustRootsPath: credentials.ca) }
        let service = ProviderService(store: store, sender: client, webPushSender: webPushClient, defaultLanguage: defaultLanguage,
                                      missedSendWindow: Int64(missedWindow) * 1000)
        let caughtUp = try await service.startSchedules()
        if caughtUp.late + caughtUp.missed > 0 {
            printError("herald provider: \(caughtUp.late) schedule occurrence(s) missed while stopped sent now, \(caughtUp.missed) too old to send (recorded as missed)")
        }
        await service.startFeedbackPolling(every: Int64(feedbackInterval) * 1000) { poll in
            for (topic, error) in poll.errors { printError("herald provider: feedback list of \(topic) unreadable: \(error)") }
            if !poll.pruned.isEmpty { printError("herald provider: pruned \(poll.pruned.count) token(s) from the gateway's feedback lists") }
        }
        let tokenPathJSON = String(decoding: try JSONEncoder().encode(tokenPath), as: UTF8.self)
        let listening = Locked(false)  // whether the REST API got as far as listening
        logging.logFormat.bootstrap(traced: tracing.otlpEndpoint != nil)
        let tracer = try tracing.start(serviceName: "herald-provider")
        let httpLogger = Logger(label: "herald.provider.http")
        ProcessLogLevel.level = logLevel
        let api = try ProviderHTTP.application(service: service, host: host, port: port, apiToken: apiToken, logger: httpLogger) { port in
            listening.withLock { $0 = true }
            printLineFlushed(#"{"api_token_file":\#(tokenPathJSON),"port":\#(port)}"#)
        }
        let logger = Logger(label: "herald.provider")
        // Shut down in reverse order: the REST API stops accepting and finishes the requests under
        // way first, then the runner stops the schedules and closes the gateway connections.
        let group = ServiceGroup(configuration: .init(
            services: (tracer.map { [$0] } ?? []) + [ProviderRunner(service: service, client: client, webPushClient: webPushClient), api],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do { try await group.run() } catch where !listening.withLock({ $0 }) {
            throw ValidationError("cannot listen on \(host):\(port) (--port, --host): \(error)")
        }
    }
}

/// `herald provider`'s own work as a service: at SIGTERM or SIGINT (after the REST API has
/// stopped accepting and finished its requests: a send completes and records its report), it
/// stops polling feedback and scheduling, lets scheduled runs under way finish and records them,
/// and closes its gateway connections and its Web Push client.
private struct ProviderRunner: Service {
    let service: ProviderService
    let client: APNsClient
    let webPushClient: WebPushClient?

    func run() async throws {
        try? await gracefulShutdown()
        await service.stopFeedbackPolling()
        await service.stopSchedules()
        await service.settle()
        await client.close()
        // Its HTTP client must be shut down before it is released (AsyncHTTPClient's rule).
        try? await webPushClient?.close()
    }
}
