import Crypto
import Foundation
import HeraldCore
import Testing

@Suite("Core model")
struct CoreModelTests {
    @Test("localized formats: substitution and the number of arguments a format takes")
    func localizedFormats() {
        #expect(LocalizedFormat.format("%1$@ sent you %2$@", ["Ben", "a gift"]) == "Ben sent you a gift")
        #expect(LocalizedFormat.format("%2$@ %1$@, 100%%", ["a", "b"]) == "b a, 100%")
        #expect(LocalizedFormat.format("%@ and %@", ["x"]) == "x and ")
        #expect(LocalizedFormat.argumentCount("%@ and %@") == 2)
        #expect(LocalizedFormat.argumentCount("%2$@ only") == 2)
        #expect(LocalizedFormat.argumentCount("%1$@ %1$@ %d") == 1)  // %d after %1$@ is the first sequential one
        #expect(LocalizedFormat.argumentCount("100%% sure, %z") == 0)
        #expect(LocalizedFormat.argumentCount("%99999999999999999999$@") == 1)  // a position that does not fit is sequential
        #expect(LocalizedFormat.argumentCount("") == 0)
    }

    @Test("device tokens: hex of either case in, lowercase out, 1 to 100 bytes")
    func deviceTokens() {
        let upper = DeviceToken(hex: "00FCab")
        #expect(upper?.hex == "00fcab")
        #expect(upper == DeviceToken(hex: "00fcAB"))
        #expect(DeviceToken(hex: "") == nil)
        #expect(DeviceToken(hex: "abc") == nil)
        #expect(DeviceToken(hex: "zz") == nil)
        #expect(DeviceToken(hex: String(repeating: "ab", count: 100)) != nil)
        #expect(DeviceToken(hex: String(repeating: "ab", count: 101)) == nil)
        let random = DeviceToken.random()
        #expect(random.bytes.count == 32 && random.hex.count == 64)
        #expect(random != DeviceToken.random())
    }

    @Test("push types carry their topic suffixes and payload limits")
    func pushTypes() {
        #expect(PushType.voip.topicSuffix == ".voip")
        #expect(PushType.pushtotalk.topicSuffix == ".voip-ptt")
        #expect(PushType.liveactivity.bundleID(fromTopic: "com.a.push-type.liveactivity") == "com.a")
        #expect(PushType.voip.bundleID(fromTopic: "com.a") == nil)
        #expect(PushType.implied(byTopic: "com.a.voip-ptt") == .pushtotalk)
        #expect(PushType.implied(byTopic: "com.a.voip") == .voip)
        #expect(PushType.implied(byTopic: "com.a") == .alert)
        #expect(PushType.voip.maximumPayloadSize == 5120 && PushType.alert.maximumPayloadSize == 4096)
        #expect(PushType(header: "banana") == nil)
        #expect(PushType.allKnown.count == 11)
    }

    @Test("priorities, expiration, collapse ids, apns-ids")
    func headerValues() {
        #expect(Priority(header: "10") == .immediate && Priority(header: "5") == .conservePower && Priority(header: "1") == .low)
        #expect(Priority(header: "7") == nil && Priority(header: "x") == nil)
        #expect(Expiration(header: "0") == .immediately)
        #expect(Expiration(header: "1700000000") == .at(secondsSince1970: 1_700_000_000))
        #expect(Expiration(header: "tomorrow") == nil && Expiration(header: "-1") == nil && Expiration(header: "") == nil)
        #expect(Expiration.at(secondsSince1970: 10).isLive(atMilliseconds: 9_999))
        #expect(!Expiration.at(secondsSince1970: 10).isLive(atMilliseconds: 10_000))
        #expect(CollapseID(String(repeating: "é", count: 32)) != nil)   // 64 bytes
        #expect(CollapseID(String(repeating: "é", count: 32) + "x") == nil)
        #expect(NotificationID(header: "EABEAE54-14A8-11E5-B60B-1697F925EC7B") == NotificationID(header: "eabeae54-14a8-11e5-b60b-1697f925ec7b"))
        #expect(NotificationID(header: "eabeae5414a811e5b60b1697f925ec7b") == nil)
        #expect(NotificationID(header: "EABEAE54-14A8-11E5-B60B-1697F925EC7B")?.description == "eabeae54-14a8-11e5-b60b-1697f925ec7b")
    }

