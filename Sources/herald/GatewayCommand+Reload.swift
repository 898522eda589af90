import ArgumentParser
import Foundation
import HeraldCore
import HeraldGateway
import HeraldStore
import HeraldStoreSQLite
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

/// SIGHUP: what `herald gateway` reads again while it runs (docs/operations.md).
extension GatewayRunCommand {
    /// SIGHUP: reads the settings again — the same command line, the `--config` file as it is now,
    /// the environment — and, only if they are all valid, reloads the TLS files of every port
    /// (new handshakes use them, open connections keep theirs), then applies the log level and
    /// the per-token rate limit. Other changed settings are named as needing a restart. When
    /// anything fails, nothing changes and the message says why. Returns the settings in force.
    static func reload(gateway: Gateway, running: Settings?, logger: Logger) -> Settings? {
        let fresh: Settings
        let command: GatewayRunCommand
        do {
            fresh = try Settings.layer(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
            guard let parsed = try HeraldCommand.parseAsRoot(fresh.arguments) as? GatewayRunCommand else {
                throw ValidationError("the command line no longer names herald gateway run")
            }
            command = parsed
        } catch {
            let why = HeraldCommand.message(for: error)
            logger.error("SIGHUP: the settings are not valid; nothing was reloaded", metadata: ["error": "\(why)"])
            printError("herald: SIGHUP: nothing reloaded, the running settings stay: \(why)")
            return running
        }
        let count: Int
        do { count = try gateway.reloadTLS() } catch {
            logger.error("SIGHUP: TLS not reloaded; nothing was reloaded", metadata: ["error": "\(error)"])
            printError("herald: SIGHUP: nothing reloaded, the running settings stay: the TLS files could not be loaded: \(error)")
            return running
        }
        if let warning = gateway.configuration.tls.expiryWarning(nowMilliseconds: SystemWallClock().nowMilliseconds()) {
            printError("herald: warning: " + warning)
        }
        let level = Logger.Level(rawValue: command.logLevel) ?? .info
        let previousLevel = ProcessLogLevel.level
        ProcessLogLevel.level = level
        let limit = command.tokenRateLimit
        let previousLimit = gateway.tokenRateLimit
        gateway.reloadTokenRateLimit(limit)
        func values(_ settings: Settings?) -> [String: [String]] {
            Dictionary((settings?.settings ?? []).map { ($0.name, $0.values) }, uniquingKeysWith: { a, _ in a })
        }
        let before = values(running), after = values(fresh)
        let needRestart = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] && !reloadable.contains($0) }.sorted()
        func describe(_ limit: TokenRateLimiter.Configuration?) -> String {
            limit.map { "burst \($0.burst), \($0.perSecond)/s" } ?? "none"
        }
        var said = "reloaded the TLS certificate and key of \(count) port\(count == 1 ? "" : "s") (connections already open keep theirs)"
        said += "; log level \(previousLevel.rawValue) -> \(level.rawValue); per-token rate limit \(describe(previousLimit)) -> \(describe(limit))"
        if !needRestart.isEmpty { said += "; changed but applied only at a restart: \(needRestart.joined(separator: ", "))" }
        logger.notice("SIGHUP: settings reloaded", metadata: [
            "tls_contexts": "\(count)", "log_level": "\(level.rawValue)", "token_rate_limit": "\(describe(limit))",
            "restart_needed_for": "\(needRestart.joined(separator: ","))",
        ])
        printError("herald: SIGHUP: " + said)
        return fresh
    }
}
