import HeraldCore
@testable import HeraldDashboard
import Testing

/// The pages as strings, without a server: every template parses and renders, values are
/// escaped, the navigation marks the current section, JSON becomes what templates read.
@Suite("Dashboard rendering")
struct DashboardRendererTests {
    @Test("every gateway and provider page renders inside the layout with an empty context", arguments: ["gateway", "provider"])
    func everyPageRenders(product: String) {
        let (renderer, templates, navigation) = product == "gateway"
            ? (GatewayPages.renderer(), GatewayPages.templates, GatewayPages.navigation)
            : (ProviderPages.renderer(), ProviderPages.templates, ProviderPages.navigation)
        for name in templates.keys {
            let html = renderer.render(name, title: "T-\(name)", section: navigation[0].path, context: [:])
            #expect(html.contains("T-\(name)") && !html.contains("is missing"), "\(name)")
        }
        #expect(renderer.render("no-such-page", title: "x", section: "", context: [:]).contains("page no-such-page is missing"))
    }

    @Test("what a page shows is HTML-escaped; the current section is marked")
    func escapingAndNavigation() {
        let renderer = GatewayPages.renderer()
        let html = renderer.renderMessage(title: "<b>t</b>", message: #"<script>alert("x")</script> & more"#, section: "/dashboard/held")
        #expect(!html.contains("<script>alert") && html.contains("&lt;script&gt;") && html.contains("&amp; more"))
        #expect(!html.contains("<b>t</b>"))
        let current = html.components(separatedBy: "aria-current").count - 1
        #expect(current == 1, "one navigation item is current: \(html)")
        #expect(html.contains(#"href="/dashboard/held""#))
    }

    @Test("JSON becomes what templates read: nulls absent, times gain a UTC text")
    func values() {
        let value = DashboardValue.from(.object(["createdAt": .int(1_795_000_000_000), "x": .null, "n": .int(3)])) as? [String: Any]
        #expect(value?["x"] == nil)
        #expect(value?["createdAtText"] as? String == "2026-11-18 11:06:40.000 UTC")
        #expect(DashboardValue.timeText(milliseconds: -1) == "-1")
        let object = DashboardValue.object(fromJSON: Array(#"{"items":[{"at":1000}],"next":null}"#.utf8))
        #expect((object["items"] as? [[String: Any]])?.first?["atText"] as? String == "1970-01-01 00:00:01.000 UTC")
        #expect(object["next"] == nil)
        #expect(DashboardValue.object(fromJSON: Array("not json".utf8)).isEmpty)
    }

    @Test("assets by name, with their types; the security headers every page carries")
    func assets() {
        #expect(DashboardAssets.asset(named: "graphs.js")?.contentType == "text/javascript; charset=utf-8")
        #expect(DashboardAssets.asset(named: "../etc/passwd") == nil)
        let names = Set(DashboardAssets.securityHeaders.map { $0.0.lowercased() })
        #expect(names.isSuperset(of: ["content-security-policy", "x-content-type-options", "x-frame-options"]), "\(names)")
    }
}
