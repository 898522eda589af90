import Foundation
import HeraldCore

/// One Live Activity of an app, as ActivityKit keeps it: its attributes (fixed at start), its
/// content state (replaced by each update), and where it is in its life.
public struct LiveActivity: Sendable, Hashable, Codable {
    public enum State: String, Sendable, Hashable, Codable {
        /// On the Lock Screen and in the Dynamic Island, up to date.
        case active
        /// Its `stale-date` passed without an update: shown as out of date.
        case stale
        /// Ended by its app or a push: shows its final content until dismissed.
        case ended
        /// Removed from the screen (its `dismissal-date`, or four hours after it ended).
        case dismissed
    }

    /// How pushes reach the activity.
    public enum PushMode: Sendable, Hashable, Codable {
        /// No remote updates.
        case none
        /// Through its own update token.
        case token
        /// Through a broadcast channel the device subscribes to.
        case channel(String)
    }

    public var id: String
    public var attributesType: String
    public var attributes: [String: JSONValue]
    public var contentState: [String: JSONValue]
    public var state: State
    /// UNIX seconds.
    public var staleDate: Int64?
    /// UNIX seconds: when an ended activity leaves the screen.
    public var dismissalDate: Int64?
    public var relevanceScore: Double?
    /// The `timestamp` of the last update applied (UNIX seconds): older ones are ignored.
    public var timestamp: Int64
    public var pushMode: PushMode
    public var updateToken: DeviceToken?
    public var startedAtMilliseconds: Int64
    public var endedAtMilliseconds: Int64?
}

/// What happened to an app's Live Activities (reported as ``RuntimeEvent/liveActivity(app:_:)``).
public enum LiveActivityEvent: Sendable, Hashable {
    /// The app's push-to-start token, from the gateway.
    case pushToStartToken(DeviceToken)
    /// An activity started, by a push-to-start push (`apnsID`) or by the app (`apnsID` nil).
    case started(LiveActivity, apnsID: String?, alert: String?)
    /// The gateway issued an activity its update token: the app sends it to its provider.
    case updateToken(activityID: String, DeviceToken)
    /// A push updated the activity. `throttled`: a priority-10 update over the hourly budget,
    /// applied without its alert (as priority 5).
    case updated(LiveActivity, apnsID: String, alert: String?, throttled: Bool)
    case stale(LiveActivity)
    case ended(LiveActivity, apnsID: String?, alert: String?)
    case dismissed(LiveActivity)
    /// A Live Activity push that changed nothing, and why (ActivityKit drops it silently).
    case ignored(apnsID: String, reason: String)
}

/// An app's Live Activities and the tokens that reach them: the rules of ActivityKit that the
/// runtime applies, without time of its own (the runtime passes `now` and arms alarms for
/// ``nextDue``).
struct LiveActivityBook {
    /// Activities running at once per app (ActivityKit's limit is a handful; Herald keeps 5).
    static let maximumRunning = 5
    /// Priority-10 updates per activity and hour before updates are throttled (Herald's choice:
    /// Apple documents a budget without a number; apps with frequent updates get more).
    static let highPriorityBudgetPerHour = 10
    /// How long an ended activity stays without a `dismissal-date` (reference §4: up to 4 h).
    static let endedLingerMilliseconds: Int64 = 4 * 3_600_000
    /// Dismissed activities remembered for `activities` listings.
    static let dismissedKept = 16

    private(set) var activities: [LiveActivity] = []
    var pushToStartToken: DeviceToken?
    /// Subscription tokens of broadcast channels.
    var channelTokens: [DeviceToken: String] = [:]
    /// Times (ms) of priority-10 updates within the last hour, per activity.
    private var highPriority: [String: [Int64]] = [:]

    /// Something the connection must do for the book: ask for or give up a token or subscription.
    enum Request: Hashable {
        case wantUpdateToken(activityID: String)
        case dropUpdateToken(activityID: String)
        case subscribe(channel: String)
        case unsubscribe(channel: String)
    }

    var running: [LiveActivity] { activities.filter { $0.state == .active || $0.state == .stale } }

    func activity(_ id: String) -> LiveActivity? { activities.first { $0.id == id } }

    /// The soonest instant (ms) something happens without a push: a stale date or a dismissal.
    var nextDue: Int64? {
        activities.compactMap { a -> Int64? in
            switch a.state {
            case .active: a.staleDate.map { $0 &* 1000 }
            case .ended: a.dismissalDate.map { $0 &* 1000 }
            case .stale, .dismissed: nil
            }
        }.min()
    }

