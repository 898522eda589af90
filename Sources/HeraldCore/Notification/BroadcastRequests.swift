import Foundation

/// Broadcast push (reference §1, "Broadcast"; `docs/broadcasts.md`): `POST
/// /4/broadcasts/apps/<bundle-id>` with `apns-channel-id` on the provider port, and the channel
/// management API (`/1/apps/<bundle-id>/channels`, `/1/apps/<bundle-id>/all-channels`) on a port
/// of its own, as Apple keeps it on `api-manage-broadcast…:2195/2196`. Both are parsed here, with
/// no I/O (the fuzz target `broadcast-request` feeds them); the gateway's provider port
/// authenticates them like pushes and runs them.
public enum BroadcastRequest {
    public static let pathPrefix = "/4/broadcasts/apps/"
    /// The largest broadcast payload (5 KB, as APNSwift's test server takes; reference §4).
    public static let maximumPayloadSize = 5_120

    /// The bundle id of a broadcast request's path, or `nil` when the path is not a broadcast's.
    public static func bundleID(fromPath path: String?) -> String? {
        guard let path, path.hasPrefix(pathPrefix) else { return nil }
        let bundle = String(QueryString.path(of: path).dropFirst(pathPrefix.count))
        return DeviceProtocol.isValidTopic(bundle) ? bundle : nil
    }

    /// A broadcast's headers and body, validated in this order: channel id, push type, topic,
    /// request id, priority, expiration, payload.
    public struct Validated: Sendable {
        public var channel: BroadcastChannelID
        public var requestID: NotificationID?
        public var priority: Priority
        public var expiration: Expiration
        public var payload: [UInt8]
    }

    public static func validate(_ head: APNsRequestHead, bundleID: String, body: [UInt8], bodySize: Int) -> Result<Validated, APNsRejection> {
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
        var requestID: NotificationID?
        if let text = head.requestID {
            guard let id = NotificationID(header: text) else { return .failure(APNsRejection(.badMessageId, detail: "apns-request-id is not a UUID")) }
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
public enum ChannelRequest: Sendable, Hashable {
    /// `POST /1/apps/<bundle-id>/channels` with `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`.
    case create(bundleID: String, storagePolicy: Int)
    /// `GET /1/apps/<bundle-id>/channels` with `apns-channel-id`.
    case read(bundleID: String, channel: BroadcastChannelID)
    /// `DELETE /1/apps/<bundle-id>/channels` with `apns-channel-id`.
    case delete(bundleID: String, channel: BroadcastChannelID)
    /// `GET /1/apps/<bundle-id>/all-channels`.
    case list(bundleID: String)

    public var bundleID: String {
        switch self {
        case .create(let b, _), .read(let b, _), .delete(let b, _), .list(let b): b
        }
    }

    public static let pathPrefix = "/1/apps/"

    /// Parses the method, path and headers; the body is read for `create` only.
    public static func parse(_ head: APNsRequestHead, body: [UInt8]) -> Result<ChannelRequest, APNsRejection> {
        if head.hasDuplicateHeaders { return .failure(APNsRejection(.duplicateHeaders)) }
        guard let rawPath = head.path, rawPath.hasPrefix(pathPrefix) else { return .failure(APNsRejection(.badPath)) }
        let path = QueryString.path(of: rawPath)
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
}
