import HeraldDashboard
import HeraldHTTP
import Hummingbird
import HummingbirdTesting
import Testing

/// The HTTP/1 pieces every surface shares, on Hummingbird's router without a socket.
@Suite("Web responses")
struct WebResponseTests {
    static func application() -> some ApplicationProtocol {
        let router = Router()
        WebResponse.registerAssets(on: router)
        router.get("page") { _, _ in WebResponse.page(.ok, "<p>hi</p>") }
        router.get("text") { _, _ in WebResponse.text(.notFound, "no such thing") }
        router.get("json") { _, _ in WebResponse.json(.ok, #"{"a":1}"#) }
        router.get("away") { _, _ in WebResponse.redirect("/page") }
        return Application(router: router)
    }

    @Test("pages and text carry the security headers; JSON is as given; a redirect is 303 with its location")
    func responses() async throws {
        try await Self.application().test(.router) { client in
            try await client.execute(uri: "/page", method: .get) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "text/html; charset=utf-8")
                for (name, value) in DashboardAssets.securityHeaders {
                    #expect(response.headers[.init(name)!] == value, "\(name)")
                }
                #expect(String(buffer: response.body) == "<p>hi</p>")
            }
            try await client.execute(uri: "/text", method: .get) { response in
                #expect(response.status == .notFound && String(buffer: response.body) == "no such thing\n")
                #expect(response.headers[.init("x-frame-options")!] == "DENY")
            }
            try await client.execute(uri: "/json", method: .get) { response in
                #expect(response.headers[.contentType] == "application/json" && String(buffer: response.body) == #"{"a":1}"#)
            }
            try await client.execute(uri: "/away", method: .get) { response in
                #expect(response.status == .seeOther && response.headers[.location] == "/page")
            }
        }
    }

    @Test("assets: the stylesheet and scripts by name with their types and headers; anything else 404")
    func assets() async throws {
        try await Self.application().test(.router) { client in
            try await client.execute(uri: "/assets/dashboard.css", method: .get) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "text/css; charset=utf-8")
                #expect(response.headers[.init("content-security-policy")!] != nil)
            }
            try await client.execute(uri: "/assets/graphs.js", method: .get) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "text/javascript; charset=utf-8")
            }
            for path in ["/assets/nope.js", "/assets/..%2Fetc%2Fpasswd", "/assets/"] {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .notFound, "\(path)")
                }
            }
        }
    }
}
