import Foundation
import HeraldCore
import HeraldStore

/// Herald's read endpoints on the provider port, beyond APNs (see `docs/provider-api.md`):
///
/// - `GET /3/notifications/<apns-id>`: the receipt (status history) of a notification the
///   caller's team sent;
/// - `GET /3/feedback/<topic>`: the topic's feedback list (dead tokens), read and cleared.
///
/// Both are authenticated with the same provider tokens as pushes.
enum ProviderPortQuery: Sendable, Hashable {
    case receipt(NotificationID)
    case feedback(topic: String)

    static let receiptPrefix = "/3/notifications/"
    static let feedbackPrefix = "/3/feedback/"

    static func parse(path rawPath: String) -> Result<ProviderPortQuery, APNsRejection> {
        let path = QueryString.path(of: rawPath)
        if path.hasPrefix(receiptPrefix) {
            guard let id = NotificationID(header: String(path.dropFirst(receiptPrefix.count))) else {
                return .failure(APNsRejection(.badMessageId))
            }
            return .success(.receipt(id))
        }
        if path.hasPrefix(feedbackPrefix) {
            let topic = String(path.dropFirst(feedbackPrefix.count))
            guard DeviceProtocol.isValidTopic(topic) else { return .failure(APNsRejection(.badTopic)) }
            return .success(.feedback(topic: topic))
        }
        // A GET anywhere else (including /3/device/…) is the wrong method for a push.
        return .failure(APNsRejection(path.hasPrefix(APNsRequestValidation.devicePathPrefix) ? .methodNotAllowed : .badPath))
    }

    /// The JSON answer, or the rejection.
    func run(
        store: any GatewayStore, team: String, environment: PushEnvironment, nowMilliseconds: Int64, inactivityMilliseconds: Int64
    ) async throws -> Result<[UInt8], APNsRejection> {
        let topics = try await store.topics(ofTeam: team)
        switch self {
        case .receipt(let id):
            // Only the team that owns the topic may read it; another team's receipt does not exist for it.
            guard let receipt = try await ReceiptReader.read(id, for: .team(topics: topics), in: store, nowMilliseconds: nowMilliseconds) else {
                return .failure(APNsRejection(.notFound))
            }
            return .success(receipt)
        case .feedback(let topic):
            guard topics.contains(topic) else { return .failure(APNsRejection(.topicDisallowed)) }
            let entries = try await store.takeFeedback(
                bundleID: topic, environment: environment, inactiveBefore: nowMilliseconds - inactivityMilliseconds,
                inactivityMilliseconds: inactivityMilliseconds)
            return .success(try Self.encode(entries.map { FeedbackListItem(token: $0.token.description, timestamp: $0.atMilliseconds) }))
        }
    }

    private static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(value))
    }
}
