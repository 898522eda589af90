import Foundation
import HeraldCore

/// Live Activities through the runtime (ActivityKit's part of the device): push-to-start tokens,
/// activities started by push or by their app, updates in timestamp order, stale and dismissal
/// dates on the runtime's alarm, the priority-10 budget, and broadcast channel subscriptions.
extension DeviceRuntime {
    /// Connects the runtime to the device connection that asks the gateway for Live Activity
    /// tokens and channel subscriptions; what every app's activities need is asked for at once
    /// (and the connection asks again at every reconnection).
    public func attach(_ connection: DeviceConnection) {
        setRequester { want, keep in if keep { connection.want(want) } else { connection.drop(want) } }
    }

    /// What ``attach(_:)`` does (Live Activity tokens, channel and Web Push subscriptions), with any receiver of the requests (tests record them).
    func setRequester(_ requester: @escaping @Sendable (DeviceConnection.Want, _ keep: Bool) -> Void) {
        liveActivityRequester = requester
        for slot in apps.values.sorted(by: { $0.id < $1.id }) {
            if slot.widgetKit.wantsPushToStart { liveActivityRequester?(.activityToken(topic: slot.id, .pushToStart), true) }
            if slot.widgetKit.wantsWidgetPushes { liveActivityRequester?(.widgets(topic: slot.id), true) }
            perform(slot, slot.widgetKit.activities.standingRequests)
            webPushStandingRequests(slot)
            pushKitStandingRequests(slot)
        }
    }

    /// The app asks for its push-to-start token (`Activity<Attributes>.pushToStartTokenUpdates`):
    /// it arrives as a ``LiveActivityEvent/pushToStartToken(_:)`` event, now or once connected.
    public func requestPushToStartToken(app appID: String) throws(RuntimeError) {
        let slot = try slot(appID)
        if let token = slot.widgetKit.activities.pushToStartToken { emit(.liveActivity(app: appID, .pushToStartToken(token))) }
        guard !slot.widgetKit.wantsPushToStart else { return }
        slot.widgetKit.wantsPushToStart = true
        save(slot)
        liveActivityRequester?(.activityToken(topic: appID, .pushToStart), true)
    }

    /// An app's Live Activities, running and recently ended, oldest first.
    public func liveActivities(app appID: String) throws(RuntimeError) -> [LiveActivity] {
        try slot(appID).widgetKit.activities.activities
    }

    /// The app starts an activity (`Activity.request`): with `.token` it gets an update token from
    /// the gateway, with `.channel(id)` the device subscribes to that broadcast channel.
    public func startActivity(
        app appID: String, attributesType: String, attributes: [String: JSONValue], contentState: [String: JSONValue],
        staleDate: Int64? = nil, relevanceScore: Double? = nil, pushMode: LiveActivity.PushMode
    ) throws(RuntimeError) -> LiveActivity {
        let slot = try slot(appID)
        if case .channel(let channel) = pushMode, BroadcastChannelID(channel) == nil {
            throw RuntimeError("\"\(channel)\" is not a channel id (base64 of 16 bytes)")
        }
        let now = clock.nowMilliseconds()
        let (activity, requests) = try slot.widgetKit.activities.start(
            id: UUID().uuidString.lowercased(), attributesType: attributesType, attributes: attributes, contentState: contentState,
            // An activity the app starts has no push timestamp yet: the first update of any time applies.
            staleDate: staleDate, relevanceScore: relevanceScore, timestamp: 0, pushMode: pushMode, now: now)
        emit(.liveActivity(app: appID, .started(activity, apnsID: nil, alert: nil)))
        perform(slot, requests)
        activitiesChanged(slot)
        return activity
    }

    /// The app ends one of its activities (`Activity.end`).
    public func endActivity(
        app appID: String, id: String, contentState: [String: JSONValue]? = nil, dismissalDate: Int64? = nil
    ) throws(RuntimeError) {
        let slot = try slot(appID)
        let (ended, dismissedNow, requests) = try slot.widgetKit.activities.end(id, contentState: contentState, dismissalDate: dismissalDate, now: clock.nowMilliseconds())
        emit(.liveActivity(app: appID, .ended(ended, apnsID: nil, alert: nil)))
        if dismissedNow { emit(.liveActivity(app: appID, .dismissed(ended))) }
        perform(slot, requests)
        activitiesChanged(slot)
    }

    // MARK: from the gateway

    func gatewayIssued(activityToken token: DeviceToken, topic: String, activity: LiveActivityToken) {
        guard let slot = apps[topic] else { return }
        switch activity {
        case .pushToStart:
            slot.widgetKit.activities.pushToStartToken = token
            emit(.liveActivity(app: topic, .pushToStartToken(token)))
        case .activity(let id):
            guard slot.widgetKit.activities.setUpdateToken(token, for: id) else { return }
            emit(.liveActivity(app: topic, .updateToken(activityID: id, token)))
        }
        save(slot)
    }

