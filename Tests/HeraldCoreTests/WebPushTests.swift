import Crypto
import Foundation
import HeraldCore
import Testing

/// Web Push's pure parts: RFC 8291 encryption against the RFC's own test vector, VAPID tokens,
/// and a push request's options.
@Suite("Web Push: encryption, VAPID, request options")
struct WebPushTests {
    /// RFC 8291 Appendix A (published test data).
    enum Vector {
        static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
        static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let receiverPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let receiverPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

        static func bytes(_ text: String) -> [UInt8] { Base64URL.decode(Substring(text))! }
        static var receiver: WebPushUserAgentKeys {
            WebPushUserAgentKeys(privateKey: try! P256.KeyAgreement.PrivateKey(rawRepresentation: bytes(receiverPrivate)), auth: bytes(auth))
        }
    }

    @Test("RFC 8291 Appendix A: encrypting gives the RFC's body byte for byte, and decrypting it gives the plaintext")
    func rfcVector() throws {
        let keys = try #require(WebPushSubscriptionKeys(p256dh: Vector.receiverPublic, auth: Vector.auth))
        #expect(Vector.receiver.subscriptionKeys == keys)
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: Vector.bytes(Vector.senderPrivate))
        let body = try WebPushEncryption.encrypt(Vector.plaintext, to: keys, senderKey: sender, salt: Vector.bytes(Vector.salt))
        #expect(Base64URL.encode(body) == Vector.body)
        #expect(try WebPushEncryption.decrypt(Vector.bytes(Vector.body), with: Vector.receiver) == Vector.plaintext)
    }

    @Test("fresh keys round-trip with padding up to the limit; altered, truncated, foreign or over-long bodies are refused with why")
    func roundTripAndRefusals() throws {
        let receiver = WebPushUserAgentKeys.generate()
        let message = Array("{\"title\":\"hi\"}".utf8)
        let body = try WebPushEncryption.encrypt(message, to: receiver.subscriptionKeys, padding: 100)
        #expect(body.count == WebPushEncryption.headerLength + message.count + 1 + 100 + 16)
        #expect(try WebPushEncryption.decrypt(body, with: receiver) == message)
        let largest = [UInt8](repeating: 7, count: WebPushEncryption.maximumPlaintext)
        let full = try WebPushEncryption.encrypt(largest, to: receiver.subscriptionKeys)
        #expect(full.count == WebPushEncryption.maximumBody)
        #expect(try WebPushEncryption.decrypt(full, with: receiver) == largest)
        #expect(throws: WebPushEncryption.Failure.tooLong(WebPushEncryption.maximumPlaintext + 1)) {
            try WebPushEncryption.encrypt(largest + [1], to: receiver.subscriptionKeys)
        }

        var altered = body
        altered[altered.count - 20] ^= 1
        #expect(throws: WebPushEncryption.Failure.undecryptable) { try WebPushEncryption.decrypt(altered, with: receiver) }
        #expect(throws: WebPushEncryption.Failure.undecryptable) { try WebPushEncryption.decrypt(body, with: WebPushUserAgentKeys.generate()) }
        #expect(throws: WebPushEncryption.Failure.self) { try WebPushEncryption.decrypt(Array(body.prefix(50)), with: receiver) }
        var badKeyLength = body
        badKeyLength[20] = 64
        #expect(throws: WebPushEncryption.Failure.self) { try WebPushEncryption.decrypt(badKeyLength, with: receiver) }
        var tinyRecords = body
        tinyRecords[16...19] = [0, 0, 0, 20]
        #expect(throws: WebPushEncryption.Failure.self) { try WebPushEncryption.decrypt(tinyRecords, with: receiver) }
        #expect(throws: WebPushEncryption.Failure.self) { try WebPushEncryption.decrypt(body + [UInt8](repeating: 0, count: 4_096), with: receiver) }
        #expect(WebPushSubscriptionKeys(p256dh: Array(repeating: 4, count: 65), auth: Array(repeating: 0, count: 16)) == nil)
        #expect(WebPushSubscriptionKeys(p256dh: Vector.receiverPublic, auth: "AAAA") == nil)
    }

    static let origin = "https://push.example:8445"

    static func vapid(_ claims: String, key: P256.Signing.PrivateKey, header: String = #"{"alg":"ES256","typ":"JWT"}"#) throws -> String {
        let token = try ES256JWT.sign(header: header, claims: claims, with: key)
        return "vapid t=\(token), k=\(Base64URL.encode(key.publicKey.x963Representation))"
    }

    @Test("VAPID: a signer's header verifies; every way a token can be wrong is refused with 401, another key with 403")
    func vapid() throws {
        let key = P256.Signing.PrivateKey()
        let now: Int64 = 1_800_000_000
        let signer = VAPIDSigner(privateKey: key, subject: "mailto:ops@example.com")
        let header = try signer.authorization(audience: Self.origin, expiresAt: now + 3_600)
        let ok = try VAPIDAuthorization(authorization: header, cryptoKey: nil)
        #expect(try ok.verify(audience: Self.origin, nowSeconds: now, subscriptionKey: Array(key.publicKey.x963Representation)) == "mailto:ops@example.com")
        #expect(try ok.verify(audience: Self.origin + "/", nowSeconds: now, subscriptionKey: nil) == "mailto:ops@example.com")

        func failure(_ authorization: String?, cryptoKey: String? = nil, audience: String = Self.origin, subscriptionKey: [UInt8]? = nil) -> VAPIDAuthorization.Failure? {
            do {
                try VAPIDAuthorization(authorization: authorization, cryptoKey: cryptoKey).verify(audience: audience, nowSeconds: now, subscriptionKey: subscriptionKey)
                return nil
            } catch { return error }
        }
        #expect(failure(nil) == .missing)
        #expect(failure(header, audience: "https://other.example") == .wrongAudience("https://other.example"))
        #expect(failure(header, subscriptionKey: Array(P256.Signing.PrivateKey().publicKey.x963Representation)) == .wrongKey)
        #expect(VAPIDAuthorization.Failure.wrongKey.status == 403 && VAPIDAuthorization.Failure.expired.status == 401)
        #expect(failure(try Self.vapid(#"{"aud":"\#(Self.origin)","exp":\#(now),"sub":"mailto:a@b"}"#, key: key)) == .expired)
        #expect(failure(try Self.vapid(#"{"aud":"\#(Self.origin)","exp":\#(now + 90_000),"sub":"mailto:a@b"}"#, key: key)) == .tooFarAhead)
        #expect(failure(try Self.vapid(#"{"aud":"\#(Self.origin)","exp":\#(now + 60)}"#, key: key)) == .noSubject)
        if case .malformed? = failure(try Self.vapid(#"{"exp":\#(now + 60),"sub":"x"}"#, key: key)) {} else { Issue.record("no aud") }
        // Signed by one key, presented with another.
        let stranger = P256.Signing.PrivateKey()
        let forged = try signer.authorization(audience: Self.origin, expiresAt: now + 60)
            .replacingOccurrences(of: signer.publicKeyText, with: Base64URL.encode(stranger.publicKey.x963Representation))
        #expect(failure(forged) == .badSignature)
        // alg none, HS256, garbage, another scheme, no k, a k that is not a point, a huge header.
        let none = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + Base64URL.encode(Array(#"{"aud":"x"}"#.utf8)) + "."
        for bad in ["vapid t=\(none), k=\(signer.publicKeyText)", "vapid t=a.b.c, k=\(signer.publicKeyText)", "Bearer abc",
                    "vapid t=\(none)", "vapid t=a.b.c, k=AAAA", "vapid " + String(repeating: "x", count: 9_000)] {
            guard case .malformed? = failure(bad) else { Issue.record("not refused as malformed: \(bad.prefix(60))"); continue }
        }
        // The older draft form: WebPush <JWT> with the key in Crypto-Key.
        let token = String(header.dropFirst("vapid t=".count).prefix { $0 != "," })
        #expect(failure("WebPush \(token)", cryptoKey: "dh=abc; p256ecdsa=\(signer.publicKeyText)") == nil)
        #expect(VAPIDSigner.origin(of: "https://Push.Example:443/wpush/v2/abc") == "https://push.example")
        #expect(VAPIDSigner.origin(of: "https://push.example:8445/wpush/abc") == Self.origin)
        #expect(VAPIDSigner.origin(of: "not a url") == nil)
    }

    @Test("request options: TTL required and capped, Urgency to priorities, Topic's alphabet, receipts, encodings and their headers")
    func options() throws {
        func read(_ headers: [(String, String)], body: Int = 200) throws(WebPushOptions.Refusal) -> WebPushOptions {
            try WebPushOptions(headers: headers.map { (name: $0.0, value: $0.1) }, bodyLength: body)
        }
        let full = try read([("ttl", "60"), ("urgency", "High"), ("topic", "news_1-A"), ("prefer", "wait=5, respond-async"), ("content-encoding", "aes128gcm")])
        #expect(full == WebPushOptions(ttl: 60, urgency: .high, topic: "news_1-A", wantsReceipt: true, encoding: .aes128gcm))
        #expect(try read([("ttl", "0")], body: 0) == WebPushOptions(ttl: 0))
        #expect(try read([("ttl", "99999999999")], body: 0).ttl == WebPushOptions.maximumTTL)
        #expect(WebPushOptions.Urgency.high.priority == .immediate && WebPushOptions.Urgency.low.priority == .conservePower)
        #expect(WebPushOptions.Urgency.veryLow.priority == .low && WebPushOptions.Urgency.normal.priority == .immediate)
        let legacy = try read([("ttl", "5"), ("content-encoding", "aesgcm"), ("encryption", "salt=abc"), ("crypto-key", "dh=xyz;p256ecdsa=k")])
        #expect(legacy.legacyHeaders == .init(encryption: "salt=abc", cryptoKey: "dh=xyz;p256ecdsa=k"))

        let refused: [[(String, String)]] = [
            [],  // no TTL
            [("ttl", "-1")], [("ttl", "1.5")], [("ttl", "")], [("ttl", "１０")], [("ttl", "1"), ("ttl", "2")],
            [("ttl", "1"), ("urgency", "urgent")],
            [("ttl", "1"), ("topic", String(repeating: "a", count: 33))], [("ttl", "1"), ("topic", "a b")], [("ttl", "1"), ("topic", "é")],
            [("ttl", "1")],  // a body without Content-Encoding
            [("ttl", "1"), ("content-encoding", "gzip")],
            [("ttl", "1"), ("content-encoding", "aesgcm")],  // without its headers
            [("ttl", "1"), ("topic", String(repeating: "a", count: 5_000))],
        ]
        for headers in refused {
            #expect(throws: WebPushOptions.Refusal.self, "\(headers.map(\.0))") { try read(headers) }
        }
        #expect(throws: WebPushOptions.Refusal.self) { try read([("ttl", "1"), ("content-encoding", "aes128gcm")], body: 50) }
    }
}

/// Mozilla's browser push protocol, as Firefox's PushServiceWebSocket sends it.
@Suite("Browser push protocol: what Firefox sends, what a push service answers")
struct BrowserPushProtocolTests {
    static func read(_ text: String) throws(BrowserPushProtocol.Invalid) -> BrowserPushProtocol.ClientMessage {
        try BrowserPushProtocol.read(Array(text.utf8))
    }

    @Test("Firefox's messages: hello with and without a uaid, register with a padded key, unregister, ack, nack, pings, other types")
    func firefoxMessages() throws {
        let key = WebPushTests.Vector.receiverPublic + "="  // Firefox pads the key
        #expect(try Self.read(#"{"messageType":"hello","broadcasts":{},"use_webpush":true}"#) == .hello(uaid: nil, channelIDs: [], useWebPush: true))
        #expect(try Self.read(#"{"messageType":"hello","uaid":"0123456789abcdef0123456789abcdef","channelIDs":["0EF2AD4A-6C49-41AD-AF6E-95D2425276BF","nope"],"use_webpush":true}"#)
            == .hello(uaid: "0123456789abcdef0123456789abcdef", channelIDs: ["0ef2ad4a-6c49-41ad-af6e-95d2425276bf"], useWebPush: true))
        #expect(try Self.read(#"{"messageType":"hello"}"#) == .hello(uaid: nil, channelIDs: [], useWebPush: false))
        let register = try Self.read(#"{"channelID":"0ef2ad4a-6c49-41ad-af6e-95d2425276bf","messageType":"register","key":"\#(key)"}"#)
        #expect(register == .register(channelID: "0ef2ad4a-6c49-41ad-af6e-95d2425276bf", key: WebPushTests.Vector.bytes(WebPushTests.Vector.receiverPublic)))
        #expect(try Self.read(#"{"messageType":"register","channelID":"0ef2ad4a-6c49-41ad-af6e-95d2425276bf"}"#) == .register(channelID: "0ef2ad4a-6c49-41ad-af6e-95d2425276bf", key: nil))
        #expect(try Self.read(#"{"channelID":"0ef2ad4a-6c49-41ad-af6e-95d2425276bf","messageType":"unregister","code":200}"#) == .unregister(channelID: "0ef2ad4a-6c49-41ad-af6e-95d2425276bf", code: 200))
        #expect(try Self.read(#"{"messageType":"ack","updates":[{"channelID":"0ef2ad4a-6c49-41ad-af6e-95d2425276bf","version":"v1","code":100}]}"#)
            == .ack([.init(channelID: "0ef2ad4a-6c49-41ad-af6e-95d2425276bf", version: "v1", code: 100)]))
        #expect(try Self.read(#"{"messageType":"nack","version":"v1","code":301}"#) == .nack(version: "v1", code: 301))
        #expect(try Self.read("{}") == .ping)
        #expect(try Self.read(#"{"messageType":"ping"}"#) == .ping)
        #expect(try Self.read(#"{"messageType":"broadcast_subscribe","broadcasts":{"remote-settings/monitor_changes":"v1"}}"#) == .other("broadcast_subscribe"))
    }

    /// What Firefox 153 ESR (Debian's firefox-esr, headless) sent a push server on its first
    /// connection and its first subscribe, recorded with scripts/firefox-push-frames.py.
    static let recordedFirefoxFrames = [
        #"{"messageType":"hello","broadcasts":{},"use_webpush":true}"#,
        #"{"channelID":"7b2433c1-a417-4b9f-82d3-df1c6268957c","messageType":"register","key":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4="}"#,
    ]

    @Test("frames recorded from a real Firefox read as the handshake and a subscription with its key")
    func recordedFirefox() throws {
        #expect(try Self.read(Self.recordedFirefoxFrames[0]) == .hello(uaid: nil, channelIDs: [], useWebPush: true))
        #expect(try Self.read(Self.recordedFirefoxFrames[1])
            == .register(channelID: "7b2433c1-a417-4b9f-82d3-df1c6268957c", key: WebPushTests.Vector.bytes(WebPushTests.Vector.receiverPublic)))
    }

    @Test("hostile messages are refused with why, never trap: not JSON, wrong types, bad ids and keys, too many, too large")
    func hostile() {
        let refused = [
            "", "[]", "not json", #"{"messageType":5}"#, #"{"messageType":"hello","uaid":7}"#,
            #"{"messageType":"register"}"#, #"{"messageType":"register","channelID":"0ef2ad4a6c4941adaf6e95d2425276bf"}"#,
            #"{"messageType":"register","channelID":"0ef2ad4a-6c49-41ad-af6e-95d2425276bf","key":"AAAA"}"#,
            #"{"messageType":"unregister","channelID":"x"}"#, #"{"messageType":"ack","updates":{}}"#,
            #"{"messageType":"ack","updates":[{"channelID":"0ef2ad4a-6c49-41ad-af6e-95d2425276bf"}]}"#, #"{"messageType":"nack"}"#,
            #"{"messageType":"hello","channelIDs":[\#(Array(repeating: "\"x\"", count: 1_001).joined(separator: ","))]}"#,
            #"{"messageType":"ping","pad":""# + String(repeating: "x", count: 70_000) + #""}"#,
        ]
        for text in refused {
            #expect(throws: BrowserPushProtocol.Invalid.self, "\(text.prefix(60))") { try Self.read(text) }
        }
        #expect(BrowserPushProtocol.isUAID("0123456789abcdef0123456789abcdef") && !BrowserPushProtocol.isUAID("0123456789ABCDEF0123456789ABCDEF"))
    }

    @Test("replies as Firefox reads them: hello with the uaid, register with the endpoint, notifications with data and the headers to decrypt")
    func replies() throws {
        func object(_ bytes: [UInt8]) throws -> [String: JSONValue] { try JSONReader.parseObject(bytes) }
        #expect(try object(BrowserPushProtocol.helloReply(uaid: "u1", useWebPush: true))
            == ["messageType": .string("hello"), "uaid": .string("u1"), "status": .int(200), "use_webpush": .bool(true), "broadcasts": .object([:])])
        #expect(try object(BrowserPushProtocol.registerReply(channelID: "c", status: 200, pushEndpoint: "https://h:1/wpush/x"))
            == ["messageType": .string("register"), "channelID": .string("c"), "status": .int(200), "pushEndpoint": .string("https://h:1/wpush/x")])
        let body: [UInt8] = [0xfb, 0xff, 0x01]
        let note = try object(BrowserPushProtocol.notification(channelID: "c", version: "v", data: body, encoding: .aes128gcm, legacy: nil))
        #expect(note["data"] == .string("-_8B") && note["headers"] == .object(["encoding": .string("aes128gcm")]))
        let legacy = try object(BrowserPushProtocol.notification(channelID: "c", version: "v", data: body, encoding: .aesgcm,
                                                                 legacy: .init(encryption: "salt=s", cryptoKey: "dh=k")))
        #expect(legacy["headers"] == .object(["encoding": .string("aesgcm"), "encryption": .string("salt=s"), "crypto_key": .string("dh=k")]))
        #expect(try object(BrowserPushProtocol.notification(channelID: "c", version: "v", data: nil, encoding: nil, legacy: nil))
            == ["messageType": .string("notification"), "channelID": .string("c"), "version": .string("v")])
    }
}

