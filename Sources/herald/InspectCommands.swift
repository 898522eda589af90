import ArgumentParser
import Foundation
import HeraldCore
import HeraldGateway
import HeraldStore

// The operators' read-only views of a gateway's store (docs/inspection.md). Each prints a table,
// or with --json the same JSON the admin port's /v1/… views answer. They read the store, so they
// work while the gateway runs (SQLite readers never wait for its writer) and when it is stopped;
// only the admin port knows which devices are connected right now.

/// The options every list shares.
struct InspectionOptions: ParsableArguments {
    @OptionGroup var data: DataDirectoryOptions

    @Flag(help: "Print JSON (the admin port's shape) instead of a table.")
    var json = false

    @Option(help: "At most this many items (1…10000).")
    var limit: Int = GatewayInspection.defaultLimit

    @Option(help: ArgumentHelp("Start after this cursor (the \"next\" a previous page printed).", valueName: "CURSOR"))
    var after: String?

    func validate() throws {
        guard (1...maximumInspectionPage).contains(limit) else { throw ValidationError("--limit must be from 1 to \(maximumInspectionPage), not \(limit)") }
    }

    /// The query's parameters as the admin port would take them.
    func parameters(_ extra: [String: String?]) -> [String: String] {
        var parameters = extra.compactMapValues { $0 }
        parameters["limit"] = String(limit)
        if let after { parameters["after"] = after }
        return parameters
    }

    /// Runs a view and prints it: JSON, or a table of `columns` from its items.
    func show(_ view: String, _ parameters: [String: String], columns: [String], itemsKey: String = "items") async throws {
        let query: GatewayInspection.Query
        do {
            query = try GatewayInspection.parse(path: view, parameters: parameters, environment: .development)
        } catch {
            throw ValidationError(error.message)
        }
        let store = try await data.openExistingStore()
        let body: [UInt8]
        do { body = try await GatewayInspection(store: store).answer(query) } catch let refusal as GatewayInspection.Refusal {
            throw ValidationError(refusal.message)
        }
        if json { return printLineFlushed(String(decoding: body, as: UTF8.self)) }
        guard case .object(let object) = try JSONReader.parse(body, limits: JSONLimits(maximumBytes: body.count, maximumDepth: 64)) else { return }
        guard case .array(let items)? = object[itemsKey] else { return }
        printTable(items, columns: columns)
        if case .string(let next)? = object["next"] { printLineFlushed("more: --after \(next)") }
    }
}

/// Prints objects as aligned columns; `…At` fields (milliseconds) as UTC times.
func printTable(_ items: [JSONValue], columns: [String]) {
    func text(_ value: JSONValue?, column: String) -> String {
        switch value {
        case nil, .null?: return "-"
        case .int(let n)? where column.hasSuffix("At"):
            let formatter = ISO8601DateFormatter()
            return formatter.string(from: Date(timeIntervalSince1970: Double(n) / 1000))
        case .int(let n)?: return String(n)
        case .double(let d)?: return String(d)
        case .bool(let b)?: return b ? "yes" : "no"
        case .string(let s)?: return s.count > 80 ? String(s.prefix(79)) + "…" : s
        case .array(let a)?: return a.map { text($0, column: "") }.joined(separator: ",")
        case .object?: return "{…}"
        }
    }
    let rows = items.map { item -> [String] in
        guard case .object(let o) = item else { return columns.map { _ in "-" } }
        return columns.map { text(o[$0], column: $0) }
    }
    let header = columns.map { $0.uppercased() }
    var widths = header.map(\.count)
    for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
    var out = ""
    for row in [header] + rows {
        out += zip(row, widths).map { $0 + String(repeating: " ", count: $1 - $0.count) }.joined(separator: "  ")
            .replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) + "\n"
    }
    if rows.isEmpty { out += "(none)\n" }
    FileHandle.standardOutput.write(Data(out.utf8))
}

