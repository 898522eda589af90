import ArgumentParser
import Foundation
import HeraldCore
import HeraldStoreSQLite

extension APNsEnvironment: ExpressibleByArgument {
    public init?(argument: String) { self.init(rawValue: argument) }
    public static var allValueStrings: [String] { ["development", "production"] }
}

extension SQLiteStore.Durability: ExpressibleByArgument {}

extension DataDirectoryOptions {
    /// Creates the directory if needed and opens the store in it.
    func openStore(durability: SQLiteStore.Durability = .full) throws -> SQLiteStore {
        do {
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        } catch {
            throw ValidationError("cannot create the data directory \(dataDirectory): \(error.localizedDescription)")
        }
        return try SQLiteStore(path: databasePath, durability: durability)
    }

    var databasePath: String { (dataDirectory as NSString).appendingPathComponent("herald.sqlite") }

    /// Opens the store of an existing gateway data directory; refuses (rather than creating an
    /// empty store) when the directory or its database is missing, which is nearly always a
    /// mistyped `--data-dir`.
    func openExistingStore() throws -> SQLiteStore {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dataDirectory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("--data-dir \(dataDirectory) does not exist; give the directory `herald gateway --data-dir` uses")
        }
        guard FileManager.default.fileExists(atPath: databasePath) else {
            throw ValidationError("--data-dir \(dataDirectory) has no herald.sqlite: it is not a gateway's data directory (start `herald gateway --data-dir \(dataDirectoryArgument)` once to create it)")
        }
        return try SQLiteStore(path: databasePath)
    }
}

/// Writes a line to standard error.
func printError(_ text: String) {
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

    @Option(help: ArgumentHelp("The provider's private key (PEM PKCS#8).", valueName: "FILE.p8"))
    var key: String

    @Option(help: "The key's 10-character id.")
    var keyID: String

    @Option(help: "The 10-character team id.")
    var team: String

    /// The signer of provider tokens, or a message that says what is wrong with the key.
    func signer() throws -> ProviderTokenSigner {
        do {
            return try ProviderTokenSigner(keyID: keyID, teamID: team, pem: try readText(key, what: "--key"))
        } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError("--key \(key) is not a PEM PKCS#8 P-256 private key (.p8): \(error)")
        }
    }
}
