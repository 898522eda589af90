import Foundation
import HeraldCore
import Tracing
import NIOCore
import NIOPosix

/// One notification to send: what goes in `:path`, the `apns-*` headers and the body.
public struct APNsNotification: Sendable {
    /// The device token in hex.
    public var token: String
    public var topic: String
    public var pushType: String?
    public var priority: Int?
    /// `apns-expiration` (seconds since 1970; 0 = one attempt only).
    public var expiration: Int64?
    public var collapseID: String?
    /// `apns-id`; when absent the client sets a time-ordered one (UUID v7), so that every attempt of
    /// this notification carries the same id.
    public var apnsID: String?
    public var payload: [UInt8]
    /// A broadcast instead of a device push: `POST /4/broadcasts/apps/<bundle id>` with
    /// `apns-channel-id` (the token is not used; `apnsID` goes as `apns-request-id`).
    public var channelID: String?

    public init(token: String, topic: String, pushType: String? = "alert", priority: Int? = nil, expiration: Int64? = nil,
                collapseID: String? = nil, apnsID: String? = nil, payload: [UInt8]) {
        (self.token, self.topic, self.pushType, self.priority, self.expiration, self.collapseID, self.apnsID, self.payload) =
            (token, topic, pushType, priority, expiration, collapseID, apnsID, payload)
    }

    /// A Live Activity broadcast on a channel of the app `bundleID` (iOS 18).
    public static func broadcast(
        bundleID: String, channelID: String, priority: Int? = nil, expiration: Int64? = nil, requestID: String? = nil, payload: [UInt8]
    ) -> APNsNotification {
        var notification = APNsNotification(
            token: "", topic: bundleID, pushType: PushType.liveactivity.rawValue, priority: priority, expiration: expiration,
            apnsID: requestID, payload: payload)
        notification.channelID = channelID
        return notification
    }
}

/// The outcome of one notification, after any retries.
public struct APNsResult: Sendable, Hashable {
    /// The apns-id the server answered with (or the one sent, when the server never answered).
    public var apnsID: String?
    /// The HTTP status; 0 when no answer came (the connection failed on every attempt).
    public var status: Int
    /// The reason of a rejection (known or not: unknown reasons decode with `isKnown == false`).
    public var reason: APNsReason?
    /// For 410: when the token stopped being valid (milliseconds since 1970).
    public var timestamp: Int64?
    /// How many times it was sent.
    public var attempts: Int
    /// The transport error of the last attempt, when there was no answer.
    public var transportError: String?

    public var isAccepted: Bool { status == 200 }

    public init(apnsID: String?, status: Int, reason: APNsReason? = nil, timestamp: Int64? = nil, attempts: Int = 1, transportError: String? = nil) {
        (self.apnsID, self.status, self.reason, self.timestamp, self.attempts, self.transportError) = (apnsID, status, reason, timestamp, attempts, transportError)
    }

    /// No answer came: the transport failed (or signing the token did).
    static func unanswered(_ apnsID: String?, _ error: String) -> APNsResult {
        APNsResult(apnsID: apnsID, status: 0, reason: nil, timestamp: nil, attempts: 0, transportError: error)
    }
}

/// A read endpoint answered with something other than 200.
public struct APNsQueryError: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: Int
    public var reason: APNsReason?
    public var description: String { "\(status) \(reason?.rawValue ?? "")" }
}

/// When to send again (reference §2): 429 and 5xx with exponential backoff and jitter, a new
/// provider token after `ExpiredProviderToken`, a fresh connection after a transport failure;
/// never the reasons that a retry cannot fix (`BadDeviceToken`, `DeviceTokenNotForTopic`,
/// `Forbidden`, `ExpiredToken`, `Unregistered`, `PayloadTooLarge`, and every other 4xx).
public struct APNsRetryPolicy: Sendable, Hashable {
    public var maximumAttempts: Int
    /// The first delay; doubled at every attempt, up to `maximumDelay`.
    public var initialDelay: Duration
    public var maximumDelay: Duration

    /// Apple's guidance for 5xx is to back off for as long as 15 minutes; a client that must
    /// answer its caller sooner lowers `maximumDelay` and `maximumAttempts`.
    public init(maximumAttempts: Int = 5, initialDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(60)) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    public enum Decision: Sendable, Hashable {
        case done
        case retryAfterBackoff
        case retryWithNewToken
    }

