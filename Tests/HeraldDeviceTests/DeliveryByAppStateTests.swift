import HeraldDevice
import Testing

/// Delivery and handling by app state (reference §5, scenarios 33–38).
@Suite("Delivery by app state")
struct DeliveryByAppStateTests {
    static var allowed: NotificationSettings {
        var settings = NotificationSettings()
        settings.status = .authorized
        (settings.alert, settings.sound, settings.badge) = (.enabled, .enabled, .enabled)
        return settings
    }

    @Test("33–34. a tap while not running launches with the notification; in the background the legacy handler runs inactive")
    func taps() {
        #expect(DeliveryByAppState.tap(state: .notRunning, api: .legacy) == .launch(api: .legacy))
        #expect(DeliveryByAppState.tap(state: .notRunning, api: .userNotifications) == .launch(api: .userNotifications))
        #expect(DeliveryByAppState.tap(state: .background, api: .legacy) == .legacyDidReceive(state: .inactive))
        #expect(DeliveryByAppState.tap(state: .background, api: .userNotifications)
                == .didReceive(actionIdentifier: NotificationResponse.defaultActionIdentifier))
    }

    @Test("background: presented per settings, listed, badge applied, nothing told until a tap")
    func background() {
        let (shown, callback) = DeliveryByAppState.arrive(state: .background, api: .legacy, kinds: [.alert, .sound, .badge], badge: 3, settings: Self.allowed)
        #expect(shown.banner && shown.sound && shown.listed && shown.badge == 3)
        #expect(callback == .none)
        var quiet = Self.allowed
        quiet.status = .provisional
        let provisional = DeliveryByAppState.arrive(state: .background, api: .userNotifications, kinds: [.alert, .sound], badge: nil, settings: quiet).presentation
        #expect(!provisional.banner && !provisional.sound && provisional.listed, "provisional: Notification Center only")
    }

    @Test("35. legacy foreground: no banner or sound, badge applied, delegate told (active), still listed")
    func legacyForeground() {
        let (shown, callback) = DeliveryByAppState.arrive(state: .foreground, api: .legacy, kinds: [.alert, .sound, .badge], badge: 2, settings: Self.allowed)
        #expect(!shown.banner && !shown.sound && shown.listed && shown.badge == 2)
        #expect(callback == .legacyDidReceive(state: .active))
    }

    @Test("36. UserNotifications foreground: willPresent [] or absent shows nothing; [.banner, .sound] shows a banner with sound")
    func userNotificationsForeground() {
        for options: DeliveryByAppState.ForegroundOptions? in [nil, []] {
            let (shown, callback) = DeliveryByAppState.arrive(state: .foreground, api: .userNotifications, kinds: [.alert, .sound, .badge], badge: 4, settings: Self.allowed, foregroundOptions: options)
            #expect(!shown.banner && !shown.sound && !shown.listed && shown.badge == nil)
            #expect(callback == .willPresent)
        }
        let shown = DeliveryByAppState.arrive(state: .foreground, api: .userNotifications, kinds: [.alert, .sound], badge: nil, settings: Self.allowed, foregroundOptions: [.banner, .sound]).presentation
        #expect(shown.banner && shown.sound && !shown.listed)
        var noSound = Self.allowed
        noSound.sound = .disabled
        #expect(!DeliveryByAppState.arrive(state: .foreground, api: .userNotifications, kinds: [.alert, .sound], badge: nil, settings: noSound, foregroundOptions: [.banner, .sound]).presentation.sound,
                "the user's settings win over the app's wishes")
    }

    @Test("37–38. the badge is absolute: nil keeps it, 0 clears it, never ±1; a disabled badge setting leaves it")
    func badge() {
        #expect(DeliveryByAppState.badge(current: 5, setBy: nil) == 5)
        #expect(DeliveryByAppState.badge(current: 5, setBy: 0) == 0)
        #expect(DeliveryByAppState.badge(current: 5, setBy: 9) == 9)
        var noBadge = Self.allowed
        noBadge.badge = .disabled
        #expect(DeliveryByAppState.arrive(state: .background, api: .userNotifications, kinds: [.alert, .badge], badge: 7, settings: noBadge).presentation.badge == nil)
    }
}
