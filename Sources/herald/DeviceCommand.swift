import ArgumentParser
import Foundation
import HeraldCore
import HeraldDevice
import Logging
import NIOSSL

struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "Be a device: keep a connection to a gateway's device port for some apps, and print what arrives.",
        discussion: "Example: herald device run --data-dir ./phone --gateway wss://localhost:2198 --ca ./herald-data/tls/ca.pem --app com.example.app",
        subcommands: [DeviceRunCommand.self, DeviceUnregisterCommand.self, DevicePlanCommand.self]
    )
}

/// What a device keeps in its data directory besides its key.
struct DeviceState: Codable {
    /// `wss://host:port` of the gateway.
    var gateway: String
    /// Other nodes of the gateway's cluster, tried in turn when one is unreachable.
    var alternates: [String]?
    /// The PEM file of roots the gateway's certificate is checked against.
    var ca: String?
    // The apps' tokens are not kept here: the runtime keeps each app's token with its state
    // (DIR/apps/<app>.json), the device's one token store.

    static func path(in directory: String) -> String { (directory as NSString).appendingPathComponent("device.json") }

    static func load(from directory: String) throws -> DeviceState? {
        let path = path(in: directory)
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do { return try JSONReader.decode(DeviceState.self, from: data) } catch {
            throw ValidationError("\(path) is not a device state file (\(error)); remove it and run again")
        }
    }

    func save(to directory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(self).write(to: URL(fileURLWithPath: Self.path(in: directory)), options: .atomic)
    }
}

/// A gateway's device port address: `wss://HOST:PORT`.
struct GatewayAddress {
    var host: String
    var port: Int

    init(_ text: String) throws {
        guard let url = URLComponents(string: text), url.scheme == "wss", let host = url.host, !host.isEmpty,
              let port = url.port else {
            throw ValidationError("--gateway must be wss://HOST:PORT (the gateway's --device-port), not \"\(text)\"")
        }
        self.host = host
        self.port = port
    }
}

struct DeviceDirectoryOption: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: ArgumentHelp(
        "The device's data directory (its key, its gateway, its apps' last tokens). Created if missing.", valueName: "DIR"))
    var argument: String

    var path: String {
        argument.hasPrefix("/") ? argument : URL(fileURLWithPath: argument).standardizedFileURL.path
    }

    /// Holds `DIR/device.lock` while this process runs: one `device run` per device, and no
    /// `device unregister` under a running one (it would take the device's connection over, and
    /// the running device, still given `--app`, would register the app again under a new token).
    func lock(toUnregister: Bool = false) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let file = (path as NSString).appendingPathComponent("device.lock")
        try DirectoryLock.hold(file, whenHeld: "herald device run is running on --data-dir \(argument) (it holds \(file)): stop it first"
            + (toUnregister ? " (to remove an app: stop the device, unregister the app, then start the device again without that --app)"
                            : "; one process per device"))
    }
}

