import Foundation

/// The `apns-id` of a notification: a UUID. Compared case-insensitively (Apple writes lowercase,
/// generated ids are seen uppercase); written lowercase.
public struct APNsID: Hashable, Sendable, CustomStringConvertible {
    public let uuid: UUID

    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Parses the canonical 8-4-4-4-12 form in either case. `nil` for anything else.
    public init?(header: String) {
        // UUID(uuidString:) accepts exactly the 36-character hyphenated form in either case.
        guard header.utf8.count == 36, let uuid = UUID(uuidString: header) else { return nil }
        self.uuid = uuid
    }

    /// A fresh random id.
    public static func random() -> APNsID { APNsID(UUID()) }

    /// Lowercase canonical text.
    public var description: String { uuid.uuidString.lowercased() }
}
