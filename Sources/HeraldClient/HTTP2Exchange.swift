import Foundation
import HeraldCore

/// One HTTP/2 request as the client sends it. Headers are sent in order, repeats included, so
/// that tests can send exactly what a misbehaving provider would.
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String = "POST", path: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }
}

/// One HTTP/2 response.
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Whether the HEADERS frame itself ended the stream (APNs answers 200 that way).
    public var endedWithHeaders: Bool

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8], endedWithHeaders: Bool) {
        self.status = status
        self.headers = headers
        self.body = body
        self.endedWithHeaders = endedWithHeaders
    }

    /// The first value of a header (names are lowercase in HTTP/2).
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// The `apns-id` the gateway answered with.
    public var apnsID: String? { header("apns-id") }

    /// The APNs error in the body, if any: its reason and, on 410, its timestamp.
    public var rejection: APNsRejection? {
        guard !body.isEmpty else { return nil }
        struct Body: Decodable { var reason: String; var timestamp: Int64? }
        guard let decoded = try? JSONReader.decode(Body.self, from: body, limits: .payload) else { return nil }
        return APNsRejection(APNsReason(rawValue: decoded.reason), timestampMilliseconds: decoded.timestamp)
    }
}
