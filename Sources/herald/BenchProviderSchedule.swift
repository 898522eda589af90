import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HeraldClient
import HeraldCore
import HeraldProvider
import Synchronization

/// `herald bench provider-schedule`: the provider's scheduler with a million registrations in 400
/// time zones and a 09:00-local daily schedule, over one simulated day.
struct BenchProviderSchedule: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provider-schedule",
        abstract: "The provider's scheduler: plan a day of 09:00-local sends for --registrations registrations in --zones zones; memory and lateness.",
        discussion: """
            Stores --registrations registrations spread evenly over --zones IANA zones (the first ones of the system's
            list, in order of their UTC offset's spread) in a fresh provider database (SQLite, on disk), creates a daily
            09:00 schedule in each registration's own zone, and reports the time to plan the coming day (every zone's
            occurrence and its recipients). Then a simulated clock drives the service through the day: it jumps to each
            alarm, and the real time from that jump to each push's answer is the push's lateness. The gateway is
            modelled by its accepted rate (--rate pushes/s; measure yours with scripts/bench-client.sh): each push is
            answered 200 at the next free slot of that rate, so lateness shows what the scheduler, the database and
            the report writing add on top of the rate (reported as "beyond the rate": lateness minus the push's place
            in its instant's queue divided by the rate).

            Example: herald bench provider-schedule --registrations 100000 --zones 24
            """)

    @Option(help: "Registrations.") var registrations = 1_000_000
    @Option(help: "Time zones.") var zones = 400
    @Option(help: "The gateway's accepted rate, pushes per second.") var rate = 12_000.0
    @Option(name: .customLong("data-dir"), help: "Where to put the database (default: a new temporary directory).") var dataDirectory: String?

    /// Answers 200 at the next free slot of `rate`, and records when each push was answered
    /// relative to the moment the clock reached its due instant.
    final class PacedGateway: PushSending, @unchecked Sendable {
        let lock = Mutex(())
        let interval: Duration
        var nextFree = ContinuousClock.now
        let clock: SimulatedAlarmClock
        var ringAt: [Int64: ContinuousClock.Instant] = [:]
        var answered: [Int64: Int] = [:]
        var lateness: [Double] = []
        var beyondRate: [Double] = []

        init(rate: Double, clock: SimulatedAlarmClock) {
            interval = .nanoseconds(Int64(1e9 / rate))
            self.clock = clock
        }

        func rang(at due: Int64) { lock.withLock { _ in ringAt[due] = .now; nextFree = max(nextFree, .now) } }

        func send(_ notification: APNsNotification) async throws -> APNsResult {
            let due = clock.nowMilliseconds()
            let slot = lock.withLock { _ in
                let slot = max(nextFree, .now)
                nextFree = slot + interval
                return slot
            }
            try await Task.sleep(until: slot, clock: .continuous)
            let now = ContinuousClock.now
            lock.withLock { _ in
                let ring = ringAt[due] ?? now
                let place = answered[due, default: 0]
                answered[due] = place + 1
                let late = (now - ring).seconds
                lateness.append(late)
                beyondRate.append(late - Double(place + 1) * interval.seconds)
            }
            return APNsResult(apnsID: notification.apnsID, status: 200)
        }
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }

    func run() async throws {
        guard registrations > 0, zones > 0, rate > 0 else { throw ValidationError("--registrations, --zones and --rate must be positive") }
        let directory = dataDirectory ?? (NSTemporaryDirectory() as NSString).appendingPathComponent("herald-bench-provider-\(UUID().uuidString)")
        // Zones spread over the world's offsets: sorted by offset, then every k-th.
        let reference = Date(timeIntervalSince1970: 1_795_262_400)
        let all = TimeZone.knownTimeZoneIdentifiers.compactMap { TimeZone(identifier: $0) }
            .sorted { ($0.secondsFromGMT(for: reference), $0.identifier) < ($1.secondsFromGMT(for: reference), $1.identifier) }
        let step = max(1, all.count / zones)
        let chosen = Array(stride(from: 0, to: all.count, by: step).map { all[$0].identifier }.prefix(zones))
        let offsets = Set(chosen.map { TimeZone(identifier: $0)!.secondsFromGMT(for: reference) })
        print("zones: \(chosen.count) (\(offsets.count) distinct UTC offsets), registrations: \(registrations), modelled gateway rate: \(Int(rate))/s")

        let start: Int64 = 1_795_262_400_000  // 2026-11-21T12:00:00Z
        let clock = SimulatedAlarmClock(startMilliseconds: start)
        let gateway = PacedGateway(rate: rate, clock: clock)
        let rssStart = BenchDelivery.residentKiB(getpid())
        let database = try SQLiteProviderStore(directory: directory)
        let service = ProviderService(store: database, sender: gateway, clock: clock, missedSendWindow: 0)

        var began = ContinuousClock.now
        var batch: [Registration] = []
        batch.reserveCapacity(50_000)
        for i in 0..<registrations {
            let token = String(format: "%064x", i)
            batch.append(Registration(token: token, topic: "com.example.app", language: i % 3 == 0 ? "fr" : "en",
                                      timeZone: chosen[i % chosen.count], registeredAt: start))
            if batch.count == 50_000 || i == registrations - 1 {
                try await database.upsert(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        let insertSeconds = (ContinuousClock.now - began).seconds
        print(String(format: "stored %d registrations in %.1f s (%.0f/s)", registrations, insertSeconds, Double(registrations) / insertSeconds))

        try await service.putTemplate(MessageTemplate(id: "morning", translations: [
            "en": .init(body: "Good morning, %@"), "fr": .init(body: "Bonjour, %@"),
        ]))
        began = .now
        try await service.startSchedules()
        let (schedule, _) = try await service.schedule(
            .wallClock(WallClockRule(hour: 9, minute: 0, repeats: .daily)),
            send: SendRequest(target: .segment(topic: "com.example.app", tags: [], languages: []), message: .template(id: "morning", arguments: ["Herald"])),
            id: "morning")
        let scheduleSeconds = (ContinuousClock.now - began).seconds
        began = .now
        let day = try await service.planAhead(schedule.id, span: 86_400_000)
        let planSeconds = (ContinuousClock.now - began).seconds
        let instants = Set(day.map(\.dueAt))
        let biggest = Dictionary(grouping: day, by: \.dueAt).mapValues { $0.reduce(0) { $0 + $1.recipients } }.values.max() ?? 0
        print(String(format: "schedule created and every zone's next occurrence planned: %.3f s", scheduleSeconds))
        print(String(format: "plan of the coming day (occurrence + recipients per zone): %.2f s — %d runs, %d recipients, %d distinct due instants, at most %d recipients at one instant",
                     planSeconds, day.count, day.reduce(0) { $0 + $1.recipients }, instants.count, biggest))
        let rssPlanned = BenchDelivery.residentKiB(getpid())

        // The day: jump to each alarm, let its runs finish.
        began = .now
        let end = start + 86_400_000
        var wakes = 0
        while let next = clock.nextAlarm, next < end {
            gateway.rang(at: next)
            clock.advance(to: next)
            await service.settle()
            wakes += 1
        }
        let daySeconds = (ContinuousClock.now - began).seconds
        let rssAfter = BenchDelivery.residentKiB(getpid())
        // What of that is live, and what is the allocator keeping from the busiest instant.
        if let symbol = dlsym(dlopen(nil, RTLD_NOW), "malloc_trim") {
            _ = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)(0)
        }
        let rssTrimmed = BenchDelivery.residentKiB(getpid())
        let status = try await service.scheduleStatus(schedule.id)
        let late = gateway.lateness.sorted()
        let beyond = gateway.beyondRate.sorted()
        print(String(format: "day: %d pushes in %d runs over %d wakes, %.1f s real (%.0f pushes/s)", late.count, status.runs.count, wakes, daySeconds, Double(late.count) / daySeconds))
        print("counts: \(status.counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        print(String(format: "lateness (due instant → answered): p50 %.3f s, p99 %.3f s, max %.3f s", Self.percentile(late, 0.5), Self.percentile(late, 0.99), late.last ?? 0))
        print(String(format: "beyond the rate (lateness − place in the instant's queue / rate): p50 %.3f s, p99 %.3f s, max %.3f s", Self.percentile(beyond, 0.5), Self.percentile(beyond, 0.99), beyond.last ?? 0))
        print(String(format: "resident memory: %.1f MiB at start, %.1f MiB with the registrations stored and the day planned, %.1f MiB after the day (%.1f MiB after returning free pages to the system)",
                     Double(rssStart) / 1024, Double(rssPlanned) / 1024, Double(rssAfter) / 1024, Double(rssTrimmed) / 1024))
        await service.stopSchedules()
        if dataDirectory == nil { try? FileManager.default.removeItem(atPath: directory) }
    }

}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
