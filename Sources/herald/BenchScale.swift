import ArgumentParser
import Crypto
import Foundation
import HeraldClient
import HeraldCore
import HeraldDevice
import HeraldGateway
import HeraldStore
import HeraldStoreSQLite
import Logging
import NIOCore
import NIOSSL

/// `herald bench scale`: one gateway and N real devices on this machine (issue 33). It starts the
/// gateway itself (so that it can restart it for the reconnect storm) and prints the `scale:` lines
/// `scripts/bench-scale.sh` documents.
struct BenchScale: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale",
        abstract: "Scale benchmark: a gateway it starts, N connected devices, broadcast, fan-out, a reconnect storm.",
        discussion: """
            Starts `herald gateway` (SQLite, TLS, loopback) in --work, then, with --devices real devices
            (each its own key and TLS WebSocket, spread over --sources loopback addresses):
              the provider port's p99 answer time for --pushes pushes to offline tokens, with 0 devices connected;
              connecting every device (handshakes/s); the gateway's resident memory per device; its idle CPU;
              the same pushes' p99 with every device connected; a unicast fan-out (one push per device) and a
              broadcast to all, each to its last receipt; a second broadcast while --non-readers percent of the
              devices do not read (the readers' last receipt, the gateway's memory, and the non-readers' copy once
              they read again); the gateway's CPU per delivered push against per accepted push; a graceful restart of the gateway and the time until every device is back.
            Run it through scripts/bench-scale.sh, which raises the file-descriptor limit first.

            Example: scripts/bench-scale.sh 100000 (or, directly: herald bench scale --work /tmp/scale --devices 2000).
            """)

    @Option(help: "The work directory (the gateway's data directory goes inside).")
    var work: String

    @Option(help: "Connected devices.")
    var devices: Int = 100_000

    @Option(help: "Loopback source addresses the devices connect from (127.0.0.2, 127.0.0.3, …); 0: one per 5,000 devices.")
    var sources: Int = 0

    @Option(help: "Device handshakes under way at once.")
    var concurrency: Int = 500

    @Option(help: "Pushes to offline tokens for the provider port's answer time (with 0 and with N devices connected).")
    var pushes: Int = 20_000

    @Option(help: "The gateway's --device-reconnect-rate: how fast it asks its devices to come back after the restart (handshakes a second).")
    var reconnectRate: Int = GatewayLimits().deviceReconnectRate

    @Option(help: "Percent of the devices that stop reading during a second broadcast (0: that step is skipped).")
    var nonReaders: Int = 10

    @Option(help: "Seconds every device has to come back after the restart before it counts as given up.")
    var stormDeadline: Int = 300

    @Option(help: "The gateway's --device-ping-interval (default: its own). The idle CPU is measured over 20 s from 13 s after the fleet connected, so an interval longer than the connect time sees no ping due.")
    var pingInterval: Int?

    @Option(help: "Gateway nodes on one PostgreSQL (--database), the fleet in generator processes; without it, one gateway on SQLite and the fleet in this process.")
    var nodes: Int?

    @Option(help: "The PostgreSQL database the --nodes share (postgres://USER@HOST:PORT/DB).")
    var database: String?

    @Option(help: "With --nodes: the most devices one generator process holds (each is a descriptor there).")
    var devicesPerGenerator: Int = 15_000

    @Option(help: ArgumentHelp(
        "Profile the gateway's heap with heaptrack into this file (one node only).",
        discussion: "The gateway runs with heaptrack's preload library; the run stops after the idle CPU line and kills the gateway, so that what the profile calls leaked is what the connected fleet held. Read it with heaptrack_print --print-leaks 1 FILE."))
    var heapProfile: String?

    func validate() throws {
        if let nodes {
            guard (1...64).contains(nodes) else { throw ValidationError("--nodes must be from 1 to 64") }
            guard database != nil else { throw ValidationError("--nodes needs --database: the nodes share one PostgreSQL") }
            guard heapProfile == nil else { throw ValidationError("--heap-profile profiles the one gateway of a run without --nodes") }
        }
        guard (100...100_000).contains(devicesPerGenerator) else { throw ValidationError("--devices-per-generator must be from 100 to 100000") }
        guard (1...1_000_000).contains(devices) else { throw ValidationError("--devices must be from 1 to 1000000") }
        guard (0...250).contains(sources) else { throw ValidationError("--sources must be from 0 to 250") }
        guard (1...10_000).contains(concurrency) else { throw ValidationError("--concurrency must be from 1 to 10000") }
        guard (100...1_000_000).contains(pushes) else { throw ValidationError("--pushes must be from 100 to 1000000") }
        guard (1...1_000_000).contains(reconnectRate) else { throw ValidationError("--reconnect-rate must be from 1 to 1000000 a second") }
        guard (0...50).contains(nonReaders) else { throw ValidationError("--non-readers must be from 0 to 50 (percent)") }
        guard (1...3_600).contains(stormDeadline) else { throw ValidationError("--storm-deadline must be from 1 to 3600 seconds") }
        if let pingInterval, !(1...86_400).contains(pingInterval) { throw ValidationError("--ping-interval must be from 1 to 86400 seconds") }
    }

    func run() async throws {
        if let nodes, let database { return try await runCluster(nodes: nodes, database: database) }
        var logger = Logger(label: "herald.bench")
        logger.logLevel = .critical
        let gateway = try ScaleGateway(work: work, devices: devices, reconnectRate: reconnectRate, pingInterval: pingInterval)
        defer { gateway.stop() }
        let profiler = try heapProfile.map { try HeapProfiler(output: $0) }
        if let profiler { gateway.environment = profiler.environment }
        try gateway.start()
        let ports = try await gateway.waitForPorts()
        let dataDirectory = gateway.dataDirectory
        let tls = try DeviceTLS.makeContext(trustRootsPath: dataDirectory + "/tls/ca.pem")
        let clientTLS = ClientTLS(trustRootsPath: dataDirectory + "/tls/ca.pem", serverName: "localhost")
        // One per 5,000 devices: a loopback address pair has ~28,000 ephemeral ports, and the
        // reconnect storm needs ports for the new connections while the old ones are in TIME_WAIT
        // (with one address for 18,000 devices the storm took 249 s, with four 44 s).
        let sourceCount = sources > 0 ? sources : max(1, (devices + 4_999) / 5_000)
        let addresses = try (0..<sourceCount).map { try SocketAddress(ipAddress: "127.0.0.\(2 + $0)", port: 0) }

        // A provider key for the bench app, registered in the gateway's store (as `bench delivery` does).
        let store = try SQLiteStore(path: (dataDirectory as NSString).appendingPathComponent("herald.sqlite"), durability: .normal)
        let (signer, authorization) = try await BenchDelivery.providerKey(in: store, team: "BENCHSCALE")
        let manager = APNsClient(
            configuration: .init(host: "127.0.0.1", port: ports.channel, tls: clientTLS, connections: 1), signer: signer)
        let channel = try await manager.createChannel(bundleID: BenchDelivery.topic, storagePolicy: 1)
        await manager.close()
        var pushers: [HTTP2Connection] = []
        for _ in 0..<4 { pushers.append(try await HTTP2Connection.connect(host: "127.0.0.1", port: ports.provider, tls: clientTLS)) }

        // Offline tokens: a small set of devices enrolled, then gone.
        let offline = try await Fleet.connect(count: 1_000, host: "localhost", port: ports.device, tls: tls, logger: logger)
        let offlineSender = Sender(pushers: pushers, streams: 100, authorization: authorization, tokens: offline.tokens)
        await offline.stop()
        var cpu = ScaleCPU(pid: gateway.pid)
        let idleAccepted = try await offlineSender.send(count: pushes, rate: nil)
        let perAccepted = cpu.lap(per: idleAccepted.ok)

        let fleet = try await connectFleet(
            gateway: gateway, port: ports.device, tls: tls, channel: channel, addresses: addresses, logger: logger, cpu: &cpu)
        if let profiler {
            // Killed, not stopped: what is allocated now is what the connected fleet holds.
            gateway.kill()
            let profile = try profiler.interpret()
            printLineFlushed("scale: heap profile of the gateway with \(devices) connected: \(profile) (heaptrack_print --print-leaks 1 \(profile))")
            await fleet.stop()
            return
        }

        let busyAccepted = try await offlineSender.send(count: pushes, rate: nil)
        _ = cpu.lap(per: 1)

        let sender = Sender(pushers: pushers, streams: 100, authorization: authorization, tokens: fleet.tokens)
        fleet.resetLatencies()
        let unicastStart = BenchDelivery.nanos()
        let sent = try await sender.send(count: devices, rate: nil)
        let unicast = await fleet.waitForDeliveries(atLeast: 1, perDevice: true, timeout: .seconds(600))
        let unicastSeconds = Double(fleet.lastArrival() &- unicastStart) / 1e9
        let perDelivered = cpu.lap(per: unicast.count)
        printLineFlushed(String(format: "scale: unicast fan-out to %d devices: last receipt %.2f s (%d accepted, %d received)",
                     devices, unicastSeconds, sent.ok, unicast.count))

        /// One broadcast on the fleet's channel; returns when it was sent (`BenchDelivery.nanos()`).
        func sendBroadcast(score: Int) async throws -> UInt64 {
            let now = BenchDelivery.nanos()
            let payload = #"{"aps":{"event":"update","timestamp":\#(SystemWallClock().nowSeconds()),"content-state":{"score":\#(score)}},"t":\#(now)}"#
            let answer = try await pushers[0].send(.init(
                method: "POST", path: "/4/broadcasts/apps/\(BenchDelivery.topic)",
                headers: [("authorization", authorization), ("apns-push-type", "liveactivity"), ("apns-channel-id", channel)],
                body: Array(payload.utf8)))
            guard answer.status == 200 else { throw ValidationError("the broadcast was refused: \(answer.status)") }
            return now
        }
        fleet.resetLatencies()
        let broadcastStart = try await sendBroadcast(score: 1)
        let broadcast = await fleet.waitForDeliveries(atLeast: 1, perDevice: true, timeout: .seconds(600))
        printLineFlushed(String(format: "scale: broadcast to %d devices: last receipt %.2f s (%d received)",
                     devices, Double(fleet.lastArrival() &- broadcastStart) / 1e9, broadcast.count))

        // Hostile: some devices stop reading. The others get the next broadcast as fast, the
        // gateway's memory stays bounded, and the stalled ones get it once they read again.
        if nonReaders > 0 {
            try await broadcastWithNonReaders(fleet: fleet, gatewayPID: gateway.pid, broadcast: sendBroadcast)
        }
        for pusher in pushers { await pusher.close() }
        try await reconnectStorm(fleet: fleet, gateway: gateway)

        printLineFlushed(String(format: "scale: provider port p99 with %d connected against 0 connected: %.2f (%.1f ms / %.1f ms)",
                     devices, busyAccepted.latency(0.99) / max(idleAccepted.latency(0.99), 1e-6), busyAccepted.latency(0.99), idleAccepted.latency(0.99)))
        printLineFlushed(String(format: "scale: gateway CPU per delivered push / per accepted push %.2f (%.1f µs / %.1f µs)",
                     perDelivered.microsecondsPerItem / max(perAccepted.microsecondsPerItem, 1e-9), perDelivered.microsecondsPerItem, perAccepted.microsecondsPerItem))
        await fleet.stop()
    }

    /// Hostile: some devices stop reading. The others get the next broadcast as fast, the
    /// gateway's memory stays bounded, and the stalled ones get it once they read again.
    private func broadcastWithNonReaders(fleet: Fleet, gatewayPID: Int32, broadcast: (Int) async throws -> UInt64) async throws {
        let stalled = Array(stride(from: 0, to: devices, by: max(1, 100 / nonReaders)))
        let stalledSet = Set(stalled)
        let readers = (0..<devices).filter { !stalledSet.contains($0) }
        for index in stalled { await fleet.connections[index].setReading(false) }
        let memoryBefore = BenchDelivery.residentKiB(gatewayPID)
        fleet.resetLatencies()
        let start = try await broadcast(2)
        let readersGotIt = await fleet.waitForDelivery(to: readers, timeout: .seconds(600))
        let readersSeconds = Double(fleet.lastArrival() &- start) / 1e9
        let memoryGrowth = BenchDelivery.residentKiB(gatewayPID) - memoryBefore
        for index in stalled { await fleet.connections[index].setReading(true) }
        let stalledGotIt = await fleet.waitForDelivery(to: stalled, timeout: .seconds(60))
        printLineFlushed(String(format: "scale: broadcast with %d %% of devices not reading: readers' last receipt %.2f s%@, gateway memory %+d KiB; the %d non-readers %@ once reading again",
                     nonReaders, readersSeconds, readersGotIt ? "" : " (NOT ALL READERS GOT IT)", memoryGrowth, stalled.count,
                     stalledGotIt ? "all got it" : "did NOT all get it"))
    }

    /// Connects every device, subscribed to `channel`, and prints the connected, memory and idle lines.
    private func connectFleet(
        gateway: ScaleGateway, port: Int, tls: NIOSSLContext, channel: String, addresses: [SocketAddress], logger: Logger, cpu: inout ScaleCPU
    ) async throws -> Fleet {
        let before = BenchDelivery.residentKiB(gateway.pid)
        let started = ContinuousClock.now
        let fleet = try await Fleet.connect(
            identities: (0..<devices).map { _ in DeviceIdentity() }, host: "localhost", port: port, tls: tls, logger: logger,
            channel: channel, sources: addresses, concurrency: concurrency, timeout: .seconds(Int64(max(120, devices / 50))))
        let connectSeconds = Self.seconds(ContinuousClock.now - started)
        let perConnect = cpu.lap(per: devices)
        printLineFlushed(String(format: "scale: connected %d devices in %.1f s (%.0f handshakes/s, %.0f µs of gateway CPU each)",
                                devices, connectSeconds, Double(devices) / connectSeconds, perConnect.microsecondsPerItem))
        try await Task.sleep(for: .seconds(3))
        let after = BenchDelivery.residentKiB(gateway.pid)
        printLineFlushed(String(format: "scale: resident memory per connected device %.1f KiB", Double(after - before) / Double(devices)))
        let idle = try await Self.idleCPU { cpu.lap(per: 1).seconds }
        let every = pingInterval.map { "\($0)" } ?? "\(DeviceKeepalive.defaultIntervalSeconds)"
        printLineFlushed(String(format: "scale: idle gateway CPU with %d connected: %.1f %% of one core over %d s settled (the %d s before: %.1f %%) (pinged every %@ s)",
                                devices, idle.settled, Self.idleSettledSeconds, Self.idleFirstSeconds, idle.first, every))
        return fleet
    }

    /// The reconnect storm: a graceful restart (every device told to go, all back at once).
    private func reconnectStorm(fleet: Fleet, gateway: ScaleGateway) async throws {
        fleet.reconnected.withLock { $0.removeAll() }
        // Each device's connection ends once at the stop; any more is an attempt that failed.
        fleet.disconnectionReasons.withLock { $0.removeAll() }
        gateway.stop()
        try gateway.start()
        _ = try await gateway.waitForPorts()
        // A device coming back is enrolled already: TLS, the upgrade and the challenge only.
        var cpu = ScaleCPU(pid: gateway.pid)
        let restarted = ContinuousClock.now
        let deadline = restarted + .seconds(Int64(stormDeadline))
        // When half, 90 % and 99 % of the devices were back: the shape of the return.
        var milestones: [(fraction: Double, seconds: Double?)] = [(0.5, nil), (0.9, nil), (0.99, nil)]
        while fleet.reconnected.withLock({ $0.count }) < devices, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            let back = fleet.reconnected.withLock { $0.count }
            for i in milestones.indices where milestones[i].seconds == nil && Double(back) >= milestones[i].fraction * Double(devices) {
                milestones[i].seconds = Self.seconds(ContinuousClock.now - restarted)
            }
        }
        let back = fleet.reconnected.withLock { $0.count }
        let perReconnect = cpu.lap(per: max(back, 1))
        let shape = milestones.map { m in String(format: "%.0f %% by %@", m.fraction * 100, m.seconds.map { String(format: "%.1f s", $0) } ?? "-") }
        printLineFlushed(String(format: "scale: reconnect storm: %d devices back in %.1f s after a gateway restart, %.1f %% gave up (%@; %d failed attempts; %.0f µs of gateway CPU each)",
                     back, Self.seconds(ContinuousClock.now - restarted), Double(devices - back) / Double(devices) * 100,
                     shape.joined(separator: ", "), fleet.disconnectionReasons.withLock { $0.values.reduce(0, +) } - devices,
                     perReconnect.microsecondsPerItem))
        let reasons = fleet.disconnectionReasons.withLock { $0 }.sorted { $0.value > $1.value }.prefix(4)
        FileHandle.standardError.write(Data("reconnect storm, why connections ended: \(reasons.map { "\($0.value)× \($0.key)" }.joined(separator: "; "))\n".utf8))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// The gateway `bench scale` measures: a child process it starts, stops (SIGTERM, gracefully) and
