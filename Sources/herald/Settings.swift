import ArgumentParser
import Foundation
import HeraldCore
import HeraldOperations

/// `--config FILE.yaml` and `HERALD_*` environment variables for the long-running commands
/// (`gateway`, `provider`, `device run`; docs/operations.md).
///
/// The settings are the commands' own flags, read from ArgumentParser's description of them (one
/// definition: a key is a flag's long name, `provider-port: 2197`; a repeatable flag takes a list;
/// a flag without a value takes `true` or `false`). Before the command line is parsed, what the
/// file and the environment set is added to it as flags, so that the parser checks every value
/// as it checks a typed one. Precedence: the command line, then the environment, then the file,
/// then the defaults.
///
/// Not swift-configuration: its providers cannot list a file's keys, so an unknown key could not be
/// refused, and it would be a second definition of settings that ArgumentParser already defines.
struct Settings {
    /// The commands that take `--config`.
    static let commands: [[String]] = [["gateway", "run"], ["provider"], ["device", "run"]]
    /// A configuration file is small; a larger one (or `/dev/zero`) is refused before reading it.
    static let maximumFileBytes = ConfigurationFile.maximumBytes
    static let environmentPrefix = "HERALD_"

    /// One of a command's flags.
    struct Option {
        var name: String
        var takesValue: Bool
        var repeating: Bool
        var defaultValue: String?
        var environmentName: String { Settings.environmentPrefix + name.uppercased().replacingOccurrences(of: "-", with: "_") }
    }

    /// Where a setting came from.
    enum Origin: CustomStringConvertible {
        case commandLine, environment(String), file(String, line: Int), defaultValue
        var description: String {
            switch self {
            case .commandLine: "command line"
            case .environment(let name): "environment \(name)"
            case .file(let path, let line): "file \(path) line \(line)"
            case .defaultValue: "default"
            }
        }
    }

    /// The command line to parse, and where each setting came from (for `--print-config` and errors).
    var arguments: [String]
    var settings: [(name: String, values: [String], origin: Origin)] = []
    var printConfig = false
    /// `HERALD_*` variables that name no setting of any command (a mistyped name would otherwise
    /// be ignored in silence), each with the nearest setting's variable.
    var unknownVariables: [(name: String, nearest: String?)] = []

