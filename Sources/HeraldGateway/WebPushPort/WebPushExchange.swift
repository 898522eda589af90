import Foundation
import HeraldCore
import HeraldStore
import NIOCore

/// One request on the Web Push port as its transports hand it over (HTTP/1.1 or an HTTP/2
/// stream): header names lowercase, the body bounded (only its length is counted beyond 4096
/// bytes).
struct WebPushRequest {
    var method: String
    var path: String
    var headers: [(name: String, value: String)]
    /// `Host`, or HTTP/2's `:authority`.
    var host: String?
    /// `Content-Length` as declared; HTTP/2 may leave it out (its frames delimit the body).
    var declaredLength: Int?
    var body: [UInt8]
    /// Bytes of body received (more than `body` holds when it was too large).
    var bodyLength: Int

    /// A body chunk as either transport reads it: counted, and kept while the body is within the
    /// bound (past it the request is refused by its length, so the bytes are not kept).
    mutating func appendBody(_ chunk: inout ByteBuffer) {
        let count = chunk.readableBytes
        if bodyLength + count <= WebPushEncryption.maximumBody, let bytes = chunk.readBytes(length: count) { body += bytes }
        bodyLength += count
    }
}

/// The answer to a request, as either transport writes it.
struct WebPushAnswer: Sendable {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
}

/// What the Web Push port does with a request (RFC 8030), whatever carried it: route it
/// (``WebPushRoute``), check the subscription and its VAPID token, submit the message to the
/// intake and answer once it is durable; read a message's receipt.
///
/// A push becomes a ``StoredNotification`` of kind ``PushType/webpush``: its token is the
/// endpoint id, its priority the `Urgency`, its expiration the `TTL` (`TTL: 0` is
/// `apns-expiration: 0`: for a user agent connected now, never stored), its collapse id the
/// `Topic`, its payload a ``WebPushStoredMessage`` (the ciphertext, untouched).
struct WebPushExchange {
    let port: WebPushPort

    /// The answer a request gets from its head alone, before its body is read: a body declared
    /// larger than any message (413).
    func answerFromHead(declaredLength: Int?) -> WebPushAnswer? {
        guard let declared = declaredLength, let tooLarge = WebPushRoute.bodyTooLarge(declared) else { return nil }
        return refuse(tooLarge)
    }

