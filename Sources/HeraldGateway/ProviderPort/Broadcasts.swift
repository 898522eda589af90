import Foundation
import HeraldCore
import HeraldStore
import NIOCore

extension ChannelRequest {
    /// The answer: status, extra headers and JSON body (`nil` for none).
    struct Answer {
        var status: Int
        var headers: [(String, String)] = []
        var body: [UInt8]?
    }

    func run(store: any GatewayStore, environment: PushEnvironment, nowMilliseconds: Int64) async throws -> Result<Answer, APNsRejection> {
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
    let store: any GatewayStore
    let intake: NotificationIntake
    /// Subscriptions read and submitted at once.
    static let pageSize = 5_000

    struct Outcome: Sendable {
        var subscribers = 0
        var stored = 0
    }

    func send(
        _ broadcast: BroadcastRequest.Validated, channel: ChannelRecord, apnsID: NotificationID, nowMilliseconds: Int64, on eventLoop: EventLoop
    ) async throws -> Outcome {
        let scope = TokenScope.channelSubscriptions(bundleID: channel.bundleID, channel: channel.channelID.value)
        let expiration = channel.storagePolicy == 0 ? Expiration.immediately : broadcast.expiration
        var outcome = Outcome()
        var after: DeviceToken?
        while true {
            let page = try await store.tokens(TokenFilter(bundleID: scope, activeOnly: true), after: after, limit: Self.pageSize)
            let submitted = page.filter { $0.environment == channel.environment }.map { subscription in
                intake.submit(StoredNotification(
                    id: apnsID, token: subscription.token, bundleID: channel.bundleID, pushType: .liveactivity,
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
