import ArgumentParser
import Foundation
import HeraldClient
import HeraldCore
import HeraldGateway

struct FeedbackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feedback",
        abstract: "Feedback lists: the legacy Feedback Service's client certificates and reading it; looking at a list without clearing it.",
        discussion: "Example: herald feedback list --data-dir ./herald-data --topic com.example.app",
        subcommands: [FeedbackCertificateCommand.self, FeedbackReadCommand.self, FeedbackListCommand.self]
    )
}

struct FeedbackCertificateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "certificate",
        abstract: "Issue an app's client certificate (UID=<topic>) for the feedback port, signed by the gateway's development CA.",
        discussion: "Example: herald feedback certificate --data-dir ./herald-data --topic com.example.app --out-cert app.pem --out-key app-key.pem"
    )

    @OptionGroup var data: DataDirectoryOptions

    @Option(help: "The app's topic (bundle id).")
    var topic: String

    @Option(help: ArgumentHelp("Where to write the certificate (PEM).", valueName: "PEM"))
    var outCert: String

    @Option(help: ArgumentHelp("Where to write its private key (PEM, mode 0600).", valueName: "PEM"))
    var outKey: String

    func validate() throws {
        guard DeviceProtocol.isValidTopic(topic) else { throw ValidationError("--topic \"\(topic)\" is not a bundle id") }
        guard data.dataDirectoryArgument != nil, data.databaseURL == nil else {
            throw ValidationError("give the gateway's --data-dir (its CA issues the certificate), not --database")
        }
    }

    func run() throws {
        let issued = try DevelopmentCertificates.issueClientCertificate(topic: topic, in: data.dataDirectory, clock: SystemWallClock())
        guard FileManager.default.createFile(atPath: outCert, contents: Data(issued.certificatePEM.utf8)),
              FileManager.default.createFile(atPath: outKey, contents: Data(issued.privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600])
        else { throw ValidationError("cannot write \(outCert) or \(outKey)") }
        printLineFlushed(outCert)
    }
}

struct FeedbackReadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Read (and so clear) an app's feedback list from a feedback port: one line per dead token, `TOKEN TIMESTAMP`.",
        discussion: "Example: herald feedback read --address localhost:2196 --ca ./herald-data/tls/ca.pem --cert app.pem --key app-key.pem"
    )

    @Option(help: ArgumentHelp("The feedback port, HOST:PORT.", valueName: "HOST:PORT"))
    var address: String

    @Option(help: ArgumentHelp("The app's client certificate (PEM).", valueName: "PEM"))
    var cert: String

    @Option(help: ArgumentHelp("Its private key (PEM).", valueName: "PEM"))
    var key: String

    @Option(help: ArgumentHelp("A PEM file of trusted roots (the gateway's DIR/tls/ca.pem).", valueName: "PEM"))
    var ca: String?

    func run() async throws {
        let parts = address.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else { throw ValidationError("--address must be HOST:PORT, not \(address)") }
        let entries: [LegacyFeedbackClient.Entry]
        do {
            entries = try await LegacyFeedbackClient.fetch(
                host: String(parts[0]), port: port, certificatePath: cert, privateKeyPath: key, trustRootsPath: ca)
        } catch {
            printError("herald: could not read the feedback list from \(address): \(error)")
            throw ExitCode(1)
        }
        for entry in entries { printLineFlushed("\(entry.token) \(entry.timestampSeconds)") }
    }
}
