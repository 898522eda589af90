import Foundation
import HeraldCore
import Tracing
import NIOCore
import NIOPosix

extension APNsClient {
    // MARK: broadcast channels (a client configured for the channel management port)

    /// Creates a channel of the app (`POST /1/apps/<bundle id>/channels`); returns its id.
    /// `storagePolicy` 0 stores nothing for offline devices, 1 the most recent broadcast.
    public func createChannel(bundleID: String, storagePolicy: Int) async throws -> String {
        let body = Array(#"{"message-storage-policy":\#(storagePolicy),"push-type":"LiveActivity"}"#.utf8)
        let response = try await channelRequest("POST", "/1/apps/\(bundleID)/channels", body: body)
        guard response.status == 201, let id = response.header("apns-channel-id") else {
            throw APNsQueryError(status: response.status, reason: response.rejection?.reason)
        }
        return id
    }

    /// The ids of the app's channels (`GET /1/apps/<bundle id>/all-channels`).
    public func channels(bundleID: String) async throws -> [String] {
        let response = try await channelRequest("GET", "/1/apps/\(bundleID)/all-channels")
        guard response.status == 200 else { throw APNsQueryError(status: response.status, reason: response.rejection?.reason) }
        struct List: Decodable { var channels: [String] }
        return try JSONReader.decode(List.self, from: response.body, limits: JSONLimits(maximumBytes: 16 << 20, maximumDepth: 4)).channels
    }

    /// A channel's storage policy (`GET /1/apps/<bundle id>/channels`); `nil` for an unknown channel.
    public func channelStoragePolicy(bundleID: String, channelID: String) async throws -> Int? {
        let response = try await channelRequest("GET", "/1/apps/\(bundleID)/channels", channelID: channelID)
        if response.rejection?.reason == .channelNotRegistered { return nil }
        guard response.status == 200 else { throw APNsQueryError(status: response.status, reason: response.rejection?.reason) }
        struct Channel: Decodable {
            var policy: Int
            enum CodingKeys: String, CodingKey { case policy = "message-storage-policy" }
        }
        return try JSONReader.decode(Channel.self, from: response.body).policy
    }

    /// Deletes a channel (`DELETE /1/apps/<bundle id>/channels`); `false` for an unknown one.
    @discardableResult
    public func deleteChannel(bundleID: String, channelID: String) async throws -> Bool {
        let response = try await channelRequest("DELETE", "/1/apps/\(bundleID)/channels", channelID: channelID)
        if response.rejection?.reason == .channelNotRegistered { return false }
        guard response.status == 204 || response.status == 200 else { throw APNsQueryError(status: response.status, reason: response.rejection?.reason) }
        return true
    }

    func channelRequest(_ method: String, _ path: String, channelID: String? = nil, body: [UInt8] = []) async throws -> HTTP2Response {
        var headers: [(name: String, value: String)] = []
        if let tokens { headers.append(("authorization", try tokens.authorization())) }
        if let channelID { headers.append(("apns-channel-id", channelID)) }
        return try await pool.send(HTTP2Request(method: method, path: path, headers: headers, body: body))
    }

    /// Requests in flight now, and the most there have been at once.
    public var inFlight: (now: Int, peak: Int) { pool.inFlight }
    /// How many connections were opened so far (replacements included).
    public var connectionsOpened: Int { pool.opened }

    public func close() async { await pool.close() }
}
