import ArgumentParser
import Crypto
import Foundation
import HeraldClient
import HeraldCore

/// `herald push send --webpush SUBSCRIPTION.json`: one Web Push message to any push service.
struct WebPushSendOptions: ParsableArguments {
    @Option(name: .customLong("webpush"), help: ArgumentHelp(
        "Send a Web Push message instead: the subscription as PushSubscription.toJSON() gives it ({\"endpoint\",\"keys\":{\"p256dh\",\"auth\"}}), or many (a JSON array, or one object a line); - reads standard input.",
        valueName: "SUBSCRIPTION.json"))
    var subscription: String?

    @OptionGroup var vapid: VAPIDKeyOptions

    @Option(help: ArgumentHelp("Web Push: TTL, the seconds the push service may keep the message for an offline user agent (0: now or never).", valueName: "SECONDS"))
    var ttl: Int64 = 86_400

    @Option(help: "Web Push: Urgency, very-low, low, normal or high.")
    var urgency: String = "normal"

    @Option(help: ArgumentHelp("Web Push: Topic; a newer message with the same topic replaces an undelivered one (1–32 base64url characters).", valueName: "TOPIC"))
    var webpushTopic: String?

    @Option(help: ArgumentHelp("Web Push: the page the notification opens (a Declarative Web Push message's navigate).", valueName: "URL"))
    var navigate: String?

    @Flag(help: "Web Push: ask for a push receipt (Prefer: respond-async).")
    var receipt = false
}

/// The application server's VAPID key and contact (`herald push send --webpush`, `herald provider`).
struct VAPIDKeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Web Push: the application server's VAPID private key (PEM), as herald keys vapid wrote it.", valueName: "FILE.pem"))
    var vapidKey: String?

    @Option(help: ArgumentHelp("Web Push: the VAPID sub claim, a contact for the push service's operator.", valueName: "mailto:…|https://…"))
    var vapidSubject: String = "mailto:webpush@localhost"

    func validateSubject() throws {
        guard vapidSubject.hasPrefix("mailto:") || vapidSubject.hasPrefix("https:") else {
            throw ValidationError("--vapid-subject must be a mailto: or https: contact; got '\(vapidSubject)'")
        }
    }

    /// The signer of `--vapid-key`, `nil` without one.
    func signer() throws -> VAPIDSigner? {
        guard let vapidKey else { return nil }
        let pem = try readText(vapidKey, what: "--vapid-key")
        do { return VAPIDSigner(privateKey: try P256.Signing.PrivateKey(pemRepresentation: pem), subject: vapidSubject) } catch {
            throw ValidationError("--vapid-key \(vapidKey) is not a PEM P-256 private key (herald keys vapid writes one): \(error)")
        }
    }
}

extension PushCommand.Send {
    func validateWebPush() throws {
        guard webPush.vapid.vapidKey != nil else { throw ValidationError("--webpush needs the application server's key: --vapid-key FILE.pem (herald keys vapid writes one)") }
        guard (0...WebPushOptions.maximumTTL).contains(webPush.ttl) else { throw ValidationError("--ttl must be 0…\(WebPushOptions.maximumTTL) seconds") }
        guard WebPushOptions.Urgency(rawValue: webPush.urgency) != nil else { throw ValidationError("--urgency must be very-low, low, normal or high; got '\(webPush.urgency)'") }
        if let topic = webPush.webpushTopic {
            guard (1...32).contains(topic.utf8.count), topic.utf8.allSatisfy({ $0 < 128 && (isalnum(Int32($0)) != 0 || $0 == 0x2D || $0 == 0x5F) }) else {
                throw ValidationError("--webpush-topic must be 1 to 32 characters of A–Z a–z 0–9 - _; got '\(topic)'")
            }
        }
        try webPush.vapid.validateSubject()
        let apnsOnly = topicOption != nil || sound != nil || category != nil || threadID != nil || contentAvailable
            || mutableContent || !data.isEmpty || event != nil || channel != nil || !tokens.isEmpty || tokensFile != nil || gatewayURL != nil
            || legacyURL != nil || pushType != nil || priority != nil || expiration != nil || collapseID != nil || apnsID != nil
        if apnsOnly { throw ValidationError("--webpush sends to the subscription's endpoint: APNs flags (--gateway, --topic, --token, --badge, …) do not apply") }
        if payload != nil && (alert != nil || title != nil || badge != nil) { throw ValidationError("give either --payload FILE or --title/--alert/--badge, not both") }
        if subtitle != nil { throw ValidationError("--subtitle is not part of a Declarative Web Push message") }
        if (alert != nil || title != nil) && webPush.navigate == nil {
            throw ValidationError("a Declarative Web Push message (--title, --alert) needs --navigate URL, the page a tap opens")
        }
        if let navigate = webPush.navigate {
            // The parser a user agent reads it with: the URL Standard's.
            do { _ = try StandardURL(parsing: navigate) } catch {
                throw ValidationError("--navigate must be a URL (\(error)); got '\(navigate)'")
            }
        }
    }

