import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HeraldCore
import HeraldDashboard
@testable import HeraldGateway
import HeraldTesting
import Testing

/// The gateway's dashboard over its real admin port (the browser test, Tests/browser, drives the
/// same pages in chromium), and the pieces under it.
@Suite("Dashboard")
struct DashboardTests {
    /// GET over HTTP/1.1: status, headers (lowercased names), body.
    static func get(_ url: String) async throws -> (status: Int, headers: [String: String], body: String) {
        var request = URLRequest(url: URL(string: url)!)
        request.timeoutInterval = 10
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields { headers["\(name)".lowercased()] = "\(value)" }
        return (http.statusCode, headers, String(decoding: data, as: UTF8.self))
    }

    @Test("every page renders the store's data as HTML, escaped, with the security headers; refusals show the view's status")
    func pages() async throws {
        let gateway = try await TestGateway.start(admin: true)
        let signer = try await gateway.makeKey()
        let admin = "http://127.0.0.1:\(gateway.ports.adminPort!)"
        let offline = try await gateway.makeToken()
        let connection = try await gateway.connect()
        let held = try await connection.send(.push(token: offline, authorization: try gateway.bearer(signer), topic: "com.example.app",
                                                   pushType: "alert", payload: #"{"aps":{"alert":"<script>alert(1)</script>"}}"#))
        let heldID = try #require(held.apnsID)

        let overview = try await Self.get(admin + "/dashboard")
        #expect(overview.status == 200)
        #expect(overview.headers["content-type"] == "text/html; charset=utf-8")
        #expect(overview.headers["content-security-policy"]?.contains("script-src 'self'") == true)
        #expect(overview.headers["x-frame-options"] == "DENY")
        #expect(overview.body.contains(#"id="held-count">1<"#))

        let heldPage = try await Self.get(admin + "/dashboard/held")
        #expect(heldPage.body.lowercased().contains(heldID.lowercased()))
        // A payload is data, not markup: escaped.
        #expect(heldPage.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(!heldPage.body.contains("<script>alert(1)"))

        let tokens = try await Self.get(admin + "/dashboard/tokens?topic=com.example.app&active=")
        #expect(tokens.status == 200 && tokens.body.contains(offline.hex))
        let receipt = try await Self.get(admin + "/dashboard/receipts?apns-id=\(heldID)")
        #expect(receipt.status == 200 && receipt.body.contains(#"data-status="stored""#))
        let refused = try await Self.get(admin + "/dashboard/receipts?apns-id=nope")
        #expect(refused.status == 400 && refused.body.contains("is not an apns-id"))
        let teams = try await Self.get(admin + "/dashboard/teams")
        #expect(teams.body.contains(signer.keyID))
        #expect(try await Self.get(admin + "/dashboard/nothing").status == 404)
        #expect(try await Self.get(admin + "/dashboard/tokens?limit=0").status == 400)
        let script = try await Self.get(admin + "/assets/graphs.js")
        #expect(script.status == 200 && script.headers["content-type"] == "text/javascript; charset=utf-8")
        #expect(try await Self.get(admin + "/assets/../etc/passwd").status == 404)
        // The latency histograms the graphs read.
        let metrics = try await Self.get(admin + "/metrics")
        #expect(metrics.body.contains(#"herald_intake_commit_seconds_bucket{le="+Inf"} "#))
        #expect(metrics.body.contains("herald_device_ack_seconds_count 0"))
        // The one push sent above, from the intake to its answer.
        #expect(metrics.body.contains("herald_intake_answer_seconds_count 1\n"))
        try await gateway.stop()
    }

    @Test("Host headers are reduced to a host name or replaced; pager queries are percent-encoded")
    func hostAndQuery() {
        #expect(DashboardHost.name("example.com:9090") == "example.com")
        #expect(DashboardHost.name("[::1]:9090") == "::1")
        #expect(DashboardHost.name("evil.com/<script>") == "127.0.0.1")
        #expect(DashboardHost.name("") == "127.0.0.1")
        #expect(GatewayDashboard.pagerQuery(["topic": "a&b c", "after": "x"]) == "topic=a%26b%20c&")
    }

    @Test("latency histogram: cumulative buckets, +Inf, sum in seconds; negative and huge values do not trap")
    func histogram() {
        let histogram = LatencyHistogram(name: "h", help: "help")
        histogram.record(milliseconds: 3)
        histogram.record(milliseconds: -5)
        histogram.record(milliseconds: .max)
        histogram.record(microseconds: 20_000_000)
        var bytes: [UInt8] = []
        histogram.emit(into: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(#"h_bucket{le="0.001"} 1"#))
        #expect(text.contains(#"h_bucket{le="0.005"} 2"#))
        #expect(text.contains(#"h_bucket{le="10.0"} 2"#))
        #expect(text.contains(#"h_bucket{le="+Inf"} 4"#))
        #expect(text.contains("h_count 4"))
    }
}
