import Crypto
import Foundation
import HeraldCore
import HeraldDevice
import HeraldOperations
import HeraldProvider

/// The fuzz targets: each takes arbitrary bytes and feeds them to one of Herald's readers of
/// outside input. A target passes when it returns; a trap, a crash or a hang is a finding. The
/// libFuzzer package in `Fuzz/` drives them; the test suite replays the committed corpora and
/// every crasher found (`Fuzz/corpus/<target>/`, `Fuzz/crashers/<target>/`).
public enum FuzzTargets {
    public static let all: [String: @Sendable ([UInt8]) -> Void] = [
        "provider-token": providerToken,
        "provider-request": providerRequest,
        "device-frames": deviceFrames,
        "remote-content": remoteContent,
        "agent-line": agentLine,
        "rest-body": restBody,
        "plan-file": planFile,
        "sound-file": soundFile,
        "dbus-stream": dbusStream,
        "live-activity": liveActivity,
        "broadcast-request": broadcastRequest,
        "announcement-journal": announcementJournal,
        "query-string": queryString,
        "webpush-request": webPushRequest,
        "webpush-body": webPushBody,
        "browser-push-frames": browserPushFrames,
        "declarative-push": declarativePush,
        "webpush-stored": webPushStored,
        "dbus-unifiedpush": dbusUnifiedPush,
        "focus-settings": focusSettings,
        "config-file": configFile,
        "backup-manifest": backupManifest,
        "traceparent": traceparent,
        "standard-url": standardURL,
        "metrics-exposition": metricsExposition,
    ]

    /// A `--config FILE.yaml` as the long-running commands read it, against a set of keys like
    /// `herald gateway`'s (a value, a repeatable one, a switch): accepted values are the flags'.
    @Sendable public static func configFile(_ data: [UInt8]) {
        let keys: [String: ConfigurationFile.Key] = [
            "data-dir": .init(takesValue: true, repeating: false), "app": .init(takesValue: true, repeating: true),
            "enable-faults": .init(takesValue: false, repeating: false), "provider-port": .init(takesValue: true, repeating: false),
        ]
        guard let values = try? ConfigurationFile.parse(String(decoding: data, as: UTF8.self), keys: keys, command: "gateway", source: "fuzz.yaml") else { return }
        for (key, setting) in values {
            precondition(keys[key] != nil, "a key the command does not take was accepted")
            precondition(setting.values.count == 1 || keys[key]?.repeating == true, "a list was accepted for a single value")
            precondition(setting.line >= 1, "a setting without its line")
        }
    }

    /// A gateway's `/metrics` as `herald bench delivery --admin` reads it: every histogram read
    /// has its buckets, a reading compared with itself holds nothing, and a quantile always has
    /// an answer.
    @Sendable public static func metricsExposition(_ data: [UInt8]) {
        let histograms = LatencyHistograms(exposition: String(decoding: data, as: UTF8.self))
        for name in histograms.buckets.keys {
            let step = histograms.since(histograms, name)
            precondition(step.buckets.count == histograms.buckets[name]?.count, "a histogram lost buckets")
            precondition(step.buckets.allSatisfy { $0.count == 0 }, "a reading against itself counted something")
            precondition(!step.bound(0.99).isEmpty, "a quantile without an answer")
            let fromNothing = histograms.since(LatencyHistograms(exposition: ""), name)
            for quantile in [0.0, 0.5, 0.99, 1.0] { precondition(!fromNothing.bound(quantile).isEmpty, "a quantile without an answer") }
        }
    }

    /// A backup's `MANIFEST.json` as `herald restore` reads it: what is accepted names only
    /// files inside the backup, and reads back what it writes.
    @Sendable public static func backupManifest(_ data: [UInt8]) {
        guard let manifest = try? BackupManifest.read(data, source: "MANIFEST.json") else { return }
        for file in manifest.files {
            precondition(!file.path.hasPrefix("/") && !file.path.split(separator: "/").contains(".."), "a path outside the backup was accepted")
        }
        let encoder = JSONEncoder()
        guard let written = try? encoder.encode(manifest) else { preconditionFailure("an accepted manifest cannot be written") }
        precondition((try? BackupManifest.read(Array(written), source: "again")) == manifest, "a backup manifest does not read back")
    }

