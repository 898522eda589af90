import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HeraldClient
import HeraldCore
import HeraldDevice
@testable import HeraldGateway
import HeraldStore
import HeraldTesting
import Logging
import NIOCore
import NIOPosix
import Testing

/// What the gateway and a device do when the other side or the store stops answering (the
/// chaos run with real processes and PostgreSQL is Tests/faults).
@Suite("Faults")
struct FaultToleranceTests {
    /// `/health`'s status once it is 200, or its last within 5 s: each `/health` probes the store
    /// within the store timeout (300 ms in these tests), which a machine busy with the rest of the
    /// suite can exceed once in a while, and the probe is a precondition here, not the property
    /// under test.
    static func settledHealth(_ url: String) async throws -> Int {
        var status = 0
        for _ in 0..<50 {
            status = try await DashboardTests.get(url).status
            if status == 200 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return status
    }

    @Test("a store that stops answering: pushes are answered 503 within the bound, never 200 later; /health says so; all is well once it answers")
    func storeStall() async throws {
        let store = InMemoryStore()
        let gateway = try await TestGateway.start(store: store) { $0.limits.storeTimeout = .milliseconds(300) }
        let signer = try await gateway.makeKey()
        let token = try await gateway.makeToken()
        let connection = try await gateway.connect()
        let authorization = try gateway.bearer(signer)
        let admin = "http://127.0.0.1:\(gateway.ports.adminPort!)/health"

        #expect(try await Self.settledHealth(admin) == 200)
        #expect(try await connection.send(.push(token: token, authorization: authorization)).status == 200)

        await store.holdCommits()
        let stuck = try await connection.send(.push(token: token, authorization: authorization))
        #expect(stuck.status == 503 && stuck.rejection?.reason == .serviceUnavailable)
        // While that commit has not returned, pushes are refused at once, and /health says why.
        let refused = try await connection.send(.push(token: token, authorization: authorization))
        #expect(refused.status == 503 && refused.rejection?.reason == .serviceUnavailable)
        let health = try await DashboardTests.get(admin)
        #expect(health.status == 503)
        #expect(health.body.contains(#""status":"unavailable""#) && health.body.contains("commit to the store has not returned"))
        #expect(health.body.contains("the store does not answer"))

        await store.releaseCommits()
        // The stuck commit returns; the next push is taken again.
        var answered = 0
        for _ in 0..<50 where answered != 200 {
            answered = try await connection.send(.push(token: token, authorization: authorization)).status
            if answered != 200 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(answered == 200)
        #expect(try await Self.settledHealth(admin) == 200)
        // The stuck push was stored once its commit returned (a retry with its apns-id would
        // replace it); the one refused at once was never stored.
        let stuckID = try #require(stuck.apnsID.flatMap(NotificationID.init(header:)))
        let refusedID = try #require(refused.apnsID.flatMap(NotificationID.init(header:)))
        #expect(await store.receipts(of: stuckID).count == 1)
        #expect(await store.receipts(of: refusedID).isEmpty)
        await connection.close()
        try await gateway.stop()
    }

    @Test("the clock fault: only with --enable-faults; an offset that is huge, fractional, of the wrong type or missing is refused and changes nothing")
    func clockFault() async throws {
        let off = try await TestGateway.start()
        #expect(try await TestHTTP.request("POST", "http://127.0.0.1:\(off.ports.adminPort!)/faults/clock", #"{"offset_ms":1000}"#).status == 404)
        try await off.stop()

        let gateway = try await TestGateway.start { $0.faultInjection = true }
        let url = "http://127.0.0.1:\(gateway.ports.adminPort!)/faults/clock"
        let before = gateway.gateway.clock.nowMilliseconds()
        for body in [#"{"offset_ms":999999999999999999}"#, #"{"offset_ms":-999999999999999999}"#, #"{"offset_ms":1.5}"#,
                     #"{"offset_ms":"60000"}"#, #"{}"#, #"[]"#, "not json", #"{"offset_ms":99999999999999999999999}"#] {
            #expect(try await TestHTTP.request("POST", url, body).status == 400, "\(body)")
        }
        #expect(gateway.gateway.clock.nowMilliseconds() - before < 60_000, "nothing refused moved the clock")
        #expect(try await TestHTTP.request("POST", url, #"{"offset_ms":60000}"#).status == 200)
        #expect(gateway.gateway.clock.nowMilliseconds() - before >= 60_000)
        #expect(try await TestHTTP.request("GET", url).json?.objectValue?["offset_ms"] == .int(60_000))
        #expect(try await TestHTTP.request("DELETE", url).status == 405)
        try await gateway.stop()
    }

    @Test("withDeadline: the result when in time; DeadlineExceeded on time even when the work ignores cancellation")
    func deadlines() async throws {
        #expect(try await withDeadline(.seconds(5)) { 42 } == 42)
        let started = ContinuousClock.now
        await #expect(throws: DeadlineExceeded.self) {
            try await withDeadline(.milliseconds(50)) {
                // Work that never looks at cancellation, as a connection pool's wait may not.
                let never = AsyncStream<Int> { _ in }
                for await value in never { return value }
                return 0
            }
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        await #expect(throws: CancellationError.self) {
            try await withDeadline(.seconds(5)) { () async throws -> Int in throw CancellationError() }
        }
    }

    @Test("a device gives up a gateway that accepts TCP but never speaks, and moves to the next")
    func deviceLeavesSilentGateway() async throws {
        // A "frozen node": the kernel accepts the connection, nothing ever answers.
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in channel.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        let gateway = try await TestGateway.start()
        let tls = try DeviceTLS.makeContext(trustRootsPath: gateway.certificates.caCertificatePath)
        var configuration = DeviceConnection.Configuration(
            host: "127.0.0.1", port: silent.localAddress!.port!, tls: tls, topics: ["com.example.app"],
            backoff: ReconnectBackoff(initialMilliseconds: 50, maximumMilliseconds: 200),
            alternates: [.init(host: "localhost", port: gateway.ports.devicePort!)])
        // Long enough for the real gateway's handshake on a loaded machine (0.5 s was not, with
        // the whole suite and a build running on two cores): only the silent one may time out.
        configuration.handshakeTimeout = .seconds(2)
        let device = DeviceConnection(identity: DeviceIdentity(), configuration: configuration, logger: Logger(label: "test"))
        let run = Task { await device.run() }
        var reasons: [String] = []
        for await event in device.events {
            if case .disconnected(let reason) = event { reasons.append(reason) }
            if case .connected = event { break }
        }
        #expect(reasons.count == 1 && reasons.first?.contains("nothing from the gateway") == true, "\(reasons)")
        run.cancel()
        await run.value
        try await silent.close()
        try await gateway.stop()
    }

    @Test("the device's bound on silence follows the ping interval the gateway announces")
    func silenceBound() {
        #expect(DeviceConnection.silenceBound(pingIntervalSeconds: 2) == .seconds(6))
        #expect(DeviceConnection.silenceBound(pingIntervalSeconds: 30) == .seconds(62))
        #expect(DeviceConnection.silenceBound(pingIntervalSeconds: 0) == .seconds(62), "an absurd interval is taken as 30 s")
        #expect(DeviceConnection.silenceBound(pingIntervalSeconds: 1_000_000) == .seconds(62))
    }
}
