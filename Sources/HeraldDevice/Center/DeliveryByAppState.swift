/// What happens when a notification (local or remote) arrives, and when the user taps it, by the
/// app's state (reference user-notifications §5). A pure decision: the center applies it.
public enum DeliveryByAppState {
    public enum AppState: Sendable, Hashable { case notRunning, background, foreground }

    /// Which API the app uses: the legacy `UIApplication` delegate (iOS 8–9) or UserNotifications.
    public enum API: Sendable, Hashable { case legacy, userNotifications }

    /// What the app's `willPresent` asks for in the foreground (UserNotifications).
    public struct ForegroundOptions: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let badge = Self(rawValue: 1)
        public static let sound = Self(rawValue: 2)
        /// Deprecated in iOS 14: banner and list.
        public static let alert = Self(rawValue: 4)
        public static let list = Self(rawValue: 8)
        public static let banner = Self(rawValue: 16)
    }

    /// What the device shows and does.
    public struct Presentation: Sendable, Hashable {
        public var banner = false
        public var sound = false
        /// Listed in Notification Center.
        public var listed = false
        /// The badge as the notification sets it (nil: unchanged; 0: removed).
        public var badge: Int?
        public init() {}
    }

    /// What the app is told.
    public enum AppCallback: Sendable, Hashable {
        /// Nothing now (the user may tap later).
        case none
        /// Legacy: `didReceive{Local,Remote}Notification:` with the application state.
        case legacyDidReceive(state: LegacyState)
        /// UserNotifications: `willPresent` (the app's answer decides the presentation).
        case willPresent
        /// UserNotifications: `didReceive` with a response.
        case didReceive(actionIdentifier: String)
        /// The app is launched with the notification in its launch options (legacy), or `didReceive`
        /// before launch ends (UserNotifications), and never `didReceiveLocalNotification:`.
        case launch(api: API)
    }

    public enum LegacyState: Sendable, Hashable { case active, inactive }

    /// A notification arrives (fires, or comes over the device connection).
    /// - Parameters:
    ///   - badge: the notification's `badge` (nil: leave it).
    ///   - kinds: what it asks to present (alert, sound, badge).
    ///   - settings: the user's settings for the app.
    ///   - foregroundOptions: the app's `willPresent` answer (UserNotifications, foreground); `nil`
    ///     when the app does not implement it (nothing shows).
    public static func arrive(
        state: AppState, api: API, kinds: PresentationKinds, badge: Int?, settings: NotificationSettings,
        foregroundOptions: ForegroundOptions? = nil
    ) -> (presentation: Presentation, callback: AppCallback) {
        let allowed = settings.presentable(kinds)
        var presentation = Presentation()
        if allowed.contains(.badge) { presentation.badge = badge }
        switch (state, api) {
        case (.foreground, .legacy):
            // No banner or sound; the badge still applies; listed; the delegate is told (active).
            presentation.listed = allowed.contains(.alert) || settings.status == .provisional
            return (presentation, .legacyDidReceive(state: .active))
        case (.foreground, .userNotifications):
            let options = foregroundOptions ?? []
            presentation.banner = allowed.contains(.alert) && !options.isDisjoint(with: [.banner, .alert]) && !settings.isQuiet
            presentation.listed = allowed.contains(.alert) && !options.isDisjoint(with: [.list, .alert])
            presentation.sound = allowed.contains(.sound) && options.contains(.sound)
            if !options.contains(.badge) { presentation.badge = nil }
            return (presentation, .willPresent)
        case (.background, _), (.notRunning, _):
            presentation.banner = allowed.contains(.alert) && !settings.isQuiet
            presentation.listed = allowed.contains(.alert)
            presentation.sound = allowed.contains(.sound)
            return (presentation, .none)
        }
    }

    /// The user tapped the notification's body.
    public static func tap(state: AppState, api: API) -> AppCallback {
        switch (state, api) {
        case (.notRunning, let api): return .launch(api: api)
        case (_, .legacy): return .legacyDidReceive(state: state == .foreground ? .active : .inactive)
        case (_, .userNotifications): return .didReceive(actionIdentifier: NotificationResponse.defaultActionIdentifier)
        }
    }

    /// The badge after a notification: absolute, never ±1; nil keeps it, 0 removes it.
    public static func badge(current: Int, setBy notification: Int?) -> Int { notification ?? current }
}
