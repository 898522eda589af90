import Crypto
import HeraldCore
import Testing

/// What the push service will read, as real senders write it: requests recorded from pywebpush
/// (and a VAPID key from py_vapid) by Tests/webpush/record_pywebpush.py, read by Herald's readers
/// at the instant they were made.
@Suite("Web Push interop: requests as pywebpush sends them")
struct WebPushInteropTests {
    enum Recorded {
        // Recorded with pywebpush 2.x by Tests/webpush/record_pywebpush.py.
        static let uaPrivate = "RmWflK8aZMnPjMygwCZh3VOyEYtas39AQvd-sBMQCs8"
        static let auth = "lP5Mjrew9AQ1mkG85-RyZQ"
        static let endpoint = "https://localhost:8445/wpush/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        static let vapidPublic = "BKqrbEZnlLlxpZ_isRRofNaGa5Aoj1Oyp0AkAKizO378uVCEn5ntRMXIL51_xI386s4YI9pwKf6QtQV0YkyGjA0"
        static let aes128gcmHeaders: [(name: String, value: String)] = [
            ("urgency", "low"),
            ("topic", "pywebpush"),
            ("authorization", "vapid t=eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL2xvY2FsaG9zdDo4NDQ1IiwiZXhwIjoxNzk1NzIxNzA2LCJzdWIiOiJtYWlsdG86b3BzQGV4YW1wbGUuY29tIn0.-HWWORGMmKeDSODkJpaiBtrIFA5WbHvNRBktwSVtRRNPz6B1qporfbRv8O3UWcki4Gr_z0iBleSgZB_Pb8XuRQ,k=BKqrbEZnlLlxpZ_isRRofNaGa5Aoj1Oyp0AkAKizO378uVCEn5ntRMXIL51_xI386s4YI9pwKf6QtQV0YkyGjA0"),
            ("content-encoding", "aes128gcm"),
            ("ttl", "3600"),
            ("content-length", "129"),
        ]
        static let aes128gcmBody = "U3rPnrpJTSsHp0RJCJGAOQAAEABBBPx-cb12NUZGHLqhPojClz_6Z--BS_7BSl1JTDPdgb38xXxILntFENaH1U0QSYaTq8ttp3Yq36wkHHOKRGn8B_AC2-4N8yhBI0YcfcC9E3qRnZx1ekdr3MsJj_mfk1nMv3JSPVhut5_vyE9R"
        static let aesgcmHeaders: [(name: String, value: String)] = [
            ("urgency", "low"),
            ("topic", "pywebpush"),
            ("authorization", "vapid t=eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL2xvY2FsaG9zdDo4NDQ1IiwiZXhwIjoxNzk1NzIxNzA2LCJzdWIiOiJtYWlsdG86b3BzQGV4YW1wbGUuY29tIn0.sMNDh9IaT2NVbU_Ks-5ofYMxq1BZh32RVUGyXIhFqmEovTM6RZF7VTfJomom8-037ehiP2yilSBY48EH8ZEuMQ,k=BKqrbEZnlLlxpZ_isRRofNaGa5Aoj1Oyp0AkAKizO378uVCEn5ntRMXIL51_xI386s4YI9pwKf6QtQV0YkyGjA0"),
            ("crypto-key", "dh=BFnh8dVEK-_UNHHF1CQvz9XJemiW6H79X9J1eu5b4Ns9KyzpJuLnelYh6itgfwnW9LgeLHaSbjEtuTHsyKwmoxw"),
            ("encryption", "salt=qDtqs3Yp1durbbZO4OFh5Q"),
            ("content-encoding", "aesgcm"),
            ("ttl", "3600"),
            ("content-length", "44"),
        ]
        static let aesgcmBody = "ywSzJLrP7cUKXwTWWuI74sG001goAPjYC0tRnE2B7Cq0eboiLb641SYud6E"
        /// The instant of the recording: pywebpush signs for 12 hours.
        static let nowSeconds: Int64 = 1795721706 - 43_200
    }

    static func bytes(_ text: String) -> [UInt8] { Base64URL.decode(Substring(text))! }
    static func header(_ headers: [(name: String, value: String)], _ name: String) -> String? { headers.first { $0.name == name }?.value }

    @Test("aes128gcm: its options, its VAPID token (pywebpush writes \"t=…,k=…\" without a space), and the body decrypts to what was sent")
    func aes128gcm() throws {
        let headers = Recorded.aes128gcmHeaders
        let body = Self.bytes(Recorded.aes128gcmBody)
        let options = try WebPushOptions(headers: headers, bodyLength: body.count)
        #expect(options == WebPushOptions(ttl: 3_600, urgency: .low, topic: "pywebpush", encoding: .aes128gcm))
        let vapid = try VAPIDAuthorization(authorization: Self.header(headers, "authorization"), cryptoKey: Self.header(headers, "crypto-key"))
        #expect(try vapid.verify(audience: "https://localhost:8445", nowSeconds: Recorded.nowSeconds, subscriptionKey: Self.bytes(Recorded.vapidPublic))
            == "mailto:ops@example.com")
        let keys = WebPushUserAgentKeys(privateKey: try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes(Recorded.uaPrivate)), auth: Self.bytes(Recorded.auth))
        #expect(try WebPushEncryption.decrypt(body, with: keys) == Array(#"{"title":"from pywebpush"}"#.utf8))
    }

    @Test("aesgcm (the older scheme): Encryption and Crypto-Key kept for the user agent, the same VAPID token verifies")
    func aesgcm() throws {
        let headers = Recorded.aesgcmHeaders
        let options = try WebPushOptions(headers: headers, bodyLength: Self.bytes(Recorded.aesgcmBody).count)
        #expect(options.encoding == .aesgcm && options.urgency == .low && options.ttl == 3_600)
        #expect(options.legacyHeaders?.encryption == Self.header(headers, "encryption") && options.legacyHeaders?.cryptoKey == Self.header(headers, "crypto-key"))
        let vapid = try VAPIDAuthorization(authorization: Self.header(headers, "authorization"), cryptoKey: Self.header(headers, "crypto-key"))
        #expect(try vapid.verify(audience: "https://localhost:8445", nowSeconds: Recorded.nowSeconds, subscriptionKey: nil) == "mailto:ops@example.com")
        // A day later the same token has expired.
        #expect(throws: VAPIDAuthorization.Failure.expired) {
            try vapid.verify(audience: "https://localhost:8445", nowSeconds: Recorded.nowSeconds + 86_400, subscriptionKey: nil)
        }
    }
}
