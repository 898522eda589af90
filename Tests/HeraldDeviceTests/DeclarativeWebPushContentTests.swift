import HeraldCore
import HeraldDevice
import Testing

/// How a device shows a Declarative Web Push message.
@Suite("Declarative Web Push on the device")
struct DeclarativeWebPushContentTests {
    @Test("title, body, sound unless silent, the badge in range, the tag as the thread, what a tap needs in userInfo")
    func content() throws {
        let message = try DeclarativeWebPushMessage(plaintext: Array(#"""
            {"web_push":8030,"notification":{"title":"Build","body":"passed","navigate":"https://ci.example/b/42","tag":"ci","lang":"en","data":{"id":42},
             "actions":[{"action":"rerun","title":"Re-run","navigate":"https://ci.example/b/42/rerun"},{"action":"log","title":"Log"}]},"app_badge":3}
            """#.utf8))
        let content = NotificationContent.declarative(message)
        #expect(content.title == "Build" && content.body == "passed" && content.sound == "default" && content.badge == 3 && content.thread == "ci")
        // Each action with the page it opens: its own, else the message's.
        let actions: JSONValue = .array([
            .object(["action": .string("rerun"), "title": .string("Re-run"), "navigate": .string("https://ci.example/b/42/rerun")]),
            .object(["action": .string("log"), "title": .string("Log"), "navigate": .string("https://ci.example/b/42")]),
        ])
        #expect(content.userInfo == .object([
            "navigate": .string("https://ci.example/b/42"), "data": .object(["id": .int(42)]), "lang": .string("en"), "tag": .string("ci"), "actions": actions,
        ]))
        #expect(content.kinds == [.alert, .sound, .badge])

        let quiet = try DeclarativeWebPushMessage(plaintext: Array(#"{"web_push":8030,"notification":{"title":"q","navigate":"https://a.b/","silent":true},"app_badge":9999999999}"#.utf8))
        let shown = NotificationContent.declarative(quiet)
        #expect(shown.sound == nil && shown.badge == nil && shown.kinds == [.alert])
    }
}
