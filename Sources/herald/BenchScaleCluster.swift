import ArgumentParser
import Foundation
import HeraldClient
import HeraldCore
import HeraldDevice
import HeraldGateway
import HeraldStorePostgres
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// `herald bench scale --nodes N --database URL`: N gateway nodes on one PostgreSQL, the fleet
/// spread over generator processes (`herald bench scale-generator`), each under the descriptor
/// limit one process has here (issue 48). Device `i` connects to node `i % N` and knows the others,
/// as a cluster's devices do.
extension BenchScale {
    func runCluster(nodes nodeCount: Int, database: String) async throws {
        var logger = Logger(label: "herald.bench")
        logger.logLevel = .critical
        let nodes = try await startNodes(nodeCount, database: database)
        defer { for node in nodes { node.stop() } }
        var ports: [(provider: Int, device: Int, channel: Int)] = []
        for node in nodes { ports.append(try await node.waitForPorts()) }
        let ca = nodes[0].dataDirectory + "/tls/ca.pem"
        let tls = try DeviceTLS.makeContext(trustRootsPath: ca)
        let clientTLS = ClientTLS(trustRootsPath: ca, serverName: "localhost")
        let endpoints = ports.map { DeviceConnection.Configuration.Endpoint(host: "localhost", port: $0.device) }
        let pids = { nodes.map(\.pid) }

        let store = try await PostgresStore.connect(try PostgresURL(database), logger: logger)
        let (signer, authorization) = try await BenchDelivery.providerKey(in: store, team: "BENCHSCALE")
        let manager = APNsClient(configuration: .init(host: "127.0.0.1", port: ports[0].channel, tls: clientTLS, connections: 1), signer: signer)
        let channel = try await manager.createChannel(bundleID: BenchDelivery.topic, storagePolicy: 1)
        await manager.close()
        // Four provider connections or one per node, spread over the nodes.
        var pushers: [(node: Int, connection: HTTP2Connection)] = []
        for j in 0..<max(4, nodeCount) {
            pushers.append((j % nodeCount, try await HTTP2Connection.connect(host: "127.0.0.1", port: ports[j % nodeCount].provider, tls: clientTLS)))
        }
        defer { for pusher in pushers { Task { await pusher.connection.close() } } }

        // Acceptance: pushes to offline tokens (devices enrolled, then gone), every node's CPU.
        let offline = try await Fleet.connect(count: 1_000, host: "localhost", port: ports[0].device, tls: tls, logger: logger)
        let offlineSender = Sender(pushers: pushers.map(\.connection), streams: 100, authorization: authorization, tokens: offline.tokens)
        await offline.stop()
        var cpu = ClusterCPU(pids: pids())
        let accepted = try await offlineSender.send(count: pushes, rate: nil)
        let perAccepted = cpu.lap(per: accepted.ok)

        // The fleet, in generator processes of at most --devices-per-generator devices each.
        let before = nodes.map { BenchDelivery.residentKiB($0.pid) }
        let generatorCount = max(1, (devices + devicesPerGenerator - 1) / devicesPerGenerator)
        let sourceCount = sources > 0 ? sources : max(1, (devices + 4_999) / 5_000)
        let started = ContinuousClock.now
        var generators: [ScaleGenerator] = []
        defer { for generator in generators { generator.stop() } }
        for g in 0..<generatorCount {
            let first = g * devices / generatorCount, end = (g + 1) * devices / generatorCount
            generators.append(try ScaleGenerator(
                work: work, index: g, first: first, count: end - first, endpoints: endpoints, ca: ca, channel: channel,
                sources: (0..<sourceCount).map { "127.0.0.\(2 + $0)" }, concurrency: max(1, concurrency / generatorCount),
                timeout: max(120, devices / 50)))
        }
        var tokens: [DeviceToken] = []
        for generator in generators { tokens += try await generator.connected() }
        let connectSeconds = Self.seconds(ContinuousClock.now - started)
        printLineFlushed(String(format: "scale: connected %d devices to %d nodes from %d generator processes in %.1f s (%.0f handshakes/s)",
                     devices, nodeCount, generatorCount, connectSeconds, Double(devices) / connectSeconds))
        try await Task.sleep(for: .seconds(3))
        let perNode = (0..<nodeCount).map { k in devices / nodeCount + (k < devices % nodeCount ? 1 : 0) }
        let memory = nodes.indices.map { k in Double(BenchDelivery.residentKiB(nodes[k].pid) - before[k]) / Double(max(1, perNode[k])) }
        printLineFlushed("scale: resident memory per connected device " + memory.map { String(format: "%.1f", $0) }.joined(separator: " / ")
            + " KiB (node by node)")
        let idle = try await Self.idleCPU { cpu.lap(per: 1).seconds }
        let every = pingInterval.map { "\($0)" } ?? "\(DeviceKeepalive.defaultIntervalSeconds)"
        printLineFlushed(String(format: "scale: idle gateway CPU with %d connected: %.1f %% of one core over %d s settled (the %d s before: %.1f %%), all nodes together (pinged every %@ s)",
                     devices, idle.settled, Self.idleSettledSeconds, Self.idleFirstSeconds, idle.first, every))

        // Unicast fan-out: one push per device, through every node.
        let sender = Sender(pushers: pushers.map(\.connection), streams: 100, authorization: authorization, tokens: tokens)
        for generator in generators { try await generator.reset() }
        let unicastStart = BenchDelivery.nanos()
        let sent = try await sender.send(count: devices, rate: nil)
        let unicast = try await ScaleGenerator.waitAll(generators, seconds: 600)
        let perDelivered = cpu.lap(per: unicast.received)
        printLineFlushed(String(format: "scale: unicast fan-out to %d devices: last receipt %.2f s (%d accepted, %d received)",
                     devices, Double(unicast.last &- unicastStart) / 1e9, sent.ok, unicast.received))

        // A broadcast on the channel every device subscribed to.
        for generator in generators { try await generator.reset() }
        let broadcastStart = BenchDelivery.nanos()
        let payload = #"{"aps":{"event":"update","timestamp":\#(SystemWallClock().nowSeconds()),"content-state":{"score":1}},"t":\#(broadcastStart)}"#
        let answer = try await pushers[0].connection.send(.init(
            method: "POST", path: "/4/broadcasts/apps/\(BenchDelivery.topic)",
            headers: [("authorization", authorization), ("apns-push-type", "liveactivity"), ("apns-channel-id", channel)],
            body: Array(payload.utf8)))
        guard answer.status == 200 else { throw ValidationError("the broadcast was refused: \(answer.status)") }
        let broadcast = try await ScaleGenerator.waitAll(generators, seconds: 600)
        printLineFlushed(String(format: "scale: broadcast to %d devices: last receipt %.2f s (%d received)",
                     devices, Double(broadcast.last &- broadcastStart) / 1e9, broadcast.received))
        printLineFlushed(String(format: "scale: gateway CPU per delivered push / per accepted push %.2f (%.1f µs / %.1f µs, all nodes together)",
                     perDelivered.microsecondsPerItem / max(perAccepted.microsecondsPerItem, 1e-9), perDelivered.microsecondsPerItem,
                     perAccepted.microsecondsPerItem))

        try await postgresFigures(database: database, store: store, nodes: nodeCount)
        if nodeCount > 1 {
            try await killNode(nodes.last!, victim: nodeCount - 1, nodeCount: nodeCount, onNode: perNode[nodeCount - 1],
                               generators: generators, pushers: pushers, authorization: authorization, tokens: tokens)
        }
    }