    /// A `traceparent`/`tracestate` pair as the provider port reads it while tracing is on:
    /// what is accepted is W3C's form and names its trace.
    @Sendable public static func traceparent(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        let (parent, state) = text.firstIndex(of: "\n").map { (String(text[..<$0]), String(text[text.index(after: $0)...])) } ?? (text, nil)
        guard let carrier = Traces.Carrier(traceparent: parent, tracestate: state) else { return }
        precondition(carrier.traceparent.utf8.count == 55 && carrier.traceID.utf8.count == 32, "a malformed traceparent was accepted")
        precondition((carrier.tracestate?.utf8.count ?? 0) <= Traces.Carrier.maximumHeaderBytes, "an oversized tracestate was kept")
        precondition(Traces.Carrier(traceparent: carrier.traceparent, tracestate: carrier.tracestate) == carrier, "a traceparent does not read back")
    }

    /// A Focus settings file (`herald device run --focus`, the agent's `device` message, the saved
    /// `focus.json`): read, asked which Focus is on, when the next summary and the next schedule
    /// edge are, written back.
    @Sendable public static func focusSettings(_ data: [UInt8]) {
        guard let json = try? JSONReader.parse(data), let settings = try? FocusSettings(json: json) else { return }
        let zone = TimeZone(identifier: "Europe/Paris")!
        _ = settings.activeMode(at: 1_795_830_000_000, in: zone)
        _ = settings.nextSummary(after: 1_795_830_000_000, in: zone)
        if let edge = settings.nextFocusEdge(after: 1_795_830_000_000, in: zone) {
            precondition(edge > 1_795_830_000_000, "the next Focus edge is not after the instant asked")
        }
        precondition((try? FocusSettings(json: settings.json)) == settings, "Focus settings do not read back")
    }

    /// A D-Bus message as `herald device run --unifiedpush` reads an app's call: decoded, its
    /// `a{sv}` read, and carried out as `Register` and `Unregister` on an empty distributor.
    @Sendable public static func dbusUnifiedPush(_ data: [UInt8]) {
        UnifiedPushRegistrations.fuzz(data)
    }

    /// What the Web Push port reads back from the store: a held message's payload (the
    /// ciphertext and its headers, written as the browser's `notification` message) and a
    /// token's scope (a subscription's channel and application server key).
    @Sendable public static func webPushStored(_ data: [UInt8]) {
        if let message = try? WebPushStoredMessage(stored: data) {
            _ = message.browserNotification(version: "00000000-0000-0000-0000-000000000000")
            precondition((try? WebPushStoredMessage(stored: message.encoded())) == message, "a stored Web Push message does not read back")
        }
        let scope = TokenScope(stored: String(decoding: data.prefix(1024), as: UTF8.self))
        precondition(TokenScope(stored: scope.stored) == scope, "a token scope does not read back")
    }

    /// A decrypted Web Push message, linted as `herald push` lints a payload, read as a Declarative
    /// Web Push message and shown as a device would.
    @Sendable public static func declarativePush(_ data: [UInt8]) {
        _ = DeclarativeWebPushMessage.lint(data)
        guard let message = try? DeclarativeWebPushMessage(plaintext: data) else { return }
        _ = NotificationContent.declarative(message).json
    }

    /// A URL as the URL Standard parses it (a Declarative Web Push message's `navigate`): the
    /// first line is the input, the second (when there is one) its base. What parses must parse
    /// again from its serialization to the same URL (the standard's round trip).
    @Sendable public static func standardURL(_ data: [UInt8]) {
        let lines = String(decoding: data.prefix(4096), as: UTF8.self).split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        let base = lines.count > 1 ? try? StandardURL(parsing: String(lines[1])) : nil
        guard let url = try? StandardURL(parsing: String(lines.first ?? ""), base: base) else { return }
        precondition((try? StandardURL(parsing: url.href)) == url, "a URL does not read back from its serialization")
    }

