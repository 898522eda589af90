import ArgumentParser
import Dispatch
import Foundation
import HeraldCore
import HeraldDevice
import Synchronization

/// `herald bench scheduler`: a device runtime hosting many apps, each with 64 pending repeating
/// calendar requests, driven over a simulated week by a simulated clock.
struct BenchScheduler: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scheduler",
        abstract: "The device runtime's scheduler: memory, next-fire computation, lateness over a simulated week.",
        discussion: """
            Installs --apps apps with --requests repeating calendar requests each (daily at minutes spread over the day,
            a seventh of them weekly), then drives the runtime with a simulated clock for --days days: the clock jumps
            to each alarm the runtime arms, and nothing else wakes it. Reports resident memory, the time to compute the
            next fire of every request (against Foundation's Calendar.nextDate on the same requests, run in the same
            invocation), lateness in simulated time (fire instant to delivery instant), the real time spent per wake
            (what a request could be late by on a real clock), and how many times the runtime woke compared with the
            distinct due instants and with polling every second.

            Example: herald bench scheduler --apps 10 --requests 64 --days 7
            """
    )

    @Option(help: "Apps on the device.") var apps = 10_000
    @Option(help: "Pending repeating calendar requests per app (at most 64 are kept).") var requests = 64
    @Option(help: "Simulated days to run.") var days = 7
    @Option(help: "The device's time zone.") var timeZone = "America/New_York"

    final class Tally: @unchecked Sendable {
        let lock = Mutex(())
        var delivered = 0
        var latenessSum: Int64 = 0
        var latenessMax: Int64 = 0
        var dueInstants = Set<Int64>()
        func add(_ n: DeliveredNotification) {
            lock.withLock { _ in
                delivered += 1
                let late = n.deliveredAt - n.dueAt
                latenessSum += late
                latenessMax = max(latenessMax, late)
                dueInstants.insert(n.dueAt)
            }
        }
    }

    func run() async throws {
        guard let zone = TimeZone(identifier: timeZone) else { throw ValidationError("--time-zone \(timeZone) is not an IANA zone") }
        let start: Int64 = 1_795_262_400_000  // 2026-11-21T12:00:00Z
        let clock = SimulatedAlarmClock(startMilliseconds: start)
        let tally = Tally()
        let runtime = try DeviceRuntime(
            clock: clock, timeZone: zone, user: FixedPromptAnswer(allow: true), deliveredLimit: 20,
            observer: { event in if case .delivered(_, let n) = event { tally.add(n) } })

        func trigger(app: Int, index: Int) -> NotificationTrigger {
            let minuteOfDay = (app * 131 + index * 1_439 / max(1, requests)) % 1_440
            let weekday = index % 7 == 6 ? (app + index) % 7 + 1 : nil
            return .calendar(.init(weekday: weekday, hour: minuteOfDay / 60, minute: minuteOfDay % 60), repeats: true)
        }
        let rssBefore = BenchDelivery.residentKiB(getpid())

        // The baseline for next-fire computation: Foundation's Calendar.nextDate on the same requests.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        var t0 = BenchDelivery.nanos()
        var checksum: Int64 = 0
        for app in 0..<apps {
            for index in 0..<requests {
                guard case .calendar(let match, _) = trigger(app: app, index: index) else { continue }
                let components = DateComponents(hour: match.hour, minute: match.minute, weekday: match.weekday)
                if let next = calendar.nextDate(after: Date(timeIntervalSince1970: Double(start) / 1000), matching: components,
                                                matchingPolicy: .nextTimePreservingSmallerComponents) {
                    checksum &+= Int64(next.timeIntervalSince1970)
                }
            }
        }
        let foundationSeconds = Double(BenchDelivery.nanos() - t0) / 1e9
        t0 = BenchDelivery.nanos()
        for app in 0..<apps {
            for index in 0..<requests {
                checksum &+= trigger(app: app, index: index).nextFire(after: start, scheduledAt: start, timeZone: zone) ?? 0
            }
        }
        let ourSeconds = Double(BenchDelivery.nanos() - t0) / 1e9

        // Install and schedule (each add computes the request's next fire and re-arms the one alarm).
        t0 = BenchDelivery.nanos()
        let content = JSONValue.object(["title": .string("Reminder"), "body": .string("It is time"), "sound": .string("default")])
        for app in 0..<apps {
            let center = try await runtime.install("com.bench.app\(app)")
            try await center.requestAuthorization([.alert, .sound, .badge])
            for index in 0..<requests {
                try await center.add(LocalRequest(id: "r\(index)", content: content, trigger: trigger(app: app, index: index)))
            }
        }
        let scheduleSeconds = Double(BenchDelivery.nanos() - t0) / 1e9
        let rssScheduled = BenchDelivery.residentKiB(getpid())

        // The simulated week: jump to each alarm, let the runtime finish, measure the real time per wake.
        let end = start + Int64(days) * 86_400_000
        var wakes = 0
        var stepMax: UInt64 = 0
        var stepSum: UInt64 = 0
        t0 = BenchDelivery.nanos()
        while let next = clock.nextAlarm, next <= end {
            let s0 = BenchDelivery.nanos()
            clock.advance(to: next)
            await runtime.settle()
            let step = BenchDelivery.nanos() - s0
            stepMax = max(stepMax, step)
            stepSum += step
            wakes += 1
        }
        let weekSeconds = Double(BenchDelivery.nanos() - t0) / 1e9
        let rssAfter = BenchDelivery.residentKiB(getpid())
        let (armed, rung) = clock.alarmCounts

        let total = apps * min(requests, 64)
        print("scheduler benchmark: \(apps) apps × \(min(requests, 64)) repeating calendar requests = \(total) pending, \(days) simulated days, zone \(timeZone)")
        print(String(format: "memory: %.1f MiB resident before, %.1f MiB scheduled (%.0f bytes per pending request), %.1f MiB after the run",
                     Double(rssBefore) / 1024, Double(rssScheduled) / 1024, Double(rssScheduled - rssBefore) * 1024 / Double(max(1, total)),
                     Double(rssAfter) / 1024))
        print(String(format: "next fire for all %d: %.3f s with Herald's calendar matching (%.2f µs each) vs %.3f s with Foundation's nextDate: ratio %.2f (baseline/Herald)",
                     apps * requests, ourSeconds, ourSeconds * 1e6 / Double(max(1, apps * requests)), foundationSeconds, foundationSeconds / max(ourSeconds, 1e-9)))
        print(String(format: "install + schedule through the runtime: %.3f s (%.2f µs per request)", scheduleSeconds, scheduleSeconds * 1e6 / Double(max(1, total))))
        print("deliveries: \(tally.delivered) over \(tally.dueInstants.count) distinct due instants")
        print(String(format: "lateness (simulated time, fire → delivery): mean %.3f ms, max %d ms", Double(tally.latenessSum) / Double(max(1, tally.delivered)), tally.latenessMax))
        print(String(format: "real time per wake: mean %.3f ms, max %.3f ms (a request on a real clock is late by at most this); the %d simulated days took %.2f s of real time",
                     Double(stepSum) / Double(max(1, wakes)) / 1e6, Double(stepMax) / 1e6, days, weekSeconds))
        print(String(format: "wakes: %d (alarms armed %d, rung %d) for %d due instants: %.3f wakes per due instant; polling every second would wake %d times (ratio %.1f)",
                     wakes, armed, rung, tally.dueInstants.count, Double(wakes) / Double(max(1, tally.dueInstants.count)),
                     days * 86_400, Double(days * 86_400) / Double(max(1, wakes))))
        if checksum == 42 { print("") }  // keeps the computations observable
    }
}
