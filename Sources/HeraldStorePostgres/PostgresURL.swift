import Foundation

/// Where a PostgreSQL database is: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE]`
/// (`postgresql://` too). `sslmode` is `disable`, `prefer` (the default) or `require`.
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible {
    public enum TLSMode: String, Sendable, CaseIterable { case disable, prefer, require }

    public var user: String
    public var password: String?
    public var host: String
    public var port: Int
    public var database: String
    public var tls: TLSMode

    /// Whether `text` names a PostgreSQL database (rather than, say, a file).
    public static func looksLikeOne(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Reads a URL; the error says what is wrong with it.
    public init(_ text: String) throws {
        guard Self.looksLikeOne(text), let components = URLComponents(string: text) else {
            throw PostgresURLError("\(Self.redacted(text)) is not a postgres:// URL (postgres://USER@HOST:PORT/DATABASE)")
        }
        guard let user = components.user, !user.isEmpty else {
            throw PostgresURLError("\(Self.redacted(text)) names no user (postgres://USER@HOST:PORT/DATABASE)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw PostgresURLError("\(Self.redacted(text)) names no host (postgres://USER@HOST:PORT/DATABASE)")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw PostgresURLError("\(Self.redacted(text)) names no database (postgres://USER@HOST:PORT/DATABASE)")
        }
        // URLComponents refuses a port outside 0...65535 by returning nil for the whole URL.
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else {
            throw PostgresURLError("\(Self.redacted(text)) has port \(port), outside 1-65535")
        }
        var tls = TLSMode.prefer
        for item in components.queryItems ?? [] {
            guard item.name == "sslmode" else {
                throw PostgresURLError("\(Self.redacted(text)): unknown parameter \(item.name) (only sslmode is read)")
            }
            guard let value = item.value, let mode = TLSMode(rawValue: value) else {
                throw PostgresURLError("\(Self.redacted(text)): sslmode must be one of disable, prefer, require")
            }
            tls = mode
        }
        self.user = user
        self.password = components.password
        self.host = host
        self.port = port
        self.database = database
        self.tls = tls
    }

    /// The URL without its password, for logs and messages.
    public var description: String {
        "postgres://\(user)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)\(tls == .prefer ? "" : "?sslmode=\(tls.rawValue)")"
    }

    private static func redacted(_ text: String) -> String {
        // Hide a password (between "://user:" and "@") before quoting a URL back.
        guard let scheme = text.range(of: "://"), let at = text.range(of: "@", range: scheme.upperBound..<text.endIndex),
              let colon = text.range(of: ":", range: scheme.upperBound..<at.lowerBound) else { return text }
        return String(text[..<colon.upperBound]) + "***" + String(text[at.lowerBound...])
    }
}

public struct PostgresURLError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
