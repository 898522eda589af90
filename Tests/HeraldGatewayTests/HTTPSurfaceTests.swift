import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// The gateway's HTTP/1 surfaces on Hummingbird (the admin port, the device port's page) against
/// hostile request targets and bodies, sent with curl exactly as written.
@Suite("HTTP/1 surfaces: hostile targets and bodies")
struct HTTPSurfaceTests {
    @Test("the admin port: malformed percent-encoding, a parameter twice, a wrong method, an oversized fault body")
    func adminPort() async throws {
        let gateway = try await TestGateway.start(configure: { $0.faultInjection = true })
        let admin = "http://127.0.0.1:\(gateway.ports.adminPort!)"
        for target in ["/v1/devices?limit=%zz", "/v1/devices?limit=%", "/dashboard/devices?after=%C3%28"] {
            let answer = try await TestHTTP.curl([admin + target])
            #expect(answer.status == 400 && answer.body.contains("not valid percent-encoding"), "\(target): \(answer)")
        }
        let twice = try await TestHTTP.curl([admin + "/v1/events?topic=a&topic=b"])
        #expect(twice.status == 400 && twice.body.contains("topic is given twice"), "\(twice)")
        let post = try await TestHTTP.curl(["-X", "POST", admin + "/health"])
        #expect(post.status == 405 && post.body == "only GET\n", "\(post)")
        let put = try await TestHTTP.curl(["-X", "PUT", admin + "/faults"])
        #expect(put.status == 405 && put.body == "GET, POST or DELETE\n", "\(put)")
        let huge = gateway.directory + "/huge-fault.json"
        try Data(#"{"reason":"\#(String(repeating: "x", count: 200_000))","count":1}"#.utf8).write(to: URL(fileURLWithPath: huge))
        let oversized = try await TestHTTP.curl(["-X", "POST", "-H", "content-type: application/json", "--data-binary", "@" + huge, admin + "/faults"])
        #expect(oversized.status == 400 || oversized.status == 413, "\(oversized.status)")
        #expect(gateway.gateway.faults.pending.isEmpty)
        try await gateway.stop()
    }

    @Test("the device port's page: the page and assets with security headers, 404 naming the WebSocket path, 413 for a large body, one request per connection")
    func devicePortPage() async throws {
        let gateway = try await TestGateway.start()
        let device = "https://localhost:\(gateway.ports.devicePort!)"
        let ca = ["--cacert", gateway.certificates.caCertificatePath]
        let page = try await TestHTTP.curl(ca + [device + "/?x=%zz"])
        #expect(page.status == 200 && page.headers["content-type"] == "text/html; charset=utf-8", "\(page.status) \(page.headers)")
        #expect(page.headers["content-security-policy"] != nil && page.headers["connection"] == "close")
        let asset = try await TestHTTP.curl(ca + [device + "/assets/dashboard.css"])
        #expect(asset.status == 200 && asset.headers["content-type"] == "text/css; charset=utf-8")
        let nowhere = try await TestHTTP.curl(ca + [device + "/../../etc/passwd"])
        #expect(nowhere.status == 404 && nowhere.body.contains(DeviceProtocol.path) && nowhere.headers["x-frame-options"] == "DENY", "\(nowhere)")
        let body = gateway.directory + "/large-body"
        try Data(repeating: UInt8(ascii: "y"), count: 40_000).write(to: URL(fileURLWithPath: body))
        let large = try await TestHTTP.curl(ca + ["-X", "POST", "--data-binary", "@" + body, device + "/"])
        #expect(large.status == 413, "\(large.status)")
        try await gateway.stop()
    }
}
