import ArgumentParser
import Foundation
import HeraldClient
import HeraldCore

/// `herald channels`: the broadcast channel management API (a gateway's --channel-port, or Apple's).
struct ChannelsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channels",
        abstract: "Manage an app's broadcast channels (Live Activity broadcasts) on a channel management port.",
        discussion: """
            Talks to a gateway's channel port (herald gateway --channel-port, "channel_port" in its start-up
            line) or to Apple's (https://api-manage-broadcast.sandbox.push.apple.com:2195), authenticated like
            pushes. Broadcast on a channel with herald push send --channel ID.

            Example: herald channels create --gateway https://localhost:2195 --ca ./herald-data/tls/ca.pem --key key.p8 --key-id KEYID --team TEAM123456 --topic com.example.app --storage-policy 1
            """,
        subcommands: [Create.self, List.self, Show.self, Delete.self])

    /// What every channel command takes.
    struct Target: ParsableArguments {
        @Option(name: .customLong("gateway"), help: ArgumentHelp("The channel management port, https://HOST:PORT.", valueName: "URL"))
        var url: String

        @OptionGroup var credentials: ProviderCredentialOptions

        @Option(help: "The app's bundle id.")
        var topic: String

        func validate() throws {
            try credentials.validateCredentials()
            guard let components = URLComponents(string: url), components.scheme == "https", components.host != nil else {
                throw ValidationError("--gateway must look like https://HOST:PORT (the gateway's \"channel_port\"); got '\(url)'")
            }
            guard DeviceProtocol.isValidTopic(topic) else { throw ValidationError("--topic must be a bundle id like com.example.app; got '\(topic)'") }
        }

        func client() throws -> APNsClient {
            let components = URLComponents(string: url)!
            return APNsClient(
                configuration: .init(host: components.host!, port: components.port ?? 443, tls: credentials.clientTLS, connections: 1),
                signer: try credentials.signer())
        }

        /// Runs one request and closes the client; a refusal becomes a message with the status and reason.
        func run<T>(_ body: (APNsClient) async throws -> T) async throws -> T {
            let client = try client()
            do {
                let result = try await body(client)
                await client.close()
                return result
            } catch let error as APNsQueryError {
                await client.close()
                printError("herald: \(url) answered \(error.status) \(error.reason?.rawValue ?? "(no reason)")")
                throw ExitCode(1)
            } catch {
                await client.close()
                printError("herald: cannot reach \(url): \(ConnectionAdvice.explain("\(error)", side: .provider))")
                throw ExitCode(2)
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a channel; prints its id.",
            discussion: "Example: CHANNEL=$(herald channels create --gateway https://localhost:2195 --ca ./herald-data/tls/ca.pem --key key.p8 --key-id KEYID --team TEAM123456 --topic com.example.app --storage-policy 1)")
        @OptionGroup var target: Target
        @Option(help: "message-storage-policy: 0 stores nothing for offline devices, 1 keeps the most recent broadcast.")
        var storagePolicy: Int = 0

        func validate() throws {
            guard (0...1).contains(storagePolicy) else { throw ValidationError("--storage-policy must be 0 or 1; got \(storagePolicy)") }
        }

        func run() async throws {
            let id = try await target.run { try await $0.createChannel(bundleID: target.topic, storagePolicy: storagePolicy) }
            printLineFlushed(id)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the app's channel ids, one per line.",
            discussion: "Example: herald channels list --gateway https://localhost:2195 --ca ./herald-data/tls/ca.pem --key key.p8 --key-id KEYID --team TEAM123456 --topic com.example.app")
        @OptionGroup var target: Target

        func run() async throws {
            for id in try await target.run({ try await $0.channels(bundleID: target.topic) }) { printLineFlushed(id) }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Print a channel's storage policy.",
            discussion: "Example: herald channels show --gateway https://localhost:2195 --ca ./herald-data/tls/ca.pem --key key.p8 --key-id KEYID --team TEAM123456 --topic com.example.app --channel $CHANNEL")
        @OptionGroup var target: Target
        @Option(help: "The channel id.")
        var channel: String

        func run() async throws {
            guard let policy = try await target.run({ try await $0.channelStoragePolicy(bundleID: target.topic, channelID: channel) }) else {
                printError("herald: \(target.topic) has no channel \(channel)")
                throw ExitCode(1)
            }
            printLineFlushed("message-storage-policy \(policy)")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a channel.",
            discussion: "Example: herald channels delete --gateway https://localhost:2195 --ca ./herald-data/tls/ca.pem --key key.p8 --key-id KEYID --team TEAM123456 --topic com.example.app --channel $CHANNEL")
        @OptionGroup var target: Target
        @Option(help: "The channel id.")
        var channel: String

        func run() async throws {
            guard try await target.run({ try await $0.deleteChannel(bundleID: target.topic, channelID: channel) }) else {
                printError("herald: \(target.topic) has no channel \(channel)")
                throw ExitCode(1)
            }
            printLineFlushed("deleted \(channel)")
        }
    }
}