    // MARK: starting

    /// Starts an activity (by push-to-start or by the app).
    mutating func start(
        id: String, attributesType: String, attributes: [String: JSONValue], contentState: [String: JSONValue],
        staleDate: Int64?, relevanceScore: Double?, timestamp: Int64, pushMode: LiveActivity.PushMode, now: Int64
    ) throws(RuntimeError) -> (LiveActivity, [Request]) {
        guard running.count < Self.maximumRunning else {
            throw RuntimeError("the app already has \(Self.maximumRunning) Live Activities running, the most ActivityKit allows")
        }
        guard activity(id) == nil else { throw RuntimeError("an activity \(id) exists already") }
        var activity = LiveActivity(
            id: id, attributesType: attributesType, attributes: attributes, contentState: contentState, state: .active,
            staleDate: staleDate, dismissalDate: nil, relevanceScore: relevanceScore, timestamp: timestamp,
            pushMode: pushMode, updateToken: nil, startedAtMilliseconds: now, endedAtMilliseconds: nil)
        if let stale = staleDate, stale &* 1000 <= now { activity.state = .stale }
        activities.append(activity)
        var requests: [Request] = []
        switch pushMode {
        case .none: break
        case .token: requests.append(.wantUpdateToken(activityID: id))
        case .channel(let channel):
            if !running.dropLast().contains(where: { $0.pushMode == .channel(channel) }) { requests.append(.subscribe(channel: channel)) }
        }
        return (activity, requests)
    }

    /// The gateway issued an activity's update token.
    mutating func setUpdateToken(_ token: DeviceToken, for id: String) -> Bool {
        guard let index = activities.firstIndex(where: { $0.id == id }), activities[index].state != .dismissed else { return false }
        activities[index].updateToken = token
        return true
    }

    /// The activities a push sent to `token` is for: one activity for its update token, every
    /// running activity on the channel for a subscription token.
    func targets(of token: DeviceToken) -> [String] {
        if let id = activities.first(where: { $0.updateToken == token })?.id { return [id] }
        if let channel = channelTokens[token] {
            return activities.filter { $0.pushMode == .channel(channel) && $0.state != .dismissed }.map(\.id)
        }
        return []
    }

    // MARK: updates

    enum Outcome {
        case updated(LiveActivity, throttled: Bool)
        case ended(LiveActivity, dismissedNow: Bool)
        case ignored(String)
    }

    /// Applies an update or end push to one activity, in timestamp order.
    mutating func apply(_ push: LiveActivityUpdate, priority: Priority, to id: String, now: Int64) -> (Outcome, [Request]) {
        guard let index = activities.firstIndex(where: { $0.id == id }) else { return (.ignored("no activity \(id)"), []) }
        var activity = activities[index]
        switch activity.state {
        case .ended, .dismissed: return (.ignored("activity \(id) has ended"), [])
        case .active, .stale: break
        }
        guard push.timestamp > activity.timestamp else {
            return (.ignored("out of order: timestamp \(push.timestamp) is not after \(activity.timestamp), the last applied"), [])
        }
        activity.timestamp = push.timestamp
        if let state = push.contentState { activity.contentState = state }
        if let score = push.relevanceScore { activity.relevanceScore = score }
        switch push.event {
        case .start:
            return (.ignored("a start goes to the app's push-to-start token, not to an activity"), [])
        case .update:
            activity.staleDate = push.staleDate
            activity.state = (push.staleDate.map { $0 &* 1000 <= now } ?? false) ? .stale : .active
            var throttled = false
            if priority == .immediate {
                var recent = highPriority[id, default: []].filter { now - $0 < 3_600_000 }
                if recent.count >= Self.highPriorityBudgetPerHour { throttled = true } else { recent.append(now) }
                highPriority[id] = recent
            }
            activities[index] = activity
            return (.updated(activity, throttled: throttled), [])
        case .end:
            activity.state = .ended
            activity.endedAtMilliseconds = now
            activity.dismissalDate = push.dismissalDate ?? (now + Self.endedLingerMilliseconds) / 1000
            var requests = tokenRequestsOnEnd(activity)
            let dismissedNow = (activity.dismissalDate ?? 0) &* 1000 <= now
            if dismissedNow {
                activity.state = .dismissed
                requests += channelRequestsOnDismiss(activity)
            }
            activities[index] = activity
            trimDismissed()
            return (.ended(activity, dismissedNow: dismissedNow), requests)
        }
    }

