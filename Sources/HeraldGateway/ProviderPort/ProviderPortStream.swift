import HeraldCore
import HeraldStore
import HeraldNIO
import NIOCore
import NIOHPACK
import NIOHTTP2
import Tracing

/// Answers one provider request (one HTTP/2 stream): collects its headers and body, validates
/// them in Herald's fixed order, hands an accepted notification to the intake, and answers
/// exactly as APNs does — `HEADERS(:status 200, apns-id, END_STREAM)` on success, or a status with
/// `{"reason":…}` on failure.
///
/// A stream is frames on its connection, not a channel of its own: the connection's
/// ``HTTP2StreamTable`` (``table(port:connection:)``) hands it the frames of its stream, and
/// `context` is the table's. Runs on the connection's event loop; it waits (without blocking)
/// only on a key or topic cache miss and on the intake's commit.
final class ProviderPortStream: HTTP2TableStream {
    /// Bytes of body kept: enough to tell every push type's limit apart from "too large".
    private static let maximumBodyKept = PushType.voip.maximumPayloadSize + 1

    let id: HTTP2StreamID
    let port: ProviderPort
    let connection: ProviderPortConnection
    var head = APNsRequestHead()
    var sawHeaders = false
    var body: ByteBuffer?
    var bodySize = 0
    var isComplete = false
    var hasResponded = false
    /// The stream closed (reset by the peer, or the connection went) before it was answered.
    var isClosed = false

    /// What the request asks for (``ProviderPortRoute``), once its head is complete.
    var route: ProviderPortRoute?
    /// A push's headers, once validated.
    var pushHeaders: PushHeaders?
    /// A push's apns-id: the provider's, or the one the gateway gives it when accepted.
    var apnsID: NotificationID?
    /// Broadcast and channel answers carry `apns-request-id` instead of `apns-id`.
    var requestID: NotificationID?
    /// The request's span while tracing is on (``Traces``): from the complete request to its answer.
    var span: (any Span)?

    init(id: HTTP2StreamID, port: ProviderPort, connection: ProviderPortConnection) {
        self.id = id
        self.port = port
        self.connection = connection
    }

    /// The request table of one provider connection: a stream made at each first HEADERS, the
    /// connection told how many are open.
    static func table(port: ProviderPort, connection: ProviderPortConnection) -> HTTP2StreamTable {
        HTTP2StreamTable(
            accept: { id in ProviderPortStream(id: id, port: port, connection: connection) },
            onStreamCreated: { connection.http2.streamCreated($0) }, onStreamClosed: { connection.http2.streamClosed($0) })
    }

    func streamClosed(reason: HTTP2ErrorCode?) { isClosed = true }

    /// A frame of this stream, from the table.
    func receive(_ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext) {
        switch payload {
        case .headers(let headers):
            if !sawHeaders {
                sawHeaders = true
                for (name, value, _) in headers.headers { head.record(name: name, value: value) }
            }
            if headers.endStream { requestComplete(context: context) }
        case .data(let frame):
            if case .byteBuffer(var buffer) = frame.data {
                bodySize += buffer.readableBytes
                if bodySize <= Self.maximumBodyKept {
                    if body == nil { body = buffer } else { body!.writeBuffer(&buffer) }
                }
            }
            if frame.endStream { requestComplete(context: context) }
        default:
            break
        }
    }

    func requestComplete(context: ChannelHandlerContext) {
        guard !isComplete else { return }
        isComplete = true
        if Traces.isEnabled { startSpan() }
        if connection.isDraining { return respond(context: context, APNsRejection(.shutdown)) }
        // Step 1: what the request asks for, from its head alone.
        let routed = ProviderPortRoute.route(head, body: body, role: port.role)
        if ProviderPortRoute.answersWithRequestID(routed, role: port.role) {
            requestID = head.requestID.flatMap(NotificationID.init(header:)) ?? NotificationID.random(using: &connection.ids)
        }
        switch routed {
        case .failure(let rejection):
            respond(context: context, rejection)
        case .success(let route):
            self.route = route
            if case .push(let target) = route { apnsID = target.apnsID }
            authorize(context: context)
        }
    }

