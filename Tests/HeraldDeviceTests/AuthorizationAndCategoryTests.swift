import HeraldCore
import HeraldDevice
import Testing

/// Authorization (reference §1, scenarios 1–5) and categories and actions (§2, scenarios 6–12).
@Suite("Authorization and categories")
struct AuthorizationAndCategoryTests {
    /// A user who answers every prompt the same way, and counts the prompts.
    final class ScriptedUser: UserSettingsSource {
        let grants: AuthorizationOptions
        let prompts = Locked(0)
        init(grants: AuthorizationOptions) { self.grants = grants }
        func answerPrompt(appID: String, requested: AuthorizationOptions) async -> AuthorizationOptions {
            prompts.withLock { $0 += 1 }
            return grants
        }
    }

    @Test("1–2. the first request prompts once; later ones return the stored settings without asking")
    func promptOnce() async {
        let user = ScriptedUser(grants: [.alert, .badge])
        var auth = AppAuthorization()
        let first = await auth.request([.alert, .sound, .badge], appID: "com.a", user: user)
        #expect(first.prompted && first.settings.status == .authorized)
        #expect(first.settings.alert == .enabled && first.settings.badge == .enabled && first.settings.sound == .disabled,
                "granted may differ from requested")
        let second = await auth.request([.alert, .sound, .badge], appID: "com.a", user: user)
        #expect(!second.prompted && second.settings == first.settings)
        #expect(user.prompts.withLock { $0 } == 1 && auth.promptCount == 1)
        let denied = AppAuthorization()
        var d = denied
        #expect(await d.request([.alert], appID: "com.b", user: ScriptedUser(grants: [])).settings.status == .denied)
    }

    @Test("3–4. a disabled type is dropped, the rest presented; nothing allowed presents nothing (the app is still informed)")
    func disabledTypes() async {
        var auth = AppAuthorization()
        _ = await auth.request([.alert, .sound, .badge], appID: "com.a", user: ScriptedUser(grants: [.alert, .sound, .badge]))
        auth.userSet(.sound, .disabled)
        #expect(auth.settings.presentable([.alert, .sound]) == [.alert])
        auth.userSet([.alert, .badge], .disabled)
        #expect(auth.settings.presentable([.alert, .sound, .badge]).isEmpty)
    }

    @Test("5. provisional: no prompt, status provisional, quiet delivery; entitlements gate critical and time-sensitive")
    func provisional() async {
        let user = ScriptedUser(grants: [.alert, .sound, .criticalAlert])
        var auth = AppAuthorization()
        let result = await auth.request([.provisional, .alert, .sound], appID: "com.a", user: user)
        #expect(!result.prompted && result.settings.status == .provisional && result.settings.isQuiet)
        #expect(result.settings.presentable([.alert, .sound, .badge]) == [.alert], "quiet: Notification Center only, no sound")
        #expect(user.prompts.withLock { $0 } == 0)
        var critical = AppAuthorization()
        let noEntitlement = await critical.request([.alert, .criticalAlert], appID: "com.a", user: user)
        #expect(noEntitlement.settings.criticalAlert != .enabled)
        var entitled = AppAuthorization(entitlements: [.criticalAlert])
        #expect(await entitled.request([.alert, .criticalAlert], appID: "com.a", user: user).settings.criticalAlert == .enabled)
    }

    func action(_ id: String, _ options: NotificationAction.Options = [], text: NotificationAction.TextInput? = nil) throws -> NotificationAction {
        try NotificationAction(identifier: id, title: id.uppercased(), options: options, textInput: text)
    }

    @Test("6. categories sharing an identifier: one remains; the set replaces the previous one; action ids are unique")
    func uniqueCategories() throws {
        var registry = CategoryRegistry()
        let a = try NotificationCategory(identifier: "msg", actions: [try action("reply")])
        let b = try NotificationCategory(identifier: "msg", actions: [try action("like")])
        let ignored = try registry.setCategories([a, b])
        #expect(registry.categories.count == 1 && ignored == [b])
        try registry.setCategories([try NotificationCategory(identifier: "other", actions: [])])
        #expect(registry.category(named: "msg") == nil, "setting categories replaces the whole set")
        #expect(throws: CategoryError.self) {
            try registry.setCategories([
                try NotificationCategory(identifier: "x", actions: [try action("go")]),
                try NotificationCategory(identifier: "y", actions: [try action("go", .destructive)]),
            ])
        }
        #expect(throws: CategoryError.self) { _ = try NotificationAction(identifier: "", title: "t") }
    }

    @Test("7. at most 4 actions in the default context and 2 in the minimal one, in order")
    func contexts() throws {
        let actions = try (1...5).map { try action("a\($0)") }
        let category = try NotificationCategory(identifier: "c", actions: actions)
        #expect(category.actions(in: .default).map(\.identifier) == ["a1", "a2", "a3", "a4"])
        #expect(category.actions(in: .minimal).map(\.identifier) == ["a1", "a2"])
        let legacy = try NotificationCategory(identifier: "l", actions: actions, minimalActions: [actions[4], actions[2]])
        #expect(legacy.actions(in: .minimal).map(\.identifier) == ["a5", "a3"])
    }

    @Test("8–12. foreground implies unlock; text input; dismiss only with customDismissAction; tap = default id; unknown category = no actions")
    func responses() throws {
        let open = try action("open", .foreground)
        #expect(open.requiresAuthentication, "foreground forces authenticationRequired")
        let reply = try action("reply", text: .init(buttonTitle: "Send", placeholder: "Message"))
        let plain = try NotificationCategory(identifier: "plain", actions: [open, reply])
        let dismissable = try NotificationCategory(identifier: "d", actions: [], options: .customDismissAction)

        let unlocked = try NotificationResponse.response(to: .action("open", text: nil), category: plain, locked: true)
        #expect(unlocked?.requiredUnlock == true)
        let typed = try NotificationResponse.response(to: .action("reply", text: "ok"), category: plain, locked: false)
        #expect(typed?.actionIdentifier == "reply" && typed?.userText == "ok")
        #expect(try NotificationResponse.response(to: .dismiss, category: plain, locked: false) == nil)
        #expect(try NotificationResponse.response(to: .dismiss, category: dismissable, locked: false)?.actionIdentifier
                == NotificationResponse.dismissActionIdentifier)
        #expect(try NotificationResponse.response(to: .ignore, category: dismissable, locked: false) == nil, "flicking a banner away sends nothing")
        #expect(try NotificationResponse.response(to: .tapBody, category: nil, locked: false)?.actionIdentifier
                == NotificationResponse.defaultActionIdentifier)
        var registry = CategoryRegistry()
        try registry.setCategories([plain])
        #expect(registry.category(named: "unregistered") == nil, "an unknown category shows no actions")
        #expect(throws: CategoryError.self) { _ = try NotificationResponse.response(to: .action("reply", text: nil), category: nil, locked: false) }
    }
}
