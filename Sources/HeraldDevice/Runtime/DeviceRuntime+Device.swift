import Foundation
import HeraldCore

extension DeviceRuntime {
    // MARK: the device

    /// The device's zone changed: calendar and wall-clock triggers are resolved again.
    public func setTimeZone(_ zone: TimeZone) {
        timeZone = zone
        let now = clock.nowMilliseconds()
        focusEdgeReached(now: now)
        for slot in apps.values {
            slot.scheduler.setTimeZone(zone, now: now)
            reschedule(slot)
            save(slot)
        }
        armAlarm()
    }

    /// The device is at a position: region triggers of every app may fire.
    public func setLocation(latitude: Double, longitude: Double) {
        let now = clock.nowMilliseconds()
        location = DeviceLocation(latitude: latitude, longitude: longitude)
        for slot in apps.values {
            let fired = slot.scheduler.updateLocation(latitude: latitude, longitude: longitude, now: now)
            for firing in fired { deliverLocal(slot, firing, now: now) }
            if !fired.isEmpty { save(slot) }
        }
    }

    public func setLocationServices(enabled: Bool) {
        locationServicesEnabled = enabled
        for slot in apps.values { slot.scheduler.setLocation(servicesEnabled: enabled) }
    }

    /// The user granted or denied an app location authorization (when in use or better).
    public func setLocationAuthorization(app appID: String, authorized: Bool) throws(RuntimeError) {
        let slot = try slot(appID)
        slot.scheduler.setLocation(authorized: authorized)
        slot.locationAuthorized = authorized
        save(slot)
    }

    /// The user changed the device's languages: every running app is told (and should send the
    /// first language to its provider again, with its token).
    public func setPreferredLanguages(_ languages: [String]) {
        guard languages != preferredLanguages else { return }
        preferredLanguages = languages
        for slot in apps.values where slot.appState != .notRunning {
            if let delegate = slot.delegate { work.spawn { await delegate.preferredLanguagesDidChange(languages) } }
        }
    }
}
