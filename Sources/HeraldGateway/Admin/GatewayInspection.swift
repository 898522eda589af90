import Foundation
import HeraldCore
import HeraldStore

/// What an operator can see inside a gateway without SQL, as JSON: the admin port's read-only
/// `GET /v1/…` endpoints and the CLI's `list` commands (`--json`) answer from here, so both
/// show the same fields (see `docs/inspection.md`).
///
/// Every list is paged: `limit` (1…10,000, default 100) and `after` (the `next` cursor of the
/// previous page). Nothing here writes to the store.
public struct GatewayInspection: Sendable {
    /// What was asked, parsed and checked.
    public enum Query: Sendable, Hashable {
        case devices(connectedOnly: Bool, after: String?, limit: Int)
        case tokens(TokenFilter, after: DeviceToken?, limit: Int)
        case teams
        case held(HeldFilter, after: Int64?, limit: Int)
        case receipt(NotificationID)
        case feedback(topic: String, environment: PushEnvironment)
    }

    /// A query that cannot be answered as asked: the HTTP status and what to fix.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public var status: Int
        public var message: String
        public init(_ status: Int, _ message: String) {
            self.status = status
            self.message = message
        }
        public var description: String { message }
    }

    public static let defaultLimit = 100

    let store: any GatewayStore
    /// The ids of the devices connected now; `nil` outside a running gateway (the CLI reads the
    /// store only, so it cannot say who is connected).
    let connectedDevices: (@Sendable () -> Set<String>)?

    /// What a receipt's state is judged at (a broadcast's waiting or expired).
    let clock: any WallClock

    public init(store: any GatewayStore, clock: any WallClock = SystemWallClock(), connectedDevices: (@Sendable () -> Set<String>)? = nil) {
        self.store = store
        self.clock = clock
        self.connectedDevices = connectedDevices
    }

    // MARK: parsing

    /// Parses an admin-port path below `/v1/` and its query parameters.
    public static func parse(path: String, parameters: [String: String], environment: PushEnvironment) throws(Refusal) -> Query {
        let known: Set<String>
        let query: Query
        switch path {
        case "devices":
            known = ["connected", "after", "limit"]
            query = .devices(connectedOnly: try flag(parameters["connected"], "connected"), after: parameters["after"], limit: try limit(parameters["limit"]))
        case "tokens":
            known = ["topic", "device", "active", "after", "limit"]
            var after: DeviceToken?
            if let text = parameters["after"] {
                guard let token = DeviceToken(hex: text) else { throw Refusal(400, "after must be a token in hex (the previous page's next)") }
                after = token
            }
            query = .tokens(
                TokenFilter(bundleID: parameters["topic"], deviceID: parameters["device"], activeOnly: try flag(parameters["active"], "active")),
                after: after, limit: try limit(parameters["limit"]))
        case "teams":
            known = []
            query = .teams
        case "held":
            known = ["token", "device", "topic", "after", "limit"]
            var token: DeviceToken?
            if let text = parameters["token"] {
                guard let parsed = DeviceToken(hex: text) else { throw Refusal(400, "token must be a device token in hex") }
                token = parsed
            }
            var after: Int64?
            if let text = parameters["after"] {
                guard let seq = Int64(text), seq >= 0 else { throw Refusal(400, "after must be a sequence number (the previous page's next)") }
                after = seq
            }
            query = .held(HeldFilter(token: token, deviceID: parameters["device"], bundleID: parameters["topic"]), after: after, limit: try limit(parameters["limit"]))
        case "feedback":
            known = ["topic", "environment"]
            guard let topic = parameters["topic"], DeviceProtocol.isValidTopic(topic) else {
                throw Refusal(400, "feedback needs ?topic=BUNDLE-ID (the app whose feedback list to show)")
            }
            var chosen = environment
            if let name = parameters["environment"] {
                guard let parsed = PushEnvironment(rawValue: name) else { throw Refusal(400, "environment must be development or production") }
                chosen = parsed
            }
            query = .feedback(topic: topic, environment: chosen)
        case let other where other.hasPrefix("receipts/"):
            known = []
            let text = String(other.dropFirst("receipts/".count))
            guard let id = NotificationID(header: text) else { throw Refusal(400, "\(text) is not an apns-id (a UUID such as 123e4567-e89b-12d3-a456-426614174000)") }
            query = .receipt(id)
        default:
            throw Refusal(404, "no such view; try /v1/devices, /v1/tokens, /v1/teams, /v1/held, /v1/receipts/<apns-id>, /v1/feedback?topic=…")
        }
        if let unknown = parameters.keys.sorted().first(where: { !known.contains($0) }) {
            throw Refusal(400, "unknown parameter \(unknown)" + (known.isEmpty ? "" : "; this view takes \(known.sorted().joined(separator: ", "))"))
        }
        return query
    }

    private static func flag(_ text: String?, _ name: String) throws(Refusal) -> Bool {
        switch text {
        case nil, "false", "0": return false
        case "true", "1", "": return true
        case let other?: throw Refusal(400, "\(name) must be true or false, not \(other)")
        }
    }

    private static func limit(_ text: String?) throws(Refusal) -> Int {
        guard let text else { return defaultLimit }
        guard let value = Int(text), (1...maximumInspectionPage).contains(value) else {
            throw Refusal(400, "limit must be a number from 1 to \(maximumInspectionPage)")
        }
        return value
    }

    // MARK: answering

    /// The answer as JSON (sorted keys, one object).
    public func answer(_ query: Query) async throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        switch query {
        case .devices(let connectedOnly, let after, let limit):
            let connected = connectedDevices?()
            var page: [DeviceSummary]
            if connectedOnly {
                guard let connected else { throw Refusal(400, "only a running gateway knows which devices are connected (ask its admin port)") }
                page = []
                for id in connected.sorted() where after.map({ id > $0 }) ?? true {
                    guard page.count < limit else { break }
                    guard let device = try await store.device(id: id) else { continue }
                    let active = try await store.tokens(TokenFilter(deviceID: id, activeOnly: true), after: nil, limit: maximumInspectionPage)
                    page.append(DeviceSummary(
                        id: id, enrolledAtMilliseconds: device.enrolledAtMilliseconds, lastSeenAtMilliseconds: device.lastSeenAtMilliseconds,
                        activeTokens: active.count))
                }
            } else {
                page = try await store.devices(after: after, limit: limit)
            }
            let items = page.map { device in
                DeviceItem(
                    id: device.id, enrolledAt: device.enrolledAtMilliseconds, lastSeenAt: device.lastSeenAtMilliseconds,
                    activeTokens: device.activeTokens, connected: connected.map { $0.contains(device.id) })
            }
            return Array(try encoder.encode(Page(items: items, next: items.count == limit ? items.last?.id : nil)))
        case .tokens(let filter, let after, let limit):
            let page = try await store.tokens(filter, after: after, limit: limit)
            let items = page.map(TokenItem.init)
            return Array(try encoder.encode(Page(items: items, next: items.count == limit ? items.last?.token : nil)))
        case .teams:
            let teams = try await store.teams()
            return Array(try encoder.encode(TeamList(teams: teams.map { team in
                TeamItem(teamID: team.teamID, topics: team.topics, keys: team.keys.map { key in
                    KeyItem(keyID: key.keyID, environment: key.environment?.rawValue, createdAt: key.createdAtMilliseconds,
                            revokedAt: key.revokedAtMilliseconds)
                })
            })))
        case .held(let filter, let after, let limit):
            let page = try await store.heldNotifications(filter, after: after, limit: limit)
            let items = page.map(HeldItem.init)
            return Array(try encoder.encode(Page(items: items, next: items.count == limit ? items.last.map { String($0.seq) } : nil)))
        case .receipt(let id):
            guard let receipt = try await ReceiptReader.read(id, for: .operator, in: store, nowMilliseconds: clock.nowMilliseconds()) else {
                throw Refusal(404, "no notification with apns-id \(id) is recorded (receipts are kept for a while after they end)")
            }
            return receipt
        case .feedback(let topic, let environment):
            let entries = try await store.pendingFeedback(bundleID: topic, environment: environment)
            return Array(try encoder.encode(FeedbackList(
                topic: topic, environment: environment.rawValue,
                items: entries.map { FeedbackListItem(token: $0.token.description, timestamp: $0.atMilliseconds) })))
        }
    }

    // MARK: shapes

    struct Page<Item: Encodable>: Encodable {
        var items: [Item]
        /// The cursor of the next page (`after=`), absent on the last page.
        var next: String?
    }

    struct DeviceItem: Encodable {
        var id: String
        var enrolledAt: Int64
        var lastSeenAt: Int64
        var activeTokens: Int
        /// `nil` when not known (read from the store by the CLI).
        var connected: Bool?
    }

    struct TokenItem: Encodable {
        var token: String
        var topic: String
        var environment: String
        var device: String?
        var createdAt: Int64
        var state: String
        var unregisteredAt: Int64?
        var expiredAt: Int64?

        init(_ r: TokenRegistration) {
            token = r.token.hex
            topic = r.scope.stored
            environment = r.environment.rawValue
            device = r.deviceID
            createdAt = r.createdAtMilliseconds
            unregisteredAt = r.unregisteredAtMilliseconds
            expiredAt = r.expiredAtMilliseconds
            state = r.unregisteredAtMilliseconds != nil ? "unregistered" : r.expiredAtMilliseconds != nil ? "expired" : "active"
        }
    }

    struct KeyItem: Encodable {
        var keyID: String
        var environment: String?
        var createdAt: Int64
        var revokedAt: Int64?
        enum CodingKeys: String, CodingKey {
            case environment, createdAt, revokedAt
            case keyID = "keyId"
        }
    }

    struct TeamItem: Encodable {
        var teamID: String
        var topics: [String]
        var keys: [KeyItem]
        enum CodingKeys: String, CodingKey {
            case topics, keys
            case teamID = "teamId"
        }
    }

    struct TeamList: Encodable { var teams: [TeamItem] }

    struct HeldItem: Encodable {
        var seq: Int64
        var apnsID: String
        var token: String
        var topic: String
        var pushType: String
        var priority: Int
        var collapseID: String?
        var receivedAt: Int64
        var discardAt: Int64
        var sentAt: Int64?
        var payload: String

        init(_ h: HeldNotification) {
            let n = h.notification
            seq = h.seq
            apnsID = n.id.description
            token = n.token.hex
            topic = n.bundleID
            pushType = n.pushType.rawValue
            priority = n.priority.rawValue
            collapseID = n.collapseID?.value
            receivedAt = n.receivedAtMilliseconds
            discardAt = h.discardAtMilliseconds
            sentAt = h.sentAtMilliseconds
            payload = String(decoding: n.payload, as: UTF8.self)
        }

        enum CodingKeys: String, CodingKey {
            case seq, token, topic, pushType, priority, receivedAt, discardAt, sentAt, payload
            case apnsID = "apnsId", collapseID = "collapseId"
        }
    }

    struct FeedbackList: Encodable {
        var topic: String
        var environment: String
        var items: [FeedbackListItem]
    }
}
