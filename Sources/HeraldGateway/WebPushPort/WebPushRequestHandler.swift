import Foundation
import HeraldCore
import HeraldStore
import NIOCore
import NIOHTTP1

/// Serves the Web Push port's HTTP requests (RFC 8030), on an HTTP/1.1 connection or on one
/// HTTP/2 stream (through `HTTP2FramePayloadToHTTP1ServerCodec`): reads the head and a body of
/// at most 4096 bytes, routes it (``WebPushRoute``), checks the subscription and its VAPID
/// token, submits the message to the intake and answers once it is durable.
///
/// A push becomes a ``StoredNotification`` of kind ``PushType/webpush``: its token is the
/// endpoint id, its priority the `Urgency`, its expiration the `TTL` (`TTL: 0` is
/// `apns-expiration: 0`: for a user agent connected now, never stored), its collapse id the
/// `Topic`, its payload a ``WebPushStoredMessage`` (the ciphertext, untouched).
final class WebPushRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let port: WebPushPort
    private let isHTTP2: Bool
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// More body than a message may have arrived: only its length is counted.
    private var bodyLength = 0
    /// The request was answered from its head (a declared body too large to read): the rest
    /// of it is dropped, and an HTTP/1.1 connection is closed after the answer.
    private var answeredEarly = false

    init(port: WebPushPort, isHTTP2: Bool) {
        self.port = port
        self.isHTTP2 = isHTTP2
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            bodyLength = 0
            answeredEarly = false
            // A body declared larger than any message is refused before a byte of it is read.
            if let declared = head.headers.first(name: "content-length").flatMap({ Int($0) }), declared > WebPushEncryption.maximumBody {
                answeredEarly = true
                respond(context, head, .init(413, "the body is \(declared) bytes; a push message is at most \(WebPushEncryption.maximumBody)"))
                if !isHTTP2 { context.close(promise: nil) }
            }
        case .body(var chunk):
            guard !answeredEarly else { return }
            let count = chunk.readableBytes
            if bodyLength + count <= WebPushEncryption.maximumBody, let bytes = chunk.readBytes(length: count) { body += bytes }
            bodyLength += count
        case .end:
            guard let head else { return }
            self.head = nil
            if answeredEarly { return }
            handle(head, context: context)
        }
    }

    private func handle(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let headers = head.headers.map { (name: $0.name.lowercased(), value: $0.value) }
        var length = head.headers.first(name: "content-length").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        // HTTP/2 frames the body itself: a request may leave out its length.
        if length == nil && isHTTP2 { length = bodyLength }
        if let declared = length, declared != bodyLength {
            return respond(context, head, WebPushRoute.Refusal(400, "the body is \(bodyLength) bytes, not the \(declared) its Content-Length says"))
        }
        let routeHead = WebPushRoute.Head(method: head.method.rawValue, path: head.uri, headers: headers, contentLength: length)
        switch WebPushRoute.route(routeHead) {
        case .failure(let refusal):
            respond(context, head, refusal)
        case .success(.browserConnection):
            respond(context, head, WebPushRoute.Refusal(400, "browsers connect with a WebSocket over HTTP/1.1 (Upgrade: websocket)"))
        case .success(.deleteMessage):
            respond(context, head, WebPushRoute.Refusal(501, "Herald does not withdraw accepted messages: they expire with their TTL, or a newer one with the same Topic replaces them"))
        case .success(.messageReceipt(let id)):
            receipt(id, head: head, context: context)
        case .success(.push(let endpoint, let options, let authorization, let cryptoKey)):
            push(endpoint: endpoint, options: options, authorization: authorization, cryptoKey: cryptoKey, head: head, context: context)
        }
    }

    // MARK: a push

    private func push(
        endpoint: WebPushEndpointID, options: WebPushOptions, authorization: String?, cryptoKey: String?,
        head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        guard let token = DeviceToken(bytes: endpoint.bytes) else { return respond(context, head, .init(404, "no such subscription")) }
        guard let origin = port.origin(host: head.headers.first(name: "host")) else {
            return respond(context, head, .init(400, "the request names no valid Host"))
        }
        let subscriptions = port.subscriptions
        let body = self.body
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.makeFutureWithTask { try await subscriptions.lookup(token) }.whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case .failure(let error):
                handler.port.logger.error("could not look up a Web Push subscription", metadata: ["error": "\(error)"])
                handler.respond(context, head, .init(503, "the gateway could not read its store; retry later"), retryAfter: 5)
            case .success(.unknown):
                handler.respond(context, head, .init(404, "no such subscription"))
            case .success(.gone(let at)):
                handler.respond(context, head, .init(410, "the subscription was removed at \(at) (milliseconds since 1970); delete it"))
            case .success(.subscription(let bundleID, let channel, let key)):
                handler.accept(
                    token: token, bundleID: bundleID, channel: channel, key: key, options: options, body: body,
                    authorization: authorization, cryptoKey: cryptoKey, origin: origin, head: head, context: context)
            }
        }
    }

    private func accept(
        token: DeviceToken, bundleID: String, channel: String, key: [UInt8]?, options: WebPushOptions, body: [UInt8],
        authorization: String?, cryptoKey: String?, origin: String, head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        let now = port.clock.nowMilliseconds()
        // A subscription made with an application server key takes only pushes signed by it;
        // one made without takes any, but a token that is sent is checked all the same.
        if key != nil || authorization != nil {
            do {
                let vapid = try VAPIDAuthorization(authorization: authorization, cryptoKey: cryptoKey)
                try vapid.verify(audience: origin, nowSeconds: now / 1000, subscriptionKey: key)
            } catch {
                return respond(context, head, .init(error.status, "VAPID: \(error)"))
            }
        }
        if let limiter = port.limiter, !limiter.allow(token, nowMilliseconds: now) {
            return respond(context, head, .init(429, "too many messages for this subscription; retry later"), retryAfter: 1)
        }
        let ttl = min(options.ttl, WebPushOptions.maximumTTL)
        let id = NotificationID.random()
        let message = WebPushStoredMessage(channelID: channel, encoding: options.encoding, legacyHeaders: options.legacyHeaders, body: body)
        let notification = StoredNotification(
            id: id, token: token, bundleID: bundleID, pushType: .webpush, priority: options.urgency.priority,
            expiration: ttl == 0 ? .immediately : .at(secondsSince1970: now / 1000 + ttl), collapseID: options.topic.flatMap(CollapseID.init),
            payload: message.encoded(), receivedAtMilliseconds: now)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        port.intake.submit(notification, on: context.eventLoop).whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case .success(.stored), .success(.discarded):
                handler.accepted(id: id, ttl: ttl, wantsReceipt: options.wantsReceipt, origin: origin, head: head, context: context)
            case .success(.rejected(let rejection)) where rejection.reason == .unregistered || rejection.reason == .expiredToken:
                handler.port.subscriptions.forget(token)
                handler.respond(context, head, .init(410, "the subscription was removed; delete it"))
            case .success(.rejected):
                handler.respond(context, head, .init(404, "no such subscription"))
            case .failure(let error as APNsRejection) where error.status == 503:
                handler.respond(context, head, .init(503, "the gateway is \(error.reason == .shutdown ? "shutting down" : "behind its store"); retry later"), retryAfter: 5)
            case .failure:
                handler.respond(context, head, .init(500, "the gateway could not store the message; retry later"), retryAfter: 5)
            }
        }
        port.feed.publish {
            DeliveryFeed.Event(event: .accepted, at: now, apnsId: id.description, topic: bundleID, token: token.hex, outcome: "webpush")
        }
    }

    /// `201 Created` with the message's URL; `202 Accepted` and a receipt link for
    /// `Prefer: respond-async` (the receipt is Herald's, read with `GET` on that URL).
    private func accepted(id: NotificationID, ttl: Int64, wantsReceipt: Bool, origin: String, head: HTTPRequestHead, context: ChannelHandlerContext) {
        let location = origin + "/m/" + id.description.lowercased()
        var headers = HTTPHeaders([("location", location), ("ttl", String(ttl)), ("content-length", "0")])
        if wantsReceipt { headers.add(name: "link", value: "<\(location)>; rel=\"urn:ietf:params:push:receipt\"") }
        port.metrics.recordWebPushResponse(status: wantsReceipt ? 202 : 201)
        write(context, head, status: wantsReceipt ? .accepted : .created, headers: headers, body: [])
    }

    // MARK: receipts

    private func receipt(_ text: String, head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard let id = NotificationID(header: text) else { return respond(context, head, .init(404, "no such message")) }
        let store = port.store
        let timeout = port.limits.storeTimeout
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let subscriptions = port.subscriptions
        context.eventLoop.makeFutureWithTask { () async throws -> [Receipt] in
            let all = try await withDeadline(timeout) { try await store.receipts(apnsID: id) }
            // Only deliveries to Web Push subscriptions: an APNs notification's id is no capability here.
            var receipts: [Receipt] = []
            for receipt in all {
                if case .unknown = try await subscriptions.lookup(receipt.token) { continue }
                receipts.append(receipt)
            }
            return receipts
        }.whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case .success(let receipts):
                guard !receipts.isEmpty else {
                    return handler.respond(context, head, .init(404, "no such message (or its receipt is past the retention time)"))
                }
                let bytes = (try? JSONEncoder().encode(NotificationReceipt(apnsID: id, receipts: receipts))).map(Array.init) ?? []
                handler.port.metrics.recordWebPushResponse(status: 200)
                handler.write(context, head, status: .ok, headers: ["content-type": "application/json", "content-length": String(bytes.count)], body: bytes)
            case .failure:
                handler.respond(context, head, .init(503, "the gateway could not read its store; retry later"), retryAfter: 5)
            }
        }
    }

    // MARK: answers

    private func respond(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ refusal: WebPushRoute.Refusal, retryAfter: Int? = nil) {
        let bytes = refusal.body
        var headers = HTTPHeaders([("content-type", "application/json"), ("content-length", String(bytes.count))])
        if let seconds = retryAfter ?? refusal.retryAfter { headers.add(name: "retry-after", value: String(seconds)) }
        port.metrics.recordWebPushResponse(status: refusal.status)
        if refusal.status != 404 || port.feed.isWatched {
            port.feed.publish {
                DeliveryFeed.Event(event: .refused, at: port.clock.nowMilliseconds(), topic: "webpush", status: refusal.status, reason: refusal.message)
            }
        }
        write(context, head, status: HTTPResponseStatus(statusCode: refusal.status), headers: headers, body: bytes)
    }

    private func write(_ context: ChannelHandlerContext, _ request: HTTPRequestHead, status: HTTPResponseStatus, headers: HTTPHeaders, body: [UInt8]) {
        let response = HTTPResponseHead(version: isHTTP2 ? .http2 : request.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        if !body.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: body.count)
            buffer.writeBytes(body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