struct KeysListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List teams with their topics and provider keys (revoked ones marked).",
        discussion: "Example: herald keys list --data-dir ./herald-data")

    @OptionGroup var data: DataDirectoryOptions

    @Flag(help: "Print JSON (the admin port's /v1/teams) instead of a table.")
    var json = false

    func run() async throws {
        let store = try await data.openExistingStore()
        let body = try await GatewayInspection(store: store).answer(.teams)
        if json { return printLineFlushed(String(decoding: body, as: UTF8.self)) }
        let teams = try await store.teams()
        var rows: [JSONValue] = []
        for team in teams {
            let topics = JSONValue.string(team.topics.joined(separator: ","))
            if team.keys.isEmpty { rows.append(.object(["team": .string(team.teamID), "topics": topics])) }
            for key in team.keys {
                rows.append(.object([
                    "team": .string(team.teamID), "topics": topics, "key": .string(key.keyID),
                    "environment": .string(key.environment?.rawValue ?? "both"), "createdAt": .int(key.createdAtMilliseconds),
                    "revokedAt": key.revokedAtMilliseconds.map(JSONValue.int) ?? .null,
                ]))
            }
        }
        printTable(rows, columns: ["team", "key", "environment", "createdAt", "revokedAt", "topics"])
    }
}

struct KeysRevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke a provider key (tokens it signed are refused: 403 InvalidProviderToken) or a push certificate (403 BadCertificate).",
        discussion: """
            A running gateway notices within about 5 seconds, on connections already open with the
            key too. Revocation cannot be undone: create a new key for the team.
            Example: herald keys revoke --data-dir ./herald-data --key-id ABC123DEFG
            """)

    @OptionGroup var data: DataDirectoryOptions

    @Option(help: "The 10-character id of the key to revoke, or a push certificate's credential id (cert-…).")
    var keyID: String

    func validate() throws {
        let isCertificate = keyID.hasPrefix(ProviderKey.certificateCredentialPrefix) && keyID.utf8.count == 21
            && keyID.utf8.dropFirst(5).allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        guard KeyID(keyID) != nil || isCertificate else {
            throw ValidationError("--key-id must be 10 letters or digits, or a certificate's cert-<16 hex digits>; got '\(keyID)'")
        }
    }

    func run() async throws {
        let store = try await data.openExistingStore()
        let now = SystemWallClock().nowMilliseconds()
        guard let key = try await store.revokeKey(id: keyID, atMilliseconds: now) else {
            throw ValidationError("no key \(keyID) is registered in \(data.storeName) (herald keys list shows them)")
        }
        let when = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(key.revokedAtMilliseconds ?? now) / 1000))
        printLineFlushed(key.revokedAtMilliseconds == now ? "revoked \(key.keyID) of team \(key.teamID) at \(when)"
                         : "\(key.keyID) of team \(key.teamID) was already revoked at \(when)")
    }
}

struct TokensListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List device tokens with their state (active, unregistered, expired).",
        discussion: "Example: herald tokens list --data-dir ./herald-data --topic com.example.app --active")

    @OptionGroup var options: InspectionOptions

    @Option(help: "Only this app's tokens (bundle id).")
    var topic: String?

    @Option(help: "Only this device's tokens (its id, as herald devices list prints it).")
    var device: String?

    @Flag(help: "Only tokens not unregistered.")
    var active = false

    func run() async throws {
        try await options.show(
            "tokens", options.parameters(["topic": topic, "device": device, "active": active ? "true" : nil]),
            columns: ["token", "topic", "environment", "state", "device", "createdAt", "unregisteredAt"])
    }
}

struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "See the devices enrolled on the gateway.",
        discussion: "Example: herald devices list --data-dir ./herald-data", subcommands: [List.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List enrolled devices: when each enrolled and was last seen, how many app tokens it has.",
            discussion: """
                Which devices are connected right now only the running gateway knows: its admin port's
                GET /v1/devices?connected=true.
                Example: herald devices list --data-dir ./herald-data
                """)

        @OptionGroup var options: InspectionOptions

        func run() async throws {
            try await options.show("devices", options.parameters([:]), columns: ["id", "enrolledAt", "lastSeenAt", "activeTokens"])
        }
    }
}

