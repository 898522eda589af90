import Foundation
import HeraldCore

/// A local notification request as an app adds it.
public struct LocalRequest: Sendable, Hashable {
    public var id: String
    /// What is shown (title, body, badge, sound, category, thread, userInfo, …), as JSON.
    public var content: JSONValue
    /// `nil` delivers at once.
    public var trigger: NotificationTrigger?

    public init(id: String, content: JSONValue, trigger: NotificationTrigger?) {
        self.id = id
        self.content = content
        self.trigger = trigger
    }
}

/// One firing of a request.
public struct LocalFiring: Sendable, Hashable {
    public var request: LocalRequest
    /// Milliseconds since 1970.
    public var atMilliseconds: Int64
    /// The device's zone at that moment.
    public var timeZone: TimeZone
}

/// The pending local notifications of one app and the rules that move them: replacement by
/// identifier, the 64 soonest kept (the rest dropped for good), firing by time, time-zone
/// changes, and region crossings. A pure state machine: every call takes the current instant;
/// it never reads a clock or sleeps. The device's run loop asks ``nextDue`` and sleeps until then.
public struct LocalScheduler: Sendable {
    /// How many pending requests an app keeps (reference §4).
    public static let pendingLimit = 64
    /// Core Location monitors at most 20 regions per app ("Monitoring shared resources: … no app
    /// may monitor more than 20 regions simultaneously", Apple's Core Location documentation);
    /// location triggers are regions it monitors.
    public static let monitoredRegionLimit = 20

    public struct Pending: Sendable, Hashable {
        public var request: LocalRequest
        public var scheduledAt: Int64
        /// The next fire by time; `nil` for location triggers.
        public var nextFire: Int64?
        /// Inside the region at the last known position (location triggers), `nil` before a fix.
        public var inside: Bool?
        /// Order of addition, for ties.
        var sequence: Int
    }

    public private(set) var pending: [Pending] = []
    public private(set) var timeZone: TimeZone
    public private(set) var locationServicesEnabled = true
    public private(set) var locationAuthorized = true
    private var sequence = 0

    public init(timeZone: TimeZone) { self.timeZone = timeZone }

    /// The soonest time-based fire, for the run loop to sleep until.
    public var nextDue: Int64? { pending.compactMap(\.nextFire).min() }

    /// Adds (or replaces, by identifier) a request at `now`. A request without a trigger, or
    /// with a fire date already past, is delivered at once (returned) and not kept. Then only the
    /// soonest-firing 64 stay pending; the others are dropped for good and returned in `dropped`.
    public mutating func add(_ request: LocalRequest, now: Int64) throws(TriggerError) -> (delivered: [LocalFiring], dropped: [LocalRequest]) {
        try request.trigger?.validate()
        if case .location? = request.trigger {
            let others = pending.filter { entry in
                if case .location? = entry.request.trigger { return entry.request.id != request.id }
                return false
            }.count
            if others >= Self.monitoredRegionLimit {
                throw TriggerError("kCLErrorRegionMonitoringFailure (CLError code 5): the app already monitors \(Self.monitoredRegionLimit) regions, the most Core Location allows an app; remove a location request first")
            }
        }
        pending.removeAll { $0.request.id == request.id }
        guard let trigger = request.trigger else {
            return ([LocalFiring(request: request, atMilliseconds: now, timeZone: timeZone)], [])
        }
        if case .date(let fireDate, let unit) = trigger, unit == nil,
           let first = trigger.occurrence(fireDate, unit: nil, index: 0, timeZone: timeZone), first <= now {
            return ([LocalFiring(request: request, atMilliseconds: now, timeZone: timeZone)], [])
        }
        sequence += 1
        pending.append(Pending(
            request: request, scheduledAt: now, nextFire: trigger.nextFire(after: now, scheduledAt: now, timeZone: timeZone),
            inside: nil, sequence: sequence))
        return ([], enforceLimit())
    }

    /// Keeps the 64 soonest (a repeating request counts once, by its next fire; location
    /// requests, which have no fire time, rank last), dropping the others for good.
    private mutating func enforceLimit() -> [LocalRequest] {
        guard pending.count > Self.pendingLimit else { return [] }
        let ranked = pending.sorted { a, b in
            switch (a.nextFire, b.nextFire) {
            case let (x?, y?): return x != y ? x < y : a.sequence < b.sequence
            case (_?, nil): return true
            case (nil, _?): return false
            case (nil, nil): return a.sequence < b.sequence
            }
        }
        let kept = Set(ranked.prefix(Self.pendingLimit).map(\.sequence))
        let dropped = pending.filter { !kept.contains($0.sequence) }.map(\.request)
        pending.removeAll { !kept.contains($0.sequence) }
        return dropped
    }

