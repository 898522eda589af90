import Foundation
import HeraldCore
import HeraldStore
import NIOCore

/// Broadcast push (reference §1, "Broadcast"; `docs/broadcasts.md`): `POST
/// /4/broadcasts/apps/<bundle-id>` with `apns-channel-id` on the provider port, and the channel
/// management API (`/1/apps/<bundle-id>/channels`, `/1/apps/<bundle-id>/all-channels`) on a port
/// of its own, as Apple keeps it on `api-manage-broadcast…:2195/2196`. Both are parsed here; the
/// provider port's streams authenticate them like pushes.
enum BroadcastRequest {
    static let pathPrefix = "/4/broadcasts/apps/"
    /// The largest broadcast payload (5 KB, as APNSwift's test server takes; reference §4).
    static let maximumPayloadSize = 5_120

    /// The bundle id of a broadcast request's path, or `nil` when the path is not a broadcast's.
    static func bundleID(fromPath path: String?) -> String? {
        guard let path, path.hasPrefix(pathPrefix) else { return nil }
        let bundle = path.dropFirst(pathPrefix.count).split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return DeviceProtocol.isValidTopic(bundle) ? bundle : nil
    }

    /// A broadcast's headers and body, validated in this order: channel id, push type, topic,
    /// request id, priority, expiration, payload.
    struct Validated {
        var channel: BroadcastChannelID
        var requestID: APNsID?
        var priority: Priority
        var expiration: Expiration
        var payload: [UInt8]
    }

    static func validate(_ head: ProviderRequestHead, bundleID: String, body: [UInt8], bodySize: Int) -> Result<Validated, APNsRejection> {
        guard let channelText = head.channelID, !channelText.isEmpty else { return .failure(APNsRejection(.missingChannelId)) }
        guard let channel = BroadcastChannelID(channelText) else { return .failure(APNsRejection(.badChannelId)) }
        guard let type = head.pushType, !type.isEmpty else { return .failure(APNsRejection(.missingPushType)) }
        // Apple's text writes it "LiveActivity"; the device endpoint's spelling is taken too.
        guard type.lowercased() == PushType.liveactivity.rawValue else {
            return .failure(APNsRejection(.invalidPushType, detail: "broadcasts carry Live Activity updates only (apns-push-type: liveactivity)"))
        }
        if let topic = head.topic, topic != bundleID, topic != bundleID + PushType.liveactivity.topicSuffix {
            return .failure(APNsRejection(.topicMismatch, detail: "apns-topic \(topic) is not the path's app \(bundleID)"))
        }
        var requestID: APNsID?
        if let text = head.requestID {
            guard let id = APNsID(header: text) else { return .failure(APNsRejection(.badMessageId, detail: "apns-request-id is not a UUID")) }
            requestID = id
        }
        var priority = Priority.immediate
        if let text = head.priority {
            guard let parsed = Priority(header: text) else { return .failure(APNsRejection(.badPriority)) }
            priority = parsed
        }
        var expiration = Expiration.unspecified
        if let text = head.expiration {
            guard let parsed = Expiration(header: text) else { return .failure(APNsRejection(.badExpirationDate)) }
            expiration = parsed
        }
        if bodySize == 0 { return .failure(APNsRejection(.payloadEmpty)) }
        if bodySize > maximumPayloadSize { return .failure(APNsRejection(.payloadTooLarge)) }
        guard (try? JSONReader.parseObject(body, limits: .payload)) != nil else {
            return .failure(APNsRejection(.badRequestPayload, detail: "the payload is not a JSON object"))
        }
        return .success(Validated(channel: channel, requestID: requestID, priority: priority, expiration: expiration, payload: body))
    }
}

/// A channel management request (Apple's channel management API).
enum ChannelRequest: Sendable, Hashable {
    /// `POST /1/apps/<bundle-id>/channels` with `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`.
    case create(bundleID: String, storagePolicy: Int)
    /// `GET /1/apps/<bundle-id>/channels` with `apns-channel-id`.
    case read(bundleID: String, channel: BroadcastChannelID)
    /// `DELETE /1/apps/<bundle-id>/channels` with `apns-channel-id`.
    case delete(bundleID: String, channel: BroadcastChannelID)
    /// `GET /1/apps/<bundle-id>/all-channels`.
    case list(bundleID: String)

    var bundleID: String {
        switch self {
        case .create(let b, _), .read(let b, _), .delete(let b, _), .list(let b): b
        }
    }

    static let pathPrefix = "/1/apps/"

