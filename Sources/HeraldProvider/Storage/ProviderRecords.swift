import Foundation
import GRDB
import HeraldCore

// The provider database's rows as GRDB records: each maps its table's columns (snake_case) to a
// model type of the service. Nested values (tags, counts, a report, a template, a schedule) are
// JSON text columns, which GRDB encodes and decodes for Codable records.

/// A row of `registrations`.
struct RegistrationRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "registrations"
    var token: String
    var topic: String
    var language: String
    var timeZone: String
    var userID: String?
    var tags: [String]
    var registeredAt: Int64
    /// JSON text; `NULL` for an APNs token.
    var webPush: WebPushRecipient?

    enum CodingKeys: String, CodingKey {
        case token, topic, language, tags
        case timeZone = "time_zone", userID = "user_id", registeredAt = "registered_at", webPush = "web_push"
    }
    enum Columns {
        static let token = Column(CodingKeys.token)
        static let topic = Column(CodingKeys.topic)
        static let language = Column(CodingKeys.language)
        static let timeZone = Column(CodingKeys.timeZone)
        static let userID = Column(CodingKeys.userID)
        static let registeredAt = Column(CodingKeys.registeredAt)
    }

    init(_ r: Registration) {
        (token, topic, language, timeZone, userID, tags, registeredAt) = (r.token, r.topic, r.language, r.timeZone, r.userID, r.tags, r.registeredAt)
        webPush = r.webPush
    }

    var model: Registration {
        Registration(
            token: token, topic: topic, language: language, timeZone: timeZone, userID: userID, tags: tags, registeredAt: registeredAt,
            webPush: webPush)
    }
}

/// A row of `templates`: the template as JSON.
struct TemplateRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "templates"
    var id: String
    var body: MessageTemplate

    enum Columns {
        static let id = Column("id")
    }
}

/// A row of `sends`: a send's state, the fingerprint of its request, and its report as JSON.
struct SendRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "sends"
    var id: String
    var idempotencyKey: String?
    var createdAt: Int64
    var report: SendReport
    var state: SendState
    var requestHash: String?
    var scheduleID: String?

    enum CodingKeys: String, CodingKey {
        case id, report, state
        case idempotencyKey = "idempotency_key", createdAt = "created_at", requestHash = "request_hash", scheduleID = "schedule_id"
    }
    enum Columns {
        static let id = Column(CodingKeys.id)
        static let idempotencyKey = Column(CodingKeys.idempotencyKey)
        static let state = Column(CodingKeys.state)
        static let report = Column(CodingKeys.report)
    }

    /// The `report` column's text, as the record encodes it (for the cached statements of a
    /// send's hot path).
    static func column(_ report: SendReport) throws -> String {
        String(decoding: try databaseJSONEncoder(for: CodingKeys.report.rawValue).encode(report), as: UTF8.self)
    }
}

/// A row of `schedules`: the schedule as JSON, with its state and creation time as columns to
/// list by.
struct ScheduleRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "schedules"
    var id: String
    var createdAt: Int64
    var state: Schedule.State
    var body: Schedule

    enum CodingKeys: String, CodingKey {
        case id, state, body
        case createdAt = "created_at"
    }
    enum Columns {
        static let id = Column(CodingKeys.id)
        static let createdAt = Column(CodingKeys.createdAt)
        static let state = Column(CodingKeys.state)
    }

    init(_ schedule: Schedule) {
        (id, createdAt, state, body) = (schedule.id, schedule.createdAt, schedule.state, schedule)
    }
}

/// A row of `schedule_runs`.
struct ScheduleRunRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "schedule_runs"
    var scheduleID: String
    var zone: String
    var dueAt: Int64
    var localDate: String?
    var startedAt: Int64
    var finishedAt: Int64
    var outcome: ScheduleRun.Outcome
    var sendID: String?
    var counts: [String: Int]
    var error: String?

    enum CodingKeys: String, CodingKey {
        case zone, outcome, counts, error
        case scheduleID = "schedule_id", dueAt = "due_at", localDate = "local_date", startedAt = "started_at",
             finishedAt = "finished_at", sendID = "send_id"
    }
    enum Columns {
        static let scheduleID = Column(CodingKeys.scheduleID)
        static let zone = Column(CodingKeys.zone)
        static let dueAt = Column(CodingKeys.dueAt)
        static let outcome = Column(CodingKeys.outcome)
        static let finishedAt = Column(CodingKeys.finishedAt)
        static let error = Column(CodingKeys.error)
    }

    init(_ run: ScheduleRun) {
        (scheduleID, zone, dueAt, localDate, startedAt, finishedAt, outcome, sendID, counts, error) =
            (run.scheduleID, run.zone, run.dueAt, run.localDate?.description, run.startedAt, run.finishedAt, run.outcome, run.sendID,
             run.counts, run.error)
    }

    var model: ScheduleRun {
        ScheduleRun(
            scheduleID: scheduleID, zone: zone, localDate: localDate.flatMap(LocalDate.init), dueAt: dueAt, startedAt: startedAt,
            finishedAt: finishedAt, outcome: outcome, sendID: sendID, counts: counts, error: error)
    }
}
