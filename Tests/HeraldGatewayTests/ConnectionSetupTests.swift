import Crypto
import Foundation
import HeraldTesting
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
import NIOSSL
import NIOTLS
import Testing
import X509

@testable import HeraldGateway

/// A port that cannot set up its connections is never silent; TLS files are refused in words
/// that name them; a certificate near its end is warned about.
@Suite("Connection setup and TLS files")
struct ConnectionSetupTests {
    struct SocketOptionRefused: Error, CustomStringConvertible { var description: String { "setsockopt: Permission denied (errno: 13)" } }

    @Test("failures are counted; after three in a row with none set up, /health names the port and the reason; one success clears it")
    func watch() throws {
        let metrics = GatewayMetrics()
        let watch = metrics.connectionSetup
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        #expect(watch.problems().isEmpty)
        // A refusal by a bound is not a setup failure: the reporter lets it pass.
        let channel = EmbeddedChannel(handler: watch.reporter(port: "device", logger: logger))
        channel.pipeline.fireErrorCaught(ConnectionRefusal.fromAddress(limit: 1))
        #expect(watch.problems().isEmpty)
        for _ in 0..<2 { channel.pipeline.fireErrorCaught(SocketOptionRefused()) }
        #expect(watch.problems().isEmpty, "two failures are not yet 'every connection'")
        channel.pipeline.fireErrorCaught(SocketOptionRefused())
        #expect(watch.problems() == ["the device port could not set up its last 3 connections (none since): setsockopt: Permission denied (errno: 13)"])
        let health = GatewayHealth().problems(probe: nil, connectionSetup: watch.problems())
        #expect(health.count == 1 && health[0].contains("device port"))
        let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(exposition.contains(#"herald_connection_setup_failures_total{port="device"} 3"#), "\(exposition.split(separator: "\n").filter { $0.contains("setup") })")
        watch.succeeded(port: "provider")
        #expect(watch.problems().count == 1, "another port's success changes nothing")
        watch.succeeded(port: "device")
        #expect(watch.problems().isEmpty)
        _ = try channel.finish()
    }

    @Test("over real sockets: a socket option every accepted connection fails is reported by the watched listener")
    func realListener() async throws {
        let metrics = GatewayMetrics()
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        // An option no kernel has: setsockopt fails for root and for everyone else alike.
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(ChannelOptions.socketOption(.init(rawValue: 48_879)), value: 1)
            .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        try await metrics.connectionSetup.watch(server, port: "provider", logger: logger)
        let port = try #require(server.localAddress?.port)
        for _ in 0..<3 {
            let client = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
            try? await client.closeFuture.get()  // the server closes it at once
        }
        try await eventually("the failures reported") { !metrics.connectionSetup.problems().isEmpty }
        #expect(metrics.connectionSetup.problems().first?.hasPrefix("the provider port could not set up its last 3 connections") == true,
                "\(metrics.connectionSetup.problems())")
        try await server.close()
    }

    static func certificate(days: Double, now: Date, key: P256.Signing.PrivateKey) throws -> Certificate {
        let name = try DistinguishedName { CommonName("localhost") }
        return try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: now.addingTimeInterval(-86_400),
            notValidAfter: now.addingTimeInterval(days * 86_400), issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: Certificate.Extensions {}, issuerPrivateKey: .init(key))
    }

    @Test("a key that is not the certificate's is named as such; unreadable files are named; expiry within 14 days is a warning")
    func tlsFiles() throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-tls")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let key = P256.Signing.PrivateKey(), other = P256.Signing.PrivateKey()
        func write(_ name: String, _ text: String) throws -> String {
            let path = dir + "/" + name
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let soon = try write("soon.pem", try Self.certificate(days: 3, now: now, key: key).serializeAsPEM().pemString)
        let later = try write("later.pem", try Self.certificate(days: 90, now: now, key: key).serializeAsPEM().pemString)
        let expired = try write("expired.pem", try Self.certificate(days: -2, now: now, key: key).serializeAsPEM().pemString)
        let keyPath = try write("key.pem", key.pemRepresentation)
        let otherPath = try write("other.pem", other.pemRepresentation)
        let nowMilliseconds = Int64(now.timeIntervalSince1970 * 1000)

        _ = try GatewayConfiguration.TLSFiles(certificateChainPath: later, privateKeyPath: keyPath).load()
        #expect(throws: GatewayConfigurationError.self) { try GatewayConfiguration.TLSFiles(certificateChainPath: later, privateKeyPath: otherPath).load() }
        do {
            _ = try GatewayConfiguration.TLSFiles(certificateChainPath: later, privateKeyPath: otherPath).load()
        } catch {
            #expect("\(error)".contains("\(otherPath) is not the key of the certificate in \(later)"), "\(error)")
        }
        do {
            _ = try GatewayConfiguration.TLSFiles(certificateChainPath: dir + "/missing.pem", privateKeyPath: keyPath).load()
            Issue.record("a missing certificate was loaded")
        } catch {
            #expect("\(error)".contains("TLS certificate (--tls-cert) \(dir)/missing.pem cannot be used: No such file or directory"), "\(error)")
        }
        do {
            _ = try GatewayConfiguration.TLSFiles(certificateChainPath: later, privateKeyPath: later).load()
            Issue.record("a certificate was loaded as a key")
        } catch {
            #expect("\(error)".contains("TLS key (--tls-key) \(later) cannot be used"), "\(error)")
        }
        #expect(GatewayConfiguration.TLSFiles(certificateChainPath: later, privateKeyPath: keyPath).expiryWarning(nowMilliseconds: nowMilliseconds) == nil)
        let warning = GatewayConfiguration.TLSFiles(certificateChainPath: soon, privateKeyPath: keyPath).expiryWarning(nowMilliseconds: nowMilliseconds)
        #expect(warning?.contains("\(soon) expires at") == true && warning?.contains("in 3 days 0 hours") == true, "\(warning ?? "none")")
        let gone = GatewayConfiguration.TLSFiles(certificateChainPath: expired, privateKeyPath: keyPath).expiryWarning(nowMilliseconds: nowMilliseconds)
        #expect(gone?.contains("expired at") == true, "\(gone ?? "none")")
    }
}