    /// The nodes, started one after the other: the first makes the development TLS files, the
    /// others serve the same ones (devices trust one CA and move between nodes).
    private func startNodes(_ count: Int, database: String) async throws -> [ScaleGateway] {
        var nodes: [ScaleGateway] = []
        do {
            for k in 0..<count {
                var extra = ["--database", database, "--node-id", "n\(k)", "--admin-port", "0"]
                if let first = nodes.first {
                    extra += ["--tls-cert", first.dataDirectory + "/tls/server.pem", "--tls-key", first.dataDirectory + "/tls/server-key.pem"]
                }
                let node = try ScaleGateway(
                    work: work, devices: devices, reconnectRate: reconnectRate, pingInterval: pingInterval, name: "node-\(k)", extraArguments: extra)
                try node.start()
                nodes.append(node)
                _ = try await node.waitForPorts()
            }
            return nodes
        } catch {
            for node in nodes { node.stop() }
            throw error
        }
    }

    /// A node SIGKILLed: its devices move to the others (each knows every node), and a push to
    /// every device, sent through the surviving nodes while they move, reaches each one.
    private func killNode(
        _ node: ScaleGateway, victim: Int, nodeCount: Int, onNode: Int, generators: [ScaleGenerator],
        pushers: [(node: Int, connection: HTTP2Connection)], authorization: String, tokens: [DeviceToken]
    ) async throws {
        for generator in generators { try await generator.reset() }
        node.kill()
        let killed = ContinuousClock.now
        let survivors = pushers.filter { $0.node != victim }.map(\.connection)
        let sent = try await Sender(pushers: survivors, streams: 100, authorization: authorization, tokens: tokens).send(count: devices, rate: nil)
        let deadline = killed + .seconds(Int64(stormDeadline))
        var back = 0
        while ContinuousClock.now < deadline {
            back = 0
            for generator in generators { back += try await generator.reconnectedCount() }
            if back >= onNode { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        let moved = Self.seconds(ContinuousClock.now - killed)
        let delivered = try await ScaleGenerator.waitAll(generators, seconds: 300)
        // Lost is what a device connected at the end lacks (less the pushes refused, whose
        // devices wait for nothing). A device not connected at the end (no room left on the
        // survivors' descriptors, still retrying) has its push held. Counted by each device's
        // connection now, not by who reconnected: a survivor's own devices may have moved too.
        var unreceived = (connected: 0, offline: 0)
        for generator in generators {
            let one = try await generator.unreceived()
            unreceived = (unreceived.connected + one.connected, unreceived.offline + one.offline)
        }
        let refused = devices - sent.ok
        printLineFlushed(String(format: "scale: node killed: its %d devices connected again to the others in %.1f s (%d back), pushes answered 200 lost %d (%d answered 200, %d devices received theirs, %d devices not connected when the run ended: their pushes are held; %d connected without theirs, of which at most %d had theirs refused)",
                     onNode, moved, back, max(0, unreceived.connected - refused), sent.ok, delivered.devices, unreceived.offline, unreceived.connected, refused))
    }

    /// What the shared PostgreSQL holds for the cluster, read with psql: presence rows, one sweep
    /// (the query each node runs over its connected devices for lost hints) per node, the size.
    private func postgresFigures(database: String, store: PostgresStore, nodes: Int) async throws {
        func psql(_ sql: String) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["psql", database, "-Atq", "-c", sql]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw ValidationError("psql failed on: \(sql)") }
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let presence = try psql("SELECT count(*) FROM presence")
        /// Each node's sweep once, over the sequence numbers above `above`; milliseconds for all.
        func sweeps(above: Int64) async throws -> Double {
            let started = ContinuousClock.now
            for k in 0..<nodes {
                _ = try await store.heldDeliveries(
                    onNode: "n\(k)", seqAbove: above, seqAtMost: .max, nowMilliseconds: SystemWallClock().nowMilliseconds(), limit: 1_000)
            }
            return Self.seconds(ContinuousClock.now - started) * 1_000
        }
        let full = try await sweeps(above: 0)
        // What a node's regular sweep reads: a window of recent sequence numbers (here the last
        // 10,000 pushes', two seconds of a busy cluster).
        let windowed = try await sweeps(above: max(0, try await store.newestSeq() - 10_000))
        let bytes = Double(try psql("SELECT pg_database_size(current_database())")) ?? 0
        printLineFlushed(String(format: "scale: PostgreSQL: %@ presence rows, sweep over all connected devices %.1f ms (%d nodes' full sweeps; over the last 10,000 sequence numbers, as every sweep but one a minute reads: %.1f ms), database size %.1f MiB",
                     presence, full, nodes, windowed, bytes / 1_048_576))
    }
}

/// All the nodes' CPU between laps.
struct ClusterCPU {
    private var laps: [ScaleCPU]

