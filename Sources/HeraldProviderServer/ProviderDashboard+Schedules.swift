import Crypto
import Foundation
import HTTPTypes
import HeraldCore
import HeraldDashboard
import HeraldHTTP
import HeraldProvider
import Hummingbird
import NIOCore

extension ProviderDashboard {
    // MARK: schedules

    static let timelineDays = 7

    func schedules() async throws -> Response {
        let now = service.nowMilliseconds()
        let span = Int64(Self.timelineDays) * 86_400_000
        let all = try await service.schedules()
        var items: [[String: Any]] = []
        for schedule in all.sorted(by: { ($0.state == .active ? 0 : 1, $0.createdAt) < ($1.state == .active ? 0 : 1, $1.createdAt) }).prefix(100) {
            let planned = try await service.planAhead(schedule.id, span: span)
            var byZone: [String: [ProviderService.PlannedRun]] = [:]
            for run in planned { byZone[run.zone, default: []].append(run) }
            let zones = byZone.keys.sorted().map { zone -> [String: Any] in
                let runs = byZone[zone] ?? []
                return ["zone": zone, "recipients": Self.count(runs.first?.recipients ?? 0, "registration"),
                        "runs": runs.map { ["dueAt": $0.dueAt, "dueAtText": DashboardValue.timeText(milliseconds: $0.dueAt)] }]
            }
            let next = planned.prefix(12).map { run -> [String: Any] in
                ["zone": run.zone, "dueAt": run.dueAt, "dueAtText": DashboardValue.timeText(milliseconds: run.dueAt),
                 "local": Self.localTime(run.dueAt, zone: run.zone), "recipientsText": Self.count(run.recipients, "registration")]
            }
            items.append([
                "id": schedule.id, "state": schedule.state.rawValue, "timing": Self.describe(schedule.timing),
                "summary": Self.describe(schedule.send), "zones": zones, "next": next, "from": now, "to": now + span,
                "fromText": DashboardValue.timeText(milliseconds: now), "toText": DashboardValue.timeText(milliseconds: now + span),
            ])
        }
        return render("schedules", "Schedules", "/dashboard/schedules", [
            "items": items, "hasItems": !items.isEmpty, "days": Self.timelineDays, "from": now, "to": now + span,
            "fromText": DashboardValue.timeText(milliseconds: now), "toText": DashboardValue.timeText(milliseconds: now + span),
        ], scripts: ["timeline.js"])
    }

    static func localTime(_ milliseconds: Int64, zone: String) -> String {
        guard let timeZone = TimeZone(identifier: zone) else { return "" }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.weekday, .hour, .minute], from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        let days = ["", "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let day = (c.weekday.map { days.indices.contains($0) ? days[$0] : "" }) ?? ""
        return "\(day) " + String(format: "%02d:%02d", c.hour ?? 0, c.minute ?? 0)
    }

    static func describe(_ timing: ScheduleTiming) -> String {
        switch timing {
        case .instant(let at): return "once at \(DashboardValue.timeText(milliseconds: at))"
        case .wallClock(let rule):
            let time = String(format: "%02d:%02d", rule.hour, rule.minute)
            let zone = rule.timeZone.map { "in \($0)" } ?? "in each registration's zone"
            let names = ["", "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
            let repeats: String = switch rule.repeats {
            case .once: "once"
            case .daily: "daily"
            case .weekly(let days): "weekly on " + days.map { names.indices.contains($0) ? names[$0] : "?" }.joined(separator: ", ")
            case .monthly(let day): "monthly on day \(day)"
            }
            return "\(time) \(zone), \(repeats)" + (rule.until.map { " until \($0)" } ?? "")
        }
    }

    static func describe(_ send: SendRequest) -> String {
        let to: String = switch send.target {
        case .token(let token): "token \(token.prefix(12))…"
        case .user(let user): "user \(user)"
        case .segment(let topic, let tags, let languages):
            "segment \(topic ?? "all topics")" + (tags.isEmpty ? "" : " tags \(tags.joined(separator: ","))")
                + (languages.isEmpty ? "" : " languages \(languages.joined(separator: ","))")
        }
        let what: String = switch send.message {
        case .template(let id, _): "template \(id)"
        case .alert(let title, let subtitle, let body): "\"" + [title, subtitle, body].compactMap { $0 }.joined(separator: ": ") + "\""
        case .deviceLocalized(let key, _, let titleKey, _): [key.map { "loc-key \($0)" }, titleKey.map { "title-loc-key \($0)" }].compactMap { $0 }.joined(separator: ", ")
        case .none: "no alert"
        }
        return "\(what) to \(to)"
    }
}
