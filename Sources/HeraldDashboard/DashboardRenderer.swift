import Foundation
import HeraldCore
import Mustache

/// Renders Herald's pages: mustache templates (HTML-escaped by default) inside one layout, with a
/// navigation bar per product. The templates are compiled into the binary (``GatewayPages``,
/// ``ProviderPages``), so a copied `herald` needs no files beside it.
public struct DashboardRenderer: Sendable {
    /// A link in the navigation bar.
    public struct NavigationItem: Sendable {
        public var title: String
        public var path: String
        public init(_ title: String, _ path: String) {
            self.title = title
            self.path = path
        }
    }

    private let library: MustacheLibrary
    private let product: String
    private let navigation: [NavigationItem]

    /// - Parameters:
    ///   - product: shown in the title bar (`Herald gateway`, `Herald provider`).
    ///   - templates: page name to mustache text; each is rendered inside the layout.
    public init(product: String, navigation: [NavigationItem], templates: [String: String]) {
        var library = MustacheLibrary()
        // The templates are ours and compiled in: one that does not parse is a bug caught by the tests.
        for (name, text) in templates.merging(LayoutTemplates.all, uniquingKeysWith: { page, _ in page }) {
            do { try library.register(text, named: name) } catch { preconditionFailure("template \(name) does not parse: \(error)") }
        }
        self.library = library
        self.product = product
        self.navigation = navigation
    }

    /// The page `name` as HTML, inside the layout. `context` is what the template reads; the layout
    /// adds `product`, `title`, `nav` (with `current` on the item whose path is `section`).
    public func render(_ name: String, title: String, section: String, context: [String: Any]) -> String {
        var context = context
        context["product"] = product
        context["title"] = title
        context["nav"] = navigation.map { item -> [String: Any] in
            ["title": item.title, "path": item.path, "current": item.path == section]
        }
        let body = library.render(context, withTemplate: name) ?? "<p>page \(name) is missing</p>"
        context["body"] = body
        return library.render(context, withTemplate: "layout") ?? body
    }

    /// A page that only says something went wrong (a refusal, a store that failed), in the layout.
    public func renderMessage(title: String, message: String, section: String) -> String {
        render("message", title: title, section: section, context: ["message": message])
    }
}

/// Turns JSON (what the inspection views and the REST API answer) into what a template reads:
/// objects become dictionaries, arrays arrays, `null` is absent, and every integer under a key
/// ending in `At` (or named `at`, `timestamp`) gains a sibling `<key>Text` with the time in UTC,
/// ISO 8601 to the millisecond.
public enum DashboardValue {
    public static func from(_ value: JSONValue) -> Any? {
        switch value {
        case .null: return nil
        case .bool(let b): return b
        case .int(let i): return i
        case .double(let d): return d
        case .string(let s): return s
        case .array(let items): return items.map { from($0) ?? "" }
        case .object(let fields):
            var object: [String: Any] = [:]
            for (key, field) in fields {
                guard let converted = from(field) else { continue }
                object[key] = converted
                if isTimeKey(key), case .int(let ms) = field { object[key + "Text"] = timeText(milliseconds: ms) }
            }
            return object
        }
    }

    /// The object of JSON bytes, converted; an empty dictionary when they are not an object.
    public static func object(fromJSON bytes: some Collection<UInt8>) -> [String: Any] {
        guard let value = try? JSONReader.parse(bytes, limits: ownOutput), let object = from(value) as? [String: Any] else { return [:] }
        return object
    }

    /// Our own answers (a page of 10,000 held notifications may pass the REST limit of 1 MiB).
    static let ownOutput = JSONLimits(maximumBytes: 256 << 20, maximumDepth: 64)

    static func isTimeKey(_ key: String) -> Bool {
        key.hasSuffix("At") || key == "at" || key == "timestamp"
    }

    /// `2026-11-24 16:30:01.123 UTC` for milliseconds since 1970 (out-of-range values as they are).
    public static func timeText(milliseconds: Int64) -> String {
        guard milliseconds > 0, milliseconds < 253_402_300_800_000 else { return String(milliseconds) }
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let text = date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true).timeSeparator(.colon))
        return text.replacingOccurrences(of: "T", with: " ") + " UTC"
    }
}
