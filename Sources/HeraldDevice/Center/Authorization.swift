/// What an app may present (reference user-notifications §1).
public struct AuthorizationOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let badge = Self(rawValue: 1)
    public static let sound = Self(rawValue: 2)
    public static let alert = Self(rawValue: 4)
    public static let carPlay = Self(rawValue: 8)
    public static let criticalAlert = Self(rawValue: 16)
    public static let providesAppNotificationSettings = Self(rawValue: 32)
    public static let provisional = Self(rawValue: 64)
    public static let announcement = Self(rawValue: 128)
    public static let timeSensitive = Self(rawValue: 256)
    /// Options that need an entitlement the app must hold.
    public static let entitled: Self = [.criticalAlert, .timeSensitive]
}

public enum AuthorizationStatus: Int, Sendable, Hashable, Codable {
    case notDetermined = 0, denied = 1, authorized = 2, provisional = 3, ephemeral = 4
}

/// One type's setting, as the user left it.
public enum NotificationSetting: Int, Sendable, Hashable, Codable {
    case notSupported = 0, disabled = 1, enabled = 2
}

/// The settings an app reads (re-read them at each launch: the user may change them any time).
public struct NotificationSettings: Sendable, Hashable {
    public var status: AuthorizationStatus = .notDetermined
    public var alert: NotificationSetting = .notSupported
    public var sound: NotificationSetting = .notSupported
    public var badge: NotificationSetting = .notSupported
    public var criticalAlert: NotificationSetting = .notSupported
    public var timeSensitive: NotificationSetting = .notSupported
    public var carPlay: NotificationSetting = .notSupported
    public init() {}

    /// The types the user has enabled.
    public var enabledOptions: AuthorizationOptions {
        AppAuthorization.types.reduce(into: AuthorizationOptions()) { set, entry in
            if self[keyPath: entry.1] == .enabled { set.insert(entry.0) }
        }
    }

    /// Provisional delivery is quiet: to Notification Center only, no banner, sound or badge.
    public var isQuiet: Bool { status == .provisional }

    /// Of what a notification would present, what the user allows. A disabled type is dropped;
    /// the rest still happens, and the app is informed regardless.
    public func presentable(_ kinds: PresentationKinds) -> PresentationKinds {
        guard status == .authorized || status == .provisional || status == .ephemeral else { return [] }
        var allowed: PresentationKinds = []
        if kinds.contains(.alert), alert == .enabled { allowed.insert(.alert) }
        if kinds.contains(.sound), sound == .enabled, !isQuiet { allowed.insert(.sound) }
        if kinds.contains(.badge), badge == .enabled, !isQuiet { allowed.insert(.badge) }
        return allowed
    }
}

/// What a notification asks to present.
public struct PresentationKinds: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let badge = Self(rawValue: 1)
    public static let sound = Self(rawValue: 2)
    public static let alert = Self(rawValue: 4)
}

/// The device's user, as far as notifications go: answers the authorization prompt. Tests and
/// `herald device run` supply their own (a fixed answer, a file, a person at a terminal).
public protocol UserSettingsSource: Sendable {
    /// The user's answer to the prompt for `requested`: the options granted (empty = "Don't Allow").
    func answerPrompt(appID: String, requested: AuthorizationOptions) async -> AuthorizationOptions
}

/// An app's authorization: the first request prompts (unless provisional), later ones return the
/// stored settings without asking; the user can change settings at any time.
public struct AppAuthorization: Sendable, Hashable {
    public private(set) var settings = NotificationSettings()
    /// How many times the user was asked.
    public private(set) var promptCount = 0
    /// Options the app holds entitlements for (critical alerts, time-sensitive).
    public var entitlements: AuthorizationOptions

    public init(entitlements: AuthorizationOptions = []) { self.entitlements = entitlements }

    /// Saved settings, put back (the device runtime's persistence).
    init(restoring settings: NotificationSettings, promptCount: Int, entitlements: AuthorizationOptions) {
        self.settings = settings
        self.promptCount = promptCount
        self.entitlements = entitlements
    }

    /// Requests authorization. Returns the settings and whether the user was prompted.
    public mutating func request(
        _ options: AuthorizationOptions, appID: String, user: some UserSettingsSource
    ) async -> (settings: NotificationSettings, prompted: Bool) {
        if settings.status != .notDetermined && !(settings.status == .provisional && !options.contains(.provisional)) {
            return (settings, false)
        }
        if options.contains(.provisional) && settings.status == .notDetermined {
            // No prompt: quiet delivery to Notification Center; the requested types apply if promoted.
            settings.status = .provisional
            apply(options.subtracting(.provisional))
            return (settings, false)
        }
        promptCount += 1
        let granted = await user.answerPrompt(appID: appID, requested: options.subtracting(.provisional))
            .intersection(options).subtracting(Self.unentitled(options, entitlements))
        settings.status = granted.isEmpty ? .denied : .authorized
        apply(granted)
        // Types requested and refused are disabled (supported, off).
        for (option, keyPath) in Self.types where options.contains(option) && !granted.contains(option) {
            settings[keyPath: keyPath] = .disabled
        }
        return (settings, true)
    }

    static var types: [(AuthorizationOptions, WritableKeyPath<NotificationSettings, NotificationSetting>)] { [
        (.alert, \.alert), (.sound, \.sound), (.badge, \.badge), (.criticalAlert, \.criticalAlert),
        (.timeSensitive, \.timeSensitive), (.carPlay, \.carPlay),
    ] }

    private static func unentitled(_ options: AuthorizationOptions, _ entitlements: AuthorizationOptions) -> AuthorizationOptions {
        options.intersection(.entitled).subtracting(entitlements)
    }

    private mutating func apply(_ granted: AuthorizationOptions) {
        for (option, keyPath) in Self.types where granted.contains(option) {
            settings[keyPath: keyPath] = Self.unentitled(option, entitlements).isEmpty ? .enabled : .notSupported
        }
    }

    /// The user changed a type in Settings.
    public mutating func userSet(_ option: AuthorizationOptions, _ setting: NotificationSetting) {
        for (candidate, keyPath) in Self.types where option.contains(candidate) { settings[keyPath: keyPath] = setting }
    }

    /// The user promoted a provisional app (Keep → Deliver Prominently) or turned it off.
    public mutating func userSetStatus(_ status: AuthorizationStatus) { settings.status = status }
}
