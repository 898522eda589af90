import HeraldCore

/// Silent (background) pushes on the device (reference user-notifications §7).
public enum SilentPushes {
    /// How long an app woken for a silent push has to report its result.
    public static let timeLimitMilliseconds: Int64 = 30_000

    public enum FetchResult: Int, Sendable, Hashable { case newData = 0, noData = 1, failed = 2 }

    /// The app's lifecycle as far as background work goes.
    public enum Lifecycle: Sendable, Hashable {
        case foreground, background, suspended
        /// Terminated by the system (memory, reboot): a silent push launches it in the background.
        case terminatedBySystem
        /// The user swiped it away: no silent pushes until the user launches it again.
        case forceQuitByUser
    }

    public enum Wake: Sendable, Hashable {
        /// The fetch handler runs now (the app was running or suspended).
        case handleNow
        /// The app is launched in the background first, then the fetch handler runs.
        case launchInBackground
        /// Not delivered (the reason says why).
        case notDelivered(String)
    }

    /// A silent push: `aps` holds `content-available: 1` and no alert, sound or badge.
    /// The one model decides (``APS/isSilent``), reading the payload as a device does.
    public static func isSilent(_ payload: JSONValue) -> Bool {
        NotificationPayload(lenient: payload).isSilent
    }

    public static func wake(_ lifecycle: Lifecycle) -> Wake {
        switch lifecycle {
        case .foreground, .background, .suspended: .handleNow
        case .terminatedBySystem: .launchInBackground
        case .forceQuitByUser: .notDelivered("the user force-quit the app; silent pushes wait until the user launches it")
        }
    }

    /// How the fetch ended: the result the app reported in time, or `nil` when it did not report
    /// within the time limit (the system terminates it).
    public static func outcome(startedAt: Int64, reported: (result: FetchResult, at: Int64)?) -> FetchResult? {
        guard let reported, reported.at - startedAt <= timeLimitMilliseconds else { return nil }
        return reported.result
    }

    /// The device's own budget for silent pushes per app: `count` per hour; over it, the newest is
    /// held (older held ones dropped), discarded if the user force-quits the app, handed over at
    /// the next launch or when the budget allows.
    public struct Budget: Sendable {
        public let count: Int
        public let windowMilliseconds: Int64
        private var sent: [Int64] = []
        public private(set) var held: JSONValue?
        public private(set) var dropped = 0

        public init(count: Int = 3, windowMilliseconds: Int64 = 3_600_000) {
            self.count = count
            self.windowMilliseconds = windowMilliseconds
        }

        /// A silent push arrives: returns it if it may be handled now, else holds it.
        public mutating func receive(_ payload: JSONValue, now: Int64) -> JSONValue? {
            sent.removeAll { $0 <= now - windowMilliseconds }
            if sent.count < count {
                sent.append(now)
                return payload
            }
            if held != nil { dropped += 1 }
            held = payload
            return nil
        }

        /// The held push, if the budget allows it now.
        public mutating func release(now: Int64) -> JSONValue? {
            guard let payload = held else { return nil }
            sent.removeAll { $0 <= now - windowMilliseconds }
            guard sent.count < count else { return nil }
            sent.append(now)
            held = nil
            return payload
        }

        /// When the held push may be released (the oldest use leaves the window); `nil` when none is held.
        public var nextRelease: Int64? {
            guard held != nil else { return nil }
            guard sent.count >= count, let oldest = sent.min() else { return Int64.min }
            return oldest + windowMilliseconds
        }

        public mutating func userForceQuit() {
            if held != nil { dropped += 1 }
            held = nil
        }

        /// The user launched the app: what was held is handed over.
        public mutating func launched() -> JSONValue? {
            defer { held = nil }
            return held
        }

        /// What the budget has used and holds, kept with the app's state so that a held push
        /// (already acked to the gateway) survives a restart.
        public struct Saved: Codable, Sendable {
            public var sent: [Int64]
            public var held: JSONValue?
            public var dropped: Int
        }

        public var saved: Saved { Saved(sent: sent, held: held, dropped: dropped) }

