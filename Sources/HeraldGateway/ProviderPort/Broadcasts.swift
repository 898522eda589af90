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
/// Sends one broadcast: stored once (``StoredBroadcast``: one row, whatever the number of
/// subscribers) before the 200, then handed to the channel's subscribers connected to this node
/// (the registry's subscription index, no store read) and, in a cluster, hinted to every other
/// node once. A subscriber that is not connected gets it when it connects, if it is still its
/// channel's newest and not past its time: a channel with `message-storage-policy` 0 stores its
/// broadcasts with `apns-expiration: 0`, so only the subscribers connected now get them.
struct Broadcaster: Sendable {
    let store: any GatewayStore
    let policy: StorePolicy
    let registry: DeviceRegistry
    let cluster: ClusterNode?
    /// The bound on the store's commit (``GatewayLimits/storeTimeout``): past it, 503.
    let storeTimeout: TimeAmount
    let feed: DeliveryFeed

    struct Outcome: Sendable {
        var broadcast: StoredBroadcast
        /// Subscribers connected to this node it was handed to.
        var handedHere: Int
    }

    func send(
        _ broadcast: BroadcastRequest.Validated, channel: ChannelRecord, apnsID: NotificationID, nowMilliseconds: Int64
    ) async throws -> Outcome {
        let accepted = StoredBroadcast(
            bundleID: channel.bundleID, channel: channel.channelID, environment: channel.environment, id: apnsID,
            priority: broadcast.priority, expiration: channel.storagePolicy == 0 ? .immediately : broadcast.expiration,
            payload: broadcast.payload, receivedAtMilliseconds: nowMilliseconds)
        let store = self.store, policy = self.policy
        let stored: StoredBroadcast
        do {
            stored = try await withDeadline(storeTimeout) { try await store.storeBroadcast(accepted, policy: policy) }
        } catch is DeadlineExceeded {
            throw APNsRejection(.serviceUnavailable, detail: "the store did not commit the broadcast in time; retry")
        }
        feed.publish {
            DeliveryFeed.Event(event: .accepted, at: nowMilliseconds, apnsId: apnsID.description, topic: channel.bundleID, outcome: "broadcast")
        }
        let handed = registry.deliver(stored)
        cluster?.forward(stored)
        return Outcome(broadcast: stored, handedHere: handed)
    }
}
