/// Categories and actions (reference user-notifications §2).
public struct NotificationAction: Sendable, Hashable {
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let authenticationRequired = Self(rawValue: 1)
        public static let destructive = Self(rawValue: 2)
        /// Launches the app in the foreground (unlocking as needed).
        public static let foreground = Self(rawValue: 4)
    }

    public struct TextInput: Sendable, Hashable {
        public var buttonTitle: String
        public var placeholder: String
        public init(buttonTitle: String, placeholder: String = "") {
            self.buttonTitle = buttonTitle
            self.placeholder = placeholder
        }
    }

    public let identifier: String
    public let title: String
    /// Foreground implies authentication required (as iOS forces it).
    public let options: Options
    public let textInput: TextInput?

    public init(identifier: String, title: String, options: Options = [], textInput: TextInput? = nil) throws(CategoryError) {
        guard !identifier.isEmpty else { throw CategoryError("an action needs a non-empty identifier") }
        guard identifier != NotificationResponse.defaultActionIdentifier && identifier != NotificationResponse.dismissActionIdentifier else {
            throw CategoryError("\"\(identifier)\" is reserved for the system")
        }
        self.identifier = identifier
        self.title = title
        self.options = options.contains(.foreground) ? options.union(.authenticationRequired) : options
        self.textInput = textInput
    }

    public var requiresAuthentication: Bool { options.contains(.authenticationRequired) }
}

public struct NotificationCategory: Sendable, Hashable {
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Explicit dismissals reach the app (with the dismiss action identifier).
        public static let customDismissAction = Self(rawValue: 1)
        public static let allowInCarPlay = Self(rawValue: 2)
        public static let hiddenPreviewsShowTitle = Self(rawValue: 4)
        public static let hiddenPreviewsShowSubtitle = Self(rawValue: 8)
        public static let allowAnnouncement = Self(rawValue: 16)
    }

    /// Where actions are shown: the default context (modal alert, up to 4) or the minimal one
    /// (lock screen, banner, Notification Center, up to 2).
    public enum Context: Sendable, Hashable { case `default`, minimal }

    public static let maximumDefaultActions = 4
    public static let maximumMinimalActions = 2

    public let identifier: String
    /// In display order.
    public let actions: [NotificationAction]
    /// The legacy minimal-context actions; `nil` shows the first two of `actions`.
    public let minimalActions: [NotificationAction]?
    public let options: Options
    public let hiddenPreviewsBodyPlaceholder: String?
    /// e.g. "%u new messages from %@".
    public let summaryFormat: String?

    public init(
        identifier: String, actions: [NotificationAction], minimalActions: [NotificationAction]? = nil, options: Options = [],
        hiddenPreviewsBodyPlaceholder: String? = nil, summaryFormat: String? = nil
    ) throws(CategoryError) {
        guard !identifier.isEmpty else { throw CategoryError("a category needs a non-empty identifier") }
        var seen = Set<String>()
        for action in actions + (minimalActions ?? []) where !seen.insert(action.identifier).inserted {
            if actions.contains(action) && (minimalActions ?? []).contains(action) { continue }
            throw CategoryError("category \(identifier): action identifier \"\(action.identifier)\" is used twice")
        }
        self.identifier = identifier
        self.actions = actions
        self.minimalActions = minimalActions
        self.options = options
        self.hiddenPreviewsBodyPlaceholder = hiddenPreviewsBodyPlaceholder
        self.summaryFormat = summaryFormat
    }

    /// The actions shown in a context, in order, within its limit.
    public func actions(in context: Context) -> [NotificationAction] {
        switch context {
        case .default: Array(actions.prefix(Self.maximumDefaultActions))
        case .minimal: Array((minimalActions ?? actions).prefix(Self.maximumMinimalActions))
        }
    }
}

/// An app's categories: set as a whole (replacing the previous set).
public struct CategoryRegistry: Sendable, Hashable {
    public private(set) var categories: [String: NotificationCategory] = [:]
    public init() {}

    /// Replaces the set. Categories sharing an identifier keep the first (a set holds one);
    /// an action identifier used by two different actions anywhere in the app is refused.
    @discardableResult
    public mutating func setCategories(_ list: [NotificationCategory]) throws(CategoryError) -> [NotificationCategory] {
        var kept: [String: NotificationCategory] = [:]
        var ignored: [NotificationCategory] = []
        var actions: [String: NotificationAction] = [:]
        for category in list {
            guard kept[category.identifier] == nil else { ignored.append(category); continue }
            for action in category.actions + (category.minimalActions ?? []) {
                if let other = actions[action.identifier], other != action {
                    throw CategoryError("action identifier \"\(action.identifier)\" names two different actions; identifiers are unique in an app")
                }
                actions[action.identifier] = action
            }
            kept[category.identifier] = category
        }
        categories = kept
        return ignored
    }

    /// The category a notification names; `nil` (shown without actions) when not registered.
    public func category(named identifier: String?) -> NotificationCategory? { identifier.flatMap { categories[$0] } }
}

/// What the user did with a presented notification, as the app receives it.
public struct NotificationResponse: Sendable, Hashable {
    /// The user opened the app from the notification.
    public static let defaultActionIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
    /// The user dismissed it explicitly (sent only with `customDismissAction`).
    public static let dismissActionIdentifier = "com.apple.UNNotificationDismissActionIdentifier"

    public var actionIdentifier: String
    /// The text typed, for a text-input action.
    public var userText: String?
    /// Whether the device had to be unlocked first.
    public var requiredUnlock: Bool

    /// What the user did.
    public enum Gesture: Sendable, Hashable {
        case tapBody
        case dismiss
        /// Flicking a banner away or ignoring it: never a response.
        case ignore
        case action(String, text: String?)
    }

    /// The response a gesture produces for a notification of `category`, or `nil` when the app
    /// hears nothing. `locked`: the device was locked at the time.
    public static func response(
        to gesture: Gesture, category: NotificationCategory?, locked: Bool
    ) throws(CategoryError) -> NotificationResponse? {
        switch gesture {
        case .ignore: return nil
        case .tapBody: return NotificationResponse(actionIdentifier: defaultActionIdentifier, userText: nil, requiredUnlock: locked)
        case .dismiss:
            guard category?.options.contains(.customDismissAction) == true else { return nil }
            return NotificationResponse(actionIdentifier: dismissActionIdentifier, userText: nil, requiredUnlock: false)
        case .action(let id, let text):
            guard let category, let action = (category.actions + (category.minimalActions ?? [])).first(where: { $0.identifier == id }) else {
                throw CategoryError("no action \"\(id)\" in the notification's category")
            }
            if text != nil && action.textInput == nil { throw CategoryError("action \"\(id)\" takes no text") }
            return NotificationResponse(
                actionIdentifier: id, userText: action.textInput == nil ? nil : (text ?? ""),
                requiredUnlock: locked && action.requiresAuthentication)
        }
    }
}

public struct CategoryError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