    public static func decide(status: Int, reason: APNsReason?) -> Decision {
        switch status {
        case 200: return .done
        case 429: return .retryAfterBackoff
        case 500...599: return .retryAfterBackoff
        case 403 where reason == .expiredProviderToken: return .retryWithNewToken
        default: return .done
        }
    }

    /// The delay before attempt `attempt + 1` (attempt ≥ 1): equal jitter over the exponential step.
    public func delay(afterAttempt attempt: Int, random: Double = Double.random(in: 0...1)) -> Duration {
        let step = min(maximumDelay, initialDelay * Int(1 << min(attempt - 1, 30)))
        return step / 2 + step / 2 * random
    }
}

/// The provider token of an APNs client: signed once, reused, refreshed after `refreshInterval`
/// (clamped to 20–60 minutes: APNs refuses tokens older than an hour, and answers
/// `TooManyProviderTokenUpdates` to tokens changed more often than every 20 minutes).
public final class ProviderTokenManager: Sendable {
    public static let minimumAgeSeconds: Int64 = 20 * 60
    public static let maximumAgeSeconds: Int64 = 60 * 60
    public let signer: ProviderTokenSigner
    public let refreshIntervalSeconds: Int64
    private let clock: WallClock
    private let state = Locked<(token: String, issuedAt: Int64)?>(nil)

    public init(signer: ProviderTokenSigner, clock: WallClock, refreshIntervalSeconds: Int64 = 50 * 60) {
        self.signer = signer
        self.clock = clock
        self.refreshIntervalSeconds = min(Self.maximumAgeSeconds - 60, max(Self.minimumAgeSeconds, refreshIntervalSeconds))
    }

    /// The `authorization` header value to send now.
    public func authorization() throws -> String {
        let now = clock.nowSeconds()
        return "bearer " + (try state.withLock { current in
            if let current, now - current.issuedAt < refreshIntervalSeconds { return current.token }
            let token = try signer.token(issuedAt: now)
            current = (token, now)
            return token
        })
    }

    /// The server said the token expired (its clock or ours is off). A new one is signed only if
    /// the current one is at least 20 minutes old; returns whether it was.
    public func expired() -> Bool {
        let now = clock.nowSeconds()
        return state.withLock { current in
            guard let c = current, now - c.issuedAt >= Self.minimumAgeSeconds else { return false }
            current = nil
            return true
        }
    }

    /// When the current token was signed (seconds), if any.
    public var issuedAt: Int64? { state.withLock { $0?.issuedAt } }
}

