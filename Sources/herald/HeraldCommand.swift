import ArgumentParser
import Foundation
import HeraldHTTP
import HeraldStorePostgres

@main
struct HeraldCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A self-hostable push notification system that speaks the APNs provider protocol.",
        discussion: """
            Example: start a gateway on this machine (SQLite store, development TLS certificate):
              herald gateway --data-dir ./herald-data --provider-port 2197 --h2c-port 8080 --admin-port 9090

            Then create a provider key and a device token, and push:
              herald keys create --data-dir ./herald-data --team TEAM123456 --topic com.example.app --out key.p8
              herald tokens create --data-dir ./herald-data --topic com.example.app
              herald push send --gateway https://localhost:2197 --ca ./herald-data/tls/ca.pem --key key.p8 \\
                  --key-id KEYID --team TEAM123456 --topic com.example.app --token TOKEN --alert "Hello"
            """,
        version: HeraldVersion.current,
        subcommands: [
            GatewayCommand.self, DeviceCommand.self, ProviderCommand.self, KeysCommand.self, FeedbackCommand.self, TokensCommand.self,
            DevicesCommand.self, HeldCommand.self, ReceiptsCommand.self, PushCommand.self, ChannelsCommand.self, BackupCommand.self, RestoreCommand.self, DoctorCommand.self, BenchCommand.self,
        ]
    )

    /// Parses and runs the command line. A ValidationError a command throws while running (a flag
    /// whose value turns out wrong: a file that does not exist, a port in use) prints that
    /// command's usage, as a parse error does, not the root command's.
    static func main() async {
        let command: any ParsableCommand
        // --config FILE.yaml and HERALD_* variables become flags before parsing (Settings).
        let settings: Settings
        do {
            settings = try Settings.layer(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("Error: \((error as? ValidationError)?.message ?? "\(error)")\n".utf8))
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        do { command = try parseAsRoot(settings.arguments) } catch {
            // A value the file or the environment gave: the message says which.
            let message = fullMessage(for: error)
            let explained = settings.explain(message)
            guard explained != message else { exit(withError: error) }
            FileHandle.standardError.write(Data((explained + "\n").utf8))
            Foundation.exit(exitCode(for: error).rawValue)
        }
        if settings.settings.contains(where: { $0.name == "log-format" && $0.values.last == LogFormat.json.rawValue }) {
            LogFormat.writesJSON.store(true, ordering: .relaxed)
        }
        for warning in settings.warnings { printError(warning) }
        if settings.printConfig {
            print(settings.report)
            Foundation.exit(0)
        }
        do {
            var running = command
            if var async = running as? any AsyncParsableCommand { try await async.run() } else { try running.run() }
        } catch let error as ValidationError {
            let usage = usageString(for: type(of: command))
            FileHandle.standardError.write(Data("Error: \(settings.explain(error.message))\n\(usage.isEmpty ? "" : "Usage: \(usage)\n")  See 'herald \(commandPath(type(of: command))) --help' for more information.\n".utf8))
            Foundation.exit(exitCode(for: error).rawValue)
        } catch {
            exit(withError: error)
        }
    }

    /// `keys create` for KeysCommand.Create: the subcommand names under `herald`.
    private static func commandPath(_ type: any ParsableCommand.Type) -> String {
        func path(_ node: any ParsableCommand.Type, _ trail: [String]) -> [String]? {
            if node == type { return trail }
            for child in node.configuration.subcommands {
                if let found = path(child, trail + [child._commandName]) { return found }
            }
            return nil
        }
        return (path(HeraldCommand.self, []) ?? []).joined(separator: " ")
    }
}

/// The option every command that opens the store shares.
struct DataDirectoryOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: ArgumentHelp(
        "The gateway's data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.", valueName: "DIR"))
    var dataDirectoryArgument: String?

    @Option(name: .customLong("database"), help: ArgumentHelp(
        "A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).", valueName: "URL"))
    var databaseURL: String?

    func validate() throws {
        if dataDirectoryArgument == nil && databaseURL == nil {
            throw ValidationError("give --data-dir DIR (the gateway's SQLite store) or --database postgres://USER@HOST:PORT/DB (a cluster's)")
        }
        if let databaseURL {
            do { _ = try PostgresURL(databaseURL) } catch { throw ValidationError("--database: \(error)") }
        }
    }

    /// The directory as an absolute path, so that the paths Herald prints work from anywhere
    /// (empty when only --database is given).
    var dataDirectory: String {
        guard let dataDirectoryArgument else { return "" }
        if dataDirectoryArgument.hasPrefix("/") { return dataDirectoryArgument }
        return URL(fileURLWithPath: dataDirectoryArgument).standardizedFileURL.path
    }
}