    /// Steps 3 on, once the credential is known: what the route needs next.
    func proceed(team: String, certificate: PushCertificate?, context: ChannelHandlerContext) {
        switch route {
        case .query(let query)?: answer(query, team: team, context: context)
        case .broadcast?, .channel?: checkBroadcastOwner(team: team, certificate: certificate, context: context)
        case .push?:
            if let certificate { validateHeaders(for: certificate, context: context) } else { validateHeaders(team: team, context: context) }
        case nil: break
        }
    }

    // Step 2: the provider token, or the connection's client certificate.
    func authorize(context: ChannelHandlerContext) {
        switch connection.clientCertificate {
        case .none: break
        case .usable(let certificate): return authorize(certificate, context: context)
        case .unusable(let why): return respond(context: context, APNsRejection(.badCertificate, detail: why))
        }
        let now = port.clock.nowSeconds()
        let directory = port.directory
        switch connection.authorization.authorize(header: head.authorization, nowSeconds: now, key: directory.lookupKey) {
        case .rejected(let rejection):
            respond(context: context, rejection)
        case .needsKey(let keyID):
            wait(context: context, for: { try await directory.loadKey(keyID) }) { $0.authorize(context: context) }
        case .authorized(let claims, let isFirst):
            if isFirst { connection.raiseStreamLimit() }
            proceed(team: claims.teamID, certificate: nil, context: context)
        }
    }

    /// A certificate connection (reference §3, cases 34 and 35): `authorization` is ignored; the
    /// certificate must work in this environment (else 403 BadCertificateEnvironment and GOAWAY
    /// with that reason), be registered and not revoked, and list the topic; a request without
    /// `apns-topic` goes to a single-topic certificate's bundle id.
    func authorize(_ certificate: PushCertificate, context: ChannelHandlerContext) {
        guard certificate.works(in: port.environment) else {
            respond(context: context, APNsRejection(
                .badCertificateEnvironment, detail: "the certificate is for \(certificate.environments.map(\.rawValue).sorted().joined(separator: ", ")), this gateway is \(port.environment)"))
            connection.goAwayAndClose(reason: APNsReason.badCertificateEnvironment.rawValue)
            return
        }
        let directory = port.directory
        switch directory.lookupKey(certificate.credentialID) {
        case .unknown:
            let id = certificate.credentialID
            return wait(context: context, for: { try await directory.loadKey(id) }) { $0.authorize(certificate, context: context) }
        case .absent:
            return respond(context: context, APNsRejection(
                .badCertificate, detail: "certificate \(certificate.credentialID) is not registered or was revoked (herald keys list)"))
        case .found(let credential):
            guard credential.isCertificate, credential.teamID == certificate.teamID,
                  credential.publicKey.rawRepresentation == certificate.publicKey.rawRepresentation else {
                return respond(context: context, APNsRejection(.badCertificate, detail: "certificate \(certificate.credentialID) does not match its registration"))
            }
        }
        proceed(team: certificate.teamID, certificate: certificate, context: context)
    }

    /// A push on a certificate connection: its headers, and the certificate must list its topic.
    func validateHeaders(for certificate: PushCertificate, context: ChannelHandlerContext) {
        if head.topic == nil, let topic = certificate.defaultTopic { head.topic = topic }
        switch APNsRequestValidation.validateHeaders(head) {
        case .failure(let rejection): respond(context: context, rejection)
        case .success(let headers):
            pushHeaders = headers
            guard certificate.covers(topic: headers.topic, pushType: headers.pushType) else {
                return respond(context: context, APNsRejection(
                    .topicDisallowed, detail: "the certificate covers \(certificate.topics.joined(separator: ", ")), not \(headers.topic) for \(headers.pushType) pushes"))
            }
            validatePayload(context: context)
        }
    }

    // Steps 3 and 4: the notification headers, then the topic's owner.
    func validateHeaders(team: String, context: ChannelHandlerContext) {
        switch APNsRequestValidation.validateHeaders(head) {
        case .failure(let rejection): respond(context: context, rejection)
        case .success(let headers):
            pushHeaders = headers
            checkTopicOwner(team: team, context: context)
        }
    }