    @Test("generated apns-ids: random ones are version 4, time-ordered ones version 7 and sort by time")
    func generatedNotificationIDs() {
        var generator = NotificationID.FastGenerator()
        let random = NotificationID.random(using: &generator).description
        #expect(Array(random)[14] == "4")
        #expect("89ab".contains(Array(random)[19]))
        let ms: Int64 = 1_795_000_000_123  // 2026-11-19
        let first = NotificationID.timeOrdered(atMilliseconds: ms, using: &generator)
        #expect(first.description.replacingOccurrences(of: "-", with: "").hasPrefix(String(format: "%012llx", ms)))
        #expect(Array(first.description)[14] == "7")
        #expect("89ab".contains(Array(first.description)[19]))
        #expect(NotificationID(header: first.description) == first)
        // Later milliseconds sort later as text, whatever the random bits.
        var previous = first.description
        for step in 1...1000 {
            let next = NotificationID.timeOrdered(atMilliseconds: ms + Int64(step), using: &generator).description
            #expect(next > previous)
            previous = next
        }
        // Out-of-range clocks are clamped, never a trap.
        #expect(NotificationID.timeOrdered(atMilliseconds: -5, using: &generator).description.hasPrefix("00000000-0000-7"))
        #expect(NotificationID.timeOrdered(atMilliseconds: .max, using: &generator).description.hasPrefix("ffffffff-ffff-7"))
    }

    @Test("reasons: a closed set with statuses, and an unknown fallback")
    func reasons() {
        #expect(APNsReason.allKnown.count == 42, "the 33 reasons of reference §2 and its 9 broadcast-only ones")
        for reason in APNsReason.allKnown {
            #expect(APNsReason(rawValue: reason.rawValue) == reason)
            #expect([400, 403, 404, 405, 410, 413, 429, 500, 503].contains(reason.status))
        }
        let unknown = APNsReason(rawValue: "SomethingNew")
        #expect(!unknown.isKnown && unknown.status == 0)
        #expect(APNsRejection(.unregistered, timestampMilliseconds: 5).jsonBody == #"{"reason":"Unregistered","timestamp":5}"#)
        #expect(APNsRejection(.badTopic).jsonBody == #"{"reason":"BadTopic"}"#)
    }

