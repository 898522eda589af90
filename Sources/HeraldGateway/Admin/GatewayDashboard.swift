import Foundation
import HeraldCore
import HeraldDashboard
import HeraldStore

/// The admin port's pages (`/dashboard/…`): each reads what its inspection view answers
/// (``GatewayInspection``) and renders it with ``GatewayPages``. Read-only: nothing here writes.
struct GatewayDashboard: Sendable {
    /// A rendered page and its status (a refusal is shown on the page, with the view's status).
    struct Page: Sendable {
        var status: Int
        var html: String
    }

    let renderer = GatewayPages.renderer()
    let inspection: GatewayInspection
    let store: any GatewayStore
    let environment: PushEnvironment
    /// This node's id in a cluster, or nil on a single gateway.
    let nodeID: String?
    /// The device port, to link to the browser device's page (nil when the gateway has none).
    let devicePort: Int?
    let connectedDevices: @Sendable () -> Int

    /// The page at `path` (below `/dashboard`, `""` for the overview); `host` is the Host header's
    /// name, to link to the device port on the same host.
    func page(_ path: String, parameters raw: [String: String], host: String?) async -> Page? {
        // Forms send empty fields for what was left blank: absent, for the views.
        let parameters = raw.filter { !$0.value.isEmpty }
        do {
            switch path {
            case "", "/": return try await overview(host: host)
            case "/devices": return try await devices(parameters)
            case "/tokens": return try await list("tokens", title: "Tokens", parameters: parameters, extra: tokenSummary)
            case "/held": return try await list("held", title: "Held notifications", parameters: parameters, extra: { _ in [:] })
            case "/receipts": return try await receipt(parameters)
            case "/feedback": return try await feedback(parameters)
            case "/teams":
                let answer = try await inspection.answer(.teams)
                return render("teams", "Teams and keys", DashboardValue.object(fromJSON: answer))
            case "/live": return render("live", "Live deliveries", ["scripts": ["live.js"]])
            default: return nil
            }
        } catch let refusal as GatewayInspection.Refusal {
            return Page(status: refusal.status, html: renderer.renderMessage(title: "Cannot show this", message: refusal.message, section: "/dashboard\(path)"))
        } catch {
            return Page(status: 500, html: renderer.renderMessage(
                title: "The store could not answer", message: "\(error)", section: "/dashboard\(path)"))
        }
    }

    private func render(_ name: String, _ title: String, _ context: [String: Any], status: Int = 200) -> Page {
        let section = name == "overview" ? "/dashboard" : "/dashboard/\(name)"
        return Page(status: status, html: renderer.render(name, title: title, section: section, context: context))
    }

    private func overview(host: String?) async throws -> Page {
        var context: [String: Any] = [
            "node": nodeID ?? "single node",
            "environment": environment.rawValue,
            "connected": connectedDevices(),
            "held": try await store.storedNotificationCount(),
            "teams": try await store.teams().count,
            "scripts": ["graphs.js"],
        ]
        if let port = devicePort {
            context["devicePage"] = "https://\(host.map(Self.bracketed) ?? "127.0.0.1"):\(port)/"
        }
        return render("overview", "Overview", context)
    }

