/// What the provider service keeps: registrations, templates, sends and schedules with their runs.
///
/// Every operation is asynchronous: the service actor suspends while storage works instead of
/// holding its thread. Two implementations: ``SQLiteProviderStore`` (GRDB, in a data directory:
/// what `herald provider --data-dir` runs on) and ``InMemoryProviderStore`` (tests, embedding).
/// Both keep the same orders, filters and conflicts; the service's tests run against both.
public protocol ProviderStore: Sendable {
    // MARK: registrations

    /// Stores registrations (replacing those with the same token) in one step.
    func upsert(_ registrations: [Registration]) async throws
    /// Removes a token's registration; `false` when there was none.
    func deleteRegistration(_ token: String) async throws -> Bool
    /// Removes a token the gateway reported unregistered at `at`, unless the app registered it
    /// again after that; `true` when it was removed.
    func prune(_ token: String, unregisteredAt at: Int64) async throws -> Bool
    /// A token's registration (tokens are stored lowercase).
    func registration(token: String) async throws -> Registration?
    /// The registrations a send's target names, in token order, only those in `zone` when
    /// given; `nil` for a token that has no registration at all.
    func registrations(for target: SendTarget, zone: String?) async throws -> [Registration]?
    /// One page of registrations in token order, after the token `after`, at most
    /// ``ProviderStoreLimits/maximumPage``.
    func registrations(_ filter: RegistrationFilter, after: String?, limit: Int) async throws -> [Registration]
    /// The topics registrations are for, sorted.
    func topics() async throws -> [String]
    /// The time zones registrations are in, sorted.
    func zones() async throws -> [String]
    /// How many registrations there are, by language, zone and topic.
    func registrationCounts() async throws -> RegistrationCounts
    func registrationCount() async throws -> Int

    // MARK: badge counts

    /// Badge counts by key (``Registration/badgeKey``: a user's, or a registration's own); a key
    /// never set is 0 and absent from the answer.
    func badges(keys: [String]) async throws -> [String: Int]
    /// Sets each key's count to `value`, in one step.
    func setBadges(keys: [String], to value: Int) async throws
    /// Adds `increment` to each key's count in one step, stopping at ``BadgeCount/maximum``;
    /// returns the new counts.
    func incrementBadges(keys: [String], by increment: Int) async throws -> [String: Int]

    // MARK: templates

    func put(_ template: MessageTemplate) async throws
    func template(_ id: String) async throws -> MessageTemplate?
    /// One page of templates in id order, after the id `after`.
    func templates(after: String?, limit: Int) async throws -> [MessageTemplate]
    /// `false` when there was no such template.
    func deleteTemplate(_ id: String) async throws -> Bool

    // MARK: sends

    /// Stores a finished send's report in one step (a schedule's run).
    func save(_ report: SendReport, idempotencyKey: String?) async throws
    /// Records a send as started before its first push. `false` when another send already holds
    /// `idempotencyKey` (nothing is written then).
    func beginSend(id: String, idempotencyKey: String?, fingerprint: String?, createdAt: Int64) async throws -> Bool
    /// Stores a started send's report and marks it done.
    func finishSend(_ report: SendReport) async throws
    /// Marks the sends and schedule runs a stopped service left started as interrupted; returns
    /// how many of each.
    func markInterrupted(at now: Int64) async throws -> (sends: Int, runs: Int)
    /// What the send under an idempotency key was: its state, its request's fingerprint (`nil`
    /// for sends stored before fingerprints were kept) and its report.
    func sendRecord(idempotencyKey: String) async throws -> (state: SendState, fingerprint: String?, report: SendReport)?
    /// One page of sends, newest first (creation time, then id), after the send `after`; only a
    /// schedule's runs when `scheduleID` is given.
    func sends(after: String?, scheduleID: String?, limit: Int) async throws -> [SendSummary]
    func sendExists(id: String) async throws -> Bool
    func send(id: String) async throws -> SendReport?

    // MARK: schedules

    func put(_ schedule: Schedule) async throws
    func schedule(_ id: String) async throws -> Schedule?
    /// Schedules, oldest first (creation time, then id); only those in `state` when given.
    func schedules(state: Schedule.State?) async throws -> [Schedule]
    /// Stores a run, replacing the one of the same schedule, zone and due instant.
    func save(_ run: ScheduleRun) async throws
    /// A schedule's runs, in due order (then zone).
    func runs(scheduleID: String) async throws -> [ScheduleRun]
    /// The due instant of each zone's last run of a schedule: where its plan resumes after a restart.
    func lastRuns(scheduleID: String) async throws -> [String: Int64]
}

extension ProviderStore {
    public func upsert(_ registration: Registration) async throws { try await upsert([registration]) }

    /// A user's registrations, optionally only those in one time zone.
    public func registrations(user: String, zone: String? = nil) async throws -> [Registration] {
        try await registrations(for: .user(user), zone: zone) ?? []
    }
}

/// A badge count's bounds: what an app's icon badge can show (`aps.badge` is an Int32 on the device).
public enum BadgeCount {
    public static let maximum = Int(Int32.max)
    /// The most one send may add.
    public static let maximumIncrement = 10_000

    static func adding(_ increment: Int, to count: Int) -> Int { min(maximum, max(0, count) + increment) }
}

extension Registration {
    /// Whose badge count this registration shows: its user's (`user:<id>`: every device of a user
    /// shows one count) or, without a user, its own (`token:<token>`).
    public var badgeKey: String { userID.map { "user:" + $0 } ?? "token:" + token }
}

/// Bounds every store keeps the same.
public enum ProviderStoreLimits {
    /// The most items one page of a list holds.
    public static let maximumPage = 1_000

    /// A page size as asked, clamped to 1…``maximumPage``.
    static func page(_ limit: Int) -> Int { min(max(limit, 1), maximumPage) }
}

/// How many registrations there are by language, by time zone and by topic (most first, then by
/// name).
public struct RegistrationCounts: Sendable, Hashable {
    public var total = 0
    public var byLanguage: [(String, Int)] = []
    public var byZone: [(String, Int)] = []
    public var byTopic: [(String, Int)] = []

    public init() {}

    public static func == (a: Self, b: Self) -> Bool {
        a.total == b.total && a.byLanguage.elementsEqual(b.byLanguage, by: ==) && a.byZone.elementsEqual(b.byZone, by: ==)
            && a.byTopic.elementsEqual(b.byTopic, by: ==)
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(total) }
}

extension Registration {
    /// Whether a segment's tags and languages select this registration: every tag required, and
    /// the language or its base language among `languages` (any language when empty; both
    /// lowercase).
    func isInSegment(tags required: Set<String>, languages wanted: Set<String>) -> Bool {
        let language = language.lowercased()
        let base = language.split(separator: "-").first.map(String.init) ?? language
        return required.isSubset(of: Set(tags)) && (wanted.isEmpty || wanted.contains(language) || wanted.contains(base))
    }

    /// Whether a list's language filter (`fr` matches `fr` and `fr-CA`, lowercase) selects it.
    func matchesLanguage(_ filter: String) -> Bool {
        let language = language.lowercased()
        return language == filter || language.hasPrefix(filter + "-")
    }
}
