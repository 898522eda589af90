import HeraldCore
import Testing

/// The Push API's declarative push message parser, one test per step (the step numbers are
/// `DeclarativeWebPushMessage.init(plaintext:baseURL:)`'s).
@Suite("Declarative Web Push: the parse steps")
struct DeclarativeWebPushTests {
    static func read(_ text: String, base: String? = nil) throws(DeclarativeWebPushMessage.NotDeclarative) -> DeclarativeWebPushMessage {
        try DeclarativeWebPushMessage(plaintext: Array(text.utf8), baseURL: base.flatMap { try? StandardURL(parsing: $0) })
    }

    static func failingStep(_ text: String) -> Int? {
        do { _ = try read(text); return nil } catch { return error.step }
    }

    static func message(notification: String, top: String = "") -> String {
        #"{"web_push":8030,"notification":{"title":"t","navigate":"https://a.example/"\#(notification)}\#(top)}"#
    }

    @Test("WebKit's own example reads (its app_badge inside notification, a string, is ignored)")
    func webkitExample() throws {
        let m = try Self.read(#"""
            {"web_push":8030,"notification":{"title":"Webkit.org — Meet Declarative Web Push","lang":"en-US","dir":"ltr",
             "body":"Send push notifications without JavaScript or service worker!","navigate":"https://webkit.org/blog/16535/meet-declarative-web-push/",
             "silent":false,"app_badge":"1"}}
            """#)
        #expect(m.title == "Webkit.org — Meet Declarative Web Push" && m.lang == "en-US" && m.dir == .ltr && m.silent == false)
        #expect(m.navigate == "https://webkit.org/blog/16535/meet-declarative-web-push/" && m.appBadge == nil && !m.mutable)
    }

    @Test("step 1: bytes that are not JSON are not declarative")
    func step1() {
        for text in ["hello", "{", #"{"web_push":8030,}"#, ""] { #expect(Self.failingStep(text) == 1, "\(text)") }
    }

    @Test("step 2: JSON that is not a map is not declarative")
    func step2() {
        for text in ["[]", "8030", #""web_push""#, "null", "true"] { #expect(Self.failingStep(text) == 2, "\(text)") }
    }

    @Test("step 3: a map without web_push is not declarative")
    func step3() {
        #expect(Self.failingStep(#"{"notification":{"title":"t","navigate":"https://a.example/"}}"#) == 3)
    }

    @Test("step 4: web_push other than the number 8030 is not declarative (8030.0 is 8030)")
    func step4() throws {
        for magic in ["9001", #""8030""#, "8030.5", "-8030", "null", "[8030]"] {
            #expect(Self.failingStep(#"{"web_push":\#(magic),"notification":{"title":"t","navigate":"https://a.example/"}}"#) == 4, "\(magic)")
        }
        _ = try Self.read(#"{"web_push":8030.0,"notification":{"title":"t","navigate":"https://a.example/"}}"#)
    }

    @Test("steps 5 and 6: notification missing, or not a map")
    func steps5and6() {
        #expect(Self.failingStep(#"{"web_push":8030}"#) == 5)
        for value in ["[]", #""x""#, "null", "1"] { #expect(Self.failingStep(#"{"web_push":8030,"notification":\#(value)}"#) == 6, "\(value)") }
    }

    @Test("steps 7 and 8: title missing, or not a string (an empty one is a title)")
    func steps7and8() throws {
        #expect(Self.failingStep(#"{"web_push":8030,"notification":{"navigate":"https://a.example/"}}"#) == 7)
        for value in ["5", "null", "[]", "{}", "true"] {
            #expect(Self.failingStep(#"{"web_push":8030,"notification":{"title":\#(value),"navigate":"https://a.example/"}}"#) == 8, "\(value)")
        }
        #expect(try Self.read(#"{"web_push":8030,"notification":{"title":"","navigate":"https://a.example/"}}"#).title == "")
    }

    @Test("step 9: mutable is a top-level boolean; anything else is false; inside notification read only when the top level has none")
    func step9() throws {
        #expect(try Self.read(Self.message(notification: "", top: #","mutable":true"#)).mutable)
        #expect(try !Self.read(Self.message(notification: "")).mutable)
        for wrong in ["1", #""true""#, "null", "{}"] { #expect(try !Self.read(Self.message(notification: "", top: #","mutable":\#(wrong)"#)).mutable, "\(wrong)") }
        #expect(try Self.read(Self.message(notification: #","mutable":true"#)).mutable, "WebKit and Firefox read it in notification")
        #expect(try !Self.read(Self.message(notification: #","mutable":true"#, top: #","mutable":false"#)).mutable, "the top level wins")
    }

    @Test("step 10: the options, each read on its own; a member of the wrong type is ignored, never a failure")
    func step10() throws {
        let full = try Self.read(Self.message(notification: #"""
            ,"body":"b","lang":"fr","dir":"rtl","tag":"chat","icon":"https://a.example/i.png","silent":true,"requireInteraction":true,
             "data":{"id":7},"actions":[{"action":"open","title":"Open"},{"action":"reply","title":"Reply","navigate":"https://a.example/reply"}]
            """#))
        #expect(full.body == "b" && full.lang == "fr" && full.dir == .rtl && full.tag == "chat" && full.icon == "https://a.example/i.png")
        #expect(full.silent == true && full.requireInteraction && full.data == .object(["id": .int(7)]))
        #expect(full.actions == [.init(action: "open", title: "Open"), .init(action: "reply", title: "Reply", navigate: "https://a.example/reply")])
        let wrong = try Self.read(Self.message(notification: #"""
            ,"body":5,"lang":[],"dir":"up","tag":{},"icon":"http://[::1","silent":"no","requireInteraction":1,
             "actions":[5,{"action":"a"},{"title":"t"},{"action":"x","title":"X","navigate":"https://:99999/"},{"action":"ok","title":"OK"}]
            """#))
        #expect(wrong.body == nil && wrong.lang == nil && wrong.dir == .auto && wrong.tag == nil && wrong.icon == nil)
        #expect(wrong.silent == nil && !wrong.requireInteraction)
        #expect(wrong.actions == [.init(action: "ok", title: "OK")], "only whole actions, with a navigate that parses")
        #expect(try Self.read(Self.message(notification: #","actions":"none""#)).actions.isEmpty)
        for dir in ["auto", "ltr", "rtl"] { #expect(try Self.read(Self.message(notification: #","dir":"\#(dir)""#)).dir.rawValue == dir) }
    }

    @Test("step 11: navigate is required and parsed by the URL Standard's parser: what it accepts is fine, what it refuses is not")
    func step11() throws {
        func with(_ navigate: String) -> String { #"{"web_push":8030,"notification":{"title":"t","navigate":\#(navigate)}}"# }
        #expect(Self.failingStep(#"{"web_push":8030,"notification":{"title":"t"}}"#) == 11)
        for value in ["5", "null", #"["https://a.example/"]"#] { #expect(Self.failingStep(with(value)) == 11, "\(value)") }
        for refused in ["https://a.example:99999/", "/relative", "https://", "http://[::1/", "not a url", "https://a b.example/"] {
            #expect(Self.failingStep(with(#""\#(refused)""#)) == 11, "\(refused)")
        }
        // Accepted as a browser accepts them, and serialized as the standard says.
        let accepted = ["mailto:someone@example.com": "mailto:someone@example.com", "  https://a.example/x  ": "https://a.example/x",
                        "HTTPS://A.EXAMPLE:443/a/../b": "https://a.example/b", "javascript:void(0)": "javascript:void(0)",
                        "https://bücher.example/": "https://xn--bcher-kva.example/", "web+app:open?id=1": "web+app:open?id=1"]
        for (input, href) in accepted {
            #expect(try Self.read(with(#""\#(input)""#)).navigate == href, "\(input)")
        }
        // Relative against a base when the user agent has one (a page's scope).
        #expect(try Self.read(with(#""/inbox""#), base: "https://a.example/app/").navigate == "https://a.example/inbox")
    }

    @Test("step 12: app_badge only at the top level and only as an integer from 0 to 2^63 - 1; anything else is ignored, not a failure")
    func step12() throws {
        func badge(_ top: String, inside: String = "") throws -> Int64? { try Self.read(Self.message(notification: inside, top: top)).appBadge }
        #expect(try badge(#","app_badge":0"#) == 0)
        #expect(try badge(#","app_badge":3"#) == 3)
        #expect(try badge(#","app_badge":3.0"#) == 3)
        #expect(try badge(#","app_badge":9223372036854775807"#) == Int64.max)
        for ignored in ["-1", "9223372036854775808", "18446744073709551616", "2.5", #""1""#, "null", "true", "[1]", "1e300"] {
            #expect(try badge(#","app_badge":\#(ignored)"#) == nil, "\(ignored)")
        }
        #expect(try badge("", inside: #","app_badge":4"#) == nil, "inside notification: ignored")
    }

    @Test("what it writes reads back (app_badge and mutable at the top level)")
    func roundTrip() throws {
        let message = DeclarativeWebPushMessage(
            title: "t", navigate: "https://a.example/x", body: "b", lang: "en", dir: .ltr, tag: "g", icon: "https://a.example/i.png",
            silent: true, requireInteraction: true, appBadge: 2, data: .object(["k": .string("v")]),
            actions: [.init(action: "a", title: "A", navigate: "https://a.example/a")], mutable: true)
        #expect(try DeclarativeWebPushMessage(plaintext: message.encoded()) == message)
        let top = try JSONReader.parseObject(message.encoded())
        #expect(top["app_badge"] == .int(2) && top["mutable"] == .bool(true) && top["notification"]?["app_badge"] == nil)
    }

    @Test("the lint names the common sender mistakes, and nothing in a good message or an ordinary one")
    func lint() {
        #expect(DeclarativeWebPushMessage.lint(Array(Self.message(notification: "", top: #","app_badge":1"#).utf8)).isEmpty)
        #expect(DeclarativeWebPushMessage.lint(Array(#"{"hello":"world"}"#.utf8)).isEmpty)
        let inside = DeclarativeWebPushMessage.lint(Array(Self.message(notification: #","app_badge":1"#).utf8))
        #expect(inside.count == 1 && inside[0].contains("top level"))
        #expect(DeclarativeWebPushMessage.lint(Array(Self.message(notification: "", top: #","app_badge":"3""#).utf8)).first?.contains("whole number") == true)
        #expect(DeclarativeWebPushMessage.lint(Array(#"{"web_push":8030,"notification":{"title":"t"}}"#.utf8)).first?.contains("navigate") == true)
        #expect(DeclarativeWebPushMessage.lint(Array(#"{"web_push":"8030","notification":{"title":"t","navigate":"https://a.example/"}}"#.utf8)).first?.contains("8030") == true)
    }
}
