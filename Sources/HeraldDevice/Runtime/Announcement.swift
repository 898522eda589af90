import HeraldCore

/// What the runtime announces about a notification once the state that makes it true is saved:
/// shown (`delivered`), held for the summary, a widget push's outcome. Each is saved with the
/// app's state under a sequence number and journaled as it is emitted (``RuntimeStorage``), so a
/// crash between the save and the event never loses the event: it comes at the next start.
enum Announcement: Sendable {
    case delivered(DeliveredNotification)
    case held(DeliveredNotification, until: Int64)
    case widget(WidgetEvent)

    func event(app: String) -> RuntimeEvent {
        switch self {
        case .delivered(let notification): .delivered(app: app, notification)
        case .held(let notification, let until): .heldForSummary(app: app, id: notification.id, origin: notification.origin, until: until)
        case .widget(let event): .widgets(app: app, event)
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
}
