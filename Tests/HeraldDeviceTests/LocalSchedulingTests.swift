import Foundation
import HeraldCore
import HeraldDevice
import Testing

/// Local scheduling against the reference's acceptance scenarios (user-notifications §12: 13–32,
/// 51–53), with fixed instants and named zones: no clock is read.
@Suite("Local scheduling")
struct LocalSchedulingTests {
    static func at(_ text: String) -> Int64 { PlanFormat.parseDateTime(text)!.instant! }
    static func zone(_ id: String) -> TimeZone { TimeZone(identifier: id)! }
    static let newYork = zone("America/New_York")

    func request(_ id: String, _ trigger: NotificationTrigger?, body: String = "x") -> LocalRequest {
        LocalRequest(id: id, content: .object(["body": .string(body)]), trigger: trigger)
    }

    func fires(_ requests: [LocalRequest], from: String, until: String, zone: TimeZone = newYork,
               events: [PlanFormat.Event] = []) throws -> [String] {
        try LocalPlanner.plan(requests: requests, events: events, from: Self.at(from), until: Self.at(until), timeZone: zone)
            .deliveries.map { PlanFormat.utcString($0.atMilliseconds) }
    }

    func wall(_ text: String) -> NotificationTrigger.WallClockTime { PlanFormat.parseDateTime(text)!.wallClock! }

    @Test("13. no time zone: an absolute instant, unmoved when the device changes zone")
    func absoluteInstant() throws {
        let r = request("a", .date(.absolute(Self.at("2026-06-10T13:00:00Z")), repeat: nil))
        let plan = try LocalPlanner.plan(
            requests: [r], events: [.init(at: Self.at("2026-06-09T00:00:00Z"), change: .timeZone(Self.zone("America/Los_Angeles")))],
            from: Self.at("2026-06-08T00:00:00Z"), until: Self.at("2026-06-12T00:00:00Z"), timeZone: Self.newYork)
        #expect(plan.deliveries.map { PlanFormat.utcString($0.atMilliseconds) } == ["2026-06-10T13:00:00Z"])
        #expect(PlanFormat.localString(plan.deliveries[0].atMilliseconds, in: plan.deliveries[0].timeZone) == "2026-06-10T06:00:00-07:00")
    }

    @Test("14. a time zone: the wall-clock time follows the device (09:00 New York → 09:00 in Los Angeles)")
    func wallClockFollowsDevice() throws {
        let r = request("a", .date(.wallClock(wall("2026-06-10T09:00:00")), repeat: nil))
        let moved = [PlanFormat.Event(at: Self.at("2026-06-09T00:00:00Z"), change: .timeZone(Self.zone("America/Los_Angeles")))]
        #expect(try fires([r], from: "2026-06-08T00:00:00Z", until: "2026-06-12T00:00:00Z", events: moved) == ["2026-06-10T16:00:00Z"])
        #expect(try fires([r], from: "2026-06-08T00:00:00Z", until: "2026-06-12T00:00:00Z") == ["2026-06-10T13:00:00Z"])
    }

    @Test("15–17. daily 09:00 New York across both DST changes, as a wall-clock repeat and as a calendar trigger")
    func dailyAcrossDST() throws {
        let legacy = request("a", .date(.wallClock(wall("2026-03-06T09:00:00")), repeat: .day))
        let calendar = request("b", .calendar(.init(hour: 9, minute: 0), repeats: true))
        for r in [legacy, calendar] {
            #expect(try fires([r], from: "2026-03-06T15:00:00Z", until: "2026-03-08T23:00:00Z") == ["2026-03-07T14:00:00Z", "2026-03-08T13:00:00Z"])
            #expect(try fires([r], from: "2026-10-30T15:00:00Z", until: "2026-11-01T23:00:00Z") == ["2026-10-31T13:00:00Z", "2026-11-01T14:00:00Z"])
        }
    }

    @Test("18. a repeating 86,400 s interval is elapsed time: 09:00 EST → 10:00 EDT")
    func intervalIsElapsed() throws {
        let r = request("a", .interval(seconds: 86_400, repeats: true))
        let plan = try LocalPlanner.plan(requests: [r], events: [], from: Self.at("2026-03-07T14:00:00Z"), until: Self.at("2026-03-08T23:00:00Z"), timeZone: Self.newYork)
        #expect(plan.deliveries.map { PlanFormat.localString($0.atMilliseconds, in: $0.timeZone) } == ["2026-03-08T10:00:00-04:00"])
    }