    /// The answer to a complete request, on `eventLoop`.
    func answer(_ request: WebPushRequest, on eventLoop: EventLoop) -> EventLoopFuture<WebPushAnswer> {
        if let declared = request.declaredLength, declared != request.bodyLength {
            return eventLoop.makeSucceededFuture(refuse(.init(400, "the body is \(request.bodyLength) bytes, not the \(declared) its Content-Length says")))
        }
        let head = WebPushRoute.Head(method: request.method, path: request.path, headers: request.headers, contentLength: request.declaredLength)
        switch WebPushRoute.route(head) {
        case .failure(let refusal):
            return eventLoop.makeSucceededFuture(refuse(refusal))
        case .success(.browserConnection):
            return eventLoop.makeSucceededFuture(refuse(.init(400, "browsers connect with a WebSocket over HTTP/1.1 (Upgrade: websocket)")))
        case .success(.deleteMessage):
            return eventLoop.makeSucceededFuture(refuse(.init(501, "Herald does not withdraw accepted messages: they expire with their TTL, or a newer one with the same Topic replaces them")))
        case .success(.messageReceipt(let id)):
            return receipt(id, on: eventLoop)
        case .success(.discovery):
            port.metrics.recordWebPushResponse(status: 200)
            return eventLoop.makeSucceededFuture(WebPushAnswer(
                status: 200, headers: [("content-type", "application/json")], body: Array(#"{"unifiedpush":{"version":1}}"#.utf8)))
        case .success(.push(let endpoint, let options, let authorization, let cryptoKey)):
            guard let token = DeviceToken(bytes: endpoint.bytes) else { return eventLoop.makeSucceededFuture(refuse(.init(404, "no such subscription"))) }
            guard let origin = port.origin(host: request.host) else {
                return eventLoop.makeSucceededFuture(refuse(.init(400, "the request names no valid Host")))
            }
            let push = Push(token: token, options: options, authorization: authorization, cryptoKey: cryptoKey, origin: origin, body: request.body)
            return self.push(push, on: eventLoop)
        }
    }

    // MARK: a push

    private struct Push {
        var token: DeviceToken
        var options: WebPushOptions
        var authorization: String?
        var cryptoKey: String?
        var origin: String
        var body: [UInt8]
    }

    private func push(_ push: Push, on eventLoop: EventLoop) -> EventLoopFuture<WebPushAnswer> {
        let subscriptions = port.subscriptions
        // The hot path: a subscription the port has read before costs no task and no store read.
        if let known = subscriptions.cached(push.token) { return accept(push, known, on: eventLoop) }
        let bound = NIOLoopBound(push, eventLoop: eventLoop)
        return eventLoop.makeFutureWithTask { try await subscriptions.lookup(push.token) }
            .flatMap { [self] lookup in accept(bound.value, lookup, on: eventLoop) }
            .flatMapErrorThrowing { [self] error in
                port.logger.error("could not look up a Web Push subscription", metadata: ["error": "\(error)"])
                return refuse(.init(503, "the gateway could not read its store; retry later"), retryAfter: 5)
            }
    }

    private func accept(_ push: Push, _ lookup: WebPushSubscriptions.Lookup, on eventLoop: EventLoop) -> EventLoopFuture<WebPushAnswer> {
        let bundleID: String, channel: String, key: [UInt8]?
        switch lookup {
        case .unknown: return eventLoop.makeSucceededFuture(refuse(.init(404, "no such subscription")))
        case .gone(let at):
            return eventLoop.makeSucceededFuture(refuse(.init(410, "the subscription was removed at \(at) (milliseconds since 1970); delete it")))
        case .subscription(let b, let c, let k): (bundleID, channel, key) = (b, c, k)
        }
        let now = port.clock.nowMilliseconds()
        // A subscription made with an application server key takes only pushes signed by it;
        // one made without takes any, but a token that is sent is checked all the same.
        if key != nil || push.authorization != nil {
            do {
                try port.vapid.verify(
                    authorization: push.authorization, cryptoKey: push.cryptoKey, audience: push.origin, nowSeconds: now / 1000, subscriptionKey: key)
            } catch {
                return eventLoop.makeSucceededFuture(refuse(.init(error.status, "VAPID: \(error)")))
            }
        }
        if !port.limiter.allow(push.token, nowMilliseconds: now) {
            return eventLoop.makeSucceededFuture(refuse(.init(429, "too many messages for this subscription; retry later"), retryAfter: 1))
        }
        let options = push.options
        let ttl = min(options.ttl, WebPushOptions.maximumTTL)
        // Time-ordered, as the APNs port's (the store's index of ids grows at one end instead of
        // a random page per message), with 74 bits from a secure generator: the message's URL is
        // the capability to read its receipt.
        let id = port.ids.withLock { NotificationID.timeOrdered(atMilliseconds: now, using: &$0) }
        let message = WebPushStoredMessage(channelID: channel, encoding: options.encoding, legacyHeaders: options.legacyHeaders, body: push.body)
        let notification = StoredNotification(
            id: id, token: push.token, bundleID: bundleID, pushType: .webpush, priority: options.urgency.priority,
            expiration: ttl == 0 ? .immediately : .at(secondsSince1970: now / 1000 + ttl), collapseID: options.topic.flatMap(CollapseID.init),
            payload: message.encoded(), receivedAtMilliseconds: now)
        let token = push.token, origin = push.origin
        return port.intake.submit(notification, on: eventLoop).map { [self] outcome -> WebPushAnswer in
            switch outcome {
            case .stored, .discarded:
                return accepted(id: id, ttl: ttl, wantsReceipt: options.wantsReceipt, origin: origin)
            case .rejected(let refusal) where refusal.isGone:
                port.subscriptions.forget(token)
                return refuse(.init(410, "the subscription was removed; delete it"))
            case .rejected:
                return refuse(.init(404, "no such subscription"))
            }
        }.recover { [self] error in
            if let unavailable = error as? IntakeUnavailable {
                return refuse(.init(503, "\(unavailable); retry later"), retryAfter: 5)
            }
            return refuse(.init(500, "the gateway could not store the message; retry later"), retryAfter: 5)
        }
    }

    /// `201 Created` with the message's URL; `202 Accepted` and a receipt link for
    /// `Prefer: respond-async` (the receipt is Herald's, read with `GET` on that URL).
    private func accepted(id: NotificationID, ttl: Int64, wantsReceipt: Bool, origin: String) -> WebPushAnswer {
        let location = origin + "/m/" + id.description
        var headers = [("location", location), ("ttl", String(ttl))]
        if wantsReceipt { headers.append(("link", "<\(location)>; rel=\"urn:ietf:params:push:receipt\"")) }
        port.metrics.recordWebPushResponse(status: wantsReceipt ? 202 : 201)
        return WebPushAnswer(status: wantsReceipt ? 202 : 201, headers: headers, body: [])
    }

    // MARK: receipts

    private func receipt(_ text: String, on eventLoop: EventLoop) -> EventLoopFuture<WebPushAnswer> {
        guard let id = NotificationID(header: text) else { return eventLoop.makeSucceededFuture(refuse(.init(404, "no such message"))) }
        let store = port.store
        let timeout = port.limits.storeTimeout
        let now = port.clock.nowMilliseconds()
        return eventLoop.makeFutureWithTask { () async throws -> [UInt8]? in
            try await withDeadline(timeout) { try await ReceiptReader.read(id, for: .webPush, in: store, nowMilliseconds: now) }
        }.map { [self] receipt -> WebPushAnswer in
            guard let bytes = receipt else { return refuse(.init(404, "no such message (or its receipt is past the retention time)")) }
            port.metrics.recordWebPushResponse(status: 200)
            return WebPushAnswer(status: 200, headers: [("content-type", "application/json")], body: bytes)
        }.recover { [self] _ in
            refuse(.init(503, "the gateway could not read its store; retry later"), retryAfter: 5)
        }
    }

    // MARK: refusals

    func refuse(_ refusal: WebPushRoute.Refusal, retryAfter: Int? = nil) -> WebPushAnswer {
        var headers = [("content-type", "application/json")]
        if let seconds = retryAfter ?? refusal.retryAfter { headers.append(("retry-after", String(seconds))) }
        port.metrics.recordWebPushResponse(status: refusal.status)
        let now = port.clock.nowMilliseconds()
        port.feed.publish {
            DeliveryFeed.Event(event: .refused, at: now, protocol: "webpush", status: refusal.status, reason: refusal.message)
        }
        return WebPushAnswer(status: refusal.status, headers: headers, body: refusal.body)
    }
}
