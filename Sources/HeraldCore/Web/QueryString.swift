import Foundation

/// The one reader of query strings and request targets: the HTTP/1 surfaces (the admin port, the
/// provider service, the device port's page and its upgrade) and the provider port's paths: `name=value` pairs split on `&`, `+` read as a space, then
/// percent-decoded. Malformed percent-encoding is refused, never passed through half-decoded.
public enum QueryString {
    /// Why a query string cannot be read, in words for the person who sent it.
    public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// The query of a request target (`/path?query`), or `nil` when it has none.
    public static func query(of target: some StringProtocol) -> Substring? {
        guard let mark = target.firstIndex(of: "?") else { return nil }
        return Substring(target[target.index(after: mark)...])
    }

    /// The path of a request target, without its query.
    public static func path(of target: String) -> String {
        guard let mark = target.firstIndex(of: "?") else { return target }
        return String(target[..<mark])
    }

    /// Every `name=value` pair, in order (a name without `=` has the value "").
    public static func pairs(_ query: Substring) throws(Invalid) -> [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            pairs.append((name: try decode(parts[0]), value: parts.count > 1 ? try decode(parts[1]) : ""))
        }
        return pairs
    }

    /// The parameters of a request target as a dictionary; a parameter given twice is refused.
    public static func parameters(of target: some StringProtocol) throws(Invalid) -> [String: String] {
        guard let query = query(of: target) else { return [:] }
        var parameters: [String: String] = [:]
        for (name, value) in try pairs(query) {
            guard parameters[name] == nil else { throw Invalid("\(name) is given twice") }
            parameters[name] = value
        }
        return parameters
    }

    private static func decode(_ text: Substring) throws(Invalid) -> String {
        guard let decoded = text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
            throw Invalid("the query string is not valid percent-encoding")
        }
        return decoded
    }
}
