import ArgumentParser
import Crypto
import Dispatch
import Foundation
import HeraldClient
import HeraldCore
import HeraldDevice
import HeraldStore
import Logging
import NIOCore
import NIOSSL

struct BenchDelivery: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delivery",
        abstract: "End-to-end delivery benchmark against a running gateway: devices connected, a provider pushing.",
        discussion: """
            Connects --devices devices (one app each) to the device port, then measures, against the same
            gateway in one run:
              1. acceptance: --requests pushes to those devices while they are offline (stored only);
              2. delivery: the same with every device connected (stored, sent, acked), as fast as possible;
              3. latency: the same again, paced at --pace times the rate of step 2;
            Latency is from just before the provider sends to the device's receipt of the frame. With
            --idle-devices N and --gateway-pid PID it instead connects N idle devices and reports the
            gateway's resident memory per device. See scripts/bench-delivery.sh.

            Example: scripts/bench-delivery.sh 50000 1000 10000 starts a gateway and runs this against it.
            """)

    @OptionGroup var data: DataDirectoryOptions

    @Option(help: "The provider port, https://HOST:PORT.")
    var url: String

    @Option(help: "The device port, wss://HOST:PORT.")
    var gateway: String

    @Option(help: "The gateway's CA (PEM).")
    var ca: String

    @Option(help: "Connected devices.")
    var devices: Int = 1000

    @Option(help: "Provider HTTP/2 connections.")
    var connections: Int = 4

    @Option(help: "Concurrent streams per provider connection.")
    var streams: Int = 100

    @Option(help: "Pushes per measurement.")
    var requests: Int = 50_000

    @Option(help: "The paced step's rate, as a fraction of the delivery rate of step 2.")
    var pace: Double = 0.5

    @Option(help: "Only measure memory: connect this many idle devices (needs --gateway-pid).")
    var idleDevices: Int?

    @Option(help: "The gateway's process id (for its resident memory).")
    var gatewayPid: Int32?

    @Option(help: ArgumentHelp(
        "The gateway's admin port: step 3 then also prints the gateway's own histograms of the paced pushes (its /metrics).",
        valueName: "http://HOST:PORT"))
    var admin: String?

    static let topic = "com.example.delivery"

    func run() async throws {
        let address = try GatewayAddress(gateway)
        let tls = try DeviceTLS.makeContext(trustRootsPath: ca)
        var logger = Logger(label: "herald.bench")
        logger.logLevel = .error

        if let idleDevices {
            guard let gatewayPid else { throw ValidationError("--idle-devices needs --gateway-pid") }
            let before = Self.residentKiB(gatewayPid)
            let fleet = try await Fleet.connect(count: idleDevices, host: address.host, port: address.port, tls: tls, logger: logger)
            try await Task.sleep(for: .seconds(3))
            let after = Self.residentKiB(gatewayPid)
            let perDevice = Double(after - before) * 1024 / Double(idleDevices)
            print("idle devices: \(idleDevices); gateway RSS \(before / 1024) MiB -> \(after / 1024) MiB; \(String(format: "%.1f", perDevice / 1024)) KiB per device")
            await fleet.stop()
            return
        }

        // A provider key for the bench topic, registered in the gateway's store.
        let (_, authorization) = try await BenchDelivery.providerKey(in: try await data.openStore(durability: .normal).store, team: "BENCHTEAM2")

        guard let provider = URLComponents(string: url), provider.scheme == "https", let host = provider.host, let port = provider.port else {
            throw ValidationError("--url must be https://HOST:PORT")
        }
        var pushers: [HTTP2Connection] = []
        for _ in 0..<connections {
            pushers.append(try await HTTP2Connection.connect(
                host: host, port: port, tls: ClientTLS(trustRootsPath: ca, serverName: "localhost")))
        }

        // Enroll the devices and learn their tokens, then take them offline.
        var fleet = try await Fleet.connect(count: devices, host: address.host, port: address.port, tls: tls, logger: logger)
        let identities = fleet.identities
        let tokens = fleet.tokens
        await fleet.stop()

        let sender = Sender(pushers: pushers, streams: streams, authorization: authorization, tokens: tokens)
        var cpu = CPUMeter(gatewayPid: gatewayPid)
        let accepted = try await sender.send(count: requests, rate: nil)
        let acceptCPU = cpu.lap(per: accepted.ok)
        print(String(format: "1. acceptance (devices offline): %.0f pushes/s (%d accepted, %d refused); CPU per push: gateway %.1f µs, this load generator %.1f µs",
                     accepted.rate, accepted.ok, accepted.refused, acceptCPU.gateway, acceptCPU.generator))

        fleet = try await Fleet.connect(identities: identities, host: address.host, port: address.port, tls: tls, logger: logger)
        _ = await fleet.waitForDeliveries(atLeast: 1, perDevice: true, timeout: .seconds(60))  // the stored ones
        fleet.resetLatencies()
        _ = cpu.lap(per: 1)
        let delivery = try await sender.send(count: requests, rate: nil)
        let deliveredAll = await fleet.waitForDeliveries(atLeast: delivery.ok, perDevice: false, timeout: .seconds(120))
        let deliverCPU = cpu.lap(per: delivery.ok)
        let endToEnd = Double(deliveredAll.count) / deliveredAll.seconds
        let fast = fleet.latencySummary()
        print(String(format: "2. delivery (devices connected): accepted %.0f pushes/s; delivered %.0f/s end to end (%d of %d); latency p50 %.1f ms, p99 %.1f ms",
                     delivery.rate, endToEnd, deliveredAll.count, delivery.ok, fast.p50, fast.p99))
        print(String(format: "   delivery / acceptance: %.2f by throughput; CPU per push: gateway %.1f µs, this load generator (devices included) %.1f µs",
                     min(delivery.rate, endToEnd) / accepted.rate, deliverCPU.gateway, deliverCPU.generator))
        if deliverCPU.gateway > 0 {
            print(String(format: "   delivery / acceptance by the gateway's own CPU per push: %.2f", acceptCPU.gateway / deliverCPU.gateway))
        }

        let target = min(delivery.rate, endToEnd) * pace
        let metrics = try admin.map { try AdminPortRequest(admin: $0) }
        let metricsBefore = try await metrics?.histograms()
        fleet.resetLatencies()
        let paced = try await sender.send(count: requests, rate: target)
        let pacedAll = await fleet.waitForDeliveries(atLeast: paced.ok, perDevice: false, timeout: .seconds(120))
        let slow = fleet.latencySummary()
        print(String(format: "3. paced at %.0f pushes/s (%.0f%% of step 2): sent %.0f/s; delivered %d of %d; latency p50 %.1f ms, p99 %.1f ms",
                     target, pace * 100, paced.rate, pacedAll.count, paced.ok, slow.p50, slow.p99))
        // The same pushes' answers: send -> 200 is the stream read, admission, the batch's wait
        // and its commit; what the device's figure adds is routing, the session's write and the
        // device's read.
        print(String(format: "   of which send -> 200 (stream read, admission, batch wait, commit, answer): p50 %.1f ms, p99 %.1f ms",
                     paced.latency(0.5), paced.latency(0.99)))
        if let metrics, let metricsBefore {
            let after = try await metrics.histograms()
            let answer = after.since(metricsBefore, "herald_intake_answer_seconds")
            let commit = after.since(metricsBefore, "herald_intake_commit_seconds")
            let ack = after.since(metricsBefore, "herald_device_ack_seconds")
            // Bucket bounds: the quantile is at most this (the histograms' buckets are 1, 2, 5, 10, 20, 50 ms…).
            print("   in the gateway (its histograms, quantiles as bucket bounds): intake to answer (batch wait, commit, hop back) "
                + "p50 ≤ \(answer.bound(0.5)) ms, p99 ≤ \(answer.bound(0.99)) ms; commit p99 ≤ \(commit.bound(0.99)) ms over \(commit.count) batches; "
                + "written on the device's connection to its ack p99 ≤ \(ack.bound(0.99)) ms")
        }
        await fleet.stop()
        for pusher in pushers { await pusher.close() }
    }

    /// A provider key for the bench app, registered in the gateway's store, and the
    /// `authorization` header of a token it signed.
    static func providerKey(in store: any GatewayStore, team: String) async throws -> (signer: ProviderTokenSigner, authorization: String) {
        let privateKey = P256.Signing.PrivateKey()
        let keyID = KeyID.random().value
        try? await store.registerKey(
            ProviderKey(keyID: keyID, teamID: team, publicKey: privateKey.publicKey),
            topics: [topic], atMilliseconds: SystemWallClock().nowMilliseconds())
        let signer = ProviderTokenSigner(keyID: keyID, teamID: team, privateKey: privateKey)
        return (signer, "bearer " + (try signer.token(issuedAt: SystemWallClock().nowSeconds())))
    }

    /// CPU seconds (user + system) a process has used.
    static func cpuSeconds(_ pid: Int32?) -> Double {
        let path = pid.map { "/proc/\($0)/stat" } ?? "/proc/self/stat"
        guard let stat = try? String(contentsOfFile: path, encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based in proc(5)).
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / 100
    }

    static func residentKiB(_ pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }

    static func nanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}

