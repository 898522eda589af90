import HeraldCore

/// The life of a notification, as a receipt reports it.
public enum ReceiptStatus: String, Sendable, Hashable, Codable, CaseIterable {
    case accepted, stored, delivered, acked, expired, replaced, dropped
}

/// One notification's history (one per device token it was sent to).
public struct Receipt: Sendable, Hashable {
    public struct Event: Sendable, Hashable {
        public var status: ReceiptStatus
        public var atMilliseconds: Int64
        public init(status: ReceiptStatus, atMilliseconds: Int64) {
            self.status = status
            self.atMilliseconds = atMilliseconds
        }
    }

    public var id: NotificationID
    public var token: DeviceToken
    public var bundleID: String
    /// The kind of push: an endpoint that serves one protocol's receipts reads only its own.
    public var pushType: PushType
    public var events: [Event]

    public init(id: NotificationID, token: DeviceToken, bundleID: String, pushType: PushType, events: [Event]) {
        self.id = id
        self.token = token
        self.bundleID = bundleID
        self.pushType = pushType
        self.events = events
    }

    /// The receipt of a stored notification, from the facts its record holds.
    public init(
        of notification: StoredNotification, discardAtMilliseconds: Int64, state: NotificationState,
        sentAtMilliseconds: Int64?, ackedAtMilliseconds: Int64?, endedAtMilliseconds: Int64?
    ) {
        self.init(
            id: notification.id, token: notification.token, bundleID: notification.bundleID, pushType: notification.pushType,
            events: Self.events(
                notification: notification, discardAtMilliseconds: discardAtMilliseconds, state: state,
                sentAtMilliseconds: sentAtMilliseconds, ackedAtMilliseconds: ackedAtMilliseconds, endedAtMilliseconds: endedAtMilliseconds))
    }
}

extension Receipt {
    /// The events of a stored notification's record, in the order they happened. Every store
    /// builds receipts with this, from the same recorded facts.
    public static func events(
        notification: StoredNotification, discardAtMilliseconds: Int64, state: NotificationState,
        sentAtMilliseconds: Int64?, ackedAtMilliseconds: Int64?, endedAtMilliseconds: Int64?
    ) -> [Event] {
        let received = notification.receivedAtMilliseconds
        var events = [Event(status: .accepted, atMilliseconds: received)]
        // `apns-expiration: 0` is never stored, nor is a notification expired on arrival.
        if notification.expiration != .immediately && discardAtMilliseconds > received {
            events.append(Event(status: .stored, atMilliseconds: received))
        }
        if let sent = sentAtMilliseconds { events.append(Event(status: .delivered, atMilliseconds: sent)) }
        switch state {
        case .held: break
        case .acked:
            events.append(Event(status: .acked, atMilliseconds: ackedAtMilliseconds ?? endedAtMilliseconds ?? received))
        case .expired, .replaced, .dropped:
            let status: ReceiptStatus = state == .expired ? .expired : state == .replaced ? .replaced : .dropped
            events.append(Event(status: status, atMilliseconds: endedAtMilliseconds ?? received))
        }
        return events
    }
}