    /// An IPv6 literal in a URL needs its brackets.
    private static func bracketed(_ host: String) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    }

    private func devices(_ parameters: [String: String]) async throws -> Page {
        let query = try GatewayInspection.parse(path: "devices", parameters: parameters, environment: environment)
        var context = DashboardValue.object(fromJSON: try await inspection.answer(query))
        var items = context["items"] as? [[String: Any]] ?? []
        for index in items.indices {
            guard let id = items[index]["id"] as? String else { continue }
            let tokens = try await store.tokens(TokenFilter(deviceID: id, activeOnly: true), after: nil, limit: maximumInspectionPage)
            items[index]["apps"] = tokens.map(\.scope.stored).sorted()
        }
        context["items"] = items
        context["connectedOnly"] = parameters["connected"] == "true"
        context["query"] = Self.pagerQuery(parameters)
        return render("devices", "Devices", context)
    }

    private func list(
        _ view: String, title: String, parameters: [String: String], extra: ([[String: Any]]) -> [String: Any]
    ) async throws -> Page {
        let query = try GatewayInspection.parse(path: view, parameters: parameters, environment: environment)
        var context = DashboardValue.object(fromJSON: try await inspection.answer(query))
        context.merge(extra(context["items"] as? [[String: Any]] ?? []), uniquingKeysWith: { _, added in added })
        for (name, value) in parameters where name != "after" { context[name] = value }
        context["activeOnly"] = parameters["active"] == "true"
        context["query"] = Self.pagerQuery(parameters)
        return render(view, title, context)
    }

    /// Counts by topic and state of the tokens on a page.
    private func tokenSummary(_ items: [[String: Any]]) -> [String: Any] {
        var counts: [String: [String: Int]] = [:]
        for item in items {
            guard let topic = item["topic"] as? String, let state = item["state"] as? String else { continue }
            counts[topic, default: [:]][state, default: 0] += 1
        }
        let summary = counts.keys.sorted().map { topic -> [String: Any] in
            let byState = counts[topic] ?? [:]
            return ["topic": topic, "active": byState["active"] ?? 0, "unregistered": byState["unregistered"] ?? 0, "expired": byState["expired"] ?? 0]
        }
        return ["summary": summary, "hasSummary": !summary.isEmpty]
    }

    private func receipt(_ parameters: [String: String]) async throws -> Page {
        guard let text = parameters["apns-id"] else { return render("receipts", "Receipts", [:]) }
        var context: [String: Any] = ["apnsId": text]
        do {
            let query = try GatewayInspection.parse(path: "receipts/\(text)", parameters: [:], environment: environment)
            context["receipt"] = DashboardValue.object(fromJSON: try await inspection.answer(query))
            return render("receipts", "Receipts", context)
        } catch let refusal as GatewayInspection.Refusal {
            context["refusal"] = refusal.message
            return render("receipts", "Receipts", context, status: refusal.status)
        }
    }

    private func feedback(_ parameters: [String: String]) async throws -> Page {
        var context: [String: Any] = [:]
        guard parameters["topic"] != nil else { return render("feedback", "Feedback", context) }
        for (name, value) in parameters { context[name] = value }
        context[parameters["environment"] ?? environment.rawValue] = true
        do {
            let query = try GatewayInspection.parse(path: "feedback", parameters: parameters, environment: environment)
            context["list"] = DashboardValue.object(fromJSON: try await inspection.answer(query))
            return render("feedback", "Feedback", context)
        } catch let refusal as GatewayInspection.Refusal {
            context["refusal"] = refusal.message
            return render("feedback", "Feedback", context, status: refusal.status)
        }
    }

    /// The page's parameters but `after`, percent-encoded and ending in `&` (the pager adds `after=`).
    static func pagerQuery(_ parameters: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return parameters.filter { $0.key != "after" }.sorted { $0.key < $1.key }.map { name, value in
            "\(name.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")&"
        }.joined()
    }
}

/// The host name of a Host header, to link to another port of the same host.
enum DashboardHost {
    /// `[::1]:9090` → `::1`, `example.com:9090` → `example.com`; anything but the characters a
    /// host name or address has gives `127.0.0.1`.
    static func name(_ header: String) -> String {
        var name = Substring(header)
        if name.hasPrefix("["), let close = name.firstIndex(of: "]") {
            name = name[name.index(after: name.startIndex)..<close]
        } else if let colon = name.lastIndex(of: ":"), name.firstIndex(of: ":") == colon {
            name = name[..<colon]
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:")
        guard !name.isEmpty, name.count <= 253, name.allSatisfy(allowed.contains) else { return "127.0.0.1" }
        return String(name)
    }
}