/// CPU used by the gateway and by this process between laps.
private struct CPUMeter {
    let gatewayPid: Int32?
    var gateway: Double
    var generator: Double

    init(gatewayPid: Int32?) {
        self.gatewayPid = gatewayPid
        gateway = gatewayPid.map { BenchDelivery.cpuSeconds($0) } ?? 0
        generator = BenchDelivery.cpuSeconds(nil)
    }

    /// Microseconds of CPU per item since the last lap.
    mutating func lap(per items: Int) -> (gateway: Double, generator: Double) {
        let g = gatewayPid.map { BenchDelivery.cpuSeconds($0) } ?? 0
        let s = BenchDelivery.cpuSeconds(nil)
        defer { gateway = g; generator = s }
        let n = Double(max(1, items))
        return ((g - gateway) * 1e6 / n, (s - generator) * 1e6 / n)
    }
}

/// Pushes to the fleet's tokens over several connections, many streams each.
struct Sender: Sendable {
    let pushers: [HTTP2Connection]
    let streams: Int
    let authorization: String
    let tokens: [DeviceToken]

    struct Result {
        var ok: Int
        var refused: Int
        var rate: Double
        /// Each request's time from sending to its answer, sorted (nanoseconds).
        var latencies: [UInt64] = []

        /// The answer time at quantile `q` (0…1), in milliseconds.
        func latency(_ q: Double) -> Double {
            guard !latencies.isEmpty else { return 0 }
            return Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * q))]) / 1e6
        }
    }

    func send(count: Int, rate: Double?) async throws -> Result {
        let next = Locked(0)
        let outcome = Locked((ok: 0, refused: 0))
        let answerTimes = Locked([UInt64]())
        let start = BenchDelivery.nanos()
        await withTaskGroup(of: Void.self) { group in
            for pusher in pushers {
                for _ in 0..<streams {
                    group.addTask {
                        while true {
                            let i = next.withLock { value -> Int in defer { value += 1 }; return value }
                            guard i < count else { return }
                            if let rate {
                                let due = start + UInt64(Double(i) / rate * 1e9)
                                let now = BenchDelivery.nanos()
                                if due > now { try? await Task.sleep(for: .nanoseconds(Int64(due - now))) }
                            }
                            let sentAt = BenchDelivery.nanos()
                            let payload = #"{"aps":{"alert":"bench"},"t":\#(sentAt)}"#
                            let response = try? await pusher.send(.init(
                                method: "POST", path: "/3/device/\(tokens[i % tokens.count].hex)",
                                headers: [("authorization", authorization), ("apns-topic", BenchDelivery.topic), ("apns-push-type", "alert")],
                                body: Array(payload.utf8)))
                            let answered = BenchDelivery.nanos() &- sentAt
                            outcome.withLock { if response?.status == 200 { $0.ok += 1 } else { $0.refused += 1 } }
                            answerTimes.withLock { $0.append(answered) }
                        }
                    }
                }
            }
        }
        let seconds = Double(BenchDelivery.nanos() - start) / 1e9
        let (ok, refused) = outcome.withLock { $0 }
        return Result(ok: ok, refused: refused, rate: Double(ok) / seconds, latencies: answerTimes.withLock { $0 }.sorted())
    }
}

