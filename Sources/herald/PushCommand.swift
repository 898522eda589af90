import ArgumentParser
import Foundation
import HeraldClient
import HeraldCore

struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push", abstract: "Send notifications as a provider does.",
        discussion: "Example: herald push send --gateway https://localhost:2197 --ca ./herald-data/tls/ca.pem --key key.p8 --key-id KEYID --team TEAM123456 --topic com.example.app --token TOKEN --alert Hello",
        subcommands: [Send.self])

    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a notification to one or many device tokens on an APNs-compatible server (a Herald gateway, or Apple's).",
            discussion: """
                The payload comes from flags (--alert, --title, --badge, --sound, --category, --thread-id,
                --content-available, --mutable-content, --data KEY=JSON) or whole from --payload FILE.

                Live Activities (push type liveactivity, topic <bundle id>.push-type.liveactivity): --event
                start|update|end with --content-state JSON, --stale-date, --dismissal-date, --relevance-score,
                --timestamp (default now); a start (to a push-to-start token) also --attributes-type,
                --attributes JSON and an --alert, with --input-push-token or --input-push-channel ID. The
                payload is checked as ActivityKit checks it before anything is sent. --channel ID broadcasts
                it on a channel of the app instead of sending to tokens (prints the apns-request-id).

                One token (--token): prints the apns-id on success; on a rejection prints "STATUS REASON"
                (with "timestamp=MS" for a 410). Many tokens (--token repeated, or --tokens FILE, "-" for
                standard input, one hex token per line, blank lines and # comments skipped): prints one line
                per token as answers come, "TOKEN APNS-ID" or "TOKEN STATUS REASON [timestamp=MS]", shows a
                progress bar on standard error when it is a terminal, and ends with a summary on standard
                error (sent, failed by reason).

                Exit status: 0 every notification accepted; 1 at least one rejected (none unanswered);
                2 at least one got no answer (connection failures after retries, or the --timeout).
                429 and 5xx answers and connection failures are retried (--attempts) with exponential
                backoff and jitter; other rejections are final. An https:// URL uses TLS (ALPN h2); an
                http:// URL uses h2c with prior knowledge (a gateway's --h2c-port).

                Example: herald push send --gateway https://localhost:2197 --ca ./herald-data/tls/ca.pem --key key.p8 \\
                           --key-id KEYID --team TEAM123456 --topic com.example.app --tokens tokens.txt --alert "Hello"
                """)

        @Option(name: .customLong("gateway"), help: ArgumentHelp(
            "The server: a gateway's provider port (https://localhost:2197, or http://127.0.0.1:8080 for its --h2c-port) or Apple's.",
            valueName: "URL"))
        var gatewayURL: String?

        /// The spelling before `--gateway` (every command names its server so), kept for scripts.
        @Option(name: .customLong("url"), help: .hidden)
        var legacyURL: String?

        /// The server, whichever spelling named it.
        var url: String { gatewayURL ?? legacyURL ?? "" }


        @OptionGroup var credentials: ProviderCredentialOptions



        @Option(name: .customLong("topic"), help: "apns-topic: the bundle id, plus the push type's suffix where it has one.")
        var topicOption: String?

        /// The APNs topic (required for APNs sends; validated).
        var topic: String { topicOption ?? "" }

        @OptionGroup(title: "Web Push") var webPush: WebPushSendOptions

        @Option(name: .customLong("token"), help: "A device token (hex). Repeat for more.")
        var tokens: [String] = []

        @Option(name: .customLong("tokens"), help: ArgumentHelp("A file of device tokens, one per line; - reads standard input.", valueName: "FILE"))
        var tokensFile: String?

        @Option(help: "The alert body.")
        var alert: String?

        @Option(help: "The alert title.")
        var title: String?

        @Option(help: "The alert subtitle.")
        var subtitle: String?

        @Option(help: "The badge (0 removes it).")
        var badge: Int?

        @Option(help: "A sound file name, or default.")
        var sound: String?

        @Option(help: "The notification's category (its actions).")
        var category: String?

        @Option(help: "thread-id: notifications with the same one are grouped.")
        var threadID: String?

        @Option(help: ArgumentHelp("interruption-level: passive, active, time-sensitive or critical (Focus and the summary follow it).", valueName: "LEVEL"))
        var interruptionLevel: String?

        @Flag(help: "content-available: 1 (a background update; with no alert, badge or sound it is silent).")
        var contentAvailable = false

        @Flag(help: "mutable-content: 1 (the app's service extension may change it).")
        var mutableContent = false

        @Option(name: .customLong("data"), help: ArgumentHelp("A custom key beside aps: KEY=JSON (e.g. id=42, or name=\"\\\"Ana\\\"\"). Repeat for more.", valueName: "KEY=JSON"))
        var data: [String] = []

        @Option(help: ArgumentHelp("A file holding the whole JSON payload (instead of the payload flags).", valueName: "FILE"))
        var payload: String?

        @Option(help: "Live Activity: the event, start, update or end (push type liveactivity).")
        var event: String?

        @Option(help: ArgumentHelp("Live Activity: content-state, a JSON object.", valueName: "JSON"))
        var contentState: String?

        @Option(help: ArgumentHelp("Live Activity: timestamp, UNIX seconds (default: now); older updates are ignored.", valueName: "SECONDS"))
        var timestamp: Int64?

        @Option(help: ArgumentHelp("Live Activity: stale-date, UNIX seconds.", valueName: "SECONDS"))
        var staleDate: Int64?

        @Option(help: ArgumentHelp("Live Activity: dismissal-date of an end, UNIX seconds.", valueName: "SECONDS"))
        var dismissalDate: Int64?

        @Option(help: "Live Activity: relevance-score.")
        var relevanceScore: Double?

        @Option(help: "Live Activity start: attributes-type (the ActivityAttributes type's name).")
        var attributesType: String?

        @Option(help: ArgumentHelp("Live Activity start: attributes, a JSON object.", valueName: "JSON"))
        var attributes: String?

        @Flag(help: "Live Activity start: input-push-token 1 (the new activity gets an update token).")
        var inputPushToken = false

        @Option(help: ArgumentHelp("Live Activity start: input-push-channel, the broadcast channel that updates it.", valueName: "ID"))
        var inputPushChannel: String?

        @Option(help: ArgumentHelp("Broadcast on this channel of the app (POST /4/broadcasts/apps/<bundle id>) instead of sending to tokens.", valueName: "ID"))
        var channel: String?

        @Option(help: "apns-priority: 10, 5 or 1.")
        var priority: Int?

        @Option(help: "apns-expiration: UNIX seconds, or 0 for a single delivery attempt.")
        var expiration: Int64?

        @Option(help: "apns-collapse-id (at most 64 bytes).")
        var collapseID: String?

        @Option(help: "apns-push-type: alert, background, voip, … (default: background for a silent payload, else alert)")
        var pushType: String?

        @Option(help: "apns-id to send (a UUID; one token only); by default a fresh one per notification.")
        var apnsID: String?

        @Option(help: "Requests in flight at once.")
        var concurrency: Int = 100

        @Option(help: "HTTP/2 connections to open.")
        var connections: Int = 2

        @Option(help: "Attempts per notification (429, 5xx and connection failures are retried).")
        var attempts: Int = 3

        @Flag(inversion: .prefixedNo, help: "Show a progress bar on standard error (default: when it is a terminal).")
        var progress: Bool?

        @Option(help: "Seconds to wait for everything before giving up (unanswered notifications count as failures).")
        var timeout: Double = 30

        func validate() throws {
            if webPush.subscription != nil { return try validateWebPush() }
            try credentials.validateCredentials()
            guard topicOption != nil else { throw ValidationError("give the app's topic: --topic com.example.app (or --webpush SUBSCRIPTION.json for a Web Push message)") }
            let activityFlags = contentState != nil || timestamp != nil || staleDate != nil || dismissalDate != nil || relevanceScore != nil
                || attributesType != nil || attributes != nil || inputPushToken || inputPushChannel != nil
            if activityFlags && event == nil { throw ValidationError("the Live Activity flags (--content-state, --stale-date, …) need --event start|update|end") }
            if let event, LiveActivityUpdate.Event(rawValue: event) == nil { throw ValidationError("--event must be start, update or end; got '\(event)'") }
            if event != nil || channel != nil {
                let type = pushType ?? PushType.liveactivity.rawValue
                guard type == PushType.liveactivity.rawValue else { throw ValidationError("--event and --channel send Live Activity pushes: --push-type must be liveactivity (or left out)") }
                if channel == nil && !topic.hasSuffix(PushType.liveactivity.topicSuffix) {
                    throw ValidationError("a Live Activity push goes to the topic \(topic)\(PushType.liveactivity.topicSuffix) (--topic with the .push-type.liveactivity suffix)")
                }
            }
            if let channel, BroadcastChannelID(channel) == nil { throw ValidationError("--channel must be a channel id (base64 of 16 bytes, as the channel port gave it); got '\(channel)'") }
            let flags = alert != nil || title != nil || subtitle != nil || badge != nil || sound != nil || category != nil
                || threadID != nil || contentAvailable || mutableContent || !data.isEmpty || event != nil || interruptionLevel != nil
            if let interruptionLevel, APS.InterruptionLevel(known: interruptionLevel) == nil {
                throw ValidationError("--interruption-level must be passive, active, time-sensitive or critical, not \"\(interruptionLevel)\"")
            }
            if payload != nil && flags { throw ValidationError("give either --payload FILE or payload flags (--alert, --badge, …), not both") }
            if payload == nil && !flags { throw ValidationError("give the payload: --alert TEXT (and other payload flags) or --payload FILE") }
            if channel != nil && (!tokens.isEmpty || tokensFile != nil) { throw ValidationError("--channel broadcasts to the channel's subscribers: give no --token or --tokens") }
            if channel == nil && tokens.isEmpty && tokensFile == nil { throw ValidationError("give --token HEX (repeatable) or --tokens FILE (- for standard input)") }
            if apnsID != nil && (tokens.count > 1 || tokensFile != nil) { throw ValidationError("--apns-id is for a single token") }
            guard gatewayURL != nil || legacyURL != nil else {
                throw ValidationError("give the server with --gateway https://HOST:PORT (a gateway's provider port, or Apple's)")
            }
            guard let components = URLComponents(string: url), let scheme = components.scheme, ["https", "http"].contains(scheme),
                  components.host != nil
            else { throw ValidationError("--gateway must look like https://HOST:PORT or http://HOST:PORT; got '\(url)'") }
            if concurrency < 1 || connections < 1 || attempts < 1 { throw ValidationError("--concurrency, --connections and --attempts must be at least 1") }
            if !(timeout > 0 && timeout <= 86_400) { throw ValidationError("--timeout must be a number of seconds above 0 and at most 86400; got \(timeout)") }
            for entry in data where !entry.contains("=") { throw ValidationError("--data must be KEY=JSON, not \"\(entry)\"") }
        }

        /// The payload from the flags.
        func flagPayload() throws -> [UInt8] {
            var aps = APS()
            aps.alert = APS.Alert.text(title: title, subtitle: subtitle, body: alert)
            aps.badge = badge
            aps.sound = sound.map(APS.Sound.named)
            aps.category = category
            aps.threadID = threadID
            aps.interruptionLevel = interruptionLevel.flatMap(APS.InterruptionLevel.init(known:))
            if contentAvailable { aps.contentAvailable = 1 }
            if mutableContent { aps.mutableContent = 1 }
            if let event {
                func object(_ text: String?, _ flag: String) throws -> JSONValue? {
                    guard let text else { return nil }
                    guard let value = try? JSONReader.parse(text.utf8), case .object = value else {
                        throw ValidationError("\(flag) must be a JSON object, like '{\"score\":1}'; got '\(text)'")
                    }
                    return value
                }
                LiveActivityUpdate(
                    event: LiveActivityUpdate.Event(rawValue: event) ?? .update, timestamp: timestamp ?? SystemWallClock().nowSeconds(),
                    contentState: try object(contentState, "--content-state")?.objectValue, staleDate: staleDate, dismissalDate: dismissalDate,
                    relevanceScore: relevanceScore, attributesType: attributesType, attributes: try object(attributes, "--attributes")?.objectValue,
                    wantsPushToken: inputPushToken, channel: inputPushChannel).write(into: &aps)
            }
            var notification = NotificationPayload(aps: aps)
            for entry in data {
                let key = String(entry[..<entry.firstIndex(of: "=")!])
                let text = String(entry[entry.index(after: entry.firstIndex(of: "=")!)...])
                guard key != NotificationPayload.apsKey, !key.isEmpty else {
                    throw ValidationError("--data key \"\(key)\" is not allowed (custom keys go beside aps)")
                }
                guard let value = try? JSONReader.parse(text.utf8) else {
                    throw ValidationError("--data \(key)=\(text): the value must be JSON (quote strings: \(key)='\"\(text)\"')")
                }
                notification.custom[key] = value
            }
            if event != nil {
                // Checked as ActivityKit checks it: what the device would drop is not sent.
                do { _ = try LiveActivityUpdate(payload: notification) } catch {
                    throw ValidationError("this Live Activity payload would be ignored by the device: \(error)")
                }
            }
            return try notification.encoded()
        }

        func readTokens() throws -> [String] {
            var all = tokens
            if let tokensFile {
                let text: String
                if tokensFile == "-" {
                    text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
                } else {
                    text = try readText(tokensFile, what: "--tokens")
                }
                // Byte by byte: Foundation's trimming cost more than sending, per token, on large files.
                let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
                for line in text.utf8.split(whereSeparator: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) {
                    guard let first = line.firstIndex(where: { !blank($0) }), let last = line.lastIndex(where: { !blank($0) }),
                          line[first] != UInt8(ascii: "#") else { continue }
                    all.append(String(decoding: line[first...last], as: UTF8.self))
                }
            }
            if all.isEmpty { throw ValidationError("--tokens \(tokensFile ?? "") holds no tokens") }
            return all
        }

        func run() async throws {
            if webPush.subscription != nil { return try await runWebPush() }
            let components = URLComponents(string: url)!
            let isTLS = components.scheme == "https"
            let signer = try credentials.signer()
            let body = payload != nil ? Array(try readText(payload!, what: "--payload").utf8) : try flagPayload()
            let kind = pushType ?? (event != nil || channel != nil ? PushType.liveactivity.rawValue
                : (try? NotificationPayload.decode(body))?.isSilent == true ? "background" : "alert")
            let targets = try channel.map { [$0] } ?? readTokens()
            let client = APNsClient(
                configuration: .init(
                    host: components.host!, port: components.port ?? (isTLS ? 443 : 80), tls: isTLS ? credentials.clientTLS : nil,
                    connections: connections, maximumInFlight: concurrency,
                    retry: APNsRetryPolicy(maximumAttempts: attempts, initialDelay: .milliseconds(500), maximumDelay: .seconds(5))),
                signer: signer)
            let single = channel != nil || (targets.count == 1 && tokensFile == nil)
            let bar = ProgressBar(total: targets.count, enabled: progress ?? (!single && isatty(STDERR_FILENO) == 1))
            let run = SendRun(targets: targets, single: single, bar: bar)

            let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
            let workers = min(concurrency, targets.count)
            // `concurrency` workers, each sending the next token as soon as its last one is answered:
            // one task per worker, not per push, and no hop through this task per answer.
            enum Ended { case worker, deadline, sentinelCancelled }
            await withTaskGroup(of: Ended.self) { group in
                for _ in 0..<workers {
                    group.addTask {
                        while let token = run.next() {
                            let notification = channel == nil
                                ? APNsNotification(
                                    token: token, topic: topic, pushType: kind, priority: priority, expiration: expiration,
                                    collapseID: collapseID, apnsID: apnsID, payload: body)
                                : APNsNotification.broadcast(
                                    bundleID: PushType.liveactivity.bundleID(fromTopic: topic) ?? topic, channelID: token,
                                    priority: priority, expiration: expiration, requestID: apnsID, payload: body)
                            run.record(token, try? await client.send(notification))
                        }
                        return .worker
                    }
                }
                group.addTask {
                    // The overall time limit: a sentinel that stops the run when it wakes.
                    (try? await Task.sleep(until: deadline)) == nil ? .sentinelCancelled : .deadline
                }
                var finished = 0
                while let ended = await group.next() {
                    switch ended {
                    case .worker:
                        finished += 1
                        if finished == workers { group.cancelAll() }
                    case .deadline:
                        // Time is up: no new sends, and closing the connections ends those in flight
                        // (a silent server would otherwise hold them forever).
                        run.stop()
                        group.cancelAll()
                        await client.close()
                    case .sentinelCancelled:
                        break
                    }
                }
            }
            var tally = run.finish()
            bar.finish()
            await client.close()
            tally.unanswered += targets.count - tally.done
            if single, let error = tally.lastTransportError ?? (tally.unanswered > 0 ? "no answer within \(timeout) seconds" : nil) {
                printError("herald: cannot push to \(url): \(ConnectionAdvice.explain(error, side: .provider))")
            }
            if !single { printError(tally.summary) }
            for (reason, advice) in tally.tokenAdvice.sorted(by: { $0.key < $1.key }) { printError("herald: \(reason): \(advice)") }
            if tally.unanswered > 0 || tally.transportFailures > 0 { throw ExitCode(2) }
            if tally.rejected > 0 { throw ExitCode(1) }
        }

        static func line(token: String, result: APNsResult?, single: Bool) -> String? {
            guard let result, result.status != 0 else { return single ? nil : "\(token) no-answer \(result?.transportError ?? "")" }
            var text = result.isAccepted ? (result.apnsID ?? "") : "\(result.status) \(result.reason?.rawValue ?? "(no reason)")"
            if let ts = result.timestamp { text += " timestamp=\(ts)" }
            return single ? text : "\(token) \(text)"
        }
    }
}
