import HeraldCore

/// What the runtime announces about a notification once the state that makes it true is saved:
/// shown (`delivered`), held for the summary, delivered by a summary (the app's part of the
/// `summary` event), a widget push's outcome, what a Live Activity push or date did. Each is
/// saved with the app's state under a sequence number and journaled as it is emitted
/// (``RuntimeStorage``), so a crash between the save and the event neither loses the event (it
/// comes at the next start) nor repeats it (the redelivered push is acked as handled).
enum Announcement: Sendable {
    case delivered(DeliveredNotification)
    case held(DeliveredNotification, until: Int64)
    /// The app's part of the summary delivered at `at` (emitted with the other apps' parts as
    /// one `summary` event by ``DeviceRuntime/emitSummaries()``).
    case summary(at: Int64, [DeviceRuntime.SummaryItem])
    case widget(WidgetEvent)
    case liveActivity(LiveActivityEvent)

    /// The event, for all but a summary part (``DeviceRuntime/emitSummaries()`` emits those).
    func event(app: String) -> RuntimeEvent? {
        switch self {
        case .delivered(let notification): .delivered(app: app, notification)
        case .held(let notification, let until): .heldForSummary(app: app, id: notification.id, origin: notification.origin, until: until)
        case .summary: nil
        case .widget(let event): .widgets(app: app, event)
        case .liveActivity(let event): .liveActivity(app: app, event)
        }
    }
}

extension DeviceRuntime {
    /// Announced by the next save of `slot`, after its state is written (the caller saves).
    func announce(_ slot: AppSlot, _ announcement: Announcement) {
        slot.saving.announcing.append((slot.saving.nextAnnouncement, announcement))
        slot.saving.nextAnnouncement += 1
    }

    /// Emitted after the next save of `slot` (not journaled: an event about state the save
    /// writes, which a crash before the save makes untrue).
    func emitAfterSave(_ slot: AppSlot, _ event: RuntimeEvent) { slot.saving.eventsAfterSave.append(event) }

    /// Emits the summary parts the saves just made (or a start-up found unannounced) as one
    /// `summary` event per summary time, the most relevant first, then journals each part.
    func emitSummaries() {
        guard !summaryParts.isEmpty else { return }
        let parts = summaryParts
        summaryParts = []
        for at in Set(parts.map(\.at)).sorted() {
            let items = parts.filter { $0.at == at }.flatMap(\.items).sorted { a, b in
                if a.relevance != b.relevance { return a.relevance > b.relevance }
                if a.arrivedAt != b.arrivedAt { return a.arrivedAt < b.arrivedAt }
                return (a.app, a.order) < (b.app, b.order)
            }
            emit(.summary(at: at, items.map { ($0.app, $0.id, $0.origin) }))
        }
        guard let storage else { return }
        for part in parts { storage.appendToJournal(part.app).record(part.seq) }
    }
}
