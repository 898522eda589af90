import ArgumentParser
import Foundation
import HeraldCore
import HeraldDevice
import Logging

/// The steps of ``DeviceRunCommand/run()`` before the device connects.
extension DeviceRunCommand {
    /// The device's saved state (its gateway, alternates and CA), updated from the flags and saved.
    func savedState(in dir: String) throws -> DeviceState {
        var state = try DeviceState.load(from: dir) ?? {
            guard let first = gateway.first else {
                throw ValidationError("this device has no gateway yet: give --gateway wss://HOST:PORT")
            }
            return DeviceState(gateway: first, ca: nil)
        }()
        if let first = gateway.first {
            state.gateway = first
            state.alternates = gateway.count > 1 ? Array(gateway.dropFirst()) : nil
        }
        if let ca { state.ca = ca.hasPrefix("/") ? ca : URL(fileURLWithPath: ca).standardizedFileURL.path }
        try state.save(to: dir)
        return state
    }

    /// The desktop's notification server (`--desktop`): its answers (taps, actions, dismissals)
    /// go to the runtime in `runtimeBox`, made after it.
    func connectDesktop(to runtimeBox: Locked<DeviceRuntime?>, logger: Logger) async throws -> DesktopNotifications {
        do {
            return try await DesktopNotifications.connect(respond: { [logger] response in
                guard let runtime = runtimeBox.withLock({ $0 }) else { return }
                do {
                    switch response {
                    case .tapped(let app, let id): try await runtime.userTapped(app: app, notification: id)
                    case .chose(let app, let id, let action): try await runtime.userChoseAction(app: app, notification: id, action: action)
                    case .dismissed(let app, let id): try await runtime.userDismissed(app: app, notification: id)
                    }
                } catch {
                    logger.notice("a desktop response the notification center no longer takes", metadata: ["error": "\(error)"])
                }
            }, logger: logger)
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// Installs the `--app` and `--legacy-app` apps, with their bundles and entitlements.
    func installApps(on runtime: DeviceRuntime) async throws {
        for app in apps + legacyApps {
            var bundle = DeviceRuntime.AppBundle(api: legacyApps.contains(app) ? .legacy : .userNotifications)
            if let entry = bundles.first(where: { $0.hasPrefix(app + "=") }) {
                let path = String(entry.dropFirst(app.count + 1))
                bundle.localization = try AlertLocalization.load(bundle: path)
                bundle.sounds = .init(appLibrarySounds: (path as NSString).appendingPathComponent("Library/Sounds"), bundle: path)
            }
            for entry in entitlements {
                let (topic, options, locationPush) = try Self.entitlement(entry, apps: apps + legacyApps)
                if topic == app {
                    bundle.entitlements.formUnion(options)
                    bundle.locationPushEntitlement = bundle.locationPushEntitlement || locationPush
                }
            }
            _ = try await runtime.install(app, bundle: bundle)
        }
    }

    /// Applies `--focus FILE`.
    func applyFocus(on runtime: DeviceRuntime) async throws {
        if let focus {
            guard let data = FileManager.default.contents(atPath: focus), data.count <= 16 << 20 else {
                throw ValidationError("--focus \(focus): cannot read the file (or it is over 16 MiB)")
            }
            do {
                try await runtime.setFocus(try FocusSettings(json: try JSONReader.parse(Array(data), limits: JSONLimits(maximumBytes: 16 << 20, maximumDepth: 16))))
            } catch let error as RuntimeError {
                throw ValidationError("--focus \(focus): \(error.message)")
            } catch {
                throw ValidationError("--focus \(focus) is not JSON: \(error)")
            }
        }
    }
}