    func checkTopicOwner(team: String, context: ChannelHandlerContext) {
        guard let pushHeaders else { return }
        let directory = port.directory
        switch directory.teamOwns(team, topic: pushHeaders.bundleID) {
        case true?: validatePayload(context: context)
        case false?: respond(context: context, APNsRejection(.topicDisallowed))
        case nil:
            wait(context: context, for: { try await directory.loadTopics(ofTeam: team) }) { handler in
                switch directory.teamOwns(team, topic: pushHeaders.bundleID) {
                case true?: handler.validatePayload(context: context)
                default: handler.respond(context: context, APNsRejection(.topicDisallowed))
                }
            }
        }
    }

    // Steps 5 to 7: the body, the per-token rate, then the store.
    func validatePayload(context: ChannelHandlerContext) {
        guard case .push(let target)? = route, let pushHeaders else { return }
        let bytes = body.map { Array($0.readableBytesView) } ?? []
        if let rejection = APNsRequestValidation.validatePayload(bytes, bodySize: bodySize, pushType: pushHeaders.pushType) {
            return respond(context: context, rejection)
        }
        let now = port.clock.nowMilliseconds()
        if !port.limiter.allow(target.token, nowMilliseconds: now) {
            return respond(context: context, APNsRejection(.tooManyRequests))
        }
        if let fault = port.faults.take(topic: pushHeaders.bundleID) { return respond(context: context, fault) }
        let apnsID = self.apnsID ?? NotificationID.timeOrdered(atMilliseconds: now, using: &connection.ids)
        self.apnsID = apnsID
        var notification = StoredNotification(
            id: apnsID, token: target.token, bundleID: pushHeaders.bundleID, pushType: pushHeaders.pushType,
            priority: pushHeaders.priority, expiration: pushHeaders.expiration, collapseID: pushHeaders.collapseID,
            payload: bytes, receivedAtMilliseconds: now)
        // Traced: the delivery joins this request's trace; the commit is a span of its own.
        let intakeMetrics = port.metrics
        let commit = span.map { span in
            notification.trace = Traces.carrier(of: span.context)
            return InstrumentationSystem.tracer.startSpan("intake.commit", context: span.context)
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        // Measured for the metrics only (a duration, not a time the logic reads).
        let submitted = ContinuousClock.now
        port.intake.submit(notification, on: context.eventLoop).whenComplete { result in
            commit?.end()
            intakeMetrics.intakeAnswerSeconds.record(ContinuousClock.now - submitted)
            let (handler, context) = loopBound.value
            switch result {
            case .success(.stored), .success(.discarded): handler.respondOK(context: context)
            case .success(.rejected(let refusal)): handler.respond(context: context, APNsRejection(refusal))
            case .failure(let unavailable as IntakeUnavailable): handler.respond(context: context, APNsRejection(unavailable))
            case .failure: handler.respond(context: context, APNsRejection(.internalServerError))
            }
        }
    }

    // MARK: traces

    /// The request's span, in the trace its `traceparent` names (a new one without).
    func startSpan() {
        let parent = Traces.context(from: Traces.Carrier(traceparent: head.traceparent, tracestate: head.tracestate))
        let span = InstrumentationSystem.tracer.startSpan("apns.request", context: parent, ofKind: .server)
        if let topic = head.topic { span.attributes["apns.topic"] = topic }
        if let pushType = head.pushType { span.attributes["apns.push_type"] = pushType }
        self.span = span
    }

    /// Ends the request's span with its answer.
    func endSpan(status: Int, reason: APNsReason? = nil) {
        guard let span else { return }
        self.span = nil
        span.attributes["http.response.status_code"] = status
        if let apnsID { span.attributes["apns.id"] = apnsID.description }
        if let reason { span.setStatus(SpanStatus(code: .error, message: reason.rawValue)) }
        span.end()
    }

    // MARK: answers

    /// A push's device token, for the live feed.
    var pushToken: DeviceToken? {
        if case .push(let target)? = route { return target.token }
        return nil
    }

    func responseHeaders(status: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: status)
        if let requestID {
            headers.add(name: "apns-request-id", value: requestID.description, indexing: .nonIndexable)
        } else {
            headers.add(name: "apns-id", value: (apnsID ?? NotificationID.random(using: &connection.ids)).description, indexing: .nonIndexable)
        }
        if port.sendsUniqueID {
            headers.add(name: "apns-unique-id", value: NotificationID.random(using: &connection.ids).description, indexing: .nonIndexable)
        }
        return headers
    }