        /// Puts saved use back: the `count` newest uses inside the window and the held push.
        public mutating func restore(_ saved: Saved, now: Int64) {
            sent = Array(saved.sent.filter { $0 > now - windowMilliseconds && $0 <= now }.sorted().suffix(count))
            held = saved.held
            dropped = max(0, saved.dropped)
        }
    }
}

/// The notification service extension (reference §8): may rewrite a remote alert with
/// `mutable-content: 1` within about 30 seconds.
/// What a service extension hands back: the payload to show and, for a message from a person,
/// its communication context (iOS 15: `content.updating(from: INSendMessageIntent)`).
public struct ExtensionContent: Sendable, Hashable {
    public var payload: JSONValue
    public var communication: CommunicationContext?
    public init(payload: JSONValue, communication: CommunicationContext? = nil) {
        self.payload = payload
        self.communication = communication
    }
}

public enum ServiceExtension {
    public static let timeLimitMilliseconds: Int64 = 30_000

    /// Runs only for remote alerts with `mutable-content: 1`: never for silent, sound-only or badge-only pushes.
    public static func runs(for payload: JSONValue) -> Bool {
        runs(for: NotificationPayload(lenient: payload))
    }

    /// The same, for a payload already read.
    public static func runs(for payload: NotificationPayload) -> Bool {
        payload.aps.mutableContent == 1 && payload.aps.hasAlertText
    }

    /// What is shown: the extension's content if it called its handler in time and kept an
    /// alert, else the original; `timeWillExpire` tells whether the extension was warned.
    public static func outcome(
        original: JSONValue, startedAt: Int64, handlerCalled: (content: ExtensionContent, at: Int64)?
    ) -> (shown: ExtensionContent, timeWillExpire: Bool) {
        let decided = outcome(original: NotificationPayload(lenient: original), startedAt: startedAt, handlerCalled: handlerCalled)
        guard decided.keptChanges, let handlerCalled else { return (ExtensionContent(payload: original), decided.timeWillExpire) }
        return (handlerCalled.content, decided.timeWillExpire)
    }

    /// The same, for an original already read: `payload` is what is shown, read once (the
    /// extension's when it kept its changes, else the original), `communication` the
    /// extension's context when its changes are kept.
    public static func outcome(
        original: NotificationPayload, startedAt: Int64, handlerCalled: (content: ExtensionContent, at: Int64)?
    ) -> (payload: NotificationPayload, communication: CommunicationContext?, keptChanges: Bool, timeWillExpire: Bool) {
        guard let handlerCalled, handlerCalled.at - startedAt <= timeLimitMilliseconds else { return (original, nil, false, true) }
        let changed = NotificationPayload(lenient: handlerCalled.content.payload)
        // Removing the alert text voids the changes.
        guard changed.aps.hasAlertText else { return (original, nil, false, false) }
        return (changed, handlerCalled.content.communication, true, false)
    }
}

/// Grouping and importance (reference §8).
public enum NotificationGrouping {
    /// The one model's level (passive, active, time-sensitive, critical).
    public typealias InterruptionLevel = APS.InterruptionLevel

    public struct Item: Sendable, Hashable {
        public var id: String
        public var threadID: String?
        public var relevance: Double
        public var level: InterruptionLevel
        public init(id: String, payload: JSONValue) {
            self.id = id
            let aps = NotificationPayload(lenient: payload).aps
            threadID = aps.threadID
            relevance = aps.effectiveRelevance
            level = aps.effectiveInterruptionLevel
        }
    }

    /// Groups by thread id (equal strings together; no thread id: the app's own group, keyed ""),
    /// each group ordered with its featured item (highest relevance, earliest on ties) first.
    public static func groups(_ items: [Item]) -> [String: [Item]] {
        var groups: [String: [Item]] = [:]
        for item in items { groups[item.threadID ?? "", default: []].append(item) }
        return groups.mapValues { group in
            group.enumerated().sorted { a, b in
                a.element.relevance != b.element.relevance ? a.element.relevance > b.element.relevance : a.offset < b.offset
            }.map(\.element)
        }
    }
}