/// Many devices in this process, each with its own connection.
final class Fleet: Sendable {
    let identities: [DeviceIdentity]
    let tokens: [DeviceToken]
    let connections: [DeviceConnection]
    private let tasks: [Task<Void, Never>]
    /// What the devices received, counted from their first connection: a notification the gateway
    /// had stored arrives before the whole fleet is up and must be counted too.
    let received: Locked<Received>
    typealias Received = (count: Int, perDevice: [Int], latencies: [UInt64], first: UInt64, last: UInt64)
    /// Devices whose connection was authenticated again after the fleet was up (reconnections).
    let reconnected: Locked<Set<Int>>
    /// Connections that ended or attempts that failed, counted by why.
    let disconnectionReasons: Locked<[String: Int]>
    /// Which devices have an authenticated connection now.
    let online: Locked<[Bool]>

    private init(
        identities: [DeviceIdentity], tokens: [DeviceToken], connections: [DeviceConnection], tasks: [Task<Void, Never>],
        received: Locked<Received>, reconnected: Locked<Set<Int>>, disconnectionReasons: Locked<[String: Int]>, online: Locked<[Bool]>
    ) {
        self.identities = identities
        self.tokens = tokens
        self.connections = connections
        self.tasks = tasks
        self.received = received
        self.reconnected = reconnected
        self.disconnectionReasons = disconnectionReasons
        self.online = online
    }