struct HeldCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "held", abstract: "See the notifications the gateway holds for devices not connected.",
        discussion: "Example: herald held list --data-dir ./herald-data --topic com.example.app", subcommands: [List.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List held notifications, oldest first, by token, device or topic.",
            discussion: "Example: herald held list --data-dir ./herald-data --topic com.example.app")

        @OptionGroup var options: InspectionOptions

        @Option(help: "Only this token's (hex).")
        var token: String?

        @Option(help: "Only this device's.")
        var device: String?

        @Option(help: "Only this app's (bundle id).")
        var topic: String?

        func run() async throws {
            try await options.show(
                "held", options.parameters(["token": token, "device": device, "topic": topic]),
                columns: ["seq", "apnsId", "topic", "token", "priority", "receivedAt", "discardAt", "payload"])
        }
    }
}

struct ReceiptsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receipts", abstract: "See what became of a notification.",
        discussion: "Example: herald receipts show --data-dir ./herald-data --apns-id 123e4567-e89b-12d3-a456-426614174000", subcommands: [Show.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a notification's receipt by apns-id: each token it went to, and its history (accepted, stored, delivered, acked, …).",
            discussion: "Example: herald receipts show --data-dir ./herald-data --apns-id 123e4567-e89b-12d3-a456-426614174000")

        @OptionGroup var data: DataDirectoryOptions

        @Option(help: "The notification's apns-id (the header the gateway answered with).")
        var apnsID: String

        @Flag(help: "Print JSON (the admin port's /v1/receipts/<apns-id>) instead of lines.")
        var json = false

        func run() async throws {
            guard let id = NotificationID(header: apnsID) else {
                throw ValidationError("--apns-id must be a UUID such as 123e4567-e89b-12d3-a456-426614174000; got '\(apnsID)'")
            }
            let store = try await data.openExistingStore()
            let body: [UInt8]
            do { body = try await GatewayInspection(store: store).answer(.receipt(id)) } catch let refusal as GatewayInspection.Refusal {
                throw ValidationError(refusal.message)
            }
            if json { return printLineFlushed(String(decoding: body, as: UTF8.self)) }
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            for receipt in try await ReceiptReader.receipts(of: id, for: .operator, in: store, nowMilliseconds: SystemWallClock().nowMilliseconds()) {
                printLineFlushed("\(receipt.bundleID) \(receipt.token.hex): \(receipt.events.last?.status.rawValue ?? "accepted")")
                for event in receipt.events {
                    printLineFlushed("  \(formatter.string(from: Date(timeIntervalSince1970: Double(event.atMilliseconds) / 1000)))  \(event.status.rawValue)")
                }
            }
        }
    }
}

struct FeedbackListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Show an app's feedback list (tokens unregistered since providers last read it) without clearing it.",
        discussion: "Example: herald feedback list --data-dir ./herald-data --topic com.example.app")

    @OptionGroup var data: DataDirectoryOptions

    @Option(help: "The app's topic (bundle id).")
    var topic: String

    @Option(help: "The environment of the tokens.")
    var environment: PushEnvironment = .development

    @Flag(help: "Print JSON (the admin port's /v1/feedback) instead of a table.")
    var json = false

    func run() async throws {
        guard DeviceProtocol.isValidTopic(topic) else { throw ValidationError("--topic \"\(topic)\" is not a bundle id") }
        let store = try await data.openExistingStore()
        let body = try await GatewayInspection(store: store).answer(.feedback(topic: topic, environment: environment))
        if json { return printLineFlushed(String(decoding: body, as: UTF8.self)) }
        guard case .object(let object) = try JSONReader.parse(body, limits: JSONLimits(maximumBytes: body.count, maximumDepth: 64)), case .array(let items)? = object["items"] else { return }
        printTable(items.map { item in
            guard case .object(var o) = item else { return item }
            o["unregisteredAt"] = o.removeValue(forKey: "timestamp")
            return .object(o)
        }, columns: ["token", "unregisteredAt"])
    }
}