    func gatewaySubscribed(topic: String, channel: String, token: DeviceToken) {
        guard let slot = apps[topic] else { return }
        slot.widgetKit.activities.channelTokens[token] = channel
        save(slot)
    }

    func gatewayUnsubscribed(topic: String, channel: String) {
        guard let slot = apps[topic] else { return }
        slot.widgetKit.activities.channelTokens = slot.widgetKit.activities.channelTokens.filter { $0.value != channel }
        save(slot)
    }

    /// A `liveactivity` push: to the push-to-start token it starts an activity; to an update
    /// token or a channel subscription it updates or ends the activities it is for. Whatever
    /// ActivityKit would drop is reported as ``LiveActivityEvent/ignored(apnsID:reason:)``. The
    /// events are announced: emitted after the save that records the push's outcome (the caller
    /// concludes and saves) and journaled, so a kill between the two neither loses nor repeats them.
    func receiveLiveActivity(_ slot: AppSlot, _ push: DeviceNotification, now: Int64) {
        let id = push.apnsID.description
        let update: LiveActivityUpdate
        do {
            let payload = try NotificationPayload(json: push.payload)
            update = try LiveActivityUpdate(payload: payload)
        } catch let invalid as LiveActivityUpdate.Invalid {
            return announce(slot, .liveActivity(.ignored(apnsID: id, reason: invalid.description)))
        } catch {
            return announce(slot, .liveActivity(.ignored(apnsID: id, reason: "the payload is not an aps dictionary ActivityKit reads: \(error)")))
        }
        guard let token = push.token else {
            return announce(slot, .liveActivity(.ignored(apnsID: id, reason: "the push names no token (a gateway of device protocol version 1?)")))
        }
        if token == slot.widgetKit.activities.pushToStartToken {
            guard update.event == .start, let type = update.attributesType, let attributes = update.attributes, let state = update.contentState else {
                return announce(slot, .liveActivity(.ignored(apnsID: id, reason: "the push-to-start token takes only event start")))
            }
            let mode: LiveActivity.PushMode = update.channel.map { .channel($0) } ?? (update.wantsPushToken ? .token : .none)
            do {
                let (activity, requests) = try slot.widgetKit.activities.start(
                    id: id.lowercased(), attributesType: type, attributes: attributes, contentState: state, staleDate: update.staleDate,
                    relevanceScore: update.relevanceScore, timestamp: update.timestamp, pushMode: mode, now: now)
                announce(slot, .liveActivity(.started(activity, apnsID: id, alert: update.alertText)))
                perform(slot, requests)
            } catch {
                announce(slot, .liveActivity(.ignored(apnsID: id, reason: error.message)))
            }
            return
        }
        let targets = slot.widgetKit.activities.targets(of: token)
        guard !targets.isEmpty else {
            return announce(slot, .liveActivity(.ignored(apnsID: id, reason: "no running activity has token \(token)")))
        }
        for target in targets {
            let (outcome, requests) = slot.widgetKit.activities.apply(update, priority: push.priority, to: target, now: now)
            switch outcome {
            case .ignored(let reason):
                announce(slot, .liveActivity(.ignored(apnsID: id, reason: reason)))
            case .updated(let activity, let throttled):
                announce(slot, .liveActivity(.updated(activity, apnsID: id, alert: throttled ? nil : update.alertText, throttled: throttled)))
            case .ended(let activity, let dismissedNow):
                announce(slot, .liveActivity(.ended(activity, apnsID: id, alert: update.alertText)))
                if dismissedNow { announce(slot, .liveActivity(.dismissed(activity))) }
            }
            perform(slot, requests)
        }
    }

    // MARK: plumbing

    /// Stale and dismissal dates that passed (the runtime's alarm).
    func fireLiveActivities(_ slot: AppSlot, now: Int64) {
        let (events, requests) = slot.widgetKit.activities.fireDue(now: now)
        for event in events { announce(slot, .liveActivity(event)) }
        perform(slot, requests)
    }

    private func perform(_ slot: AppSlot, _ requests: [LiveActivityBook.Request]) {
        guard let requester = liveActivityRequester else { return }
        for request in requests {
            switch request {
            case .wantUpdateToken(let id): requester(.activityToken(topic: slot.id, .activity(id)), true)
            case .dropUpdateToken(let id): requester(.activityToken(topic: slot.id, .activity(id)), false)
            case .subscribe(let channel): requester(.channel(topic: slot.id, channel: channel), true)
            case .unsubscribe(let channel): requester(.channel(topic: slot.id, channel: channel), false)
            }
        }
    }

    /// After any change: the next stale or dismissal date is on the alarm, and the state saved.
    func activitiesChanged(_ slot: AppSlot) {
        reschedule(slot)
        armAlarm()
        save(slot)
    }
}