    init(pids: [Int32]) { laps = pids.map(ScaleCPU.init(pid:)) }

    mutating func lap(per items: Int) -> (seconds: Double, microsecondsPerItem: Double) {
        var seconds = 0.0
        for i in laps.indices { seconds += laps[i].lap(per: 1).seconds }
        return (seconds, seconds * 1e6 / Double(max(1, items)))
    }
}

/// A generator process `bench scale --nodes` started, spoken to by lines on its stdin and stdout.
final class ScaleGenerator: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private var iterator: AsyncStream<String>.Iterator
    private let tokensPath: String

    init(
        work: String, index: Int, first: Int, count: Int, endpoints: [DeviceConnection.Configuration.Endpoint], ca: String, channel: String,
        sources: [String], concurrency: Int, timeout: Int
    ) throws {
        tokensPath = (work as NSString).appendingPathComponent("generator-\(index).tokens")
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = [
            "bench", "scale-generator", "--first", "\(first)", "--count", "\(count)", "--ca", ca, "--channel", channel,
            "--nodes", endpoints.map { "\($0.host):\($0.port)" }.joined(separator: ","), "--sources", sources.joined(separator: ","),
            "--concurrency", "\(concurrency)", "--timeout", "\(timeout)", "--tokens-out", tokensPath,
        ]
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        let err = (work as NSString).appendingPathComponent("generator-\(index).err")
        guard FileManager.default.createFile(atPath: err, contents: nil) else { throw ValidationError("cannot write in \(work)") }
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        iterator = Self.lines(of: output.fileHandleForReading).makeAsyncIterator()
        try process.run()
    }

