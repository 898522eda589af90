import Foundation
import HeraldCore
import Tracing
import NIOCore
import NIOPosix

extension APNsClient {
    // MARK: Herald's read endpoints (docs/provider-api.md; Apple's service does not have them)

    /// Reads and clears a topic's feedback list (`GET /3/feedback/<topic>`): the tokens the
    /// gateway learned are dead, with when. Throws ``APNsQueryError`` for a refusal (Apple answers
    /// these paths with 404 or 405).
    public func feedback(topic: String) async throws -> [FeedbackListItem] {
        try JSONReader.decode([FeedbackListItem].self, from: try await query("/3/feedback/\(topic)"), limits: JSONLimits(maximumBytes: 64 << 20, maximumDepth: 4))
    }

    /// A notification's delivery receipt (`GET /3/notifications/<apns-id>`): its status on each
    /// device, with the history; `nil` when the gateway has none for it (404).
    public func receipt(apnsID: String) async throws -> NotificationReceipt? {
        do {
            return try JSONReader.decode(NotificationReceipt.self, from: try await query("/3/notifications/\(apnsID)"))
        } catch let error as APNsQueryError where error.status == 404 {
            return nil
        }
    }

    func query(_ path: String) async throws -> [UInt8] {
        var headers: [(name: String, value: String)] = []
        if let tokens { headers.append(("authorization", try tokens.authorization())) }
        let response = try await pool.send(HTTP2Request(method: "GET", path: path, headers: headers))
        guard response.status == 200 else {
            throw APNsQueryError(status: response.status, reason: response.rejection?.reason)
        }
        return response.body
    }
}
