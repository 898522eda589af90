@testable import HeraldGateway
import HeraldCore
import Testing

/// The Web Push port's first step, pure: a request head → a push, a message withdrawal, a
/// browser's connection, or the exact refusal.
@Suite("Web Push port: routes and refusals")
struct WebPushRouteTests {
    static let endpoint = String(repeating: "ab", count: 32)

    static func head(_ method: String, _ path: String, _ headers: [(String, String)] = [], length: Int? = nil) -> WebPushRoute.Head {
        WebPushRoute.Head(method: method, path: path, headers: headers.map { (name: $0.0, value: $0.1) }, contentLength: length)
    }

    static func refusal(_ head: WebPushRoute.Head) -> WebPushRoute.Refusal? {
        if case .failure(let refusal) = WebPushRoute.route(head) { return refusal }
        return nil
    }

    @Test("a push: endpoint id, options and the authorization headers as sent; receipts and withdrawals; the browser's WebSocket")
    func routes() throws {
        let push = WebPushRoute.route(Self.head("POST", "/wpush/\(Self.endpoint)?x=1", [("ttl", "30"), ("urgency", "high"), ("authorization", "vapid t=a, k=b")], length: 0))
        guard case .success(.push(let id, let options, let authorization, let cryptoKey)) = push else { Issue.record("\(push)"); return }
        #expect(id.description == Self.endpoint && options == WebPushOptions(ttl: 30, urgency: .high) && authorization == "vapid t=a, k=b" && cryptoKey == nil)
        #expect(WebPushRoute.route(Self.head("DELETE", "/m/abc-123")) == .success(.deleteMessage(id: "abc-123")))
        #expect(WebPushRoute.route(Self.head("GET", "/m/abc-123")) == .success(.messageReceipt(id: "abc-123")))
        #expect(WebPushRoute.route(Self.head("GET", "/", [("upgrade", "WebSocket")])) == .success(.browserConnection))
        // UnifiedPush's discovery: GET on an endpoint, whatever its subscription.
        #expect(WebPushRoute.route(Self.head("GET", "/wpush/\(Self.endpoint)")) == .success(.discovery))
    }

    @Test("refusals in order: the path (404), the method (405), the length (411, 413), then the options (400)")
    func refusals() {
        #expect(Self.refusal(Self.head("POST", "/wpush/short", length: 0))?.status == 404)
        #expect(Self.refusal(Self.head("POST", "/wpush/\(String(repeating: "zz", count: 32))", length: 0))?.status == 404)
        #expect(Self.refusal(Self.head("POST", "/wpush/\(Self.endpoint)/more", length: 0))?.status == 404)
        #expect(Self.refusal(Self.head("PUT", "/wpush/\(Self.endpoint)"))?.status == 405)
        #expect(Self.refusal(Self.head("POST", "/wpush/\(Self.endpoint)", [("ttl", "1")]))?.status == 411)
        #expect(Self.refusal(Self.head("POST", "/wpush/\(Self.endpoint)", [("ttl", "1"), ("content-encoding", "aes128gcm")], length: 4_097))?.status == 413)
        let noTTL = Self.refusal(Self.head("POST", "/wpush/\(Self.endpoint)", length: 0))
        #expect(noTTL?.status == 400 && noTTL?.message.contains("TTL") == true)
        #expect(Self.refusal(Self.head("POST", "/wpush/\(Self.endpoint)", [("ttl", "1")], length: 200))?.status == 400)  // body without encoding
        #expect(Self.refusal(Self.head("GET", "/"))?.status == 404)
        #expect(Self.refusal(Self.head("PUT", "/m/abc"))?.status == 405)
        #expect(Self.refusal(Self.head("DELETE", "/m/a b"))?.status == 404)
        #expect(Self.refusal(Self.head("GET", "/nothing/here"))?.status == 404)
        #expect(Self.refusal(Self.head("POST", "/wpush/\(Self.endpoint)", [("ttl", "1"), ("topic", String(repeating: "x", count: 5_000))], length: 0))?.status == 431)
    }

    @Test("a refusal's body is autopush's JSON shape, for senders' logs")
    func body() throws {
        let object = try JSONReader.parseObject(WebPushRoute.Refusal(413, "too big").body)
        #expect(object == ["code": .int(413), "error": .string("Payload Too Large"), "message": .string("too big")])
    }
}