    /// Writes a frame of this stream on the connection.
    func send(_ payload: HTTP2Frame.FramePayload, context: ChannelHandlerContext, flush: Bool) {
        let frame = NIOAny(HTTP2Frame(streamID: id, payload: payload))
        if flush { context.writeAndFlush(frame, promise: nil) } else { context.write(frame, promise: nil) }
    }

    func respondOK(context: ChannelHandlerContext) {
        guard !hasResponded, !isClosed else { return }
        hasResponded = true
        port.metrics.acceptedPushes.increment()
        port.metrics.recordResponse(status: 200, reason: nil)
        if span != nil { endSpan(status: 200) }
        let headers = responseHeaders(status: "200")
        send(.headers(.init(headers: headers, endStream: true)), context: context, flush: true)
    }

    /// A success with its status, extra headers and JSON body: broadcasts, channel requests and
    /// Herald's read endpoints.
    func respond(context: ChannelHandlerContext, status: Int, headers extra: [(String, String)], body: [UInt8]?) {
        guard !hasResponded, !isClosed else { return }
        hasResponded = true
        port.metrics.recordResponse(status: status, reason: nil)
        if span != nil { endSpan(status: status) }
        var headers = responseHeaders(status: String(status))
        for (name, value) in extra { headers.add(name: name, value: value, indexing: .nonIndexable) }
        guard let body else {
            return send(.headers(.init(headers: headers, endStream: true)), context: context, flush: true)
        }
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(body.count))
        var buffer = context.channel.allocator.buffer(capacity: body.count)
        buffer.writeBytes(body)
        send(.headers(.init(headers: headers)), context: context, flush: false)
        send(.data(.init(data: .byteBuffer(buffer), endStream: true)), context: context, flush: true)
    }

    func respondJSON(context: ChannelHandlerContext, _ body: [UInt8]) {
        respond(context: context, status: 200, headers: [], body: body)
    }

    func respond(context: ChannelHandlerContext, _ rejection: APNsRejection) {
        guard !hasResponded, !isClosed else { return }
        hasResponded = true
        port.metrics.recordResponse(status: rejection.status, reason: rejection.reason)
        // The metadata is built only when the line is written (debug): the trace id with it.
        port.logger.debug("provider request refused", metadata: [
            "status": "\(rejection.status)", "reason": "\(rejection.reason.rawValue)", "why": "\(rejection.detail ?? "-")",
            "trace_id": "\(span.flatMap { Traces.carrier(of: $0.context)?.traceID } ?? "-")",
        ])
        if span != nil { endSpan(status: rejection.status, reason: rejection.reason) }
        port.feed.publish {
            DeliveryFeed.Event(
                event: .refused, at: port.clock.nowMilliseconds(), apnsId: apnsID?.description, topic: pushHeaders?.bundleID ?? head.topic,
                token: pushToken?.hex, status: rejection.status, reason: rejection.reason.rawValue, why: rejection.detail)
        }
        var headers = responseHeaders(status: String(rejection.status))
        headers.add(name: "content-type", value: "application/json")
        let json = rejection.jsonBody
        var buffer = context.channel.allocator.buffer(capacity: json.utf8.count)
        buffer.writeString(json)
        headers.add(name: "content-length", value: String(buffer.readableBytes))
        send(.headers(.init(headers: headers)), context: context, flush: false)
        send(.data(.init(data: .byteBuffer(buffer), endStream: true)), context: context, flush: true)
    }
}