/// A complete APNs client: works against Apple's hosts and against Herald unchanged (only host,
/// port and trust roots differ). A pool of HTTP/2 connections, each used up to the stream limit
/// the server announces (re-read at every request, so changes are honoured); at most
/// `maximumInFlight` requests at once — callers beyond that wait (backpressure, not memory);
/// connections that fail or receive GOAWAY are replaced; a provider token refreshed between 20
/// and 60 minutes; retries by ``APNsRetryPolicy``; a typed ``APNsResult`` per notification.
public final class APNsClient: Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// `nil`: HTTP/2 without TLS (h2c, prior knowledge) — for tests and Herald's h2c port only.
        public var tls: ClientTLS?
        public var connections: Int
        public var maximumInFlight: Int
        public var retry: APNsRetryPolicy
        public var tokenRefreshSeconds: Int64

        public init(host: String, port: Int = 443, tls: ClientTLS? = ClientTLS(), connections: Int = 2, maximumInFlight: Int = 1_000,
                    retry: APNsRetryPolicy = APNsRetryPolicy(), tokenRefreshSeconds: Int64 = 50 * 60) {
            (self.host, self.port, self.tls, self.connections, self.maximumInFlight, self.retry, self.tokenRefreshSeconds) =
                (host, port, tls, max(1, connections), max(1, maximumInFlight), retry, tokenRefreshSeconds)
        }

        /// Apple's production host.
        public static let production = Configuration(host: "api.push.apple.com")
        /// Apple's development (sandbox) host.
        public static let development = Configuration(host: "api.sandbox.push.apple.com")
    }

    public let configuration: Configuration
    public let tokens: ProviderTokenManager?
    let pool: ConnectionPool
    private let clock: WallClock
    private let sleep: @Sendable (Duration) async throws -> Void

    /// - Parameters:
    ///   - signer: signs provider tokens; `nil` sends no `authorization` (certificate-authenticated setups).
    ///   - clock: the time provider tokens are signed with.
    ///   - sleep: how backoff waits (tests pass one that records instead of sleeping).
    public init(
        configuration: Configuration, signer: ProviderTokenSigner?, clock: WallClock = SystemWallClock(),
        group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.configuration = configuration
        self.tokens = signer.map { ProviderTokenManager(signer: $0, clock: clock, refreshIntervalSeconds: configuration.tokenRefreshSeconds) }
        self.pool = ConnectionPool(configuration: configuration, group: group)
        self.clock = clock
        self.sleep = sleep
    }

    /// Sends one notification, retrying as the policy says; returns its outcome. Throws only
    /// `CancellationError`.
    public func send(_ notification: APNsNotification) async throws -> APNsResult {
        var notification = notification
        if notification.apnsID == nil {
            // Time-ordered (UUID v7): APNs takes any UUID, and a store that indexes ids (Herald's
            // receipts) appends these at the end of its index instead of at a random page.
            var generator = SystemRandomNumberGenerator()
            notification.apnsID = NotificationID.timeOrdered(atMilliseconds: clock.nowMilliseconds(), using: &generator).description
        }
        var attempt = 0
        var result = APNsResult.unanswered(notification.apnsID, "not sent")
        var refreshedToken = false
        while attempt < configuration.retry.maximumAttempts {
            try Task.checkCancellation()
            attempt += 1
            result = Traces.isEnabled ? await sendOnceTraced(notification, attempt: attempt) : await sendOnce(notification)
            result.attempts = attempt
            let decision: APNsRetryPolicy.Decision = result.status == 0
                ? .retryAfterBackoff : APNsRetryPolicy.decide(status: result.status, reason: result.reason)
            switch decision {
            case .done: return result
            case .retryWithNewToken:
                // One new token per expiry, and only if the current one is old enough to replace.
                guard !refreshedToken, tokens?.expired() == true else { return result }
                refreshedToken = true
            case .retryAfterBackoff:
                if attempt < configuration.retry.maximumAttempts { try await sleep(configuration.retry.delay(afterAttempt: attempt)) }
            }
        }
        return result
    }

    /// One attempt as a client span in the current trace (``Traces``); its `traceparent` goes
    /// with the request, so the gateway's spans join the trace.
    private func sendOnceTraced(_ n: APNsNotification, attempt: Int) async -> APNsResult {
        await withSpan("apns.send", ofKind: .client) { span in
            span.attributes["apns.topic"] = n.topic
            span.attributes["herald.attempt"] = attempt
            let result = await sendOnce(n, trace: Traces.carrier(of: span.context))
            span.attributes["http.response.status_code"] = result.status
            if let apnsID = result.apnsID { span.attributes["apns.id"] = apnsID }
            if result.status != 200 {
                span.setStatus(SpanStatus(code: .error, message: result.reason?.rawValue ?? result.transportError ?? "status \(result.status)"))
            }
            return result
        }
    }

    private func sendOnce(_ n: APNsNotification, trace: Traces.Carrier? = nil) async -> APNsResult {
        var headers: [(name: String, value: String)] = trace?.headers ?? []
        do {
            if let tokens { headers.append(("authorization", try tokens.authorization())) }
        } catch {
            return .unanswered(n.apnsID, "cannot sign a provider token: \(error)")
        }
        headers.append(("apns-topic", n.topic))
        if let pushType = n.pushType { headers.append(("apns-push-type", pushType)) }
        if let priority = n.priority { headers.append(("apns-priority", String(priority))) }
        if let expiration = n.expiration { headers.append(("apns-expiration", String(expiration))) }
        if let collapseID = n.collapseID { headers.append(("apns-collapse-id", collapseID)) }
        let path: String
        if let channel = n.channelID {
            headers.append(("apns-channel-id", channel))
            if let apnsID = n.apnsID { headers.append(("apns-request-id", apnsID)) }
            path = "/4/broadcasts/apps/\(PushType.liveactivity.bundleID(fromTopic: n.topic) ?? n.topic)"
        } else {
            if let apnsID = n.apnsID { headers.append(("apns-id", apnsID)) }
            path = "/3/device/\(n.token)"
        }
        let request = HTTP2Request(method: "POST", path: path, headers: headers, body: n.payload)
        do {
            let response = try await pool.send(request)
            let rejection = response.rejection
            return APNsResult(
                apnsID: response.apnsID ?? response.header("apns-request-id") ?? n.apnsID, status: response.status, reason: rejection?.reason,
                timestamp: rejection?.timestampMilliseconds, attempts: 0, transportError: nil)
        } catch is CancellationError {
            return .unanswered(n.apnsID, "cancelled")
        } catch {
            return .unanswered(n.apnsID, "\(error)")
        }
    }

}
