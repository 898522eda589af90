import ArgumentParser
import Foundation
import HeraldClient
import HeraldCore
import HeraldStore
import HeraldStorePostgres
import HeraldStoreSQLite
import Logging

extension PushEnvironment: ExpressibleByArgument {
    public init?(argument: String) { self.init(rawValue: argument) }
    public static var allValueStrings: [String] { ["development", "production"] }
}

extension SQLiteStore.Durability: ExpressibleByArgument {}

/// A store a command opened: the gateway's SQLite database, or a cluster's PostgreSQL one.
enum OpenedStore {
    case sqlite(SQLiteStore)
    case postgres(PostgresStore)

    var store: any GatewayStore {
        switch self {
        case .sqlite(let store): store
        case .postgres(let store): store
        }
    }

    /// Where it is: the database file, or the URL without its password.
    var location: String {
        switch self {
        case .sqlite(let store): store.path
        case .postgres(let store): store.url.description
        }
    }
}

extension DataDirectoryOptions {
    /// Which store the commands' messages name.
    var storeName: String {
        if let databaseURL { return (try? PostgresURL(databaseURL).description) ?? databaseURL }
        return dataDirectory
    }

    /// Connects to the PostgreSQL store of `--database`, or returns `nil` when there is none.
    private func openPostgres(logger: Logger?) async throws -> PostgresStore? {
        guard let databaseURL else { return nil }
        var quiet = Logger(label: "herald.store")
        quiet.logLevel = .warning
        do {
            return try await PostgresStore.connect(try PostgresURL(databaseURL), logger: logger ?? quiet)
        } catch {
            throw ValidationError("--database: \(error)")
        }
    }

    /// Creates the directory if needed and opens the store in it (or the `--database` one).
    func openStore(durability: SQLiteStore.Durability = .full, logger: Logger? = nil) async throws -> OpenedStore {
        if let store = try await openPostgres(logger: logger) { return .postgres(store) }
        do {
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        } catch {
            throw ValidationError("cannot create the data directory \(dataDirectory): \(error.localizedDescription)")
        }
        return .sqlite(try SQLiteStore(path: databasePath, durability: durability))
    }

    var databasePath: String { (dataDirectory as NSString).appendingPathComponent("herald.sqlite") }

    /// Creates the directory if needed and takes its lock (`DIR/herald.lock`, `flock`) for the
    /// life of the process, so that a second gateway on the same directory is refused instead of
    /// sharing its store. The kernel releases the lock when the process ends, even by kill -9.
    func lockForGateway() throws {
        do {
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        } catch {
            throw ValidationError("cannot create the data directory \(dataDirectory): \(error.localizedDescription)")
        }
        let path = (dataDirectory as NSString).appendingPathComponent("herald.lock")
        try DirectoryLock.hold(path, whenHeld: "another herald gateway is running on --data-dir \(dataDirectory) (it holds \(path)); stop it, or give this one another --data-dir")
    }

    /// Opens (creating if needed) the store in a directory that must exist: the commands that
    /// write (`keys create`, `tokens create`/`revoke`) may prepare a gateway's directory before its
    /// first start, but a directory that does not exist is nearly always a mistyped `--data-dir`.
    func openStoreInExistingDirectory() async throws -> any GatewayStore {
        if let store = try await openPostgres(logger: nil) { return store }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dataDirectory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("--data-dir \(dataDirectory) does not exist; give the directory `herald gateway --data-dir` uses (create it first to prepare one before the gateway's first start)")
        }
        return try SQLiteStore(path: databasePath)
    }

    /// Opens the store of an existing gateway data directory (or the `--database` one); refuses
    /// (rather than creating an empty store) when the directory or its database is missing,
    /// which is nearly always a mistyped `--data-dir`.
    func openExistingStore() async throws -> any GatewayStore {
        if let store = try await openPostgres(logger: nil) { return store }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dataDirectory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("--data-dir \(dataDirectory) does not exist; give the directory `herald gateway --data-dir` uses")
        }
        guard FileManager.default.fileExists(atPath: databasePath) else {
            throw ValidationError("--data-dir \(dataDirectory) has no herald.sqlite: it is not a gateway's data directory (start `herald gateway --data-dir \(dataDirectoryArgument ?? "")` once to create it)")
        }
        return try SQLiteStore(path: databasePath)
    }
}

