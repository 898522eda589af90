import ArgumentParser
import Crypto
import Foundation
import HeraldClient
import HeraldCore

/// `herald push send --webpush SUBSCRIPTION.json`: one Web Push message to any push service.
struct WebPushSendOptions: ParsableArguments {
    @Option(name: .customLong("webpush"), help: ArgumentHelp(
        "Send a Web Push message instead: the subscription as PushSubscription.toJSON() gives it ({\"endpoint\",\"keys\":{\"p256dh\",\"auth\"}}); - reads standard input.",
        valueName: "SUBSCRIPTION.json"))
    var subscription: String?

    @Option(help: ArgumentHelp("Web Push: the application server's VAPID private key (PEM), as herald keys vapid wrote it.", valueName: "FILE.pem"))
    var vapidKey: String?

    @Option(help: ArgumentHelp("Web Push: the VAPID sub claim, a contact for the push service's operator.", valueName: "mailto:…|https://…"))
    var vapidSubject: String = "mailto:webpush@localhost"

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

extension PushCommand.Send {
    func validateWebPush() throws {
        guard webPush.vapidKey != nil else { throw ValidationError("--webpush needs the application server's key: --vapid-key FILE.pem (herald keys vapid writes one)") }
        guard (0...WebPushOptions.maximumTTL).contains(webPush.ttl) else { throw ValidationError("--ttl must be 0…\(WebPushOptions.maximumTTL) seconds") }
        guard WebPushOptions.Urgency(rawValue: webPush.urgency) != nil else { throw ValidationError("--urgency must be very-low, low, normal or high; got '\(webPush.urgency)'") }
        if let topic = webPush.webpushTopic {
            guard (1...32).contains(topic.utf8.count), topic.utf8.allSatisfy({ $0 < 128 && (isalnum(Int32($0)) != 0 || $0 == 0x2D || $0 == 0x5F) }) else {
                throw ValidationError("--webpush-topic must be 1 to 32 characters of A–Z a–z 0–9 - _; got '\(topic)'")
            }
        }
        guard webPush.vapidSubject.hasPrefix("mailto:") || webPush.vapidSubject.hasPrefix("https:") else {
            throw ValidationError("--vapid-subject must be a mailto: or https: contact; got '\(webPush.vapidSubject)'")
        }
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
            // The reader's rules, by a round trip through it.
            let probe = DeclarativeWebPushMessage(title: "", navigate: navigate).encoded()
            guard (try? DeclarativeWebPushMessage(plaintext: probe)) != nil else {
                throw ValidationError("--navigate must be an absolute http(s) URL; got '\(navigate)'")
            }
        }
    }

    /// The message: the file as it is, or a Declarative Web Push message built from --title,
    /// --alert and --navigate (shown by the user agent itself), or none (a push without a body).
    func webPushPayload() throws -> [UInt8]? {
        if let payload { return Array(try readText(payload, what: "--payload").utf8) }
        guard alert != nil || title != nil, let navigate = webPush.navigate else { return nil }
        return DeclarativeWebPushMessage(
            title: title ?? alert ?? "", navigate: navigate, body: title == nil ? nil : alert, appBadge: badge.map(Int64.init)
        ).encoded()
    }

    func runWebPush() async throws {
        let text = webPush.subscription == "-" ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            : try readText(webPush.subscription ?? "", what: "--webpush")
        let (subscription, keys): (WebPushSubscription, WebPushSubscriptionKeys)
        do { (subscription, keys) = try WebPushSubscription.read(Array(text.utf8)) } catch {
            throw ValidationError("--webpush \(webPush.subscription ?? ""): \(error)")
        }
        let pem = try readText(webPush.vapidKey ?? "", what: "--vapid-key")
        let key: P256.Signing.PrivateKey
        do { key = try P256.Signing.PrivateKey(pemRepresentation: pem) } catch {
            throw ValidationError("--vapid-key \(webPush.vapidKey ?? "") is not a PEM P-256 private key (herald keys vapid writes one): \(error)")
        }
        let body = try webPushPayload()
        if let body, body.count > WebPushEncryption.maximumPlaintext {
            throw ValidationError("the message is \(body.count) bytes; Web Push carries at most \(WebPushEncryption.maximumPlaintext)")
        }
        let client = try WebPushClient(vapid: VAPIDSigner(privateKey: key, subject: webPush.vapidSubject), trustRootsPath: credentials.ca)
        let options = WebPushOptions(ttl: webPush.ttl, urgency: WebPushOptions.Urgency(rawValue: webPush.urgency) ?? .normal,
                                     topic: webPush.webpushTopic, wantsReceipt: webPush.receipt)
        let result: WebPushResult
        do { result = try await client.send(body, to: subscription, keys: keys, options: options) } catch {
            try? await client.close()
            printError("herald push send: no answer from \(subscription.endpoint): \(error)")
            throw ExitCode(2)
        }
        try? await client.close()
        guard result.isAccepted else {
            let retry = result.retryAfter.map { " retry-after=\($0)" } ?? ""
            print("\(result.status) \(result.reason.trimmingCharacters(in: .whitespacesAndNewlines))\(retry)")
            throw ExitCode(1)
        }
        print([result.location, result.receipt].compactMap { $0 }.joined(separator: " "))
    }
}