struct DeviceRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Be a device: connect to a gateway, run the notification center for the apps, serve them on a local socket.",
        discussion: """
            The device's notification center runs the apps' local notifications and presents what arrives, by
            each app's state and settings (docs/device-runtime.md). Apps in any language use it over the agent
            socket (--agent-socket, default DIR/agent.sock; JSON lines, docs/device-agent.md). Pending requests,
            settings, categories, delivered entries and badges are kept in DIR/apps.

            With --json every line is a JSON object with an "event" field (each described in
            docs/device-events.schema.json; times are RFC 3339 UTC, a notification is named by id, origin and,
            for a push, apns-id). The device reconnects by itself with exponential backoff and jitter.

            \(DeviceEventList.help)

            One `device run` per device directory (it holds DIR/device.lock).

            Example: herald device run --data-dir ./phone --gateway wss://localhost:2198 --ca ./herald-data/tls/ca.pem \\
                       --app com.example.app --time-zone Europe/Paris --language fr --json
            """
    )

    @OptionGroup var directory: DeviceDirectoryOption

    @Option(help: ArgumentHelp("The gateway's device port, wss://HOST:PORT. Remembered in DIR for later runs. Give it again for each node of a cluster without a load balancer: the device moves to the next when one is unreachable.", valueName: "URL"))
    var gateway: [String] = []

    @Option(help: ArgumentHelp("A PEM file of trusted roots (the gateway's DIR/tls/ca.pem). Remembered in DIR.", valueName: "PEM"))
    var ca: String?

    @Option(name: .customLong("app"), help: ArgumentHelp("An app using UserNotifications: its topic (bundle id). Repeat for more apps.", valueName: "TOPIC"))
    var apps: [String] = []

    @Option(name: .customLong("legacy-app"), help: ArgumentHelp("An app using the iOS 8–9 UIApplication API (legacy delivery rules).", valueName: "TOPIC"))
    var legacyApps: [String] = []

    @Option(name: .customLong("bundle"), help: ArgumentHelp(
        "An app's bundle directory: <lang>.lproj/Localizable.strings (or .json) for alert localization, Library/Sounds and the directory itself for sounds.",
        valueName: "TOPIC=DIR"))
    var bundles: [String] = []

    @Option(help: ArgumentHelp("The device's time zone (IANA). Default: the machine's.", valueName: "ZONE"))
    var timeZone: String?

    @Option(name: .customLong("language"), help: ArgumentHelp("A preferred language (BCP 47), most preferred first. Default: from LANG, else en.", valueName: "LANG"))
    var languages: [String] = []

    @Option(help: ArgumentHelp("How the device's user answers an authorization prompt: allow (what was asked) or deny.", valueName: "ANSWER"))
    var prompts: String = "allow"

    @Option(help: ArgumentHelp("A file holding the gateway's enrollment secret, for a gateway that closed open enrollment (needed once, to enroll).", valueName: "FILE"))
    var enrollmentSecretFile: String?

    @Option(help: ArgumentHelp("The agent's Unix domain socket. Default: DIR/agent.sock.", valueName: "PATH"))
    var agentSocket: String?

    @Flag(help: "Print one JSON object per line instead of text for people.")
    var json = false

    @Flag(help: ArgumentHelp(
        "Show notifications on this Linux desktop (the freedesktop Notifications D-Bus interface, through gdbus): the category's actions as buttons; a click reaches the app as the user's choice.",
        discussion: "Needs a session bus with a notification server (GNOME, KDE, dunst, mako…) and gdbus (Debian libglib2.0-bin)."))
    var desktop = false

    @Option(help: "Log level for diagnostics on standard error.")
    var logLevel: String = "warning"

    @Flag(help: ArgumentHelp(
        "Be a UnifiedPush distributor on the session bus (org.unifiedpush.Distributor.herald): Linux apps that support UnifiedPush get Web Push endpoints on the gateway and their messages through it (docs/web-push.md)."))
    var unifiedpush = false

    @Flag(help: "Ask the gateway for each app's Live Activity push-to-start token (printed as activity-push-to-start-token).")
    var liveActivities = false

    @Flag(help: "Configure each app's widgets for pushes: the gateway issues a widget push token (printed as widget-token); widgets pushes reload them.")
    var widgets = false

    @Option(name: .customLong("entitlements"), help: ArgumentHelp(
        "Entitlements an app holds, TOPIC=LIST with LIST of critical-alert, time-sensitive and location-push, comma-separated (what its provisioning profile would grant).",
        valueName: "TOPIC=LIST"))
    var entitlements: [String] = []

    @Option(help: ArgumentHelp(
        "A JSON file of Focus modes and the scheduled summary (docs/device-agent.md) to set now; saved in DIR for later runs.", valueName: "FILE"))
    var focus: String?

    @OptionGroup var logging: LogFormatOption

    @OptionGroup var configuration: ConfigurationOptions

    func validate() throws {
        if apps.isEmpty && legacyApps.isEmpty && !unifiedpush { throw ValidationError("give at least one --app TOPIC (an app's bundle id), or --unifiedpush") }
        for app in apps + legacyApps where !DeviceProtocol.isValidTopic(app) {
            throw ValidationError("--app \"\(app)\" is not a bundle id (printable ASCII, no spaces, no push-type suffix such as .voip)")
        }
        for gateway in gateway { _ = try GatewayAddress(gateway) }
        if let timeZone, TimeZone(identifier: timeZone) == nil {
            throw ValidationError("--time-zone \"\(timeZone)\" is not an IANA time zone (e.g. Europe/Paris)")
        }
        guard prompts == "allow" || prompts == "deny" else { throw ValidationError("--prompts must be allow or deny, not \"\(prompts)\"") }
        for entry in entitlements { _ = try Self.entitlement(entry, apps: apps + legacyApps) }
        for bundle in bundles {
            guard let eq = bundle.firstIndex(of: "="), apps.contains(String(bundle[..<eq])) || legacyApps.contains(String(bundle[..<eq])) else {
                throw ValidationError("--bundle must be TOPIC=DIR for one of the --app topics, not \"\(bundle)\"")
            }
        }
    }

    func run() async throws {
        logging.logFormat.bootstrap()
        let logger = Logger(label: "herald.device")
        ProcessLogLevel.level = Logger.Level(rawValue: logLevel) ?? .warning

        let dir = directory.path
        try directory.lock()
        let identity = try DeviceIdentity.loadOrCreate(in: dir)
        let state = try savedState(in: dir)
        let address = try GatewayAddress(state.gateway)
        let alternates = try (state.alternates ?? []).map { text in
            let alternate = try GatewayAddress(text)
            return DeviceConnection.Configuration.Endpoint(host: alternate.host, port: alternate.port)
        }
        let tls: NIOSSLContext
        do { tls = try DeviceTLS.makeContext(trustRootsPath: state.ca) } catch {
            throw ValidationError("cannot use the CA file \(state.ca ?? "(system roots)"): \(error)")
        }
        let socketPath = agentSocket ?? (dir as NSString).appendingPathComponent("agent.sock")
        guard socketPath.utf8.count < 104 else {
            throw ValidationError("the agent socket path \(socketPath) is too long for a Unix socket (103 bytes at most): give --agent-socket PATH")
        }

        // The notification center.
        let printer = DeviceEventPrinter(json: json)
        let zone = timeZone.flatMap(TimeZone.init(identifier:)) ?? TimeZone.current
        // The desktop's notification server, when asked for: it answers through the runtime, made next.
        let runtimeBox = Locked<DeviceRuntime?>(nil)
        let desktopNotifications = desktop ? try await connectDesktop(to: runtimeBox, logger: logger) : nil
        defer { desktopNotifications?.close() }
        let runtime = try DeviceRuntime(
            clock: SystemAlarmClock(), timeZone: zone, preferredLanguages: languages.isEmpty ? Self.languagesFromEnvironment() : languages,
            user: FixedPromptAnswer(allow: prompts == "allow"), storageDirectory: dir,
            observer: { [printer] event in
                printer.print(event, in: zone)
                desktopNotifications?.handle(event)
            })
        runtimeBox.withLock { $0 = runtime }
        try await installApps(on: runtime)
        try await applyFocus(on: runtime)
        let agent: AgentSocket
        do { agent = try await AgentSocket.start(path: socketPath, runtime: runtime) } catch {
            throw ValidationError("cannot listen on the agent socket \(socketPath): \(error)")
        }
        logger.info("agent socket ready", metadata: ["path": "\(socketPath)"])

        // Notifications are acked once the runtime has saved what it decided for them.
        let connection = DeviceConnection(
            identity: identity,
            configuration: .init(
                host: address.host, port: address.port, tls: tls, topics: apps + legacyApps, knownTokens: await runtime.tokens(),
                acknowledgement: .byConsumer, enrollmentSecret: try enrollmentSecretFile.map(EnrollmentSecret.read),
                alternates: alternates),
            logger: logger)
        await runtime.attach(connection)
        if liveActivities {
            for app in apps + legacyApps { try await runtime.requestPushToStartToken(app: app) }
        }
        if widgets {
            for app in apps + legacyApps { try await runtime.configureWidgetPushes(app: app, enabled: true) }
        }
        var distributor: UnifiedPushDistributor?
        if unifiedpush {
            do {
                distributor = try await UnifiedPushDistributor.start(directory: dir, connection: connection, logger: logger) { event in
                    printer.print(event)
                }
            } catch {
                await agent.close()
                throw ValidationError("\(error)")
            }
        }
        defer { distributor?.close() }
        let task = Task { await connection.run() }
        var divert: (@Sendable (DeviceEvent) -> Bool)?
        if let diverted = distributor { divert = { @Sendable event in diverted.handle(event) } }
        await runtime.follow(connection.events, acknowledge: { connection.acknowledge($0) }, divert: divert) { event in
            printer.print(event)
        }
        task.cancel()
        await agent.close()
    }

    static func languagesFromEnvironment() -> [String] {
        // LANG=fr_FR.UTF-8 → fr-FR
        guard let lang = ProcessInfo.processInfo.environment["LANG"], !lang.isEmpty, lang != "C", lang != "POSIX" else { return ["en"] }
        let code = lang.split(separator: ".").first.map(String.init)?.replacingOccurrences(of: "_", with: "-") ?? "en"
        return [code]
    }
}