    /// Parses the method, path and headers; the body is read for `create` only.
    static func parse(_ head: ProviderRequestHead, body: [UInt8]) -> Result<ChannelRequest, APNsRejection> {
        if head.hasDuplicateHeaders { return .failure(APNsRejection(.duplicateHeaders)) }
        guard let rawPath = head.path, rawPath.hasPrefix(pathPrefix) else { return .failure(APNsRejection(.badPath)) }
        let path = rawPath.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? rawPath
        let parts = path.dropFirst(pathPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, DeviceProtocol.isValidTopic(String(parts[0])) else { return .failure(APNsRejection(.badPath)) }
        let bundleID = String(parts[0])
        if let topic = head.topic, topic != bundleID, topic != bundleID + PushType.liveactivity.topicSuffix {
            return .failure(APNsRejection(.topicMismatch, detail: "apns-topic \(topic) is not the path's app \(bundleID)"))
        }
        func channel() -> Result<BroadcastChannelID, APNsRejection> {
            guard let text = head.channelID, !text.isEmpty else { return .failure(APNsRejection(.missingChannelId)) }
            guard let id = BroadcastChannelID(text) else { return .failure(APNsRejection(.badChannelId)) }
            return .success(id)
        }
        switch (parts[1], head.method) {
        case ("all-channels", "GET"): return .success(.list(bundleID: bundleID))
        case ("channels", "GET"): return channel().map { .read(bundleID: bundleID, channel: $0) }
        case ("channels", "DELETE"): return channel().map { .delete(bundleID: bundleID, channel: $0) }
        case ("channels", "POST"):
            guard let object = try? JSONReader.parseObject(body, limits: .payload) else {
                return .failure(APNsRejection(.badRequestParams, detail: "the body must be a JSON object with message-storage-policy and push-type"))
            }
            guard let policy = object["message-storage-policy"]?.integer(in: 0...1) else {
                return .failure(APNsRejection(.badRequestParams, detail: "message-storage-policy must be 0 (no storage) or 1 (the most recent message)"))
            }
            guard let type = object["push-type"]?.stringValue, type.lowercased() == PushType.liveactivity.rawValue else {
                return .failure(APNsRejection(.badRequestParams, detail: "push-type must be LiveActivity"))
            }
            return .success(.create(bundleID: bundleID, storagePolicy: policy))
        case ("channels", _), ("all-channels", _): return .failure(APNsRejection(.methodNotAllowed))
        default: return .failure(APNsRejection(.badPath))
        }
    }

    /// The answer: status, extra headers and JSON body (`nil` for none).
    struct Answer {
        var status: Int
        var headers: [(String, String)] = []
        var body: [UInt8]?
    }

    func run(store: any HeraldStore, environment: APNsEnvironment, nowMilliseconds: Int64) async throws -> Result<Answer, APNsRejection> {
        switch self {
        case .create(let bundleID, let policy):
            let id = BroadcastChannelID.random()
            do {
                try await store.createChannel(ChannelRecord(
                    bundleID: bundleID, channelID: id, environment: environment, storagePolicy: policy, createdAtMilliseconds: nowMilliseconds))
            } catch let error as StoreError where error.code == .tooManyChannels {
                return .failure(APNsRejection(.cannotCreateChannelConfig, detail: error.message))
            }
            return .success(Answer(status: 201, headers: [("apns-channel-id", id.value)]))
        case .read(let bundleID, let id):
            guard let channel = try await store.channel(bundleID: bundleID, id: id, environment: environment) else {
                return .failure(APNsRejection(.channelNotRegistered))
            }
            let body = #"{"message-storage-policy":\#(channel.storagePolicy),"push-type":"LiveActivity"}"#
            return .success(Answer(status: 200, body: Array(body.utf8)))
        case .delete(let bundleID, let id):
            guard try await store.deleteChannel(bundleID: bundleID, id: id, environment: environment, atMilliseconds: nowMilliseconds) else {
                return .failure(APNsRejection(.channelNotRegistered))
            }
            return .success(Answer(status: 204))
        case .list(let bundleID):
            let channels = try await store.channels(bundleID: bundleID, environment: environment)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let body = try encoder.encode(["channels": channels.map(\.channelID.value)])
            return .success(Answer(status: 200, body: Array(body)))
        }
    }
}

/// Sends one broadcast: every active subscription to the channel gets a stored notification
/// with the broadcast's apns-id, through the intake (so each is durable before the 200, routed
/// to its device on any node, acked, retried and receipted like any push). The channel's
/// storage policy decides what waits for an offline device: policy 0 stores nothing (as
/// `apns-expiration: 0`), policy 1 the most recent broadcast (each subscription is a token, and
/// the store keeps the newest per token).
struct Broadcaster: Sendable {
    let store: any HeraldStore
    let intake: NotificationIntake
    /// Subscriptions read and submitted at once.
    static let pageSize = 5_000

    struct Outcome: Sendable {
        var subscribers = 0
        var stored = 0
    }

    func send(
        _ broadcast: BroadcastRequest.Validated, channel: ChannelRecord, apnsID: APNsID, nowMilliseconds: Int64, on eventLoop: EventLoop
    ) async throws -> Outcome {
        let scope = TokenScope.channelSubscriptions(bundleID: channel.bundleID, channel: channel.channelID.value)
        let expiration = channel.storagePolicy == 0 ? Expiration.immediately : broadcast.expiration
        var outcome = Outcome()
        var after: DeviceToken?
        while true {
            let page = try await store.tokens(TokenFilter(bundleID: scope, activeOnly: true), after: after, limit: Self.pageSize)
            let submitted = page.filter { $0.environment == channel.environment }.map { subscription in
                intake.submit(StoredNotification(
                    apnsID: apnsID, token: subscription.token, bundleID: channel.bundleID, pushType: .liveactivity,
                    priority: broadcast.priority, expiration: expiration, collapseID: nil, payload: broadcast.payload,
                    receivedAtMilliseconds: nowMilliseconds), on: eventLoop)
            }
            outcome.subscribers += submitted.count
            for future in submitted {
                if case .stored = try await future.get() { outcome.stored += 1 }
            }
            guard page.count == Self.pageSize, let last = page.last?.token else { break }
            after = last
        }
        return outcome
    }
}