    @Test("payloads: every aps key decodes; custom keys survive a round trip")
    func payloads() throws {
        let json = #"""
        {"aps":{"alert":{"title":"T","subtitle":"S","body":"B","launch-image":"l.png","title-loc-key":"TK","title-loc-args":["a"],
        "subtitle-loc-key":"SK","subtitle-loc-args":["b"],"loc-key":"LK","loc-args":["c","d"]},"badge":3,
        "sound":{"critical":1,"name":"alarm.caf","volume":0.5},"thread-id":"th","category":"cat","content-available":1,
        "mutable-content":1,"target-content-id":"tc","interruption-level":"time-sensitive","relevance-score":0.25,
        "filter-criteria":"work","stale-date":1,"timestamp":2,"dismissal-date":3,"event":"update","content-state":{"x":1},
        "attributes-type":"A","attributes":{"y":"z"},"input-push-token":1,"input-push-channel":"ch"},
        "custom":{"nested":[1,2.5,"three",true,null]},"n":42}
        """#
        let payload = try NotificationPayload.decode(Array(json.utf8))
        guard case .fields(let alert)? = payload.aps.alert else { Issue.record("alert is not a dictionary"); return }
        #expect(alert.title == "T" && alert.locArgs == ["c", "d"] && alert.launchImage == "l.png")
        #expect(payload.aps.badge == 3 && payload.aps.threadID == "th" && payload.aps.interruptionLevel == .timeSensitive)
        #expect(payload.aps.sound == .critical(name: "alarm.caf", volume: 0.5, critical: 1))
        #expect(payload.aps.relevanceScore == 0.25 && payload.aps.event == "update" && payload.aps.inputPushChannel == "ch")
        #expect(payload.custom["custom"] == .object(["nested": .array([.int(1), .double(2.5), .string("three"), .bool(true), .null])]))
        #expect(payload.custom["n"] == .int(42))
        let again = try NotificationPayload.decode(try payload.encoded())
        #expect(again == payload)
        #expect(try NotificationPayload.decode(Array(#"{"aps":{"content-available":1}}"#.utf8)).isSilent)
        #expect(try !NotificationPayload.decode(Array(#"{"aps":{"content-available":1,"badge":1}}"#.utf8)).isSilent)
    }

    @Test("payloads as a device reads them: wrong types are left out, valid payloads read as the strict reader reads them")
    func lenientPayloads() throws {
        let valid = #"""
        {"aps":{"alert":{"title":"T","loc-key":"LK","loc-args":["c"]},"badge":3,"sound":{"critical":1,"name":"a.caf","volume":0.5},
        "thread-id":"th","category":"cat","content-available":1,"mutable-content":1,"target-content-id":"tc",
        "interruption-level":"passive","relevance-score":0.25,"filter-criteria":"work"},"n":42}
        """#
        let strict = try NotificationPayload.decode(Array(valid.utf8))
        let lenient = NotificationPayload(lenient: try JSONReader.parse(Array(valid.utf8), limits: .payload))
        #expect(lenient == strict)
        #expect(lenient.aps.sound?.isCritical == true && lenient.aps.sound?.name == "a.caf")
        #expect(lenient.aps.effectiveInterruptionLevel == .passive && lenient.aps.hasAlertText)

        let hostile: JSONValue = .object([
            "aps": .object([
                "alert": .object(["title": .int(5), "loc-args": .array([.int(7), .double(1.5), .bool(true)])]),
                "badge": .string("3"), "sound": .int(1), "content-available": .int(1), "thread-id": .array([]),
                "interruption-level": .string("urgent"), "relevance-score": .double(7),
            ]),
            "custom": .bool(true),
        ])
        let read = NotificationPayload(lenient: hostile)
        guard case .fields(let alert)? = read.aps.alert else { Issue.record("alert is not a dictionary"); return }
        #expect(alert.title == nil && alert.locArgs == ["7", "1.5", ""] && !read.aps.hasAlertText)
        #expect(read.aps.badge == nil && read.aps.sound == nil && read.aps.threadID == nil && !read.isSilent)
        #expect(read.aps.effectiveInterruptionLevel == .active && read.aps.effectiveRelevance == 1)
        #expect(read.custom == ["custom": .bool(true)])
        #expect(NotificationPayload(lenient: .array([])) == NotificationPayload())
        #expect(NotificationPayload(lenient: .object(["aps": .string("x"), "k": .null])) == NotificationPayload(custom: ["k": .null]))
    }

    @Test("validation order: duplicate headers, apns-id, method, path, token")
    func validationOrder() {
        var head = APNsRequestHead()
        head.record(name: ":method", value: "GET")
        head.record(name: ":path", value: "/nope")
        head.record(name: "apns-id", value: "bad")
        #expect(APNsRequestValidation.validateTarget(head).failureReason == .badMessageId)
        head.record(name: "apns-topic", value: "a")
        let recorded = head.record(name: "apns-topic", value: "b")
        #expect(!recorded)
        #expect(APNsRequestValidation.validateTarget(head).failureReason == .duplicateHeaders)
        var clean = APNsRequestHead()
        clean.record(name: ":method", value: "GET")
        clean.record(name: ":path", value: "/nope")
        #expect(APNsRequestValidation.validateTarget(clean).failureReason == .methodNotAllowed)
        clean.method = "POST"
        #expect(APNsRequestValidation.validateTarget(clean).failureReason == .badPath)
        clean.path = "/3/device/"
        #expect(APNsRequestValidation.validateTarget(clean).failureReason == .missingDeviceToken)
        clean.path = "/3/device/xyz"
        #expect(APNsRequestValidation.validateTarget(clean).failureReason == .badDeviceToken)
        clean.path = "/3/device/ABCD"
        #expect(APNsRequestValidation.validateTarget(clean).failureReason == nil)
    }

    @Test("header validation: push type before topic, then priority, expiration, collapse id")
    func headerValidation() {
        var head = APNsRequestHead()
        head.pushType = "banana"
        #expect(APNsRequestValidation.validateHeaders(head).failureReason == .invalidPushType)
        head.pushType = "voip"
        #expect(APNsRequestValidation.validateHeaders(head).failureReason == .missingTopic)
        head.topic = "com.a"
        #expect(APNsRequestValidation.validateHeaders(head).failureReason == .badTopic)
        head.topic = "com.a.voip"
        head.priority = "2"
        #expect(APNsRequestValidation.validateHeaders(head).failureReason == .badPriority)
        head.priority = "5"
        head.expiration = "soon"
        #expect(APNsRequestValidation.validateHeaders(head).failureReason == .badExpirationDate)
        head.expiration = "0"
        head.collapseID = String(repeating: "x", count: 65)
        #expect(APNsRequestValidation.validateHeaders(head).failureReason == .badCollapseId)
        head.collapseID = "c"
        let ok = try? APNsRequestValidation.validateHeaders(head).get()
        #expect(ok?.bundleID == "com.a" && ok?.pushType == .voip && ok?.priority == .conservePower && ok?.expiration == .immediately)
        var background = APNsRequestHead()
        background.topic = "com.a"
        background.pushType = "background"
        #expect((try? APNsRequestValidation.validateHeaders(background).get())?.priority == .conservePower)
    }
}

extension Result where Failure == APNsRejection {
    var failureReason: APNsReason? {
        if case .failure(let rejection) = self { return rejection.reason }
        return nil
    }
}
