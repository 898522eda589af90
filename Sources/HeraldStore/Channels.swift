import HeraldCore

/// A broadcast channel of an app (reference §1, "Broadcast"): created and deleted through the
/// channel management port, subscribed to by devices, broadcast to on the provider port.
public struct ChannelRecord: Sendable, Hashable {
    public var bundleID: String
    public var channelID: BroadcastChannelID
    public var environment: PushEnvironment
    /// `message-storage-policy`: 0 stores nothing (a broadcast reaches the subscribers connected
    /// at that moment), 1 keeps the most recent broadcast for each subscriber that is offline.
    public var storagePolicy: Int
    public var createdAtMilliseconds: Int64

    public init(bundleID: String, channelID: BroadcastChannelID, environment: PushEnvironment, storagePolicy: Int, createdAtMilliseconds: Int64) {
        self.bundleID = bundleID
        self.channelID = channelID
        self.environment = environment
        self.storagePolicy = storagePolicy
        self.createdAtMilliseconds = createdAtMilliseconds
    }

    /// The channels an app may have in one environment at once (APNs's limit).
    public static let maximumPerApp = 10_000
}

/// Broadcast channels: what the channel management API reads and writes. A device's
/// subscription is a token whose scope is the channel (``TokenScope/Kind/channel(_:)``), issued
/// and unregistered like any other, so broadcasts ride on stored notifications.
public protocol ChannelStore: Sendable {
    /// Creates a channel; an app that already has ``ChannelRecord/maximumPerApp`` channels in the
    /// environment gets none (``StoreError/Code/tooManyChannels``).
    func createChannel(_ channel: ChannelRecord) async throws
    /// An app's channels in an environment, oldest first.
    func channels(bundleID: String, environment: PushEnvironment) async throws -> [ChannelRecord]
    func channel(bundleID: String, id: BroadcastChannelID, environment: PushEnvironment) async throws -> ChannelRecord?
    /// Deletes a channel: it takes no more broadcasts and no new subscriptions (broadcasts already
    /// accepted still reach their subscribers). Returns `false` for an unknown channel.
    func deleteChannel(bundleID: String, id: BroadcastChannelID, environment: PushEnvironment, atMilliseconds: Int64) async throws -> Bool
}
