import HeraldCore
import HeraldStore
import HeraldNIO
import NIOCore
import NIOHPACK
import NIOHTTP2
import Tracing

extension ProviderPortStream {
    // MARK: broadcasts and channels

    /// The app of a broadcast or channel request must be the credential's: a team's topic, or
    /// the certificate's app.
    func checkBroadcastOwner(team: String, certificate: PushCertificate?, context: ChannelHandlerContext) {
        guard let bundleID = route?.appOfChannelRequest else { return }
        if let certificate {
            guard certificate.covers(topic: bundleID + PushType.liveactivity.topicSuffix, pushType: .liveactivity) else {
                return respond(context: context, APNsRejection(.topicDisallowed, detail: "the certificate is for \(certificate.bundleID), not \(bundleID)"))
            }
            return broadcastOrChannel(context: context)
        }
        let directory = port.directory
        switch directory.teamOwns(team, topic: bundleID) {
        case true?: broadcastOrChannel(context: context)
        case false?: respond(context: context, APNsRejection(.topicDisallowed))
        case nil:
            wait(context: context, for: { try await directory.loadTopics(ofTeam: team) }) { handler in
                switch directory.teamOwns(team, topic: bundleID) {
                case true?: handler.broadcastOrChannel(context: context)
                default: handler.respond(context: context, APNsRejection(.topicDisallowed))
                }
            }
        }
    }

    func broadcastOrChannel(context: ChannelHandlerContext) {
        let store = port.store
        let environment = port.environment
        let now = port.clock.nowMilliseconds()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let logger = port.logger
        if case .channel(let channelRequest)? = route {
            context.eventLoop.makeFutureWithTask {
                try await channelRequest.run(store: store, environment: environment, nowMilliseconds: now)
            }.whenComplete { result in
                let (handler, context) = loopBound.value
                switch result {
                case .success(.success(let answer)): handler.respond(context: context, status: answer.status, headers: answer.headers, body: answer.body)
                case .success(.failure(let rejection)): handler.respond(context: context, rejection)
                case .failure(let error):
                    logger.error("channel request failed", metadata: ["error": "\(error)"])
                    handler.respond(context: context, APNsRejection(.internalServerError))
                }
            }
            return
        }
        guard case .broadcast(let bundleID)? = route, let requestID else { return }
        guard let broadcaster = port.broadcaster else {
            return respond(context: context, APNsRejection(.featureNotEnabled, detail: "this gateway has no channel port (herald gateway --channel-port), so no channels and no broadcasts"))
        }
        let bytes = body.map { Array($0.readableBytesView) } ?? []
        let validated: BroadcastRequest.Validated
        switch BroadcastRequest.validate(head, bundleID: bundleID, body: bytes, bodySize: bodySize) {
        case .failure(let rejection): return respond(context: context, rejection)
        case .success(let v): validated = v
        }
        context.eventLoop.makeFutureWithTask { () async throws -> Result<Broadcaster.Outcome, APNsRejection> in
            guard let channel = try await store.channel(bundleID: bundleID, id: validated.channel, environment: environment) else {
                return .failure(APNsRejection(.channelNotRegistered))
            }
            return .success(try await broadcaster.send(validated, channel: channel, apnsID: requestID, nowMilliseconds: now))
        }.whenComplete { result in
            let (handler, context) = loopBound.value
            switch result {
            case .success(.success(let outcome)):
                logger.debug("broadcast stored", metadata: [
                    "apns-request-id": "\(requestID)", "seq": "\(outcome.broadcast.seq)", "handed_here": "\(outcome.handedHere)",
                ])
                handler.respond(context: context, status: 200, headers: [], body: nil)
            case .success(.failure(let rejection)): handler.respond(context: context, rejection)
            case .failure(let error as APNsRejection): handler.respond(context: context, error)
            case .failure(let error):
                logger.error("broadcast failed", metadata: ["error": "\(error)"])
                handler.respond(context: context, APNsRejection(.internalServerError))
            }
        }
    }

    /// Answers a receipt or feedback query (see `ProviderPortQuery`).
    func answer(_ query: ProviderPortQuery, team: String, context: ChannelHandlerContext) {
        let store = port.store
        let environment = port.environment
        let inactivity = port.inactivityPeriodMilliseconds
        let now = port.clock.nowMilliseconds()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let logger = port.logger
        context.eventLoop.makeFutureWithTask { () async throws -> Result<[UInt8], APNsRejection> in
            try await query.run(store: store, team: team, environment: environment, nowMilliseconds: now, inactivityMilliseconds: inactivity)
        }.whenComplete { result in
            let (handler, context) = loopBound.value
            switch result {
            case .success(.success(let body)): handler.respondJSON(context: context, body)
            case .success(.failure(let rejection)): handler.respond(context: context, rejection)
            case .failure(let error):
                logger.error("provider query failed", metadata: ["error": "\(error)"])
                handler.respond(context: context, APNsRejection(.internalServerError))
            }
        }
    }

    /// Runs an async store lookup off the event loop, then continues on it.
    func wait(
        context: ChannelHandlerContext, for work: @escaping @Sendable () async throws -> Void,
        then next: @escaping (ProviderPortStream) -> Void
    ) {
        let loopBound = NIOLoopBound((self, context, next), eventLoop: context.eventLoop)
        let logger = port.logger
        let bound = port.limits.storeTimeout
        context.eventLoop.makeFutureWithTask { try await withDeadline(bound, work) }.whenComplete { result in
            let (handler, context, next) = loopBound.value
            switch result {
            case .success: next(handler)
            case .failure(let error as DeadlineExceeded):
                logger.error("store lookup timed out", metadata: ["error": "\(error)"])
                handler.respond(context: context, APNsRejection(.serviceUnavailable))
            case .failure(let error):
                logger.error("store lookup failed", metadata: ["error": "\(error)"])
                handler.respond(context: context, APNsRejection(.internalServerError))
            }
        }
    }
}