/// What Web Push stores and scopes.
@Suite("Web Push stored messages and scopes")
struct WebPushStoredTests {
    @Test("a held Web Push message: the ciphertext and its headers read back, and become the browser's notification message")
    func storedMessage() throws {
        let channel = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
        let legacy = WebPushOptions.LegacyHeaders(encryption: "salt=AAA", cryptoKey: "dh=BBB")
        let message = WebPushStoredMessage(channelID: channel, encoding: .aesgcm, legacyHeaders: legacy, body: [1, 2, 3])
        #expect(try WebPushStoredMessage(stored: message.encoded()) == message)
        let frame = try JSONReader.parseObject(message.browserNotification(version: "v1"))
        #expect(frame["messageType"]?.stringValue == "notification" && frame["channelID"]?.stringValue == channel && frame["version"]?.stringValue == "v1")
        #expect(frame["data"]?.stringValue == "AQID")
        #expect(frame["headers"] == .object(["encoding": .string("aesgcm"), "encryption": .string("salt=AAA"), "crypto_key": .string("dh=BBB")]))
        let empty = WebPushStoredMessage(channelID: channel, encoding: nil, legacyHeaders: nil, body: [])
        #expect(try JSONReader.parseObject(empty.browserNotification(version: "v2"))["data"] == nil, "no body: no data, no headers")
        #expect(throws: WebPushStoredMessage.Invalid.self) { try WebPushStoredMessage(stored: Array(#"{"channel":"not-a-channel"}"#.utf8)) }
        #expect(throws: WebPushStoredMessage.Invalid.self) { try WebPushStoredMessage(stored: Array(#"{"aps":{"alert":"an APNs payload"}}"#.utf8)) }
    }

    @Test("a subscription's scope keeps its channel and application server key, and takes only webpush messages")
    func subscriptionScope() {
        let key = WebPushTests.Vector.receiverPublic
        let keyed = TokenScope(bundleID: "browser", kind: .webPush(channel: "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", applicationServerKey: key))
        #expect(keyed.stored == "browser.push-type.webpush/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0/" + key)
        #expect(TokenScope(stored: keyed.stored) == keyed)
        let open = TokenScope(bundleID: "com.example.app", kind: .webPush(channel: "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", applicationServerKey: nil))
        #expect(TokenScope(stored: open.stored) == open)
        #expect(keyed.accepts(bundleID: "browser", pushType: PushType.webpush))
        #expect(!keyed.accepts(bundleID: "browser", pushType: PushType.alert) && !keyed.accepts(bundleID: "browser", pushType: PushType.liveactivity))
        #expect(!keyed.accepts(bundleID: "other", pushType: PushType.webpush))
        #expect(!TokenScope(bundleID: "browser").accepts(bundleID: "browser", pushType: PushType.webpush), "an app token takes no Web Push message")
        #expect(PushType(header: "webpush") == nil, "never read from apns-push-type")
    }
}