    /// The generator's next line, split in words.
    private func reply() async throws -> [Substring] {
        guard let line = await iterator.next() else {
            throw ValidationError("a generator stopped (exit \(process.isRunning ? -1 : process.terminationStatus)); see its .err file")
        }
        return line.split(separator: " ")
    }

    private func ask(_ command: String) async throws -> [Substring] {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
        return try await reply()
    }

    /// Waits until every device of the generator is connected and subscribed; their tokens.
    func connected() async throws -> [DeviceToken] {
        let words = try await reply()
        guard words.first == "connected" else { throw ValidationError("a generator said \(words.joined(separator: " "))") }
        let text = try String(contentsOfFile: tokensPath, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            guard let token = DeviceToken(hex: String(line)) else { throw ValidationError("a generator wrote a bad token") }
            return token
        }
    }

    /// Forgets what was received and who reconnected.
    func reset() async throws { _ = try await ask("reset") }

    /// Devices that connected again since the last reset.
    func reconnectedCount() async throws -> Int { Int(try await ask("back").last ?? "") ?? 0 }

    /// Devices that received nothing since the last reset: connected now, and not connected.
    func unreceived() async throws -> (connected: Int, offline: Int) {
        let words = try await ask("unreceived")
        guard words.count == 3, let connected = Int(words[1]), let offline = Int(words[2]) else {
            throw ValidationError("a generator answered \(words.joined(separator: " "))")
        }
        return (connected, offline)
    }

    /// Waits (up to `seconds`) until every device received something since the last reset.
    func waitForEveryDevice(seconds: Int) async throws -> (received: Int, devices: Int, last: UInt64) {
        let words = try await ask("wait \(seconds)")
        guard words.count == 4, let received = Int(words[1]), let devices = Int(words[2]), let last = UInt64(words[3]) else {
            throw ValidationError("a generator answered \(words.joined(separator: " "))")
        }
        return (received, devices, last)
    }

    /// Every generator's wait, at once, summed: what arrived, on how many devices, and the last
    /// arrival (so that a step where some devices never receive waits `seconds`, not that per
    /// generator).
    static func waitAll(_ generators: [ScaleGenerator], seconds: Int) async throws -> (received: Int, devices: Int, last: UInt64) {
        try await withThrowingTaskGroup(of: (received: Int, devices: Int, last: UInt64).self) { group in
            for generator in generators { group.addTask { try await generator.waitForEveryDevice(seconds: seconds) } }
            var total = (received: 0, devices: 0, last: UInt64(0))
            for try await one in group {
                total = (total.received + one.received, total.devices + one.devices, max(total.last, one.last))
            }
            return total
        }
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// The lines of `handle`, read on a thread of its own (a blocking read must not hold one of
    /// the few threads Swift's tasks run on).
    static func lines(of handle: FileHandle) -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        Thread.detachNewThread {
            var buffer: [UInt8] = []
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return continuation.finish() }
                for byte in chunk {
                    if byte == UInt8(ascii: "\n") {
                        continuation.yield(String(decoding: buffer, as: UTF8.self))
                        buffer.removeAll()
                    } else {
                        buffer.append(byte)
                    }
                }
            }
        }
        return stream
    }
}