    static func connect(count: Int, host: String, port: Int, tls: NIOSSLContext, logger: Logger) async throws -> Fleet {
        try await connect(identities: (0..<count).map { _ in DeviceIdentity() }, host: host, port: port, tls: tls, logger: logger)
    }

    /// Connects the devices; with `channel`, each also subscribes to that channel of the bench app
    /// and the fleet is returned once every subscription is confirmed. `sources`: source addresses
    /// the devices connect from, in turn; `concurrency`: devices whose first handshake may be under
    /// way at once (the rest wait their turn, as a real population arrives over time).
    /// `alternates`: the other nodes of a cluster, by device index (its own node is `host`:`port`
    /// unless `route` gives one).
    static func connect(
        identities: [DeviceIdentity], host: String, port: Int, tls: NIOSSLContext, logger: Logger, channel: String? = nil,
        sources: [SocketAddress] = [], concurrency: Int = .max, timeout: Duration = .seconds(120),
        route: ((Int) -> (node: DeviceConnection.Configuration.Endpoint, alternates: [DeviceConnection.Configuration.Endpoint]))? = nil
    ) async throws -> Fleet {
        let tokens = Locked([DeviceToken?](repeating: nil, count: identities.count))
        let registered = Locked(0)
        let subscribed = Locked(0)
        let received = Locked<Received>((count: 0, perDevice: Array(repeating: 0, count: identities.count), latencies: [], first: 0, last: 0))
        let disconnectionReasons = Locked([String: Int]())
        let reconnected = Locked(Set<Int>())
        let online = Locked([Bool](repeating: false, count: identities.count))
        var tasks: [Task<Void, Never>] = []
        var connections: [DeviceConnection] = []
        let deadline = ContinuousClock.now + timeout
        for (index, identity) in identities.enumerated() {
            while index - registered.withLock({ $0 }) >= concurrency {
                guard ContinuousClock.now < deadline else { throw ValidationError("not every device registered within \(timeout)") }
                try await Task.sleep(for: .milliseconds(2))
            }
            var configuration = DeviceConnection.Configuration(host: host, port: port, tls: tls, topics: [BenchDelivery.topic])
            if let (node, alternates) = route?(index) {
                (configuration.host, configuration.port, configuration.alternates) = (node.host, node.port, alternates)
            }
            if !sources.isEmpty { configuration.localAddress = sources[index % sources.count] }
            let connection = DeviceConnection(identity: identity, configuration: configuration, logger: logger)
            connections.append(connection)
            if let channel { connection.want(.channel(topic: BenchDelivery.topic, channel: channel)) }
            tasks.append(Task { await connection.run() })
            tasks.append(Task {
                for await event in connection.events {
                    switch event {
                    case .frame(.registered(_, let token)):
                        let first = tokens.withLock { list in
                            defer { list[index] = token }
                            return list[index] == nil
                        }
                        if first { registered.withLock { $0 += 1 } }
                    case .connected: online.withLock { $0[index] = true }
                    case .reconnected:
                        reconnected.withLock { _ = $0.insert(index) }
                        online.withLock { $0[index] = true }
                    case .disconnected(let reason):
                        online.withLock { $0[index] = false }
                        let key = String(reason.prefix(80))
                        disconnectionReasons.withLock { $0[key, default: 0] += 1 }
                    case .frame(.subscribed): subscribed.withLock { $0 += 1 }
                    case .frame(.notification(let n)):
                        let now = BenchDelivery.nanos()
                        var sent: UInt64 = now
                        if case .object(let object) = n.payload, case .int(let t)? = object["t"] { sent = UInt64(t) }
                        Fleet.record(into: received, device: index, latency: now &- sent, at: now)
                    default: break
                    }
                }
            })
        }
        while registered.withLock({ $0 }) < identities.count || (channel != nil && subscribed.withLock({ $0 }) < identities.count) {
            guard ContinuousClock.now < deadline else { throw ValidationError("not every device registered (and subscribed) within \(timeout)") }
            try await Task.sleep(for: .milliseconds(20))
        }
        return Fleet(
            identities: identities, tokens: tokens.withLock { $0.map { $0! } }, connections: connections, tasks: tasks,
            received: received, reconnected: reconnected, disconnectionReasons: disconnectionReasons, online: online)
    }