    /// The command line with the file's and the environment's settings added (unchanged for a
    /// command that takes no `--config`).
    static func layer(_ arguments: [String], environment: [String: String]) throws -> Settings {
        guard let (path, options) = command(of: arguments) else { return Settings(arguments: arguments) }
        var result = Settings(arguments: arguments)
        let byLong = Dictionary(options.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        // What the command line gives (long names; short ones are not used by these commands).
        var given: [String: [String]] = [:]
        var configPath: String?
        var index = path.count
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { break }
            if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name = String(body.split(separator: "=", maxSplits: 1).first ?? "")
                var value = "true"
                if byLong[name]?.takesValue == true {
                    if let eq = body.firstIndex(of: "=") { value = String(body[body.index(after: eq)...]) } else if index + 1 < arguments.count { value = arguments[index + 1] }
                }
                given[name, default: []].append(value)
                if name == "config" {
                    if let eq = body.firstIndex(of: "=") { configPath = String(body[body.index(after: eq)...]) } else if index + 1 < arguments.count { configPath = arguments[index + 1] }
                }
                if name == "print-config" { result.printConfig = true }
            }
            index += 1
        }
        if configPath == nil, let fromEnvironment = environment[environmentPrefix + "CONFIG"], !fromEnvironment.isEmpty {
            configPath = fromEnvironment
            result.arguments += ["--config", fromEnvironment]
        }
        result.unknownVariables = unknownVariables(in: environment)
        let file = try configPath.map { try read($0, options: byLong, command: path.joined(separator: " ")) } ?? [:]
        for option in options where !["config", "print-config", "help", "version"].contains(option.name) {
            let values: [String]
            let origin: Origin
            if let values = given[option.name] {
                result.settings.append((option.name, values, .commandLine))
                continue
            } else if let raw = environment[option.environmentName] {
                values = try environmentValues(raw, option)
                origin = .environment(option.environmentName)
            } else if let fromFile = file[option.name] {
                values = fromFile.values
                origin = .file(configPath ?? "", line: fromFile.line)
            } else {
                // Unset settings are listed too (`--print-config` shows every one).
                result.settings.append((option.name, option.defaultValue.map { [$0] } ?? [], .defaultValue))
                continue
            }
            result.settings.append((option.name, values, origin))
            if option.takesValue {
                for value in values { result.arguments += ["--\(option.name)", value] }
            } else if values == ["true"] {
                result.arguments.append("--\(option.name)")
            }
        }
        return result
    }

    /// Variables of Herald's own scripts and tests, not settings: never warned about.
    static let scriptVariablePrefixes = [
        "HERALD_TEST_", "HERALD_BENCH_", "HERALD_FUZZ_", "HERALD_FAULTS_", "HERALD_CLUSTER_", "HERALD_SCHEMATHESIS_",
    ]
    static let scriptVariables: Set<String> = ["HERALD_BIN", "HERALD_BINARY", "HERALD_BASE", "HERALD_REQUIRE_POSTGRES", "HERALD_CONFIG"]

    /// The `HERALD_*` variables of `environment` that no command taking `--config` reads, with the
    /// nearest one that it does (by edit distance, when close enough to be a typing slip).
    static func unknownVariables(in environment: [String: String]) -> [(name: String, nearest: String?)] {
        let candidates = environment.keys.filter { name in
            name.hasPrefix(environmentPrefix) && !scriptVariables.contains(name)
                && !scriptVariablePrefixes.contains { name.hasPrefix($0) }
        }
        guard !candidates.isEmpty else { return [] }
        let known = Set(commands.flatMap { commandInfo($0) ?? [] }.map(\.environmentName))
        return candidates.filter { !known.contains($0) }.sorted().map { name in
            let nearest = known.map { ($0, editDistance(Array(name.utf8.prefix(128)), Array($0.utf8))) }
                .min { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
            return (name, nearest.flatMap { $0.1 <= max(2, $0.0.count / 4) ? $0.0 : nil })
        }
    }

    /// Levenshtein distance, two rows.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        guard !a.isEmpty else { return b.count }
        var previous = Array(0...b.count), current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    /// One warning line per unknown `HERALD_*` variable (empty when there is none).
    var warnings: [String] {
        unknownVariables.map { variable in
            "herald: warning: \(variable.name.prefix(128)) is not a setting and is ignored"
                + (variable.nearest.map { "; did you mean \($0)?" } ?? "")
        }
    }

    /// The command a command line runs, when it takes `--config`, with its flags.
    static func command(of arguments: [String]) -> (path: [String], options: [Option])? {
        var path = arguments.prefix { !$0.hasPrefix("-") }.prefix(2).map { $0 }
        if path == ["gateway"] || (path.first == "gateway" && path.count == 2 && path[1] != "run" && path[1] != "watch") {
            path = ["gateway"]  // gateway's default subcommand is run
        }
        let resolved = path == ["gateway"] ? ["gateway", "run"] : path
        guard let wanted = commands.first(where: { resolved.starts(with: $0) }) else { return nil }
        guard let info = commandInfo(wanted) else { return nil }
        return (path == ["gateway"] ? ["gateway"] : wanted, info)
    }

    /// The options of a command, from ArgumentParser's own description of it.
    static func commandInfo(_ path: [String]) -> [Option]? {
        guard case .object(let root)? = try? JSONReader.parse(Array(HeraldCommand._dumpHelp().utf8), limits: JSONLimits(maximumBytes: 16 << 20, maximumDepth: 64)),
              var node = root["command"] else { return nil }
        for name in path {
            guard case .array(let children)? = node["subcommands"], let child = children.first(where: { $0["commandName"]?.stringValue == name }) else { return nil }
            node = child
        }
        guard case .array(let arguments)? = node["arguments"] else { return nil }
        return arguments.compactMap { argument -> Option? in
            guard let kind = argument["kind"]?.stringValue, kind == "option" || kind == "flag",
                  case .array(let names)? = argument["names"],
                  let long = names.first(where: { $0["kind"]?.stringValue == "long" })?["name"]?.stringValue else { return nil }
            return Option(name: long, takesValue: kind == "option", repeating: argument["isRepeating"] == .bool(true),
                          defaultValue: argument["defaultValue"]?.stringValue)
        }
    }

    /// Reads and checks a YAML file: a mapping of the command's flag names to values.
    static func read(_ path: String, options: [String: Option], command: String) throws -> [String: ConfigurationFile.Setting] {
        var status = stat()
        guard stat(path, &status) == 0 else { throw ValidationError("--config \(path): \(String(cString: strerror(errno)))") }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw ValidationError("--config \(path) is not a regular file") }
        guard status.st_size <= maximumFileBytes else { throw ValidationError("--config \(path) is \(status.st_size) bytes; a configuration file is at most 1 MiB") }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ValidationError("--config \(path) cannot be read") }
        let data = (try? handle.read(upToCount: maximumFileBytes + 1)) ?? Data()
        try? handle.close()
        guard data.count <= maximumFileBytes else { throw ValidationError("--config \(path) is larger than 1 MiB") }
        guard let text = String(data: data, encoding: .utf8) else { throw ValidationError("--config \(path) is not UTF-8 text") }
        let keys = options.mapValues { ConfigurationFile.Key(takesValue: $0.takesValue, repeating: $0.repeating) }
        do { return try ConfigurationFile.parse(text, keys: keys, command: command, source: path) } catch {
            throw ValidationError(error.description)
        }
    }

    /// An environment variable's value: a repeatable flag's values comma-separated, a switch's
    /// `true`/`false` (`1`/`0`, `yes`/`no`).
    static func environmentValues(_ raw: String, _ option: Option) throws -> [String] {
        if !option.takesValue {
            switch raw.lowercased() {
            case "true", "1", "yes": return ["true"]
            case "false", "0", "no", "": return ["false"]
            default: throw ValidationError("\(option.environmentName)=\(raw.prefix(40)): a switch takes true or false")
            }
        }
        guard raw.utf8.count <= 64 * 1024 else { throw ValidationError("\(option.environmentName) is longer than 64 KiB") }
        return option.repeating ? raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } : [raw]
    }

    /// `--print-config`: every setting, its value and where it came from, secrets masked.
    var report: String {
        settings.map { setting in
            let shown = setting.values.isEmpty ? "(unset)" : setting.values.map { Self.masked(setting.name, $0) }.joined(separator: ", ")
            return "\(setting.name) = \(shown)  (\(setting.origin))"
        }.joined(separator: "\n")
    }

    /// Whether `message` is about `--flag` (quoted by the parser, or named by a command's own check),
    /// not about a longer flag that starts with the same words.
    static func mentions(_ message: String, flag: String) -> Bool {
        var rest = Substring(message)
        while let found = rest.range(of: "--" + flag) {
            let next = rest[found.upperBound...].first
            if next.map({ !($0.isLetter || $0.isNumber || $0 == "-") }) ?? true { return true }
            rest = rest[found.upperBound...]
        }
        return false
    }

    static func masked(_ name: String, _ value: String) -> String {
        if (name.contains("secret") || name.contains("password")) && !name.hasSuffix("-file") { return "********" }
        // A database URL's password.
        if let at = value.firstIndex(of: "@"), let scheme = value.range(of: "://"), scheme.upperBound < at,
           let colon = value[scheme.upperBound..<at].firstIndex(of: ":") {
            return String(value[..<value.index(after: colon)]) + "********" + String(value[at...])
        }
        return value
    }

    /// Names the setting a parse error is about, when it came from the file or the environment.
    func explain(_ message: String) -> String {
        for setting in settings {
            switch setting.origin {
            case .environment, .file:
                // The first line is the error; the usage below it names every flag.
                if Self.mentions(String(message.prefix { $0 != "\n" }), flag: setting.name) {
                    var lines = message.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                    lines[0] += " (from the \(setting.origin))"
                    return lines.joined(separator: "\n")
                }
            default: continue
            }
        }
        return message
    }
}

/// `--config` and `--print-config`, on the commands that take them (so they are in their help).
struct ConfigurationOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "A YAML file of settings: the flags' long names as keys (provider-port: 2197; lists for repeatable flags; true/false for switches). HERALD_* environment variables (HERALD_PROVIDER_PORT=2197; HERALD_CONFIG for the file) override it, flags override both (docs/operations.md).",
        valueName: "FILE.yaml"))
    var config: String?

    @Flag(help: "Print the effective settings and where each came from (secrets masked), then exit.")
    var printConfig = false
}