/// starts again on the same ports.
final class ScaleGateway {
    let dataDirectory: String
    private let work: String
    private let devices: Int
    private let reconnectRate: Int
    private let pingInterval: Int?
    /// The node's name (its files in the work directory start with it).
    private let name: String
    /// More `herald gateway` arguments: a cluster node's `--database`, `--node-id`, TLS files.
    private let extraArguments: [String]
    /// Variables added to the gateway's environment (a heap profiler's).
    var environment: [String: String] = [:]
    private var process: Process?
    private var ports: (provider: Int, device: Int, channel: Int)?
    private var run = 0

    init(
        work: String, devices: Int, reconnectRate: Int, pingInterval: Int?, name: String = "gateway", extraArguments: [String] = []
    ) throws {
        self.work = work
        self.devices = devices
        self.reconnectRate = reconnectRate
        self.pingInterval = pingInterval
        self.name = name
        self.extraArguments = extraArguments
        dataDirectory = (work as NSString).appendingPathComponent(name == "gateway" ? "data" : name)
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
    }

    var pid: Int32 { process?.processIdentifier ?? 0 }

    func start() throws {
        run += 1
        // HERALD_BENCH_GATEWAY: the gateway from another build, measured by this one's driver
        // (an A/B of a gateway change whose driver changed too).
        let executable = ProcessInfo.processInfo.environment["HERALD_BENCH_GATEWAY"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let process = Process()
        process.executableURL = executable
        let (provider, device, channel) = ports ?? (0, 0, 0)
        process.arguments = [
            "gateway", "--data-dir", dataDirectory, "--host", "127.0.0.1", "--provider-port", "\(provider)", "--device-port", "\(device)",
            "--channel-port", "\(channel)", "--token-burst", "0", "--log-level", "error", "--handshake-timeout", "120",
            "--device-connections-per-address", "\(devices + 1_000)",
            // Every device comes from a few loopback addresses here; on the Internet they are many.
            "--device-handshakes-per-address", "100000", "--device-reconnect-rate", "\(reconnectRate)",
        ]
        if let pingInterval {
            process.arguments! += ["--device-ping-interval", "\(pingInterval)", "--device-idle-timeout", "\(2 * pingInterval + 60)"]
        }
        process.arguments! += extraArguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        let out = (work as NSString).appendingPathComponent("\(name)-\(run).json")
        let err = (work as NSString).appendingPathComponent("\(name)-\(run).err")
        guard FileManager.default.createFile(atPath: out, contents: nil), FileManager.default.createFile(atPath: err, contents: nil) else {
            throw ValidationError("cannot write in \(work)")
        }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        try process.run()
        self.process = process
    }

    /// Waits for the start-up line and returns the ports it names.
    func waitForPorts() async throws -> (provider: Int, device: Int, channel: Int) {
        let out = (work as NSString).appendingPathComponent("\(name)-\(run).json")
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOfFile: out, encoding: .utf8), let line = text.split(separator: "\n").first,
               let object = try? JSONReader.parseObject(Array(line.utf8)),
               let provider = object["provider_port"]?.integer(Int.self), let device = object["device_port"]?.integer(Int.self),
               let channel = object["channel_port"]?.integer(Int.self) {
                ports = (provider, device, channel)
                return (provider, device, channel)
            }
            guard process?.isRunning == true else { throw ValidationError("the gateway stopped at start; see \(work)/\(name)-\(run).err") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ValidationError("the gateway did not start within 60 s; see \(work)")
    }

    /// SIGTERM, then waits for the process (a graceful stop: devices are told `shutdown`).
    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// SIGKILL, then waits for the process (a crash: nothing is said to anyone).
    func kill() {
        guard let process, process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

extension BenchScale {
    static let idleFirstSeconds = 10
    static let idleSettledSeconds = 20

    /// The idle gateway CPU, in percent of one core, over two windows from 3 s after the last
    /// device connected: the first `idleFirstSeconds` (what this line measured alone until
    /// 2026-11-30: it still holds the tail of the connect storm — the last claims committed, the
    /// allocator returning the storm's memory), then `idleSettledSeconds` settled, the figure
    /// the idle goal is read from. `lap` answers the CPU seconds since its previous call.
    static func idleCPU(_ lap: () -> Double) async throws -> (first: Double, settled: Double) {
        _ = lap()
        try await Task.sleep(for: .seconds(idleFirstSeconds))
        let first = lap()
        try await Task.sleep(for: .seconds(idleSettledSeconds))
        let settled = lap()
        return (first / Double(idleFirstSeconds) * 100, settled / Double(idleSettledSeconds) * 100)
    }
}

/// A process's CPU between laps.
struct ScaleCPU {
    let pid: Int32
    private var last: Double

    init(pid: Int32) {
        self.pid = pid
        last = BenchDelivery.cpuSeconds(pid)
    }

    mutating func lap(per items: Int) -> (seconds: Double, microsecondsPerItem: Double) {
        let now = BenchDelivery.cpuSeconds(pid)
        defer { last = now }
        return (now - last, (now - last) * 1e6 / Double(max(1, items)))
    }
}