/// `herald bench scale-generator`: a slice of `bench scale --nodes`'s fleet in a process of its
/// own, driven by lines on stdin (`reset`, `back`, `wait SECONDS`), answering on stdout.
struct BenchScaleGenerator: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale-generator", abstract: "A part of `bench scale --nodes`'s fleet (started by it).",
        discussion: """
            Connects --count devices, numbered from --first (device i goes to node i mod the number of --nodes and knows the others), writes their tokens to --tokens-out and says `connected N`; then answers lines on stdin: `reset` (ok), `back` (back N: devices connected again since the reset), `wait SECONDS` (delivered RECEIVED DEVICES LAST-ARRIVAL-NANOSECONDS).

            Example (as bench scale --nodes starts it): herald bench scale-generator --first 0 --count 15000 --ca DIR/tls/ca.pem --channel CHANNEL --nodes localhost:2198,localhost:2199 --sources 127.0.0.2,127.0.0.3 --concurrency 100 --timeout 600 --tokens-out /tmp/generator-0.tokens
            """,
        shouldDisplay: false)

    @Option var first: Int
    @Option var count: Int
    @Option var ca: String
    @Option var channel: String
    @Option(help: "The nodes' device ports, HOST:PORT,…") var nodes: String
    @Option var sources: String
    @Option var concurrency: Int
    @Option var timeout: Int
    @Option var tokensOut: String

    func validate() throws {
        guard (1...1_000_000).contains(count), first >= 0, (1...10_000).contains(concurrency), (1...3_600).contains(timeout) else {
            throw ValidationError("--count, --first, --concurrency or --timeout out of range")
        }
    }

    func run() async throws {
        var logger = Logger(label: "herald.bench")
        logger.logLevel = .critical
        let endpoints = try nodes.split(separator: ",").map { text -> DeviceConnection.Configuration.Endpoint in
            guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else {
                throw ValidationError("--nodes: HOST:PORT, not \(text)")
            }
            return .init(host: String(text[..<colon]), port: port)
        }
        let addresses = try sources.split(separator: ",").map { try SocketAddress(ipAddress: String($0), port: 0) }
        let tls = try DeviceTLS.makeContext(trustRootsPath: ca)
        let first = first
        let fleet = try await Fleet.connect(
            identities: (0..<count).map { _ in DeviceIdentity() }, host: endpoints[0].host, port: endpoints[0].port, tls: tls,
            logger: logger, channel: channel, sources: addresses, concurrency: concurrency, timeout: .seconds(Int64(timeout)),
            route: { index in
                let node = (first + index) % endpoints.count
                return (endpoints[node], (1..<endpoints.count).map { endpoints[(node + $0) % endpoints.count] })
            })
        try fleet.tokens.map(\.hex).joined(separator: "\n").write(toFile: tokensOut, atomically: true, encoding: .utf8)
        printLineFlushed("connected \(count)")
        for await line in ScaleGenerator.lines(of: FileHandle.standardInput) {
            let words = line.split(separator: " ")
            switch words.first {
            case "reset":
                fleet.resetLatencies()
                fleet.reconnected.withLock { $0.removeAll() }
                printLineFlushed("ok")
            case "back":
                printLineFlushed("back \(fleet.reconnected.withLock { $0.count })")
            case "unreceived":
                let (connected, offline) = fleet.unreceived()
                printLineFlushed("unreceived \(connected) \(offline)")
            case "wait":
                let seconds = words.count > 1 ? Int(words[1]) ?? 60 : 60
                let (received, devices, last) = await fleet.waitForEveryDevice(timeout: .seconds(Int64(seconds)))
                printLineFlushed("delivered \(received) \(devices) \(last)")
            default:
                printLineFlushed("error unknown command")
            }
        }
        await fleet.stop()
    }
}

extension Fleet {
    /// Devices connected now that have received nothing since the last reset (a push answered
    /// 200 for one of them, once the wait for deliveries is over, was lost), and devices not
    /// connected now (theirs is held for their return).
    func unreceived() -> (connected: Int, offline: Int) {
        let perDevice = received.withLock { $0.perDevice }
        let online = self.online.withLock { $0 }
        var result = (connected: 0, offline: 0)
        for (count, isOnline) in zip(perDevice, online) where count == 0 {
            if isOnline { result.connected += 1 } else { result.offline += 1 }
        }
        return result
    }
}
