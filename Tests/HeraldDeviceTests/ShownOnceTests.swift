import Foundation
import HeraldCore
import Testing

@testable import HeraldDevice
import HeraldTesting

/// "Shown" is the notification in the app's saved state with one `delivered` event. A device
/// killed at any instant around it neither shows one twice through a redelivery nor loses one:
/// the crash points are made by editing what a crash leaves on disk.
@Suite("Device runtime: shown once across a crash")
struct ShownOnceTests {
    typealias Journal = DeviceRuntimeTests.Journal

    func runtime(_ directory: String, _ journal: Journal) async throws -> DeviceRuntime {
        let runtime = try DeviceRuntime(
            clock: SimulatedAlarmClock(startMilliseconds: DeviceRuntimeTests.at("2026-03-07T12:00:00Z")), timeZone: DeviceRuntimeTests.newYork,
            user: DeviceRuntimeTests.Allow(), storageDirectory: directory, observer: journal.observer)
        _ = try await runtime.install("com.example.app")
        return runtime
    }

    func directory() throws -> String {
        try TemporaryDirectory.make(prefix: "herald-shown-once")
    }

    /// A runtime that showed one push and acked it after saving; returns the ack count.
    func showOne(in directory: String, _ journal: Journal) async throws -> Int {
        let runtime = try await runtime(directory, journal)
        try await runtime.center(for: "com.example.app")!.requestAuthorization([.alert])
        let acks = Locked(0)
        await runtime.receive(DeviceRuntimeTests.push(#"{"aps":{"alert":"one"}}"#)) { acks.withLock { $0 += 1 } }
        await runtime.settle()
        return acks.withLock { $0 }
    }

    var journalFile: String { "apps/com.example.app.json.announced" }

    @Test("no crash: one event, and a restart announces nothing again")
    func noCrash() async throws {
        let dir = try directory()
        let first = Journal()
        #expect(try await showOne(in: dir, first) == 1)
        #expect(first.delivered.map(\.content.body) == ["one"])
        let second = Journal()
        let runtime = try await runtime(dir, second)
        await runtime.receive(DeviceRuntimeTests.push(#"{"aps":{"alert":"one"}}"#))  // the gateway's repeat
        await runtime.settle()
        #expect(second.delivered.isEmpty)
    }

    @Test("killed after the state was written, before the event: the restart emits it, once; the repeat is dropped")
    func crashBeforeEvent() async throws {
        let dir = try directory()
        _ = try await showOne(in: dir, Journal())
        // What that crash leaves: the state lists the announcement, the journal does not.
        try FileManager.default.removeItem(atPath: dir + "/" + journalFile)
        let after = Journal()
        let runtime = try await runtime(dir, after)
        await runtime.receive(DeviceRuntimeTests.push(#"{"aps":{"alert":"one"}}"#))
        await runtime.settle()
        let shown = after.delivered
        #expect(shown.map(\.content.body) == ["one"])
        #expect(shown.first?.presentation.banner == true && shown.first?.origin == .remote(apnsID: shown.first?.id ?? ""))
        // And a further restart has nothing left to announce.
        let later = Journal()
        _ = try await self.runtime(dir, later)
        #expect(later.delivered.isEmpty)
    }

    @Test("killed before the state was written: nothing was shown; the redelivery shows it once")
    func crashBeforeState() async throws {
        let dir = try directory()
        let journal = Journal()
        let runtime = try await runtime(dir, journal)
        try await runtime.center(for: "com.example.app")!.requestAuthorization([.alert])
        await runtime.settle()
        // Nothing of the push reached the disk; the gateway sends it again after the restart.
        let after = Journal()
        let restarted = try await self.runtime(dir, after)
        await restarted.receive(DeviceRuntimeTests.push(#"{"aps":{"alert":"one"}}"#))
        await restarted.settle()
        #expect(journal.delivered.isEmpty && after.delivered.map(\.content.body) == ["one"])
    }

    @Test("a journal of garbage is read as numbers or skipped, never trusted beyond that")
    func hostileJournal() async throws {
        let dir = try directory()
        _ = try await showOne(in: dir, Journal())
        try Data("x\n-1\n99999999999999999999\n\n".utf8).write(to: URL(fileURLWithPath: dir + "/" + journalFile))
        let after = Journal()
        _ = try await runtime(dir, after)
        #expect(after.delivered.map(\.content.body) == ["one"], "the garbage records nothing: the event comes again")
    }
}
