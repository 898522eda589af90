import AsyncHTTPClient
import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import NIOSSL

/// A user agent's subscription as `PushSubscription.toJSON()` gives it:
/// `{"endpoint": "https://…", "keys": {"p256dh": "…", "auth": "…"}}`.
public struct WebPushSubscription: Sendable, Hashable, Codable {
    public struct Keys: Sendable, Hashable, Codable {
        public var p256dh: String
        public var auth: String
    }
    public var endpoint: String
    public var keys: Keys

    public init(endpoint: String, keys: WebPushSubscriptionKeys) {
        self.endpoint = endpoint
        self.keys = Keys(p256dh: Base64URL.encode(keys.p256dh), auth: Base64URL.encode(keys.auth))
    }

    /// Reads the JSON (at most 4 KiB), checking the endpoint is an http(s) URL and the keys a
    /// P-256 point and a 16-byte secret.
    public static func read(_ bytes: [UInt8]) throws -> (subscription: WebPushSubscription, keys: WebPushSubscriptionKeys) {
        try read(object: JSONReader.parseObject(bytes, limits: JSONLimits(maximumBytes: 4_096, maximumDepth: 4)))
    }

    /// The same, from a parsed object.
    public static func read(object: [String: JSONValue]) throws -> (subscription: WebPushSubscription, keys: WebPushSubscriptionKeys) {
        guard let endpoint = object["endpoint"]?.stringValue, endpoint.utf8.count <= 2_048, let origin = VAPIDSigner.origin(of: endpoint),
              origin.hasPrefix("https://") || origin.hasPrefix("http://") else {
            throw WebPushClient.Failure("the subscription's \"endpoint\" must be an https:// URL")
        }
        guard case .object(let keys)? = object["keys"], let p256dh = keys["p256dh"]?.stringValue, let auth = keys["auth"]?.stringValue,
              let parsed = WebPushSubscriptionKeys(p256dh: p256dh, auth: auth) else {
            throw WebPushClient.Failure("the subscription's \"keys\" must hold p256dh (a P-256 public key) and auth (16 bytes), base64url")
        }
        return (WebPushSubscription(endpoint: endpoint, keys: parsed), parsed)
    }
}

/// What a push service answered.
public struct WebPushResult: Sendable, Hashable {
    /// 201 (or 202 with a receipt) is accepted; 404 and 410 mean the subscription is gone.
    public var status: Int
    /// The message's URL (`Location`).
    public var location: String?
    /// The receipt subscription (`Link: <…>; rel="urn:ietf:params:push:receipt"`) when asked for.
    public var receipt: String?
    /// Seconds to wait before trying again, on a 429 or 503.
    public var retryAfter: Int?
    /// The service's explanation of a refusal (its body, at most 1 KiB).
    public var reason: String
    /// How many requests it took (429, 5xx and transport failures are retried).
    public var attempts = 1

    public init(status: Int, location: String? = nil, receipt: String? = nil, retryAfter: Int? = nil, reason: String = "", attempts: Int = 1) {
        (self.status, self.location, self.receipt, self.retryAfter, self.reason, self.attempts) = (status, location, receipt, retryAfter, reason, attempts)
    }

    public var isAccepted: Bool { (200...299).contains(status) }
    /// The subscription no longer exists: delete it (Mastodon also deletes on other 4xx but 408 and 429).
    public var isGone: Bool { status == 404 || status == 410 }
}

/// An application server's client for any Web Push service (RFC 8030): encrypts each message to
/// its subscription (RFC 8291, `aes128gcm`) and signs it with a VAPID key (RFC 8292). HTTP/1.1 or
/// HTTP/2, whichever the service offers; the APNs counterpart is ``APNsClient``.
public final class WebPushClient: Sendable {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public let vapid: VAPIDSigner
    /// The same backoff as ``APNsClient``'s: exponential with jitter; a `Retry-After` is honoured
    /// up to `maximumDelay`.
    public let retry: APNsRetryPolicy
    private let http: HTTPClient
    private let clock: WallClock

    /// - Parameters:
    ///   - trustRootsPath: a PEM file of roots to trust instead of the system's (a Herald
    ///     gateway's `DIR/tls/ca.pem`).
    public init(
        vapid: VAPIDSigner, trustRootsPath: String? = nil,
        retry: APNsRetryPolicy = APNsRetryPolicy(maximumAttempts: 3, initialDelay: .milliseconds(500), maximumDelay: .seconds(30)),
        clock: WallClock = SystemWallClock()
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let trustRootsPath { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(trustRootsPath)) }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(30))
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.vapid = vapid
        self.retry = retry
        self.clock = clock
    }

    /// Sends one message. `payload` `nil` sends a push without a body (a valid message: the user
    /// agent learns only that something happened).
    public func send(
        _ payload: [UInt8]?, to subscription: WebPushSubscription, keys: WebPushSubscriptionKeys, options: WebPushOptions
    ) async throws -> WebPushResult {
        var attempt = 1
        while true {
            let result: WebPushResult
            do { result = try await sendOnce(payload, to: subscription, keys: keys, options: options) } catch {
                guard attempt < retry.maximumAttempts, !(error is Failure) else { throw error }
                try await Task.sleep(for: retry.delay(afterAttempt: attempt))
                attempt += 1
                continue
            }
            guard attempt < retry.maximumAttempts, result.status == 429 || (500...599).contains(result.status) else {
                var final = result
                final.attempts = attempt
                return final
            }
            let delay = result.retryAfter.map { min(Duration.seconds(max(0, $0)), retry.maximumDelay) } ?? retry.delay(afterAttempt: attempt)
            try await Task.sleep(for: delay)
            attempt += 1
        }
    }

    /// One request (each attempt encrypts afresh: a new salt and sender key).
    private func sendOnce(
        _ payload: [UInt8]?, to subscription: WebPushSubscription, keys: WebPushSubscriptionKeys, options: WebPushOptions
    ) async throws -> WebPushResult {
        guard let audience = VAPIDSigner.origin(of: subscription.endpoint) else { throw Failure("the endpoint \(subscription.endpoint) is not a URL") }
        var request = HTTPClientRequest(url: subscription.endpoint)
        request.method = .POST
        request.headers.add(name: "TTL", value: String(options.ttl))
        request.headers.add(name: "Urgency", value: options.urgency.rawValue)
        if let topic = options.topic { request.headers.add(name: "Topic", value: topic) }
        if options.wantsReceipt { request.headers.add(name: "Prefer", value: "respond-async") }
        let expires = clock.nowMilliseconds() / 1000 + 12 * 3_600
        request.headers.add(name: "Authorization", value: try vapid.authorization(audience: audience, expiresAt: expires))
        if let payload {
            let body = try WebPushEncryption.encrypt(payload, to: keys)
            request.headers.add(name: "Content-Encoding", value: WebPushOptions.ContentEncoding.aes128gcm.rawValue)
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            request.body = .bytes(ByteBuffer(bytes: body))
        } else {
            request.headers.add(name: "Content-Length", value: "0")
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 64 * 1024)
        let receipt = response.headers["link"].first { $0.contains("urn:ietf:params:push:receipt") }.flatMap { link -> String? in
            guard let open = link.firstIndex(of: "<"), let close = link.firstIndex(of: ">"), open < close else { return nil }
            return String(link[link.index(after: open)..<close])
        }
        return WebPushResult(
            status: Int(response.status.code), location: response.headers.first(name: "location"), receipt: receipt,
            retryAfter: response.headers.first(name: "retry-after").flatMap { Int($0) },
            reason: String(String(buffer: body).prefix(1_024)))
    }

    public func close() async throws { try await http.shutdown() }
}
