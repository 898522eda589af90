import HeraldCore

/// What one request on the Web Push port asks for, decided from its head alone: pure — no I/O,
/// no clock, no store. The first step of every request the port will serve (RFC 8030); what
/// needs the subscription (its application server key, whether it still exists) comes after.
///
/// The port's paths, as autopush lays them out:
/// - `POST /wpush/<endpoint id>`: a push message (the endpoint id is 32 random bytes in hex);
/// - `GET /m/<message id>`: the message's receipt (Herald's receipts: accepted, stored,
///   delivered, acked, expired…), the URL a `201`'s `Location` names;
/// - `DELETE /m/<message id>`: withdraw a message not yet delivered (RFC 8030 §6.2);
/// - `GET /wpush/<endpoint id>`: UnifiedPush's discovery (its server specification): the answer
///   `{"unifiedpush":{"version":1}}` tells a sender (a Matrix push gateway, say) that the
///   endpoint is a push server's, without saying whether the subscription exists;
/// - `GET /` with `Upgrade: websocket`: a browser's connection (Mozilla's protocol).
enum WebPushRoute: Hashable {
    case push(endpoint: WebPushEndpointID, options: WebPushOptions, authorization: String?, cryptoKey: String?)
    case discovery
    case messageReceipt(id: String)
    case deleteMessage(id: String)
    case browserConnection

    /// A refusal as the port answers it: the status and a JSON body
    /// `{"code": N, "error": "<reason phrase>", "message": "<why>"}` (autopush's shape; senders log it).
    struct Refusal: Error, Hashable {
        var status: Int
        var message: String
        /// Seconds, for 429.
        var retryAfter: Int?

        init(_ status: Int, _ message: String, retryAfter: Int? = nil) {
            (self.status, self.message, self.retryAfter) = (status, message, retryAfter)
        }

        var body: [UInt8] {
            let phrase: String = switch status {
            case 400: "Bad Request"
            case 401: "Unauthorized"
            case 403: "Forbidden"
            case 404: "Not Found"
            case 405: "Method Not Allowed"
            case 410: "Gone"
            case 411: "Length Required"
            case 413: "Payload Too Large"
            case 429: "Too Many Requests"
            case 431: "Request Header Fields Too Large"
            case 500: "Internal Server Error"
            case 501: "Not Implemented"
            case 503: "Service Unavailable"
            default: "Error"
            }
            let object: [String: JSONValue] = ["code": .int(Int64(status)), "error": .string(phrase), "message": .string(message)]
            return JSONValue.object(object).compactBytes
        }
    }

    /// The request head as the port's HTTP layer hands it over (header names lowercase).
    struct Head: Hashable {
        var method: String
        var path: String
        var headers: [(name: String, value: String)]
        /// `Content-Length`, when the request has one (HTTP/1.1 without it and without chunking has no body).
        var contentLength: Int?

        static func == (a: Head, b: Head) -> Bool {
            a.method == b.method && a.path == b.path && a.contentLength == b.contentLength
                && a.headers.elementsEqual(b.headers, by: { $0.name == $1.name && $0.value == $1.value })
        }
        func hash(into hasher: inout Hasher) { hasher.combine(method); hasher.combine(path) }

        func value(_ name: String) -> String? { headers.first { $0.name == name }?.value }
    }

    /// The route of a request, or its refusal: the path first (404), then the method (405), then
    /// the body's length (411, 413), then the delivery options (400).
    static func route(_ head: Head) -> Result<WebPushRoute, Refusal> {
        let path = head.path.utf8.firstIndex(of: UInt8(ascii: "?")).map { String(head.path[..<$0]) } ?? head.path
        // The hot path: a push, `/wpush/` and 64 hex digits, is told apart without splitting.
        if path.utf8.count == 71, path.hasPrefix("/wpush/") {
            return push(head, endpoint: path.utf8.dropFirst(7))
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        if path == "/" {
            guard head.method == "GET", head.value("upgrade")?.lowercased() == "websocket" else {
                return .failure(Refusal(404, "this is a Web Push service: push to a subscription's endpoint (POST /wpush/…); browsers connect with a WebSocket"))
            }
            return .success(.browserConnection)
        }
        guard parts.count == 3, parts[0].isEmpty else { return .failure(Refusal(404, "no such endpoint")) }
        switch parts[1] {
        case "wpush":
            return push(head, endpoint: parts[2].utf8)
        case "m":
            guard head.method == "DELETE" || head.method == "GET" else {
                return .failure(Refusal(405, "a message's receipt is read with GET; a message is withdrawn with DELETE"))
            }
            let id = String(parts[2])
            guard !id.isEmpty, id.utf8.count <= 64, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D }) else {
                return .failure(Refusal(404, "no such message"))
            }
            return .success(head.method == "GET" ? .messageReceipt(id: id) : .deleteMessage(id: id))
        default:
            return .failure(Refusal(404, "no such endpoint"))
        }
    }

    /// The one bound on a push message's body (413 past ``WebPushEncryption/maximumBody``): checked
    /// on the declared length, from the head, before a body is read.
    static func bodyTooLarge(_ length: Int) -> Refusal? {
        guard length > WebPushEncryption.maximumBody else { return nil }
        return Refusal(413, "the body is \(length) bytes; a push message is at most \(WebPushEncryption.maximumBody)")
    }

    /// A push to `/wpush/<endpoint>`: the method (405), the body's length (411, 413), then the
    /// delivery options (400).
    private static func push(_ head: Head, endpoint hex: some Collection<UInt8>) -> Result<WebPushRoute, Refusal> {
        guard hex.count == 64, let token = DeviceToken(hexBytes: hex) else { return .failure(Refusal(404, "no such subscription")) }
        let endpoint = WebPushEndpointID(bytes: token.bytes)
        if head.method == "GET" { return .success(.discovery) }
        guard head.method == "POST" else { return .failure(Refusal(405, "push messages are sent with POST (GET answers UnifiedPush's discovery)")) }
        guard let length = head.contentLength else {
            return .failure(Refusal(411, "a push message needs a Content-Length (0 for a message without a body)"))
        }
        if let tooLarge = bodyTooLarge(length) { return .failure(tooLarge) }
        do {
            let options = try WebPushOptions(headers: head.headers, bodyLength: length)
            return .success(.push(endpoint: endpoint, options: options, authorization: head.value("authorization"), cryptoKey: head.value("crypto-key")))
        } catch {
            return .failure(Refusal(error.status, error.description))
        }
    }
}

/// A subscription's endpoint id: 32 random bytes (256 bits, so an endpoint cannot be guessed),
/// written as 64 lowercase hex digits in its URL.
struct WebPushEndpointID: Hashable, Sendable, CustomStringConvertible {
    let bytes: [UInt8]

    init(bytes: [UInt8]) { self.bytes = bytes }

    var description: String { DeviceToken(bytes: bytes)?.hex ?? "" }
}
