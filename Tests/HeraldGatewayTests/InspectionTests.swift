import Foundation
import HeraldClient
import HeraldCore
@testable import HeraldGateway
import NIOEmbedded
import HeraldStore
import HeraldTesting
import Testing

/// What an operator sees through the admin port's read-only views, and key revocation on a
/// running gateway.
@Suite("Inspection")
struct InspectionTests {
    @Test("the admin port's /v1 views: devices (connected or not), tokens, teams, held notifications, a receipt, feedback; bad queries say what to fix")
    func adminViews() async throws {
        let gateway = try await TestGateway.start(admin: true)
        let signer = try await gateway.makeKey()
        let admin = "http://127.0.0.1:\(gateway.ports.adminPort!)"
        func get(_ path: String) async throws -> (status: Int, json: JSONValue?) { try await TestHTTP.request("GET", admin + path) }

        let device = try gateway.startDevice()
        let deviceToken = try await device.token()
        let offline = try await gateway.makeToken()
        let connection = try await gateway.connect()
        let authorization = try gateway.bearer(signer)
        let held = try await connection.send(.push(token: offline, authorization: authorization, topic: "com.example.app", pushType: "alert",
                                                   payload: #"{"aps":{"alert":"for later"}}"#))
        #expect(held.status == 200)
        let heldID = try #require(held.apnsID)

        // Devices: the one connected, marked so; ?connected=true lists only those.
        try await eventually("the device listed as connected") {
            guard case .array(let items)? = (try? await get("/v1/devices?connected=true"))?.json?["items"] else { return false }
            return items.count == 1 && items.first?["connected"] == .bool(true) && items.first?["activeTokens"] == .int(1)
        }
        // Tokens: both, with their state; filtered by device.
        let tokens = try await get("/v1/tokens?topic=com.example.app")
        guard case .array(let tokenItems)? = tokens.json?["items"] else { Issue.record("no token list: \(String(describing: tokens.json))"); return }
        #expect(Set(tokenItems.compactMap { $0["token"]?.stringValue }) == [deviceToken.hex, offline.hex])
        #expect(tokenItems.allSatisfy { $0["state"] == .string("active") })
        guard case .object(let deviceItem)? = (try await get("/v1/devices")).json?["items"]?.arrayValue?.first,
              case .string(let deviceID)? = deviceItem["id"] else { Issue.record("no device"); return }
        let ofDevice = try await get("/v1/tokens?device=\(deviceID)")
        #expect(ofDevice.json?["items"]?.arrayValue?.compactMap { $0["token"]?.stringValue } == [deviceToken.hex])
        // Teams and keys.
        let teams = try await get("/v1/teams")
        #expect(teams.json?["teams"]?.arrayValue?.first?["keys"]?.arrayValue?.first?["keyId"] == .string(signer.keyID))
        // Held: the push to the offline token, with its payload.
        let heldList = try await get("/v1/held?token=\(offline.hex)")
        let heldItem = try #require(heldList.json?["items"]?.arrayValue?.first)
        #expect(heldItem["payload"] == .string(#"{"aps":{"alert":"for later"}}"#))
        #expect(heldItem["apnsId"]?.stringValue.flatMap(NotificationID.init(header:)) == NotificationID(header: heldID))
        // Its receipt.
        let receipt = try await get("/v1/receipts/\(heldID)")
        #expect(receipt.json?["deliveries"]?.arrayValue?.first?["status"] == .string("stored"))
        #expect(try await get("/v1/receipts/\(NotificationID.random())").status == 404)
        // Feedback: shown without clearing.
        _ = try await gateway.store.unregisterToken(offline, atMilliseconds: gateway.clock.nowMilliseconds())
        for _ in 0..<2 {
            let feedback = try await get("/v1/feedback?topic=com.example.app")
            #expect(feedback.json?["items"]?.arrayValue?.compactMap { $0["token"]?.stringValue } == [offline.hex])
        }
        // Paging: one at a time, following next.
        let first = try await get("/v1/tokens?limit=1")
        let next = try #require(first.json?["next"]?.stringValue)
        let second = try await get("/v1/tokens?limit=1&after=\(next)")
        #expect(second.json?["items"]?.arrayValue?.count == 1 && second.json?["items"] != first.json?["items"])

        // Bad queries: 400 with what to fix; unknown views 404.
        let unknown = try await get("/v1/tokens?topc=com.example.app")
        #expect(unknown.status == 400)
        #expect(unknown.json?["error"]?.stringValue?.contains("unknown parameter topc") == true)
        #expect(try await get("/v1/tokens?limit=0").status == 400)
        #expect(try await get("/v1/tokens?limit=99999999999999999999999").status == 400)
        #expect(try await get("/v1/held?after=-1").status == 400)
        #expect(try await get("/v1/receipts/not-an-id").status == 400)
        #expect(try await get("/v1/feedback").status == 400)
        #expect(try await get("/v1/tokens?topic=a&topic=b").status == 400)
        #expect(try await get("/v1/nothing").status == 404)
        let feedTypo = try await get("/v1/events?topc=com.example.app")
        #expect(feedTypo.status == 400 && feedTypo.json?["error"]?.stringValue == "unknown parameter topc; /v1/events takes topic")
        #expect(try await TestHTTP.request("POST", admin + "/v1/tokens", "{}").status == 405)

        // The live feed (curl as the watcher): a push to the connected device is accepted,
        // sent and acked; the watcher's topic filter leaves other apps out.
        let watcher = try SSEWatcher(url: admin + "/v1/events?topic=com.example.app")
        try await eventually("the watcher subscribed") {
            (try? await get("/metrics")) != nil && watcher.lines.contains(": watching")
        }
        let live = try await connection.send(.push(token: deviceToken, authorization: authorization, topic: "com.example.app", pushType: "alert",
                                                   payload: #"{"aps":{"alert":"now"}}"#))
        let liveID = try #require(live.apnsID.flatMap(NotificationID.init(header:)))
        try await eventually("accepted, sent and acked in the feed") {
            let events = watcher.events.filter { $0["apnsId"]?.stringValue.flatMap(NotificationID.init(header:)) == liveID }
            return events.compactMap { $0["event"]?.stringValue } == ["accepted", "sent", "acked"]
        }
        let accepted = try #require(watcher.events.first { $0["event"] == .string("accepted") })
        #expect(accepted["outcome"] == .string("delivering") && accepted["device"] == .string(deviceID))
        watcher.stop()

        await device.stop()
        await connection.close()
        try await gateway.stop()
    }

    @Test("the live feed is bounded per watcher: one that does not keep up holds at most 10,000 events and is told how many it lost; another topic's events are not held for it")
    func feedBoundsASlowWatcher() throws {
        let feed = DeliveryFeed()
        #expect(!feed.isWatched)
        let slow = DeliveryFeed.Subscriber(topic: "com.example.app")
        feed.subscribe(slow)
        #expect(feed.isWatched)
        // The watcher takes nothing while 10,005 events (and 3 of another app) arrive.
        for i in 0..<10_005 { feed.publish { .init(event: .accepted, at: Int64(i), topic: "com.example.app") } }
        for i in 0..<3 { feed.publish { .init(event: .accepted, at: Int64(i), topic: "com.example.other") } }
        let batch = slow.take()
        #expect(batch.events.count == DeliveryFeed.Subscriber.maximumPending && batch.dropped == 5, "\(batch.events.count) \(batch.dropped)")
        // Caught up: the next event goes out alone, nothing lost.
        feed.publish { .init(event: .acked, at: 1, topic: "com.example.app") }
        let next = slow.take()
        #expect(next.events.count == 1 && next.dropped == 0)
        #expect(slow.take().events.isEmpty)
        feed.unsubscribe(slow)
        #expect(!feed.isWatched)
    }

    /// `curl -N` following a server-sent event stream; its lines are collected by a thread.
    final class SSEWatcher: Sendable {
        let process = Process()
        private let reader: PipeLineReader

        init(url: String) throws {
            let out = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["curl", "-sN", url]
            process.standardOutput = out
            try process.run()
            reader = PipeLineReader(out.fileHandleForReading)
        }

        var lines: [String] { reader.lines }
        var events: [JSONValue] {
            lines.filter { $0.hasPrefix("data: ") }.compactMap { try? JSONReader.parse(Array($0.utf8.dropFirst(6))) }
        }

        /// SIGKILL: a child of Foundation's `Process` here starts with SIGTERM blocked, so
        /// `terminate()` would leave curl running.
        func stop() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    @Test("a revoked key stops authenticating within the refresh interval, on a connection already using it too")
    func revokedKey() async throws {
        let gateway = try await TestGateway.start()
        let signer = try await gateway.makeKey()
        let token = try await gateway.makeToken()
        let connection = try await gateway.connect()
        let authorization = try gateway.bearer(signer)
        func push() async throws -> HTTP2Response {
            try await connection.send(.push(token: token, authorization: authorization, topic: "com.example.app", pushType: "alert",
                                            payload: #"{"aps":{"alert":"hi"}}"#))
        }
        #expect(try await push().status == 200)
        let revoked = try await gateway.store.revokeKey(id: signer.keyID, atMilliseconds: gateway.clock.nowMilliseconds())
        #expect(revoked?.revokedAtMilliseconds != nil)
        // Within the interval the cached key still serves.
        #expect(try await push().status == 200)
        gateway.clock.advance(milliseconds: 5_001)
        // Past it, one lookup runs in the background; from its answer on, every push is refused.
        var refused: HTTP2Response?
        for _ in 0..<200 where refused == nil {
            let response = try await push()
            if response.status != 200 { refused = response } else { try await Task.sleep(for: .milliseconds(10)) }
        }
        let first = try #require(refused, "the revoked key was still accepted after 2 s")
        #expect(first.status == 403 && first.rejection?.reason == .invalidProviderToken)
        #expect(try await push().rejection?.reason == .invalidProviderToken)
        // A new connection with the same token: refused too.
        let fresh = try await gateway.connect()
        let again = try await fresh.send(.push(token: token, authorization: authorization, topic: "com.example.app", pushType: "alert",
                                               payload: #"{"aps":{"alert":"hi"}}"#))
        #expect(again.rejection?.reason == .invalidProviderToken)
        await fresh.close()
        await connection.close()
        try await gateway.stop()
    }
}
