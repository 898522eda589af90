import ArgumentParser
import Crypto
import Foundation
import HeraldClient
import HeraldCore
import HeraldDevice
import Logging

/// `herald bench broadcast`: one broadcast to many subscribed, connected devices, against the
/// same fan-out done as one push per device, in one run.
struct BenchBroadcast: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broadcast",
        abstract: "Broadcast benchmark against a running gateway: time until the last of --devices subscribed devices has a broadcast.",
        discussion: """
            Connects --devices devices, each subscribed to one channel of the bench app (created on the
            channel port), then measures in one run:
              1. unicast fan-out (the baseline): one push per device to its app token, --connections
                 connections with --streams streams each; time from the first send to the last receipt;
              2. broadcast: one POST /4/broadcasts/apps/<bundle id>; time from sending it to its 200
                 answer (every subscription stored) and to the last device's receipt.
            Prints both times and broadcast / unicast. See scripts/bench-broadcast.sh.

            Example: scripts/bench-broadcast.sh 10000 starts a gateway and runs this against it.
            """)

    @OptionGroup var data: DataDirectoryOptions

    @Option(help: "The provider port, https://HOST:PORT.")
    var url: String

    @Option(help: "The channel management port, https://HOST:PORT.")
    var channels: String

    @Option(help: "The device port, wss://HOST:PORT.")
    var gateway: String

    @Option(help: "The gateway's CA (PEM).")
    var ca: String

    @Option(help: "Subscribed, connected devices.")
    var devices: Int = 10_000

    @Option(help: "Provider HTTP/2 connections for the unicast baseline.")
    var connections: Int = 4

    @Option(help: "Concurrent streams per provider connection.")
    var streams: Int = 100

    func validate() throws {
        guard (1...200_000).contains(devices) else { throw ValidationError("--devices must be from 1 to 200000") }
        guard connections >= 1, streams >= 1 else { throw ValidationError("--connections and --streams must be at least 1") }
    }

    func run() async throws {
        let address = try GatewayAddress(gateway)
        let tls = try DeviceTLS.makeContext(trustRootsPath: ca)
        var logger = Logger(label: "herald.bench")
        logger.logLevel = .error
        func endpoint(_ text: String, _ flag: String) throws -> (String, Int) {
            guard let c = URLComponents(string: text), c.scheme == "https", let host = c.host, let port = c.port else {
                throw ValidationError("\(flag) must be https://HOST:PORT")
            }
            return (host, port)
        }
        let (host, port) = try endpoint(url, "--url")
        let (channelHost, channelPort) = try endpoint(channels, "--channels")

        let (signer, authorization) = try await BenchDelivery.providerKey(in: try await data.openStore(durability: .normal).store, team: "BENCHTEAM3")
        let manager = APNsClient(
            configuration: .init(host: channelHost, port: channelPort, tls: ClientTLS(trustRootsPath: ca, serverName: "localhost"), connections: 1),
            signer: signer)
        let channel = try await manager.createChannel(bundleID: BenchDelivery.topic, storagePolicy: 1)
        await manager.close()

        let started = ContinuousClock.now
        let fleet = try await Fleet.connect(
            identities: (0..<devices).map { _ in DeviceIdentity() }, host: address.host, port: address.port, tls: tls, logger: logger,
            channel: channel)
        print("\(devices) devices connected and subscribed in \(Self.format(ContinuousClock.now - started))")

        var pushers: [HTTP2Connection] = []
        for _ in 0..<connections {
            pushers.append(try await HTTP2Connection.connect(host: host, port: port, tls: ClientTLS(trustRootsPath: ca, serverName: "localhost")))
        }
        let sender = Sender(pushers: pushers, streams: streams, authorization: authorization, tokens: fleet.tokens)
        fleet.resetLatencies()
        let unicastStart = BenchDelivery.nanos()
        let sent = try await sender.send(count: devices, rate: nil)
        let unicast = await fleet.waitForDeliveries(atLeast: 1, perDevice: true, timeout: .seconds(300))
        let unicastSeconds = Double(fleet.lastArrival() &- unicastStart) / 1e9
        print(String(format: "1. unicast fan-out: %d pushes (%d refused), %d received; last receipt after %.3f s", sent.ok, sent.refused, unicast.count, unicastSeconds))

        fleet.resetLatencies()
        let payload = #"{"aps":{"event":"update","timestamp":\#(SystemWallClock().nowSeconds()),"content-state":{"score":1}},"t":\#(BenchDelivery.nanos())}"#
        let broadcastStart = BenchDelivery.nanos()
        let answer = try await pushers[0].send(.init(
            method: "POST", path: "/4/broadcasts/apps/\(BenchDelivery.topic)",
            headers: [("authorization", authorization), ("apns-push-type", "liveactivity"), ("apns-channel-id", channel)],
            body: Array(payload.utf8)))
        let answered = Double(BenchDelivery.nanos() - broadcastStart) / 1e9
        guard answer.status == 200 else { throw ValidationError("the broadcast was refused: \(answer.status) \(answer.rejection.map { "\($0)" } ?? "")") }
        let broadcast = await fleet.waitForDeliveries(atLeast: 1, perDevice: true, timeout: .seconds(300))
        let broadcastSeconds = Double(fleet.lastArrival() &- broadcastStart) / 1e9
        print(String(format: "2. broadcast: answered 200 after %.3f s (every subscription stored); %d received; last receipt after %.3f s", answered, broadcast.count, broadcastSeconds))
        print(String(format: "   broadcast / unicast fan-out, time to the last device: %.2f", broadcastSeconds / max(unicastSeconds, 1e-9)))
        await fleet.stop()
        for pusher in pushers { await pusher.close() }
    }

    static func format(_ duration: Duration) -> String {
        String(format: "%.1f s", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}