@Suite("The connection budget")
struct ConnectionBudgetTests {
    @Test("places are taken up to the limit and given back; a refused address gives its place back")
    func takeAndGive() {
        let budget = ConnectionBudget(limit: 2)
        #expect(budget.take() && budget.take())
        #expect(!budget.take(), "a third is past the limit")
        #expect(budget.held == 2)
        budget.give()
        #expect(budget.take())
        let perAddress = ConnectionsPerAddress(limit: 0, budget: ConnectionBudget(limit: 5))
        let refusal = perAddress.admit(EmbeddedChannel())
        #expect(refusal?.metricReason == "per_address_limit")
        #expect(perAddress.budget.held == 0, "the address's refusal gave its place back")
        let full = ConnectionsPerAddress(limit: 10, budget: ConnectionBudget(limit: 1))
        #expect(full.admit(EmbeddedChannel()) == nil)
        #expect(full.admit(EmbeddedChannel())?.metricReason == "descriptor_limit")
    }

    @Test("the reserve: a quarter of a small limit, 1,024 of a large one, never under 16")
    func reserve() {
        #expect(ConnectionBudget.reserve(forLimit: 256) == 64)
        #expect(ConnectionBudget.reserve(forLimit: 20_000) == 1_024)
        #expect(ConnectionBudget.reserve(forLimit: 1_048_576) == 1_024)
        #expect(ConnectionBudget.reserve(forLimit: 40) == 16)
    }

    @Test("capacity: 20,000 descriptors fit the default 65,530 mappings; a million do not, and the sysctl that would is named")
    func capacity() {
        let small = ConnectionCapacity(descriptorLimit: 20_000, maxMapCount: 65_530)
        #expect(small.connections == 18_976)
        #expect(small.mappingsSuffice)
        let large = ConnectionCapacity(descriptorLimit: 1_048_576, maxMapCount: 65_530)
        #expect(large.connections == 1_047_552)
        #expect(!large.mappingsSuffice)
        #expect(large.mappedConnections == 30_717)
        #expect(large.neededMaxMapCount == 2_099_200)
        #expect(ConnectionCapacity(descriptorLimit: 1_048_576, maxMapCount: 2_099_200).mappingsSuffice)
        #expect(ConnectionCapacity(descriptorLimit: 1_048_576, maxMapCount: nil).mappingsSuffice, "unknown mappings: nothing to say")
    }

    @Test("every port's accepted connections send at once: TCP_NODELAY, as SwiftNIO's listeners set it and accepted sockets inherit it")
    func noDelay() async throws {
        let gateway = try await TestGateway.start()
        defer { Task { try? await gateway.stop() } }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(gateway.certificates.caCertificatePath)
        let context = try NIOSSLContext(configuration: tls)
        let ports = gateway.ports
        // Each port's options are applied to a connection before its pipeline is built, so the
        // first thing the server does on it (a TLS handshake finished, HTTP/2's preface, an
        // answer) is the barrier after which the option is read.
        let named: [(String, Int?, first: FirstFromServer.Wait)] = [
            ("provider", ports.providerPort, .tlsHandshake), ("device", ports.devicePort, .tlsHandshake),
            ("h2c", ports.h2cPort, .bytes(nil)), ("admin", ports.adminPort, .bytes("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")),
        ]
        for (name, port, wait) in named {
            let port = try #require(port, "the \(name) port")
            let first = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Void.self)
            let client = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if case .tlsHandshake = wait {
                            try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                        }
                        try channel.pipeline.syncOperations.addHandler(FirstFromServer(wait: wait, promise: first))
                    }
                }
                .connect(host: "127.0.0.1", port: port).get()
            try await first.futureResult.get()
            let peer = try #require(client.localAddress?.port)
            #expect(Self.acceptedNoDelay(localPort: port, peerPort: peer) == 1, "the \(name) port's connection has Nagle's algorithm on")
            try await client.close()
        }
    }

    /// Completes its promise with the server's first sign of life on a connection.
    private final class FirstFromServer: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = NIOAny
        enum Wait: Sendable { case tlsHandshake, bytes(String?) }
        let wait: Wait
        let promise: EventLoopPromise<Void>
        init(wait: Wait, promise: EventLoopPromise<Void>) { (self.wait, self.promise) = (wait, promise) }

        func channelActive(context: ChannelHandlerContext) {
            if case .bytes(let request?) = wait {
                context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: request)), promise: nil)
            }
            context.fireChannelActive()
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { promise.succeed() }
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted = event as? TLSUserEvent { promise.succeed() }
        }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { promise.fail(error) }
        func channelInactive(context: ChannelHandlerContext) { promise.fail(ChannelError.eof) }
    }

    /// TCP_NODELAY of the socket this process accepted on `localPort` from `peerPort`, found
    /// among its open descriptors; `nil` while there is none.
    private static func acceptedNoDelay(localPort: Int, peerPort: Int) -> Int32? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return nil }
        for entry in entries {
            guard let fd = Int32(entry) else { continue }
            guard Self.port(fd, getsockname) == localPort, Self.port(fd, getpeername) == peerPort else { continue }
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length) == 0 else { continue }
            return value
        }
        return nil
    }

    private static func port(_ fd: Int32, _ name: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { name(fd, $0, &length) }
        }
        guard result == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
