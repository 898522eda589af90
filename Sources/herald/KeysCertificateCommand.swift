import ArgumentParser
import Foundation
import HeraldCore
import HeraldGateway
import HeraldStore

extension PushCertificate.Variant: ExpressibleByArgument {}

/// `herald keys certificate`: a push certificate for certificate authentication on the provider port.
struct KeysCertificateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "certificate",
        abstract: "Issue a push certificate for a team's app: TLS client authentication on the provider port, no JWT.",
        discussion: """
            The certificate is laid out as Apple's are: subject UID=<bundle id>, OU=<team id>, the topics
            extension listing the bundle id and the --variant topics (.voip, .complication), and the
            environment extension. It is signed by the gateway's development CA (DIR/tls/ca-key.pem;
            a gateway started with --tls-cert accepts it when given --provider-client-ca DIR/tls/ca.pem)
            and registered in the store as a credential of the team, which gains the topic. It prints
            the credential id, cert-<16 hex digits>: `herald keys revoke --key-id` stops it (within
            seconds on every node), `herald keys list` shows it.

            Without --variant the certificate has one topic and requests may omit apns-topic; with a
            variant they must name one (400 MissingTopic), as APNs answers (reference §3).

            Example: herald keys certificate --data-dir ./herald-data --team TEAM123456 --topic com.example.app --variant voip --out-cert app.pem --out-key app-key.pem --out-p12 app.p12
            """)

    @OptionGroup var data: DataDirectoryOptions

    @Option(help: "The 10-character team id (letters and digits) the certificate belongs to.")
    var team: String

    @Option(help: "The app's bundle id.")
    var topic: String

    @Option(help: "A topic variant the certificate also covers: voip or complication; repeat for both.")
    var variant: [PushCertificate.Variant] = []

    @Option(help: "Restrict the certificate to one environment (development or production); by default it works in both.")
    var environment: PushEnvironment?

    @Option(help: ArgumentHelp("Where to write the certificate (PEM).", valueName: "PEM"))
    var outCert: String

    @Option(help: ArgumentHelp("Where to write its private key (PEM, mode 0600).", valueName: "PEM"))
    var outKey: String

    @Option(help: ArgumentHelp("Also write a PKCS#12 bundle (certificate, key and CA; made with the openssl command).", valueName: "P12"))
    var outP12: String?

    @Option(help: ArgumentHelp("A file whose first line is the PKCS#12 password; by default the bundle's password is empty.", valueName: "FILE"))
    var p12PasswordFile: String?

    func validate() throws {
        guard TeamID(team) != nil else { throw ValidationError("--team must be 10 letters or digits, like TEAM123456; got '\(team)'") }
        guard DeviceProtocol.isValidTopic(topic) else { throw ValidationError("--topic \"\(topic)\" is not a bundle id like com.example.app") }
        guard data.dataDirectoryArgument != nil else {
            throw ValidationError("give the gateway's --data-dir: its development CA issues the certificate (with --database, the credential is registered there)")
        }
        for path in [outCert, outKey] + (outP12.map { [$0] } ?? []) where FileManager.default.fileExists(atPath: path) {
            throw ValidationError("\(path) already exists; choose another path (a certificate or key file is never overwritten)")
        }
        if p12PasswordFile != nil && outP12 == nil { throw ValidationError("--p12-password-file needs --out-p12") }
        if outP12 != nil && Self.openSSL() == nil {
            throw ValidationError("--out-p12 needs the openssl command, which is not on PATH (apt-get install openssl); the PEM files need nothing")
        }
    }

    func run() async throws {
        let store = try await data.openStoreInExistingDirectory()
        let clock = SystemWallClock()
        let issued = try DevelopmentCertificates.issuePushCertificate(
            bundleID: topic, teamID: team, variants: variant, environment: environment,
            in: data.dataDirectory, clock: clock)
        do {
            try await store.registerKey(
                ProviderKey(keyID: issued.certificate.credentialID, teamID: team, publicKey: issued.certificate.publicKey, environment: environment),
                topics: [topic], atMilliseconds: clock.nowMilliseconds())
        } catch let error as StoreError {
            throw ValidationError(error.message)
        }
        guard FileManager.default.createFile(atPath: outCert, contents: Data(issued.certificatePEM.utf8)),
              FileManager.default.createFile(atPath: outKey, contents: Data(issued.privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600])
        else {
            throw ValidationError("cannot write \(outCert) or \(outKey); the credential \(issued.certificate.credentialID) is registered: revoke it with herald keys revoke")
        }
        if let outP12 { try writePKCS12(to: outP12) }
        printLineFlushed(issued.certificate.credentialID)
    }

    /// `openssl pkcs12 -export`: the format Keychain Access exports and provider libraries load.
    private func writePKCS12(to path: String) throws {
        guard let openssl = Self.openSSL() else { throw ValidationError("openssl is not on PATH") }
        let ca = (data.dataDirectory as NSString).appendingPathComponent("tls/ca.pem")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = [
            "pkcs12", "-export", "-in", outCert, "-inkey", outKey, "-certfile", ca,
            "-name", "Apple Push Services: \(topic)", "-out", path,
            "-passout", p12PasswordFile.map { "file:\($0)" } ?? "pass:",
        ]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw ValidationError("openssl pkcs12 failed (the PEM files are written): \(text.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        _ = chmod(path, 0o600)
    }

    static func openSSL() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/openssl" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