    /// A message from a browser on the Web Push port's WebSocket (Mozilla's browser push protocol).
    @Sendable public static func browserPushFrames(_ data: [UInt8]) {
        guard let message = try? BrowserPushProtocol.read(data) else { return }
        if case .hello(let uaid?, _, _) = message { _ = BrowserPushProtocol.isUAID(uaid) }
    }

    /// A Web Push request's headers (one `name: value` per line) as the push service reads them:
    /// its delivery options and its VAPID authorization, checked against a fixed origin and key.
    @Sendable public static func webPushRequest(_ data: [UInt8]) {
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        var headers: [(name: String, value: String)] = []
        for line in lines.prefix(64) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((line[..<colon].lowercased(), String(line[line.index(after: colon)...])))
        }
        _ = try? WebPushOptions(headers: headers, bodyLength: data.count % 5_000)
        let authorization = headers.first { $0.name == "authorization" }?.value
        let cryptoKey = headers.first { $0.name == "crypto-key" }?.value
        if let vapid = try? VAPIDAuthorization(authorization: authorization, cryptoKey: cryptoKey) {
            _ = try? vapid.verify(audience: "https://localhost:8445", nowSeconds: 1_800_000_000, subscriptionKey: nil)
        }
    }

    /// An `aes128gcm` message body, decrypted as a user agent decrypts what it receives.
    @Sendable public static func webPushBody(_ data: [UInt8]) {
        _ = try? WebPushEncryption.decrypt(data, with: webPushKeys)
    }

    /// The RFC 8291 Appendix A receiver (its body is a seed that decrypts).
    static let webPushKeys = WebPushUserAgentKeys(
        privateKey: (try? P256.KeyAgreement.PrivateKey(rawRepresentation: Base64URL.decode("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94") ?? []))
            ?? P256.KeyAgreement.PrivateKey(),
        auth: Base64URL.decode("BTBZMqHH6r4Tts7J_aSIgg") ?? [])

    /// A request target's path and query, as the admin port, the provider service and the
    /// device port read them (``QueryString``).
    @Sendable public static func queryString(_ data: [UInt8]) {
        let target = String(decoding: data, as: UTF8.self)
        _ = QueryString.path(of: target)
        _ = try? QueryString.parameters(of: target)
        if let query = QueryString.query(of: target) { _ = try? QueryString.pairs(query) }
    }

    /// The device runtime's journal of announced notifications, as a crash may leave it.
    @Sendable public static func announcementJournal(_ data: [UInt8]) {
        _ = AnnouncementJournalFile.records(in: data)
    }

    /// A Live Activity push's payload, read as the device runtime and `herald push send` read it.
    @Sendable public static func liveActivity(_ data: [UInt8]) {
        guard let payload = try? NotificationPayload.decode(data) else { return }
        if let update = try? LiveActivityUpdate(payload: payload) { _ = update.alertText }
    }

    /// What a session bus sends `herald device run --desktop` (D-Bus messages, in pieces of a size
    /// taken from the first byte).
    @Sendable public static func dbusStream(_ data: [UInt8]) {
        guard let first = data.first else { return }
        _ = DBusStream.count(Array(data.dropFirst()), pieceSize: Int(first) + 1)
    }

    /// A provider token (`bearer …` text) parsed and checked against a fixed key.
    @Sendable public static func providerToken(_ data: [UInt8]) {
        guard let text = String(validating: data, as: UTF8.self),
              let token = try? ProviderToken(parsing: text) else { return }
        _ = token.isSigned(by: fixedKey)
    }

    /// Header lines (`name: value`), a blank line, the body: how the request targets take input.
    static func request(_ data: [UInt8]) -> (APNsRequestHead, [UInt8]) {
        let split = data.firstRange(of: [10, 10])
        let headerBytes = split.map { data[..<$0.lowerBound] } ?? data[...]
        let body = split.map { Array(data[$0.upperBound...]) } ?? []
        var head = APNsRequestHead()
        for line in headerBytes.split(separator: 10) {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = String(decoding: line[..<colon], as: UTF8.self)
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
            _ = head.record(name: name, value: value)
        }
        return (head, body)
    }

    /// A broadcast (`POST /4/broadcasts/apps/…`) or channel management request, in the request form.
    @Sendable public static func broadcastRequest(_ data: [UInt8]) {
        let (head, body) = request(data)
        let bundleID = BroadcastRequest.bundleID(fromPath: head.path) ?? "com.example.app"
        _ = BroadcastRequest.validate(head, bundleID: bundleID, body: body, bodySize: body.count)
        _ = ChannelRequest.parse(head, body: body)
    }

    /// A provider request: header lines (`name: value`), a blank line, the body.
    @Sendable public static func providerRequest(_ data: [UInt8]) {
        let (head, body) = request(data)
        _ = APNsRequestValidation.validateTarget(head)
        if case .success(let headers) = APNsRequestValidation.validateHeaders(head) {
            _ = APNsRequestValidation.validatePayload(body, bodySize: body.count, pushType: headers.pushType)
        } else {
            _ = APNsRequestValidation.validatePayload(body, bodySize: body.count, pushType: .alert)
        }
    }

    /// A WebSocket text frame, as the gateway (client frames) and the device (server frames) read it.
    @Sendable public static func deviceFrames(_ data: [UInt8]) {
        if case .success(let frame) = DeviceClientFrame.decode(data) { _ = frame.encoded() }
        if case .success(let frame) = DeviceServerFrame.decode(data) { _ = frame.encoded() }
    }

    /// A notification payload becoming what the device shows.
    @Sendable public static func remoteContent(_ data: [UInt8]) {
        guard let payload = try? JSONReader.parse(data, limits: .payload) else { return }
        let localization = AlertLocalization(tables: ["en": ["GREET": "%@ and %2$@ %d %%", "X": "%99$@"]])
        let content = NotificationContent.remote(payload, localization: localization, languages: ["fr-CA", "en"])
        _ = content.json
        _ = content.kinds
        _ = SilentPushes.isSilent(payload)
        _ = ServiceExtension.runs(for: payload)
        _ = NotificationGrouping.Item(id: "x", payload: payload)
        _ = try? NotificationPayload.decode(data)
    }

    /// An agent-socket line: a JSON object whose request, trigger and content fields are read.
    @Sendable public static func agentLine(_ data: [UInt8]) {
        guard let message = try? JSONReader.parseObject(data) else { return }
        if let request = message["request"] { _ = try? PlanFormat.request(request) }
        if let content = message["content"] { _ = NotificationContent.local(content) }
        for value in message.values { _ = LocalizedFormat.argument(value) }
        // A `complete` answer to a PushKit push or a mutable Web Push message.
        _ = try? AgentAnswerReaders.pushKitAnswer(message)
        _ = try? AgentAnswerReaders.replacement(message["notification"], of: DeclarativeWebPushMessage(title: "t", navigate: "https://example.com/"))
    }

    /// The headers of a sound file in an app bundle (AIFF/AIFC, WAV, CAF), as the device decides
    /// whether to play it; the file's size is taken from the first 8 bytes when there are 8.
    @Sendable public static func soundFile(_ data: [UInt8]) {
        let size = data.count >= 8 ? Int64(bitPattern: data[..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) : Int64(data.count)
        let header = Array(data.dropFirst(min(8, data.count)))
        _ = NotificationSounds.inspect(header: header, fileSize: size, path: "fuzz")
        _ = NotificationSounds.inspect(header: data, fileSize: Int64(data.count), path: "fuzz")
    }

    /// A REST body for `POST /v1/sends` and `POST /v1/schedules`.
    @Sendable public static func restBody(_ data: [UInt8]) {
        _ = try? ProviderRequestBodies.send(data)
        _ = try? ProviderRequestBodies.schedule(data)
    }

    /// A plan file (`herald device plan`): requests and events.
    @Sendable public static func planFile(_ data: [UInt8]) {
        guard case .array(let items)? = try? JSONReader.parse(data) else { return }
        var authorization = PlanFormat.Authorization()
        for item in items {
            if let request = try? PlanFormat.request(item) { try? request.trigger?.validate() }
            _ = try? PlanFormat.event(item, current: &authorization)
        }
    }

    private static let fixedKey = P256.Signing.PrivateKey(compactRepresentable: false).publicKey
}
