/// A notification's receipt, as `GET /3/notifications/<apns-id>` answers it (and the admin
/// port's `/v1/receipts/<apns-id>`): its status on each device it went to, with the history.
/// The gateway writes it and ``APNsClient`` reads it: one type on both sides of the wire.
public struct NotificationReceipt: Sendable, Hashable, Codable {
    public struct Delivery: Sendable, Hashable, Codable {
        public struct Event: Sendable, Hashable, Codable {
            /// accepted, stored, delivered, acked, expired, replaced or dropped.
            public var status: String
            /// Milliseconds since 1970.
            public var timestamp: Int64
            public init(status: String, timestamp: Int64) { (self.status, self.timestamp) = (status, timestamp) }
        }
        public var token: String
        public var topic: String
        /// The latest status.
        public var status: String
        public var events: [Event]
        public init(token: String, topic: String, status: String, events: [Event]) {
            (self.token, self.topic, self.status, self.events) = (token, topic, status, events)
        }
    }
    public var apnsID: String
    /// How many deliveries are in each latest status (a broadcast has one delivery per subscriber).
    public var counts: [String: Int]
    public var deliveries: [Delivery]

    public init(apnsID: String, deliveries: [Delivery]) {
        self.apnsID = apnsID
        self.deliveries = deliveries
        var counts: [String: Int] = [:]
        for delivery in deliveries { counts[delivery.status, default: 0] += 1 }
        self.counts = counts
    }

    enum CodingKeys: String, CodingKey {
        case apnsID = "apns-id"
        case counts, deliveries
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        apnsID = try c.decode(String.self, forKey: .apnsID)
        deliveries = try c.decode([Delivery].self, forKey: .deliveries)
        // A server that does not count (an older gateway) still gives the deliveries to count.
        counts = try c.decodeIfPresent([String: Int].self, forKey: .counts)
            ?? Self(apnsID: apnsID, deliveries: deliveries).counts
    }
}

/// One dead token of a feedback list (`GET /3/feedback/<topic>`).
public struct FeedbackListItem: Sendable, Hashable, Codable {
    public var token: String
    /// When the gateway learned the token is dead (milliseconds since 1970).
    public var timestamp: Int64
    public init(token: String, timestamp: Int64) { (self.token, self.timestamp) = (token, timestamp) }
}
