import Foundation
import HeraldCore
import HeraldDevice
import Testing

/// Silent pushes (§7, scenarios 44–46, 55), the service extension (§8, 47–48) and grouping (54).
@Suite("Silent pushes, service extension, grouping")
struct RemoteContentTests {
    static func payload(_ json: String) -> JSONValue {
        try! JSONDecoder().decode(JSONValue.self, from: Data(json.utf8))
    }

    @Test("44, 45, 55. a silent push wakes a suspended app, launches one the system terminated, never one the user force-quit; 30 s to report")
    func silentPushes() {
        #expect(SilentPushes.isSilent(Self.payload(#"{"aps":{"content-available":1},"k":1}"#)))
        #expect(!SilentPushes.isSilent(Self.payload(#"{"aps":{"content-available":1,"alert":"x"}}"#)))
        #expect(SilentPushes.wake(.suspended) == .handleNow)
        #expect(SilentPushes.wake(.terminatedBySystem) == .launchInBackground)
        guard case .notDelivered = SilentPushes.wake(.forceQuitByUser) else { Issue.record("force-quit apps get none"); return }
        #expect(SilentPushes.outcome(startedAt: 0, reported: (.newData, 29_999)) == .newData)
        #expect(SilentPushes.outcome(startedAt: 0, reported: (.noData, 30_001)) == nil, "too late: terminated")
        #expect(SilentPushes.outcome(startedAt: 0, reported: nil) == nil)
    }

    @Test("46. ten silent pushes in an hour: three handled, the newest held (others dropped), released when the budget allows")
    func silentBudget() {
        var budget = SilentPushes.Budget()
        var handled = 0
        for i in 0..<10 {
            if budget.receive(Self.payload(#"{"aps":{"content-available":1},"n":\#(i)}"#), now: Int64(i) * 60_000) != nil { handled += 1 }
        }
        #expect(handled == 3 && budget.dropped == 6)
        #expect(budget.held == Self.payload(#"{"aps":{"content-available":1},"n":9}"#))
        #expect(budget.release(now: 30 * 60_000) == nil, "still over budget")
        #expect(budget.release(now: 61 * 60_000) != nil)
        _ = budget.receive(Self.payload(#"{"aps":{"content-available":1}}"#), now: 61 * 60_000 + 1)
        _ = budget.receive(Self.payload(#"{"aps":{"content-available":1}}"#), now: 61 * 60_000 + 2)
        #expect(budget.receive(Self.payload(#"{"aps":{"content-available":1},"n":"x"}"#), now: 61 * 60_000 + 3) == nil)
        budget.userForceQuit()
        #expect(budget.held == nil && budget.launched() == nil, "discarded on force-quit")
    }

    @Test("47–48. the extension runs for mutable alerts only; no handler in 30 s ⇒ timeWillExpire and the original")
    func serviceExtension() {
        let original = Self.payload(#"{"aps":{"alert":{"title":"T","body":"B"},"mutable-content":1}}"#)
        #expect(ServiceExtension.runs(for: original))
        #expect(!ServiceExtension.runs(for: Self.payload(#"{"aps":{"badge":1,"mutable-content":1}}"#)))
        #expect(!ServiceExtension.runs(for: Self.payload(#"{"aps":{"content-available":1,"mutable-content":1}}"#)))
        #expect(!ServiceExtension.runs(for: Self.payload(#"{"aps":{"alert":"x"}}"#)))
        let modified = ExtensionContent(payload: Self.payload(#"{"aps":{"alert":{"title":"T","body":"Decrypted"}}}"#))
        let kept = ExtensionContent(payload: original)
        func outcome(_ called: (ExtensionContent, Int64)?) -> (ExtensionContent, Bool) {
            let o = ServiceExtension.outcome(original: original, startedAt: 0, handlerCalled: called)
            return (o.shown, o.timeWillExpire)
        }
        #expect(outcome((modified, 1_000)) == (modified, false))
        #expect(outcome(nil) == (kept, true))
        #expect(outcome((modified, 31_000)) == (kept, true))
        let emptied = ExtensionContent(payload: Self.payload(#"{"aps":{"alert":{}}}"#))
        #expect(outcome((emptied, 10)) == (kept, false), "removing the alert text voids the changes")
        // A message from a person: the context comes with the content, and goes with it when voided.
        var message = modified
        message.communication = CommunicationContext(senderName: "Ana", senderHandle: "+33612345678", avatar: "ana.png", conversation: "c1")
        #expect(outcome((message, 10)).0.communication?.senderHandle == "+33612345678")
        message.payload = emptied.payload
        #expect(outcome((message, 10)) == (kept, false))
    }

    @Test("54. same thread id groups together; relevance 0.9 is featured over 0.2; interruption levels")
    func grouping() {
        let items = [
            NotificationGrouping.Item(id: "a", payload: Self.payload(#"{"aps":{"thread-id":"t1","relevance-score":0.2}}"#)),
            NotificationGrouping.Item(id: "b", payload: Self.payload(#"{"aps":{"thread-id":"t1","relevance-score":0.9}}"#)),
            NotificationGrouping.Item(id: "c", payload: Self.payload(#"{"aps":{"thread-id":"t1"}}"#)),
            NotificationGrouping.Item(id: "d", payload: Self.payload(#"{"aps":{"interruption-level":"time-sensitive"}}"#)),
        ]
        let groups = NotificationGrouping.groups(items)
        #expect(groups["t1"]?.map(\.id) == ["b", "a", "c"])
        #expect(groups[""]?.map(\.id) == ["d"])
        #expect(items[3].level == .timeSensitive && items[3].level.breaksThroughFocus)
        #expect(items[0].level == .active && NotificationGrouping.InterruptionLevel.passive.isSilent)
    }
}