    /// The app ends one of its activities.
    mutating func end(_ id: String, contentState: [String: JSONValue]?, dismissalDate: Int64?, now: Int64) throws(RuntimeError) -> (LiveActivity, Bool, [Request]) {
        guard let activity = activity(id), activity.state == .active || activity.state == .stale else {
            throw RuntimeError("no running activity \(id)")
        }
        let update = LiveActivityUpdate(ending: activity, contentState: contentState, dismissalDate: dismissalDate)
        guard case (.ended(let ended, let dismissedNow), let requests) = apply(update, priority: .conservePower, to: id, now: now) else {
            throw RuntimeError("activity \(id) could not end")
        }
        return (ended, dismissedNow, requests)
    }

    private func tokenRequestsOnEnd(_ activity: LiveActivity) -> [Request] {
        activity.pushMode == .token ? [.dropUpdateToken(activityID: activity.id)] : []
    }

    private func channelRequestsOnDismiss(_ activity: LiveActivity) -> [Request] {
        guard case .channel(let channel) = activity.pushMode else { return [] }
        let others = activities.contains { $0.id != activity.id && $0.pushMode == activity.pushMode && $0.state != .dismissed }
        return others ? [] : [.unsubscribe(channel: channel)]
    }

    // MARK: time

    /// What happens by `now` without a push: stale dates pass, ended activities are dismissed.
    mutating func fireDue(now: Int64) -> (events: [LiveActivityEvent], requests: [Request]) {
        var events: [LiveActivityEvent] = []
        var requests: [Request] = []
        for index in activities.indices {
            let activity = activities[index]
            switch activity.state {
            case .active:
                if let stale = activity.staleDate, stale &* 1000 <= now {
                    activities[index].state = .stale
                    events.append(.stale(activities[index]))
                }
            case .ended:
                if let dismissal = activity.dismissalDate, dismissal &* 1000 <= now {
                    activities[index].state = .dismissed
                    events.append(.dismissed(activities[index]))
                    requests += channelRequestsOnDismiss(activities[index])
                }
            case .stale, .dismissed: break
            }
        }
        trimDismissed()
        return (events, requests)
    }

    private mutating func trimDismissed() {
        let dismissed = activities.filter { $0.state == .dismissed }
        guard dismissed.count > Self.dismissedKept else { return }
        let drop = Set(dismissed.prefix(dismissed.count - Self.dismissedKept).map(\.id))
        activities.removeAll { drop.contains($0.id) }
        for id in drop { highPriority[id] = nil }
    }

    // MARK: saving

    struct Saved: Codable {
        var activities: [LiveActivity]
        var pushToStartToken: String?
        var channelTokens: [String: String]
        var highPriority: [String: [Int64]]
    }

    var saved: Saved {
        Saved(
            activities: activities, pushToStartToken: pushToStartToken?.description,
            channelTokens: Dictionary(uniqueKeysWithValues: channelTokens.map { ($0.key.description, $0.value) }),
            highPriority: highPriority)
    }

    init() {}

    init(saved: Saved) {
        activities = saved.activities
        pushToStartToken = saved.pushToStartToken.flatMap(DeviceToken.init(hex:))
        channelTokens = Dictionary(uniqueKeysWithValues: saved.channelTokens.compactMap { key, value in DeviceToken(hex: key).map { ($0, value) } })
        highPriority = saved.highPriority
    }

    /// What the connection must keep for the book at every connection: update tokens of
    /// running token activities and subscriptions of running channel activities.
    var standingRequests: [Request] {
        var requests: [Request] = []
        for activity in activities {
            switch (activity.state, activity.pushMode) {
            case (.active, .token), (.stale, .token): requests.append(.wantUpdateToken(activityID: activity.id))
            case (.active, .channel(let c)), (.stale, .channel(let c)), (.ended, .channel(let c)):
                if !requests.contains(.subscribe(channel: c)) { requests.append(.subscribe(channel: c)) }
            default: break
            }
        }
        return requests
    }
}

extension LiveActivityUpdate {
    /// The end an app asks for, as a push would carry it.
    init(ending activity: LiveActivity, contentState: [String: JSONValue]?, dismissalDate: Int64?) {
        self.init(event: .end, timestamp: activity.timestamp + 1, contentState: contentState, dismissalDate: dismissalDate)
    }
}
