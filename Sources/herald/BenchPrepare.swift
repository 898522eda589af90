import ArgumentParser
import Crypto
import Foundation
import HeraldCore
import HeraldStore

struct BenchPrepare: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prepare",
        abstract: "Register a key and N tokens in a gateway's data directory and write h2load's inputs.",
        discussion: """
            Writes OUT/uris.txt (one push URI per token, for h2load -i), OUT/authorization.txt (a
            provider token valid for an hour) and OUT/payload.json (a 200-byte payload).

            Example: herald bench prepare --data-dir ./herald-data --tokens 1000 --url https://127.0.0.1:2197 --out ./bench-in
            """)

    @OptionGroup var data: DataDirectoryOptions

    @Option(help: "How many device tokens to register.")
    var tokens: Int = 1000

    @Option(help: "The base URL of the provider port the URIs name, e.g. https://127.0.0.1:2197.")
    var url: String

    @Option(help: "The directory to write the inputs to.")
    var out: String

    @Option(help: "The topic the tokens and key use.")
    var topic: String = "com.example.bench"

    @Option(help: ArgumentHelp("Also register as many Web Push subscriptions (made with an application server key) under this Web Push port URL, e.g. https://127.0.0.1:8443, and write OUT/webpush-uris.txt, OUT/webpush-authorization.txt (a VAPID header valid for 12 hours) and OUT/webpush-body.bin (200 opaque bytes).", valueName: "URL"))
    var webpushUrl: String?

    func run() async throws {
        let store = try await data.openStore(durability: .normal).store
        let clock = SystemWallClock()
        let privateKey = P256.Signing.PrivateKey()
        let keyID = KeyID.random().value
        let team = "BENCHTEAM1"
        try await store.registerKey(
            ProviderKey(keyID: keyID, teamID: team, publicKey: privateKey.publicKey),
            topics: [topic], atMilliseconds: clock.nowMilliseconds())
        var uris = ""
        var hexTokens = ""
        var batch: [TokenRegistration] = []
        for i in 0..<tokens {
            let token = DeviceToken.random()
            batch.append(TokenRegistration(token: token, scope: TokenScope(bundleID: topic), environment: .development, createdAtMilliseconds: clock.nowMilliseconds()))
            uris += "\(url)/3/device/\(token.hex)\n"
            hexTokens += token.hex + "\n"
            if batch.count == 10_000 || i == tokens - 1 {
                try await store.registerTokens(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let signer = ProviderTokenSigner(keyID: keyID, teamID: team, privateKey: privateKey)
        try uris.write(toFile: "\(out)/uris.txt", atomically: true, encoding: .utf8)
        // For clients that sign their own tokens (herald push send, Python): the key, its id, the tokens.
        try hexTokens.write(toFile: "\(out)/tokens.txt", atomically: true, encoding: .utf8)
        try privateKey.pemRepresentation.write(toFile: "\(out)/key.p8", atomically: true, encoding: .utf8)
        try "\(keyID) \(team)".write(toFile: "\(out)/key-id.txt", atomically: true, encoding: .utf8)
        try ("bearer " + signer.token(issuedAt: clock.nowSeconds())).write(toFile: "\(out)/authorization.txt", atomically: true, encoding: .utf8)
        let alert = String(repeating: "x", count: 200 - #"{"aps":{"alert":""}}"#.utf8.count)
        try #"{"aps":{"alert":"\#(alert)"}}"#.write(toFile: "\(out)/payload.json", atomically: true, encoding: .utf8)
        if let webpushUrl { try await prepareWebPush(store: store, base: webpushUrl, now: clock.nowMilliseconds()) }
        print("registered key \(keyID) and \(tokens) tokens for \(topic)\(webpushUrl == nil ? "" : " and \(tokens) Web Push subscriptions"); inputs in \(out)")
    }

    /// Subscriptions as a browser's would be (one per endpoint, all held by one user agent),
    /// signed for by one application server key.
    private func prepareWebPush(store: any GatewayStore, base: String, now: Int64) async throws {
        guard let origin = VAPIDSigner.origin(of: base) else { throw ValidationError("--webpush-url must be a URL such as https://127.0.0.1:8443") }
        let signer = VAPIDSigner(privateKey: P256.Signing.PrivateKey(), subject: "mailto:bench@example.com")
        var uris = ""
        var batch: [TokenRegistration] = []
        for i in 0..<tokens {
            let token = DeviceToken.random()
            let scope = TokenScope(bundleID: "browser", kind: .webPush(channel: UUID().uuidString.lowercased(), applicationServerKey: signer.publicKeyText))
            batch.append(TokenRegistration(token: token, scope: scope, environment: .development, createdAtMilliseconds: now))
            uris += "\(origin)/wpush/\(token.hex)\n"
            if batch.count == 10_000 || i == tokens - 1 {
                try await store.registerTokens(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        try uris.write(toFile: "\(out)/webpush-uris.txt", atomically: true, encoding: .utf8)
        try signer.authorization(audience: origin, expiresAt: now / 1000 + 12 * 3600)
            .write(toFile: "\(out)/webpush-authorization.txt", atomically: true, encoding: .utf8)
        try Data(WebPushEncryption.randomBytes(200)).write(to: URL(fileURLWithPath: "\(out)/webpush-body.bin"))
    }
}