/// Writes a line to standard error.
func printError(_ text: String) {
    if LogFormat.writesJSON.load(ordering: .relaxed) { return JSONLogHandler.writeNotice(text) }
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Reads a whole file as text, with an error that names the file.
func readText(_ path: String, what: String) throws -> String {
    guard let data = FileManager.default.contents(atPath: path) else {
        throw ValidationError("cannot read the \(what) file \(path): no such file or not readable")
    }
    return String(decoding: data, as: UTF8.self)
}

/// Prints a line to standard output and flushes it at once (scripts wait for start-up lines).
func printLineFlushed(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// What a provider needs to reach an APNs server: the server's trust roots and the provider
/// token's key. Shared by `herald push send` and `herald provider`.
struct ProviderCredentialOptions: ParsableArguments {
    @Option(help: ArgumentHelp("A PEM file of trusted roots (the gateway's DIR/tls/ca.pem).", valueName: "PEM"))
    var ca: String?

    @Option(help: ArgumentHelp("The provider's private key (PEM PKCS#8), as herald keys create wrote it: token authentication, with --key-id and --team.", valueName: "FILE.p8"))
    var key: String?

    @Option(help: "The key's 10-character id (what herald keys create printed).")
    var keyID: String?

    @Option(help: "The 10-character team id the key belongs to.")
    var team: String?

    @Option(help: ArgumentHelp("A push certificate (PEM), as herald keys certificate wrote it: certificate authentication instead of a key, with --cert-key.", valueName: "PEM"))
    var cert: String?

    @Option(help: ArgumentHelp("The push certificate's private key (PEM).", valueName: "PEM"))
    var certKey: String?

    /// Checked by the commands that use these options (not as a group's `validate`, so that
    /// `push send --webpush`, which needs none of them, can skip it).
    func validateCredentials() throws {
        let token = [key, keyID, team].compactMap { $0 }.count
        let certificate = [cert, certKey].compactMap { $0 }.count
        if token > 0 && certificate > 0 { throw ValidationError("authenticate with a key (--key, --key-id, --team) or a certificate (--cert, --cert-key), not both") }
        if certificate == 1 { throw ValidationError("--cert and --cert-key go together (the certificate and its private key)") }
        if certificate == 0 && token < 3 {
            throw ValidationError("give the provider key: --key FILE.p8 --key-id KEYID --team TEAMID (or a push certificate: --cert PEM --cert-key PEM)")
        }
    }

    /// The signer of provider tokens; `nil` with certificate authentication.
    func signer() throws -> ProviderTokenSigner? {
        guard let key, let keyID, let team else { return nil }
        return try SigningKeyOptions.signer(key: key, keyID: keyID, team: team)
    }

    /// The TLS settings: the trusted roots, and the client certificate when there is one.
    var clientTLS: ClientTLS { ClientTLS(trustRootsPath: ca, certificateChainPath: cert, privateKeyPath: certKey) }
}

/// The key that signs provider tokens: `--key`, `--key-id`, `--team` (push send, provider, keys jwt).
struct SigningKeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The provider's private key (PEM PKCS#8), as herald keys create wrote it.", valueName: "FILE.p8"))
    var key: String

    @Option(help: "The key's 10-character id (what herald keys create printed).")
    var keyID: String

    @Option(help: "The 10-character team id the key belongs to.")
    var team: String

    /// The signer of provider tokens, or a message that says what is wrong with the key.
    func signer() throws -> ProviderTokenSigner { try Self.signer(key: key, keyID: keyID, team: team) }

    static func signer(key: String, keyID: String, team: String) throws -> ProviderTokenSigner {
        do {
            return try ProviderTokenSigner(keyID: keyID, teamID: team, pem: try readText(key, what: "--key"))
        } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError("--key \(key) is not a PEM PKCS#8 P-256 private key (.p8): \(error)")
        }
    }
}

/// What a person should change when a connection fails. The libraries' errors name the cause
/// (BoringSSL's reason, ALPN, NIO's HTTP parser), not the flag; this adds the flag.
enum ConnectionAdvice {
    enum Side {
        /// `herald push send`, `herald provider`: an APNs provider port (HTTP/2).
        case provider
        /// `herald device run`: a gateway's device port (WebSocket over HTTP/1.1).
        case device
    }

    /// `error` with what to do about it, when the cause is one a flag fixes; `error` otherwise.
    static func explain(_ error: String, side: Side) -> String {
        if error.contains("CERTIFICATE_VERIFY_FAILED") {
            return "the server's TLS certificate is not trusted (CERTIFICATE_VERIFY_FAILED): give its CA with --ca, for a Herald gateway "
                + "--ca DIR/tls/ca.pem (its start-up line names it as \"ca\")"
        }
        switch side {
        case .provider where error.contains("noHTTP2"):
            return "the server does not speak HTTP/2 (it did not choose h2 in TLS ALPN): is this a gateway's device port? "
                + "Push to its provider port (\"provider_port\" in its start-up line)"
        case .device where error.contains("invalid constant string") || error.contains("HTTPParserError") || error.contains("invalidEOFState"):
            return "the server did not answer as a Herald device port (its reply is not HTTP/1.1: an HTTP/2 port such as the gateway's "
                + "provider port?): point --gateway at its device port (\"device_port\" in its start-up line)"
        default:
            if error.contains("Connection refused") || error.contains("connectionRefused") || error.contains("ECONNREFUSED") {
                return "nothing listens there (connection refused): is the gateway running, and is this its "
                    + (side == .provider ? "provider port (\"provider_port\")" : "device port (\"device_port\")") + "?"
            }
            return error
        }
    }
}

/// An exclusive lock on a file (flock), held until the process exits: one gateway per data
/// directory, one `device run` (or `device unregister`) per device directory.
enum DirectoryLock {
    /// Takes the lock on `path` (creating the file), or throws `whenHeld` when another process holds it.
    static func hold(_ path: String, whenHeld: String) throws {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ValidationError("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let failure = errno
            close(descriptor)
            if failure == EWOULDBLOCK { throw ValidationError(whenHeld) }
            throw ValidationError("cannot lock \(path): \(String(cString: strerror(failure)))")
        }
        // The descriptor stays open (and locked) until the process exits.
    }
}
