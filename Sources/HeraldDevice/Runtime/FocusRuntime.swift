import HeraldCore

/// Focus, interruption levels and the scheduled summary in the runtime (the rules are
/// ``Interruption``'s; docs/device-runtime.md, "Focus, interruption levels and the scheduled summary").
extension DeviceRuntime {
    /// One notification delivered by a summary, for the `summary` event's order.
    struct SummaryItem: Sendable {
        var app: String
        var id: String
        var origin: DeliveredNotification.Origin
        var relevance: Double
        var arrivedAt: Int64
        var order: Int
    }

    /// The user's Focus modes and summary. Saved with the device; a summary that no longer holds
    /// an app's notifications (removed, or the app taken out of it) delivers what it held now, and
    /// new summary times move the next delivery.
    public func setFocus(_ settings: FocusSettings) throws(RuntimeError) {
        if let storage {
            do { try storage.saveFocus(settings) } catch { throw RuntimeError("could not save the Focus settings: \(error)") }
        }
        focus = settings
        let now = clock.nowMilliseconds()
        for slot in apps.values where !slot.center.summaryHeld.isEmpty {
            if settings.summary?.apps.contains(slot.id) == true {
                slot.center.summaryDue = settings.nextSummary(after: now, in: timeZone)
            } else {
                releaseSummary(slot, now: now)
            }
            reschedule(slot)
            save(slot)
        }
        emitSummaries()
        focusEdge = settings.nextFocusEdge(after: now, in: timeZone)
        armAlarm()
        emit(.focus(active: activeFocus()?.name, settings))
        lastActiveFocus = activeFocus()?.name
    }

    /// A scheduled Focus started or ended (the alarm rang at its edge), or the zone changed: the
    /// `focus` event when the Focus on is another one, and the alarm set for the next edge.
    func focusEdgeReached(now: Int64) {
        noticeFocus(now: now)
        focusEdge = focus.nextFocusEdge(after: now, in: timeZone)
    }

    /// Emits `focus` when the Focus on at `now` is not the one last seen; returns it.
    @discardableResult
    func noticeFocus(now: Int64) -> FocusMode? {
        let active = focus.activeMode(at: now, in: timeZone)
        if active?.name != lastActiveFocus {
            lastActiveFocus = active?.name
            emit(.focus(active: active?.name, focus))
        }
        return active
    }

    /// The Focus on now (by hand or by its schedule in the device's zone).
    public func activeFocus() -> FocusMode? { focus.activeMode(at: clock.nowMilliseconds(), in: timeZone) }

    /// The ring/silent switch.
    public func setMuted(_ muted: Bool) { isMuted = muted }

    /// The level applied to `content` and what the Focus and the summary make of it; `hold`: keep
    /// it for the summary.
    func attention(_ slot: AppSlot, _ content: NotificationContent, now: Int64) -> (attention: DeliveredNotification.Attention, hold: Bool) {
        var attention = DeliveredNotification.Attention()
        attention.level = Interruption.effectiveLevel(content.interruptionLevel, entitlements: slot.bundle.entitlements, settings: slot.center.authorization.settings)
        let active = noticeFocus(now: now)
        attention.focus = active?.name
        switch Interruption.decide(
            app: slot.id, level: attention.level, criteria: content.filterCriteria, sender: content.communication?.senderHandle,
            focus: active, summary: focus.summary)
        {
        case .deliver(let through): attention.through = through
        case .silence: attention.silenced = true
        case .holdForSummary: return (attention, true)
        }
        return (attention, false)
    }

    /// Keeps a notification for the next summary; announced, and a remote one acked, once that is
    /// saved (the caller saves).
    func holdForSummary(_ slot: AppSlot, _ notification: DeliveredNotification, now: Int64) {
        guard let due = slot.center.summaryDue ?? focus.nextSummary(after: now, in: timeZone) else {
            return present(slot, notification, foregroundOptions: nil)
        }
        slot.center.summaryDue = due
        slot.center.summaryHeld.removeAll { $0.id == notification.id }
        slot.center.summaryHeld.append(notification)
        if slot.center.summaryHeld.count > deliveredLimit { slot.center.summaryHeld.removeFirst(slot.center.summaryHeld.count - deliveredLimit) }
        if case .remote(let apnsID) = notification.origin { concludeRemote(slot, id: apnsID) }
        announce(slot, .held(notification, until: due))
        reschedule(slot)
        armAlarm()
    }

    /// Delivers what an app's summary held, quietly (listed, no banner or sound), and announces
    /// the app's part of the `summary` event; the caller saves, then calls ``emitSummaries()``.
    func releaseSummary(_ slot: AppSlot, now: Int64) {
        let held = slot.center.summaryHeld
        slot.center.summaryHeld = []
        slot.center.summaryDue = nil
        var items: [SummaryItem] = []
        for (order, var notification) in held.enumerated() {
            notification.attention.summaryAt = now
            notification.deliveredAt = now
            present(slot, notification, foregroundOptions: nil)
            items.append(SummaryItem(app: slot.id, id: notification.id, origin: notification.origin, relevance: notification.content.relevance, arrivedAt: notification.dueAt, order: order))
        }
        if !items.isEmpty { announce(slot, .summary(at: now, items)) }
    }
}