/// The device's user answering every authorization prompt the same way.
extension DeviceRunCommand {
    /// `TOPIC=critical-alert,time-sensitive` for one of the apps.
    static func entitlement(_ entry: String, apps: [String]) throws -> (String, AuthorizationOptions, locationPush: Bool) {
        guard let eq = entry.firstIndex(of: "="), apps.contains(String(entry[..<eq])) else {
            throw ValidationError("--entitlements must be TOPIC=LIST for one of the --app topics, not \"\(entry)\"")
        }
        var options: AuthorizationOptions = []
        var locationPush = false
        for name in entry[entry.index(after: eq)...].split(separator: ",") {
            switch name {
            case "critical-alert": options.insert(.criticalAlert)
            case "time-sensitive": options.insert(.timeSensitive)
            case "location-push": locationPush = true
            default: throw ValidationError("--entitlements: \"\(name)\" is not an entitlement Herald knows (critical-alert, time-sensitive, location-push)")
            }
        }
        return (String(entry[..<eq]), options, locationPush)
    }
}

struct FixedPromptAnswer: UserSettingsSource {
    var allow: Bool
    func answerPrompt(appID: String, requested: AuthorizationOptions) async -> AuthorizationOptions { allow ? requested : [] }
}

struct DeviceUnregisterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unregister",
        abstract: "Remove an app from the device: its token is unregistered (providers get 410 Unregistered) and its saved state removed.",
        discussion: """
            Uses the gateway and CA remembered by `herald device run`, unless --gateway/--ca are given.
            Refused while `herald device run` runs on the directory: stop it first, then start it again
            without that --app.

            Example: herald device unregister --data-dir ./phone --app com.example.app
            """
    )

    @OptionGroup var directory: DeviceDirectoryOption

    @Option(name: .customLong("app"), help: ArgumentHelp("The app's topic (bundle id).", valueName: "TOPIC"))
    var app: String

    @Option(help: ArgumentHelp("The gateway's device port, wss://HOST:PORT.", valueName: "URL"))
    var gateway: String?

    @Option(help: ArgumentHelp("A PEM file of trusted roots.", valueName: "PEM"))
    var ca: String?

    func run() async throws {
        let dir = directory.path
        guard FileManager.default.fileExists(atPath: (dir as NSString).appendingPathComponent(DeviceIdentity.fileName)) else {
            throw ValidationError("\(dir) holds no device: run `herald device run --data-dir \(directory.argument) …` first")
        }
        try directory.lock(toUnregister: true)
        let identity = try DeviceIdentity.loadOrCreate(in: dir)
        let state = try DeviceState.load(from: dir)
        guard let gatewayText = gateway ?? state?.gateway else {
            throw ValidationError("this device has no gateway yet: give --gateway wss://HOST:PORT")
        }
        let address = try GatewayAddress(gatewayText)
        let tls = try DeviceTLS.makeContext(trustRootsPath: ca ?? state?.ca)
        let at: Int64
        do {
            at = try await DeviceConnection.unregister(topic: app, identity: identity, host: address.host, port: address.port, tls: tls)
        } catch {
            printError("herald: could not unregister \(app): \(error)")
            throw ExitCode(1)
        }
        // Uninstalled: the app's saved state (settings, notifications, token) goes with it.
        do { try DeviceRuntime.removeSavedState(of: app, storageDirectory: dir) } catch {
            printError("herald: \(app) is unregistered, but its saved state could not be removed: \(error)")
        }
        printLineFlushed("unregistered \(app) at \(at)")
    }
}

