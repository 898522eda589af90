import Foundation
import HeraldCore
import HeraldProviderAPI
import OpenAPIRuntime

// MARK: writing responses

extension ProviderAPI {
    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000) }

    static func registration(_ r: Registration, badge: Int?) -> Components.Schemas.Registration {
        .init(
            token: r.token, topic: r.topic, language: r.language, timeZone: r.timeZone, userId: r.userID, tags: r.tags, registeredAt: r.registeredAt,
            badge: badge ?? 0, webPush: r.webPush.map { .init(endpoint: $0.endpoint, url: $0.url) })
    }

    static func template(_ t: MessageTemplate) -> Components.Schemas.Template {
        .init(id: t.id, arguments: t.argumentCount, translations: .init(additionalProperties: t.translations.mapValues { text in
            .init(title: text.title, subtitle: text.subtitle, body: text.body)
        }))
    }

    static func report(_ report: SendReport, replayed: Bool) -> Components.Schemas.SendReport {
        .init(
            id: report.id, createdAt: report.createdAt, replayed: replayed, counts: .init(additionalProperties: report.counts),
            pruned: report.pruned, scheduleId: report.scheduleID,
            deliveries: report.deliveries.map { d in
                .init(
                    token: d.token, language: d.language, status: d.status, reason: d.reason, apnsId: d.apnsID, location: d.location,
                    attempts: d.attempts, error: d.error)
            })
    }

    /// `{"counts": {"delivered": 3, …}, "tokens": {"<token>": "delivered", …}}`.
    static func receipts(_ statuses: [String: String]) -> Components.Schemas.Receipts {
        var counts: [String: Int] = [:]
        for status in statuses.values { counts[status, default: 0] += 1 }
        return .init(counts: .init(additionalProperties: counts), tokens: .init(additionalProperties: statuses))
    }

    static func timing(_ timing: ScheduleTiming) -> Components.Schemas.Timing {
        switch timing {
        case .instant(let at): return .init(at: date(at))
        case .wallClock(let rule):
            func pad(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
            var t = Components.Schemas.Timing(
                time: "\(pad(rule.hour)):\(pad(rule.minute))", timeZone: rule.timeZone, from: rule.from?.description, until: rule.until?.description)
            switch rule.repeats {
            case .once: t._repeat = .once
            case .daily: t._repeat = .daily
            case .weekly(let days):
                t._repeat = .weekly
                t.weekdays = days.compactMap { .init(rawValue: weekdayNames[$0 - 1]) }
            case .monthly(let day):
                t._repeat = .monthly
                t.day = day
            }
            return t
        }
    }

    static func schedule(_ status: ScheduleStatus, runs: Bool = true) throws -> Components.Schemas.Schedule {
        let s = status.schedule
        let send = try JSONDecoder().decode(Components.Schemas.Schedule.SendPayload.self, from: JSONEncoder().encode(s.send))
        return .init(
            id: s.id, state: .init(rawValue: s.state.rawValue) ?? .active, createdAt: date(s.createdAt), timing: timing(s.timing),
            send: send, next: .init(additionalProperties: status.next.mapValues(date)),
            counts: .init(additionalProperties: status.counts), runCount: status.runs.count,
            runs: runs ? status.runs.map { run in
                .init(zone: run.zone, localDate: run.localDate?.description, dueAt: date(run.dueAt), startedAt: run.startedAt,
                      finishedAt: run.finishedAt, outcome: .init(rawValue: run.outcome.rawValue) ?? .sent, sendId: run.sendID,
                      counts: .init(additionalProperties: run.counts), error: run.error)
            } : nil)
    }
}
