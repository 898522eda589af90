import Foundation
import HeraldCore
import HeraldStore

/// The one read of a notification's receipt, behind every endpoint that serves one: the APNs
/// port's `GET /3/notifications/<id>` (the caller's team's topics only), the Web Push port's
/// `GET /m/<id>` (Web Push messages only: an APNs notification's id is no capability there), the
/// admin port's `/v1/receipts/<id>` and `herald receipts show` (everything). Each endpoint says
/// "not found" in its own protocol when the answer is `nil`.
public enum ReceiptReader {
    /// Who reads, and so which deliveries of the notification they may see.
    public enum Reader: Sendable {
        /// The operator: every delivery.
        case `operator`
        /// A provider's team: deliveries for the team's topics.
        case team(topics: Set<String>)
        /// A Web Push application server holding the message's URL: Web Push deliveries.
        case webPush
    }

    /// The deliveries of `id` the reader may see, oldest first; empty when there are none. A
    /// broadcast's are one per subscription, read from the subscriptions at `nowMilliseconds`
    /// (``StoredBroadcast/receipt(subscription:ackedSeq:ackedAtMilliseconds:newest:discardAtMilliseconds:nowMilliseconds:)``).
    public static func receipts(
        of id: NotificationID, for reader: Reader, in store: any GatewayStore, nowMilliseconds: Int64
    ) async throws -> [Receipt] {
        let all = try await store.receipts(of: id) + store.broadcastReceipts(of: id, nowMilliseconds: nowMilliseconds)
        switch reader {
        case .operator: return all
        case .team(let topics): return all.filter { topics.contains($0.bundleID) }
        case .webPush: return all.filter { $0.pushType == .webpush }
        }
    }

    /// The receipt `id`'s reader may see, as JSON (``NotificationReceipt``, keys sorted); `nil`
    /// when there is none.
    public static func read(
        _ id: NotificationID, for reader: Reader, in store: any GatewayStore, nowMilliseconds: Int64
    ) async throws -> [UInt8]? {
        let receipts = try await receipts(of: id, for: reader, in: store, nowMilliseconds: nowMilliseconds)
        guard !receipts.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(NotificationReceipt(id: id, receipts: receipts)))
    }
}

extension NotificationReceipt {
    /// The receipt of every delivery of one notification, with how many are in each state.
    init(id: NotificationID, receipts: [Receipt]) {
        self.init(apnsID: id.description, deliveries: receipts.map { receipt in
            Delivery(token: receipt.token.description, topic: receipt.bundleID,
                     status: (receipt.events.last?.status ?? .accepted).rawValue,
                     events: receipt.events.map { .init(status: $0.status.rawValue, timestamp: $0.atMilliseconds) })
        })
    }
}