    /// The message: the file as it is, or a Declarative Web Push message built from --title,
    /// --alert and --navigate (shown by the user agent itself), or none (a push without a body).
    func webPushPayload() throws -> [UInt8]? {
        if let payload {
            let bytes = Array(try readText(payload, what: "--payload").utf8)
            // A message meant to be declarative that a user agent would not read as one (or
            // would read differently) is named before it is sent; it is still sent as written.
            for problem in DeclarativeWebPushMessage.lint(bytes) { printError("warning: --payload \(payload): \(problem)") }
            return bytes
        }
        guard alert != nil || title != nil, let navigate = webPush.navigate else { return nil }
        return DeclarativeWebPushMessage(
            title: title ?? alert ?? "", navigate: navigate, body: title == nil ? nil : alert, appBadge: badge.map(Int64.init)
        ).encoded()
    }

    /// One subscription object, a JSON array of them, or one object a line.
    static func readSubscriptions(_ text: String) throws -> [(subscription: WebPushSubscription, keys: WebPushSubscriptionKeys)] {
        let bytes = Array(text.utf8)
        let limits = JSONLimits(maximumBytes: 256 << 20, maximumDepth: 5)
        if let whole = try? JSONReader.parse(bytes, limits: limits) {
            switch whole {
            case .object(let object): return [try WebPushSubscription.read(object: object)]
            case .array(let items):
                return try items.enumerated().map { index, item in
                    guard case .object(let object) = item else { throw ValidationError("item \(index + 1) is not a subscription object") }
                    do { return try WebPushSubscription.read(object: object) } catch { throw ValidationError("item \(index + 1): \(error)") }
                }
            default: throw ValidationError("neither a subscription object nor an array of them")
            }
        }
        var all: [(subscription: WebPushSubscription, keys: WebPushSubscriptionKeys)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            do { all.append(try WebPushSubscription.read(Array(trimmed.utf8))) } catch { throw ValidationError("line \(index + 1): \(error)") }
        }
        guard !all.isEmpty else { throw ValidationError("no subscription in it") }
        return all
    }

    func runWebPush() async throws {
        let text = webPush.subscription == "-" ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            : try readText(webPush.subscription ?? "", what: "--webpush")
        let targets: [(subscription: WebPushSubscription, keys: WebPushSubscriptionKeys)]
        do { targets = try Self.readSubscriptions(text) } catch {
            throw ValidationError("--webpush \(webPush.subscription ?? ""): \(error)")
        }
        guard let signer = try webPush.vapid.signer() else { throw ValidationError("--webpush needs --vapid-key FILE.pem") }
        let body = try webPushPayload()
        if let body, body.count > WebPushEncryption.maximumPlaintext {
            throw ValidationError("the message is \(body.count) bytes; Web Push carries at most \(WebPushEncryption.maximumPlaintext)")
        }
        let client = try WebPushClient(vapid: signer, trustRootsPath: credentials.ca)
        let options = WebPushOptions(ttl: webPush.ttl, urgency: WebPushOptions.Urgency(rawValue: webPush.urgency) ?? .normal,
                                     topic: webPush.webpushTopic, wantsReceipt: webPush.receipt)
        // Each message is encrypted to its own subscription; `concurrency` requests at once.
        enum Outcome: Sendable { case answered(WebPushResult), failed(String) }
        let results = try await concurrentMap(targets, limit: concurrency) { target -> Outcome in
            do { return .answered(try await client.send(body, to: target.subscription, keys: target.keys, options: options)) } catch { return .failed("\(error)") }
        }
        try? await client.close()
        let single = targets.count == 1
        var refused = 0, unanswered = 0
        for (target, result) in zip(targets, results) {
            let prefix = single ? "" : target.subscription.endpoint + " "
            switch result {
            case .answered(let answer) where answer.isAccepted:
                print(prefix + [answer.location, answer.receipt].compactMap { $0 }.joined(separator: " "))
            case .answered(let answer):
                refused += 1
                let retry = answer.retryAfter.map { " retry-after=\($0)" } ?? ""
                print(prefix + "\(answer.status) \(answer.reason.trimmingCharacters(in: .whitespacesAndNewlines))\(retry)")
            case .failed(let error):
                unanswered += 1
                if single { printError("herald push send: no answer from \(target.subscription.endpoint): \(error)") } else { print(prefix + "0 \(error)") }
            }
        }
        if !single { printError("herald push send: \(targets.count - refused - unanswered) accepted, \(refused) refused, \(unanswered) unanswered") }
        if unanswered > 0 { throw ExitCode(2) }
        if refused > 0 { throw ExitCode(1) }
    }
}