    private static func record(into received: Locked<Received>, device: Int, latency: UInt64, at now: UInt64) {
        received.withLock { r in
            if r.count == 0 { r.first = now }
            r.count += 1
            r.last = now
            r.perDevice[device] += 1
            r.latencies.append(latency)
        }
    }

    func resetLatencies() {
        received.withLock { r in
            r.count = 0
            r.latencies.removeAll(keepingCapacity: true)
            r.perDevice = Array(repeating: 0, count: r.perDevice.count)
        }
    }

    /// Waits until `atLeast` notifications arrived (in all, or on every device); returns how many
    /// and over how long (first to last arrival).
    func waitForDeliveries(atLeast: Int, perDevice: Bool, timeout: Duration) async -> (count: Int, seconds: Double) {
        _ = await poll(timeout: timeout) { r in perDevice ? r.perDevice.allSatisfy { $0 >= atLeast } : r.count >= atLeast }
        return received.withLock { r in (r.count, max(1e-9, Double(r.last &- r.first) / 1e9)) }
    }

    /// Polls what was received until `done` holds or `timeout` passes; whether it held.
    private func poll(
        timeout: Duration, until done: @escaping (_ received: (count: Int, perDevice: [Int], latencies: [UInt64], first: UInt64, last: UInt64)) -> Bool
    ) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if received.withLock({ done($0) }) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Waits until every device has at least one notification since the last reset (or
    /// `timeout` passes): what arrived, on how many devices, and when the last arrived.
    func waitForEveryDevice(timeout: Duration) async -> (received: Int, devices: Int, last: UInt64) {
        _ = await poll(timeout: timeout) { r in r.perDevice.allSatisfy { $0 >= 1 } }
        return received.withLock { r in (r.count, r.perDevice.reduce(0) { $0 + ($1 > 0 ? 1 : 0) }, r.last) }
    }

    /// Waits until every device in `devices` has at least one notification since the last reset.
    func waitForDelivery(to devices: [Int], timeout: Duration) async -> Bool {
        await poll(timeout: timeout) { r in devices.allSatisfy { r.perDevice[$0] >= 1 } }
    }

    /// When the last notification arrived (`BenchDelivery.nanos()` time).
    func lastArrival() -> UInt64 { received.withLock { $0.last } }

    func latencySummary() -> (p50: Double, p99: Double) {
        let sorted = received.withLock { $0.latencies }.sorted()
        guard !sorted.isEmpty else { return (0, 0) }
        func at(_ q: Double) -> Double { Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]) / 1e6 }
        return (at(0.5), at(0.99))
    }

    func stop() async {
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }
}
