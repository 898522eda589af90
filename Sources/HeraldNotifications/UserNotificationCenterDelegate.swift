import Foundation

/// What an app answers when the device asks: UNUserNotificationCenterDelegate's `willPresent` and
/// `didReceive`, a silent push's `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`
/// and a notification service extension's `didReceive(_:withContentHandler:)`, in Swift's
/// concurrency: the answer is the return value.
///
/// The device waits 30 seconds for an answer (docs/device-agent.md). The library keeps that
/// contract for the app: a method that has not returned after `UserNotificationCenter`'s
/// `answerDeadline` (25 seconds by default, leaving the socket its margin) is answered with the
/// method's default below, as iOS goes on when a completion handler is never called, and
/// `UserNotificationCenter.missedDeadlines` counts it. Every method has a default, so an app
/// implements only what it handles.
public protocol UserNotificationCenterDelegate: Sendable {
    /// A notification arrives while the app is in the foreground: how to present it (`[]`: not
    /// at all, the default, as on iOS when the delegate does not implement it).
    func willPresent(_ notification: DeliveredNotification) async -> [PresentationOption]
    /// The user tapped, chose an action of, or (with `customDismissAction`) dismissed a notification.
    func didReceive(_ response: NotificationResponse) async
    /// A background (`content-available`) push: what the app fetched (default `.noData`).
    func didReceiveRemoteNotification(_ payload: [String: AgentJSON]) async -> FetchResult
    /// As the app's notification service extension (`UserNotificationCenter.connect(…, serviceExtension: true)`):
    /// the content to show for a `mutable-content` push (default: the push as it came).
    func didReceive(_ request: ServiceExtensionRequest) async -> ServiceExtensionContent
    /// A mutable Declarative Web Push message (`message.proposed` is the notification the device
    /// would show): a notification to show instead (title, body, navigate…), or `nil` (the
    /// default) to show the proposed one.
    func replacement(forMutableWebPush message: AgentCallback.WebPush) async -> [String: AgentJSON]?
}

extension UserNotificationCenterDelegate {
    public func willPresent(_ notification: DeliveredNotification) async -> [PresentationOption] { [] }
    public func didReceive(_ response: NotificationResponse) async {}
    public func didReceiveRemoteNotification(_ payload: [String: AgentJSON]) async -> FetchResult { .noData }
    public func replacement(forMutableWebPush message: AgentCallback.WebPush) async -> [String: AgentJSON]? { nil }
    public func didReceive(_ request: ServiceExtensionRequest) async -> ServiceExtensionContent {
        ServiceExtensionContent(payload: .object(request.payload))
    }
}

/// The user's response to a notification (UNNotificationResponse).
public struct NotificationResponse: Sendable, Hashable {
    /// A tap on the notification itself.
    public static let defaultActionIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
    /// A dismissal, reported only for categories with `customDismissAction`.
    public static let dismissActionIdentifier = "com.apple.UNNotificationDismissActionIdentifier"

    public var notification: DeliveredNotification
    /// `defaultActionIdentifier`, `dismissActionIdentifier`, or the chosen action's id.
    public var actionIdentifier: String
    /// What the user typed, for an action with text input (UNTextInputNotificationResponse).
    public var userText: String?
    /// Whether the device had to be unlocked first (an `authenticationRequired` action).
    public var requiredUnlock: Bool

    public init(notification: DeliveredNotification, actionIdentifier: String, userText: String? = nil, requiredUnlock: Bool = false) {
        self.notification = notification
        self.actionIdentifier = actionIdentifier
        self.userText = userText
        self.requiredUnlock = requiredUnlock
    }
}

/// A `mutable-content` push handed to the app's service extension: its payload (`aps` and the
/// provider's keys).
public struct ServiceExtensionRequest: Sendable, Hashable {
    public var payload: [String: AgentJSON]
}

/// A service extension's answer: the payload to show, and optionally the person it is from
/// (a communication notification).
public struct ServiceExtensionContent: Sendable, Hashable {
    public var payload: AgentJSON
    public var communication: CommunicationContext?

    public init(payload: AgentJSON, communication: CommunicationContext? = nil) {
        self.payload = payload
        self.communication = communication
    }
}
