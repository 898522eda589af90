import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldGateway

/// Push certificates as the provider port reads them (reference §3, cases 34 and 35 run over
/// real sockets in Tests/compat).
@Suite("Push certificates")
struct PushCertificateTests {
    @Test("issued certificates read back: app, team, topics, environments, credential id")
    func issued() throws {
        let directory = try TemporaryDirectory.make(prefix: "herald-cert")
        let clock = SimulatedAlarmClock()
        let universal = try DevelopmentCertificates.issuePushCertificate(
            bundleID: "com.a", teamID: "TEAM000001", variants: [.voip, .complication], environment: nil, in: directory, clock: clock)
        let read = try PushCertificate(derEncoded: universal.certificateDER)
        #expect(read.bundleID == "com.a" && read.teamID == "TEAM000001")
        #expect(read.topics == ["com.a", "com.a.voip", "com.a.complication"])
        #expect(read.works(in: .development) && read.works(in: .production))
        #expect(read.defaultTopic == nil, "several topics: requests must name one")
        #expect(read.credentialID == universal.certificate.credentialID && read.credentialID.hasPrefix("cert-") && read.credentialID.count == 21)
        #expect(read.covers(topic: "com.a.voip", pushType: .voip))
        #expect(read.covers(topic: "com.a.push-type.liveactivity", pushType: .liveactivity))
        #expect(!read.covers(topic: "com.a.location-query", pushType: .location), "location pushes take token authentication only")
        #expect(!read.covers(topic: "com.b", pushType: .alert))

        let single = try PushCertificate(derEncoded: DevelopmentCertificates.issuePushCertificate(
            bundleID: "com.a", teamID: "TEAM000001", variants: [], environment: .production, in: directory, clock: clock).certificateDER)
        #expect(single.defaultTopic == "com.a" && !single.covers(topic: "com.a.voip", pushType: .voip))
        #expect(single.works(in: .production) && !single.works(in: .development))
    }

    @Test("a certificate that names no app or team, or a topics extension that is not what it should be, is refused")
    func hostile() throws {
        let directory = try TemporaryDirectory.make(prefix: "herald-cert")
        let clock = SimulatedAlarmClock()
        let feedbackOnly = try DevelopmentCertificates.issueClientCertificate(topic: "com.a", in: directory, clock: clock)
        let base64 = feedbackOnly.certificatePEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let der = Array(try #require(Data(base64Encoded: base64)))
        #expect(throws: PushCertificate.Unusable.self) { try PushCertificate(derEncoded: der) }
        #expect(throws: PushCertificate.Unusable.self) { try PushCertificate(derEncoded: [0x30, 0x03, 0x02, 0x01, 0x01]) }
        #expect(throws: PushCertificate.Unusable.self) { try PushCertificate.readTopics([0x04, 0x00]) }
        #expect(throws: PushCertificate.Unusable.self) { try PushCertificate.readTopics([0x30, 0x80]) }
        #expect(throws: PushCertificate.Unusable.self) { try PushCertificate.readTopics(ArraySlice(repeating: 0x30, count: 20_000)) }
        // A SEQUENCE of 65 UTF8String topics (DER by hand: long-form length).
        var content: [UInt8] = []
        for i in 0..<65 {
            let topic = Array("com.a.\(i)".utf8)
            content += [0x0C, UInt8(topic.count)] + topic
        }
        let many: [UInt8] = [0x30, 0x82, UInt8(content.count >> 8), UInt8(content.count & 0xff)] + content
        #expect(throws: PushCertificate.Unusable.self) { try PushCertificate.readTopics(ArraySlice(many)) }
        #expect(try PushCertificate.readTopics(ArraySlice([0x30, 0x07, 0x0C, 0x05] + Array("com.a".utf8))) == ["com.a"])
    }
}

/// The channel management API's answers, on a store (the HTTP side runs in Tests/liveactivity).
@Suite("Channel management")
struct ChannelRequestTests {
    @Test("an app with 10,000 channels gets no more: 400 CannotCreateChannelConfig")
    func channelLimit() async throws {
        let store = InMemoryStore()
        for i in 0..<ChannelRecord.maximumPerApp {
            try await store.createChannel(ChannelRecord(
                bundleID: "com.a", channelID: .random(), environment: .development, storagePolicy: 0, createdAtMilliseconds: Int64(i)))
        }
        var head = APNsRequestHead()
        head.record(name: ":method", value: "POST")
        head.record(name: ":path", value: "/1/apps/com.a/channels")
        let request = try ChannelRequest.parse(head, body: Array(#"{"message-storage-policy":1,"push-type":"LiveActivity"}"#.utf8)).get()
        guard case .failure(let rejection) = try await request.run(store: store, environment: .development, nowMilliseconds: 0) else {
            Issue.record("a channel past the limit was created"); return
        }
        #expect(rejection.reason == .cannotCreateChannelConfig)
        // Another environment, or another app, still has room.
        guard case .success(let answer) = try await request.run(store: store, environment: .production, nowMilliseconds: 0) else {
            Issue.record("production had no room"); return
        }
        #expect(answer.status == 201 && answer.headers.first?.0 == "apns-channel-id")
    }

    @Test("channel requests: paths, methods and bodies are read strictly")
    func parsing() {
        func parse(_ method: String, _ path: String, body: String = "", channel: String? = nil) -> String {
            var head = APNsRequestHead()
            head.record(name: ":method", value: method)
            head.record(name: ":path", value: path)
            if let channel { head.record(name: "apns-channel-id", value: channel) }
            switch ChannelRequest.parse(head, body: Array(body.utf8)) {
            case .success(let request): return "\(request)"
            case .failure(let rejection): return rejection.reason.rawValue
            }
        }
        let id = "AAECAwQFBgcICQoLDA0ODw=="
        #expect(parse("GET", "/1/apps/com.a/all-channels").hasPrefix("list"))
        #expect(parse("GET", "/1/apps/com.a/channels", channel: id).hasPrefix("read"))
        #expect(parse("DELETE", "/1/apps/com.a/channels", channel: id).hasPrefix("delete"))
        #expect(parse("GET", "/1/apps/com.a/channels") == "MissingChannelId")
        #expect(parse("GET", "/1/apps/com.a/channels", channel: "x") == "BadChannelId")
        #expect(parse("POST", "/1/apps/com.a/channels", body: #"{"message-storage-policy":2,"push-type":"LiveActivity"}"#) == "BadRequestParams")
        #expect(parse("POST", "/1/apps/com.a/channels", body: #"{"message-storage-policy":1,"push-type":"alert"}"#) == "BadRequestParams")
        #expect(parse("POST", "/1/apps/com.a/channels", body: "[]") == "BadRequestParams")
        #expect(parse("PUT", "/1/apps/com.a/channels") == "MethodNotAllowed")
        #expect(parse("GET", "/1/apps/com.a/other") == "BadPath")
        #expect(parse("GET", "/1/apps/com.a.voip/channels") == "BadPath")
        #expect(parse("GET", "/2/apps/com.a/channels") == "BadPath")
    }
}