    @Test("19–20. a skipped time moves forward, a repeated time fires once (New York)")
    func skippedAndRepeatedTimes() throws {
        let spring = request("a", .calendar(.init(hour: 2, minute: 30), repeats: true))
        #expect(try fires([spring], from: "2026-03-07T12:00:00Z", until: "2026-03-09T12:00:00Z") == ["2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"])
        let fall = request("b", .calendar(.init(hour: 1, minute: 30), repeats: true))
        #expect(try fires([fall], from: "2026-10-31T12:00:00Z", until: "2026-11-02T12:00:00Z") == ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"])
    }

    @Test("DST in other zones: London, Sydney (southern hemisphere), Tokyo (none), Lord Howe (30-minute shift)")
    func otherZones() throws {
        let daily0130 = request("a", .calendar(.init(hour: 1, minute: 30), repeats: true))
        // London springs forward 2026-03-29 01:00 → 02:00: 01:30 does not exist → 02:30 BST.
        #expect(try fires([daily0130], from: "2026-03-28T12:00:00Z", until: "2026-03-30T12:00:00Z", zone: Self.zone("Europe/London"))
                == ["2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"])
        // Sydney falls back 2026-04-05 03:00 → 02:00: 02:30 happens twice, fires at the first.
        let daily0230 = request("b", .calendar(.init(hour: 2, minute: 30), repeats: true))
        #expect(try fires([daily0230], from: "2026-04-04T00:00:00Z", until: "2026-04-05T23:00:00Z", zone: Self.zone("Australia/Sydney"))
                == ["2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"])
        // Sydney springs forward 2026-10-04 02:00 → 03:00: 02:30 → 03:30 AEDT.
        #expect(try fires([daily0230], from: "2026-10-03T00:00:00Z", until: "2026-10-04T12:00:00Z", zone: Self.zone("Australia/Sydney"))
                == ["2026-10-03T16:30:00Z"])
        // Tokyo: no DST, 09:00 JST is 00:00Z every day.
        let nine = request("c", .calendar(.init(hour: 9), repeats: true))
        #expect(try fires([nine], from: "2026-03-07T12:00:00Z", until: "2026-03-09T12:00:00Z", zone: Self.zone("Asia/Tokyo"))
                == ["2026-03-08T00:00:00Z", "2026-03-09T00:00:00Z"])
        // Lord Howe shifts by 30 minutes (2026-10-04 02:00 → 02:30): 02:15 → 02:45.
        let odd = request("d", .calendar(.init(hour: 2, minute: 15), repeats: true))
        let lordHowe = try fires([odd], from: "2026-10-03T00:00:00Z", until: "2026-10-04T12:00:00Z", zone: Self.zone("Australia/Lord_Howe"))
        #expect(lordHowe.count == 1)
        let plan = try LocalPlanner.plan(requests: [odd], events: [], from: Self.at("2026-10-03T00:00:00Z"), until: Self.at("2026-10-04T12:00:00Z"), timeZone: Self.zone("Australia/Lord_Howe"))
        #expect(PlanFormat.localString(plan.deliveries[0].atMilliseconds, in: plan.deliveries[0].timeZone) == "2026-10-04T02:45:00+11:00")
    }

    @Test("21–22. missing dates: day 31 monthly from Feb → Mar 1; Feb 29 yearly → Mar 1 in common years, Feb 29 in 2028")
    func missingDates() throws {
        let utc = Self.zone("UTC")
        let day31 = NotificationTrigger.calendar(.init(day: 31), repeats: true)
        #expect(day31.nextFire(after: Self.at("2026-02-01T00:00:00Z"), scheduledAt: 0, timeZone: utc) == Self.at("2026-03-01T00:00:00Z"))
        let feb29 = request("a", .calendar(.init(month: 2, day: 29), repeats: true))
        let dates = try fires([feb29], from: "2026-01-01T00:00:00Z", until: "2028-12-31T00:00:00Z", zone: utc)
        #expect(!dates.contains("2026-02-28T00:00:00Z"))
        #expect(dates.contains("2028-02-29T00:00:00Z"))
        #expect(dates.first == "2026-03-01T00:00:00Z")
    }

    @Test("23. intervals: repeating needs ≥ 60 s; 0 s fails even one-shot")
    func intervalRules() throws {
        var scheduler = LocalScheduler(timeZone: Self.newYork)
        #expect(throws: TriggerError.self) { _ = try scheduler.add(request("a", .interval(seconds: 59, repeats: true)), now: 0) }
        #expect(throws: TriggerError.self) { _ = try scheduler.add(request("b", .interval(seconds: 0, repeats: false)), now: 0) }
        _ = try scheduler.add(request("c", .interval(seconds: 60, repeats: true)), now: 0)
        _ = try scheduler.add(request("d", .interval(seconds: 1, repeats: false)), now: 0)
        #expect(scheduler.pending.map(\.request.id) == ["c", "d"])
    }

    @Test("24, 27. a past fire date, or no trigger (present now), is delivered at once and not kept")
    func immediate() throws {
        var scheduler = LocalScheduler(timeZone: Self.newYork)
        let now = Self.at("2026-06-10T12:00:00Z")
        let past = try scheduler.add(request("past", .date(.absolute(now - 1000), repeat: nil)), now: now)
        #expect(past.delivered.map(\.atMilliseconds) == [now])
        let present = try scheduler.add(request("now", nil), now: now)
        #expect(present.delivered.map(\.request.id) == ["now"])
        #expect(scheduler.pending.isEmpty)
    }

    @Test("25. a fire date with a region is refused (plan format)")
    func dateWithRegion() throws {
        let json = JSONValue.object([
            "id": .string("a"),
            "trigger": .object(["type": .string("date"), "date": .string("2026-06-10T13:00:00Z"), "latitude": .double(1), "longitude": .double(2)]),
        ])
        #expect(throws: PlanFormat.FormatError.self) { _ = try PlanFormat.request(json) }
    }

    @Test("date-times: fractions of any length (the fuzzer's crasher had five digits), offsets, and what is refused")
    func dateTimes() {
        #expect(PlanFormat.parseDateTime("2026-06-10T08:00:00.03350Z")?.instant == Self.at("2026-06-10T08:00:00Z") + 33)
        #expect(PlanFormat.parseDateTime("2026-06-10T08:00:00.5Z")?.instant == Self.at("2026-06-10T08:00:00Z") + 500)
        #expect(PlanFormat.parseDateTime("2026-06-10T08:00:00.123+02:00")?.instant == Self.at("2026-06-10T06:00:00Z") + 123)
        #expect(PlanFormat.parseDateTime("2026-06-10T08:00:00.0335")?.wallClock?.hour == 8)
        for bad in ["2026-06-10T08:00:00.Z", "2026-06-10T08:00:00.03350:00.keyTZ", "2026-13-10T08:00:00Z", "2026-06-10T08:00"] {
            #expect(PlanFormat.parseDateTime(bad) == nil, "\(bad)")
        }
    }

    @Test("26, 28, 29. one-shots leave the pending list when fired; repeats stay; removal and replacement by id")
    func pendingList() throws {
        var scheduler = LocalScheduler(timeZone: Self.newYork)
        let now = Self.at("2026-06-10T12:00:00Z")
        _ = try scheduler.add(request("once", .date(.absolute(now + 60_000), repeat: nil)), now: now)
        _ = try scheduler.add(request("daily", .date(.absolute(now + 60_000), repeat: .day)), now: now)
        _ = try scheduler.add(request("gone", .interval(seconds: 30, repeats: false)), now: now)
        scheduler.remove(ids: ["gone"])
        let fired = scheduler.fireDue(upTo: now + 60_000)
        #expect(fired.map(\.request.id) == ["once", "daily"])
        #expect(scheduler.pending.map(\.request.id) == ["daily"])
        #expect(scheduler.nextDue == now + 60_000 + 86_400_000)
        _ = try scheduler.add(request("daily", .interval(seconds: 120, repeats: false), body: "new"), now: now)
        #expect(scheduler.pending.count == 1)
        #expect(scheduler.pending[0].request.content == .object(["body": .string("new")]))
        #expect(scheduler.nextDue == now + 120_000)
    }

    @Test("30–32. only the 64 soonest stay pending; a repeat counts once; a sooner newcomer evicts the latest")
    func pendingLimit() throws {
        let now = Self.at("2026-06-10T00:00:00Z")
        let hour: Int64 = 3_600_000
        var scheduler = LocalScheduler(timeZone: Self.newYork)
        var dropped: [String] = []
        for i in 1...70 { dropped += try scheduler.add(request("h\(i)", .date(.absolute(now + Int64(i) * hour), repeat: nil)), now: now).dropped.map(\.id) }
        #expect(scheduler.pending.count == 64)
        #expect(dropped == (65...70).map { "h\($0)" })
        // Dropped for good: firing the first ones does not bring them back.
        _ = scheduler.fireDue(upTo: now + 10 * hour)
        #expect(scheduler.pending.count == 54)

        var second = LocalScheduler(timeZone: Self.newYork)
        _ = try second.add(request("repeat", .date(.absolute(now + 2 * hour), repeat: .day)), now: now)
        for i in 1...70 { _ = try second.add(request("h\(i)", .date(.absolute(now + Int64(i) * hour), repeat: nil)), now: now) }
        #expect(second.pending.count == 64)
        #expect(second.pending.contains { $0.request.id == "repeat" })
        #expect(Set(second.pending.map(\.request.id)) == Set(["repeat"] + (1...63).map { "h\($0)" }))

        var third = LocalScheduler(timeZone: Self.newYork)
        for i in 1...64 { _ = try third.add(request("h\(i)", .date(.absolute(now + Int64(i) * hour), repeat: nil)), now: now) }
        let result = try third.add(request("soon", .interval(seconds: 60, repeats: false)), now: now)
        #expect(result.dropped.map(\.id) == ["h64"])
        #expect(third.pending.contains { $0.request.id == "soon" })
    }

    @Test("51–53. regions: once by default, every crossing when repeating, nothing with services off or permission denied")
    func regions() throws {
        let region = NotificationTrigger.Region(latitude: 48.8584, longitude: 2.2945, radius: 200)
        let inside = (48.8584, 2.2945), outside = (48.87, 2.33)
        func run(repeats: Bool, services: Bool = true, authorized: Bool = true) throws -> Int {
            var scheduler = LocalScheduler(timeZone: Self.zone("Europe/Paris"))
            _ = try scheduler.add(request("r", .location(region, onEntry: true, onExit: false, repeats: repeats)), now: 0)
            scheduler.setLocation(servicesEnabled: services, authorized: authorized)
            var count = 0
            for (i, point) in [outside, inside, outside, inside].enumerated() {
                count += scheduler.updateLocation(latitude: point.0, longitude: point.1, now: Int64(i) * 1000).count
            }
            return count
        }
        #expect(try run(repeats: false) == 1)
        #expect(try run(repeats: true) == 2)
        #expect(try run(repeats: true, services: false) == 0)
        #expect(try run(repeats: true, authorized: false) == 0)
        #expect(region.contains(latitude: inside.0, longitude: inside.1))
        #expect(!region.contains(latitude: outside.0, longitude: outside.1))
    }

    @Test("regions: at most 20 monitored per app; the 21st is refused with Core Location's error, a replacement is not a 21st")
    func regionLimit() throws {
        var scheduler = LocalScheduler(timeZone: Self.zone("Europe/Paris"))
        func region(_ i: Int) -> NotificationTrigger {
            .location(.init(latitude: 48 + Double(i) / 100, longitude: 2.3, radius: 100), onEntry: true, onExit: false, repeats: false)
        }
        for i in 1...20 { _ = try scheduler.add(request("r\(i)", region(i)), now: 0) }
        // Replacing one of the 20 by its identifier, and a request that is not a region, are fine.
        _ = try scheduler.add(request("r7", region(70)), now: 0)
        _ = try scheduler.add(request("timer", .interval(seconds: 60, repeats: false)), now: 0)
        #expect(throws: TriggerError.self) { _ = try scheduler.add(request("r21", region(21)), now: 0) }
        do { _ = try scheduler.add(request("r21", region(21)), now: 0) } catch { #expect(error.message.contains("kCLErrorRegionMonitoringFailure")) }
        #expect(scheduler.pending.count == 21)
        scheduler.remove(ids: ["r1"])
        _ = try scheduler.add(request("r21", region(21)), now: 0)
        #expect(scheduler.pending.filter { if case .location? = $0.request.trigger { true } else { false } }.count == 20)
    }

    @Test("ISO 8601: instants with Z or offsets, wall-clock times without, errors for the rest")
    func isoParsing() {
        #expect(PlanFormat.parseDateTime("2026-06-10T13:00:00Z")?.instant == 1_781_096_400_000)
        #expect(PlanFormat.parseDateTime("2026-06-10T22:00:00+09:00")?.instant == 1_781_096_400_000)
        #expect(PlanFormat.parseDateTime("2026-06-10T09:00:00.250-04:00")?.instant == 1_781_096_400_250)
        #expect(PlanFormat.parseDateTime("2026-06-10T09:00:00")?.instant == nil)
        #expect(PlanFormat.parseDateTime("2026-06-10T09:00:00")?.wallClock?.hour == 9)
        #expect(PlanFormat.parseDateTime("2026-13-10T09:00:00Z") == nil)
        #expect(PlanFormat.parseDateTime("tomorrow") == nil)
        #expect(PlanFormat.localString(1_781_096_400_000, in: Self.zone("Asia/Kolkata")) == "2026-06-10T18:30:00+05:30")
    }
}