    /// Puts back a saved pending request as it was (its scheduling instant and next fire).
    public mutating func restore(_ request: LocalRequest, scheduledAt: Int64, nextFire: Int64?) {
        pending.removeAll { $0.request.id == request.id }
        sequence += 1
        pending.append(Pending(request: request, scheduledAt: scheduledAt, nextFire: nextFire, inside: nil, sequence: sequence))
    }

    public mutating func remove(ids: Set<String>) { pending.removeAll { ids.contains($0.request.id) } }
    public mutating func removeAll() { pending.removeAll() }

    /// Fires everything due at or before `now`, in order of fire time (then of addition).
    public mutating func fireDue(upTo now: Int64) -> [LocalFiring] {
        var fired: [LocalFiring] = []
        while let index = dueIndex(upTo: now) {
            let entry = pending[index]
            guard let at = entry.nextFire, let trigger = entry.request.trigger else { break }
            fired.append(LocalFiring(request: entry.request, atMilliseconds: at, timeZone: timeZone))
            if trigger.repeats, let next = nextFire(of: entry, after: at) {
                pending[index].nextFire = next
            } else {
                pending.remove(at: index)
            }
        }
        return fired
    }

    private func dueIndex(upTo now: Int64) -> Int? {
        var best: Int?
        for (i, entry) in pending.enumerated() {
            guard let at = entry.nextFire, at <= now else { continue }
            if let b = best, let bAt = pending[b].nextFire, bAt < at || (bAt == at && pending[b].sequence < entry.sequence) { continue }
            best = i
        }
        return best
    }

    private func nextFire(of entry: Pending, after: Int64) -> Int64? {
        entry.request.trigger?.nextFire(after: after, scheduledAt: entry.scheduledAt, timeZone: timeZone)
    }

    /// The device moved to another zone at `now`: wall-clock and calendar triggers are resolved
    /// again; elapsed-time and absolute ones keep their instants.
    public mutating func setTimeZone(_ zone: TimeZone, now: Int64) {
        timeZone = zone
        for i in pending.indices {
            guard let trigger = pending[i].request.trigger else { continue }
            switch trigger {
            case .calendar, .date(.wallClock, _):
                pending[i].nextFire = nextFire(of: pending[i], after: now)
            default: continue
            }
        }
        // A wall-clock one-shot whose time, in the new zone, is already past fires now.
        for i in pending.indices {
            if case .date(.wallClock(let time), nil)? = pending[i].request.trigger, pending[i].nextFire == nil,
               let at = NotificationTrigger.resolve(time.components, in: zone), at <= now {
                pending[i].nextFire = now
            }
        }
        pending.removeAll { entry in
            if case .location = entry.request.trigger { return false }
            return entry.nextFire == nil
        }
    }

    /// Location services on or off; location authorization granted or not. While either is off,
    /// region crossings deliver nothing (and the last position is forgotten).
    public mutating func setLocation(servicesEnabled: Bool? = nil, authorized: Bool? = nil) {
        if let servicesEnabled { locationServicesEnabled = servicesEnabled }
        if let authorized { locationAuthorized = authorized }
        if !locationServicesEnabled || !locationAuthorized {
            for i in pending.indices { pending[i].inside = nil }
        }
    }

    /// The device is at a position at `now`: region entries and exits fire. The first fix only
    /// establishes where the device is (no crossing yet).
    public mutating func updateLocation(latitude: Double, longitude: Double, now: Int64) -> [LocalFiring] {
        guard locationServicesEnabled && locationAuthorized else { return [] }
        var fired: [LocalFiring] = []
        var removed: Set<Int> = []
        for i in pending.indices {
            guard case .location(let region, let onEntry, let onExit, let repeats)? = pending[i].request.trigger else { continue }
            let inside = region.contains(latitude: latitude, longitude: longitude)
            defer { pending[i].inside = inside }
            guard let was = pending[i].inside, was != inside else { continue }
            if (inside && onEntry) || (!inside && onExit) {
                fired.append(LocalFiring(request: pending[i].request, atMilliseconds: now, timeZone: timeZone))
                if !repeats { removed.insert(pending[i].sequence) }
            }
        }
        pending.removeAll { removed.contains($0.sequence) }
        return fired
    }
}
