import ArgumentParser
import Crypto
import Foundation
import HeraldCore
import HeraldStore

struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Manage provider signing keys.",
        discussion: "Example: herald keys create --data-dir ./herald-data --team TEAM123456 --topic com.example.app --out key.p8",
        subcommands: [Create.self, KeysCertificateCommand.self, KeysListCommand.self, KeysRevokeCommand.self, KeysJWTCommand.self, KeysVAPIDCommand.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a provider key (ES256) for a team and give the team its topics.",
            discussion: """
                Writes the private key as PEM PKCS#8 (the .p8 format Apple hands out), registers the public
                key in the gateway's store, and prints the 10-character key id. Providers sign their JWTs
                with it: header {"alg":"ES256","kid":KEYID}, claims {"iss":TEAMID,"iat":NOW}.

                Example: KEY_ID=$(herald keys create --data-dir ./herald-data --team TEAM123456 --topic com.example.app --out key.p8)
                """)

        @OptionGroup var data: DataDirectoryOptions

        @Option(help: "The 10-character team id (letters and digits) that owns the key and topics.")
        var team: String

        @Option(name: .customLong("topic"), help: "A topic (bundle id) the team owns; repeat for several.")
        var topics: [String] = []

        @Option(help: ArgumentHelp("Where to write the private key (PEM PKCS#8).", valueName: "FILE.p8"))
        var out: String

        @Option(help: "The key id; by default a random 10-character id.")
        var keyID: String?

        @Option(help: "Restrict the key to one environment (development or production); by default it works in both.")
        var environment: PushEnvironment?

        func validate() throws {
            guard TeamID(team) != nil else { throw ValidationError("--team must be 10 letters or digits, like TEAM123456; got '\(team)'") }
            if let keyID, KeyID(keyID) == nil { throw ValidationError("--key-id must be 10 letters or digits; got '\(keyID)'") }
            for topic in topics where topic.isEmpty || topic.contains(where: \.isWhitespace) {
                throw ValidationError("--topic must be a bundle id like com.example.app; got '\(topic)'")
            }
            if FileManager.default.fileExists(atPath: out) {
                throw ValidationError("\(out) already exists; choose another --out (a key file is never overwritten)")
            }
        }

        func run() async throws {
            let store = try await data.openStoreInExistingDirectory()
            let privateKey = P256.Signing.PrivateKey()
            let id = keyID ?? KeyID.random().value
            do {
                try await store.registerKey(
                    ProviderKey(keyID: id, teamID: team, publicKey: privateKey.publicKey, environment: environment),
                    topics: topics, atMilliseconds: SystemWallClock().nowMilliseconds())
            } catch let error as StoreError {
                throw ValidationError(error.message)
            }
            guard FileManager.default.createFile(
                atPath: out, contents: Data((privateKey.pemRepresentation + "\n").utf8), attributes: [.posixPermissions: 0o600])
            else {
                throw ValidationError("cannot write the key file \(out); the key \(id) is registered, but its private half is lost")
            }
            print(id)
        }
    }
}

struct TokensCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens", abstract: "Manage device tokens by hand, and list them.",
        discussion: "Example: herald tokens create --data-dir ./herald-data --topic com.example.app",
        subcommands: [Create.self, Revoke.self, TokensListCommand.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a device token for an app on a device that is not connected; prints the token (hex).",
            discussion: """
                Its notifications wait in the store, as for a device that is offline: the way to test a provider
                without a device. Several at once: for i in $(seq 100); do herald tokens create …; done > tokens.txt

                Example: herald tokens create --data-dir ./herald-data --topic com.example.app
                """)

        @OptionGroup var data: DataDirectoryOptions

        @Option(help: "The app's topic (bundle id).")
        var topic: String

        @Option(help: "The environment the token belongs to; a gateway of the other environment answers BadDeviceToken.")
        var environment: PushEnvironment = .development

        func run() async throws {
            let store = try await data.openStoreInExistingDirectory()
            let token = DeviceToken.random()
            try await store.registerToken(TokenRegistration(
                token: token, scope: TokenScope(stored: topic), environment: environment,
                createdAtMilliseconds: SystemWallClock().nowMilliseconds()))
            print(token.hex)
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Unregister a device token (the app was removed): the gateway then answers 410 Unregistered.",
            discussion: "Example: herald tokens revoke --data-dir ./herald-data --token 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")

        @OptionGroup var data: DataDirectoryOptions

        @Option(help: "The token, in hexadecimal.")
        var token: String

        func run() async throws {
            guard let parsed = DeviceToken(hex: token) else {
                throw ValidationError("--token must be hexadecimal (64 digits for a Herald token); got '\(token)'")
            }
            let store = try await data.openStoreInExistingDirectory()
            let now = SystemWallClock().nowMilliseconds()
            guard try await store.unregisterToken(parsed, atMilliseconds: now) else {
                throw ValidationError("no token \(parsed.hex) is registered in \(data.storeName)")
            }
            let registration = try await store.registration(of: parsed)
            print("unregistered \(parsed.hex) at \(registration?.unregisteredAtMilliseconds ?? now)")
        }
    }
}

/// `herald keys jwt`: a provider token for clients that do not sign their own (curl).
struct KeysJWTCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jwt",
        abstract: "Print a provider token (ES256 JWT) signed with a key, for curl and other clients that do not sign their own.",
        discussion: """
            The token is valid for an hour from now (APNs refuses older ones with ExpiredProviderToken).
            Example:
              JWT=$(herald keys jwt --key key.p8 --key-id KEYID --team TEAM123456)
              curl --http2 --cacert ./herald-data/tls/ca.pem -H "authorization: bearer $JWT" -H "apns-topic: com.example.app" \\
                  -d '{"aps":{"alert":"hi"}}' https://localhost:2197/3/device/$TOKEN
            """)

    @OptionGroup var signingKey: SigningKeyOptions

    func run() throws {
        print(try signingKey.signer().token(issuedAt: SystemWallClock().nowMilliseconds() / 1000))
    }
}

/// `herald keys vapid`: an application server key pair for Web Push (RFC 8292).
struct KeysVAPIDCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vapid",
        abstract: "Create a VAPID key pair for Web Push: writes the private key, prints the public key (the applicationServerKey).",
        discussion: """
            The private key (PEM PKCS#8, P-256) signs the Authorization of every push the application server sends
            (vapid t=<JWT>, k=<public key>); the public key, base64url, is what a page passes to
            pushManager.subscribe({applicationServerKey}) and what `herald push send --webpush` and pywebpush
            (vapid_private_key=FILE) use. A subscription made with it accepts only pushes signed with it.
            Example:
              herald keys vapid --out vapid.pem
            """)

    @Option(help: ArgumentHelp("Where to write the private key (PEM PKCS#8, mode 0600).", valueName: "FILE.pem"))
    var out: String

    func validate() throws {
        if FileManager.default.fileExists(atPath: out) {
            throw ValidationError("\(out) already exists; choose another --out (a key file is never overwritten)")
        }
    }

    func run() throws {
        let key = P256.Signing.PrivateKey()
        guard FileManager.default.createFile(atPath: out, contents: Data(key.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ValidationError("could not write \(out)")
        }
        print(VAPIDSigner(privateKey: key, subject: "").publicKeyText)
    }
}
