import Crypto
import Foundation
import HeraldClient
import HeraldCore
import Logging
import Tracing

extension ProviderService {
    // MARK: registrations

    /// Registers (or registers again) a device: at every launch, and when its language or zone changes.
    /// With `webPush` it is a Web Push subscription: `token` is then absent (or the one derived
    /// from the endpoint, ``WebPushRecipient/token(endpoint:)``).
    @discardableResult
    public func register(
        token givenToken: String?, topic: String, language: String, timeZone: String, userID: String?, tags: [String], webPush: WebPushRecipient? = nil
    ) async throws(ProviderError) -> Registration {
        let token: String
        if let webPush {
            guard webPushSender != nil else {
                throw ProviderError(.invalid, "this provider service sends no Web Push (start herald provider with --vapid-key)")
            }
            try Self.check(webPush)
            token = WebPushRecipient.token(endpoint: webPush.endpoint)
        } else {
            // The one token parser: ASCII hex of either case, an even count, at most Apple's length.
            guard let given = givenToken, let parsed = DeviceToken(hex: given) else {
                throw ProviderError(.invalid, "\"token\" must be the device token in hex, not \"\(givenToken ?? "")\" (or give \"webPush\")")
            }
            token = parsed.hex
        }
        guard DeviceProtocol.isValidTopic(topic) else { throw ProviderError(.invalid, "\"topic\" must be the app's bundle id, not \"\(topic)\"") }
        guard Self.isLanguageTag(language) else {
            throw ProviderError(.invalid, "\"language\" must be a BCP 47 tag such as en, fr-CA or zh-Hant-TW, not \"\(language)\"")
        }
        guard TimeZone(identifier: timeZone) != nil else {
            throw ProviderError(.invalid, "\"timeZone\" must be an IANA time zone such as Europe/Paris, not \"\(timeZone)\"")
        }
        let registration = Registration(token: token, topic: topic, language: language, timeZone: timeZone, userID: userID, tags: tags,
                                        registeredAt: clock.nowMilliseconds(), webPush: webPush)
        do { try await store.upsert(registration) } catch { throw ProviderError(.internalFailure, "could not store the registration: \(error)") }
        zoneSeen(timeZone)
        return registration
    }

    /// A Web Push subscription as a registration takes it: an https endpoint of at most 1,000
    /// bytes (UnifiedPush's bound), keys that are a P-256 point and 16 bytes, an http(s) url.
    static func check(_ webPush: WebPushRecipient) throws(ProviderError) {
        guard webPush.endpoint.utf8.count <= 1_000, let url = URLComponents(string: webPush.endpoint), url.scheme?.lowercased() == "https",
              url.host?.isEmpty == false else {
            throw ProviderError(.invalid, "\"webPush.endpoint\" must be an https URL of at most 1000 bytes")
        }
        guard WebPushSubscriptionKeys(p256dh: webPush.p256dh, auth: webPush.auth) != nil else {
            throw ProviderError(.invalid, "\"webPush.keys\" must hold p256dh (a P-256 public key) and auth (16 bytes), base64url")
        }
        if let page = webPush.url { try checkPage(page, "webPush.url") }
    }

    static func checkPage(_ page: String, _ field: String) throws(ProviderError) {
        // Read as a user agent reads a Declarative Web Push message's navigate (the URL
        // Standard), so that a page accepted here is one the device accepts: a port out of range
        // or a space in the host is refused now, not turned into an ordinary message later.
        guard page.utf8.count <= 2_048, let url = try? StandardURL(parsing: page), url.scheme == "https" || url.scheme == "http" else {
            throw ProviderError(.invalid, "\"\(field)\" must be an absolute http(s) URL (as the URL Standard reads it) of at most 2048 bytes")
        }
    }

    static func isLanguageTag(_ tag: String) -> Bool {
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else { return false }
        return parts.dropFirst().allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    public func unregister(token: String) async throws(ProviderError) {
        do {
            guard try await store.deleteRegistration(token.lowercased()) else { throw ProviderError(.notFound, "no registration for token \(token)") }
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// The most arguments a send gives a template (`args`), so the most a template may take.
    public static let maximumArguments = 100

    public func putTemplate(_ template: MessageTemplate) async throws(ProviderError) {
        guard !template.id.isEmpty, !template.translations.isEmpty else {
            throw ProviderError(.invalid, "a template needs an id and at least one translation")
        }
        for language in template.translations.keys where !Self.isLanguageTag(language) {
            throw ProviderError(.invalid, "translation key \"\(language)\" is not a BCP 47 language tag")
        }
        guard template.argumentCount <= Self.maximumArguments else {
            throw ProviderError(.invalid, "template \"\(template.id)\" takes \(template.argumentCount) arguments; a send gives at most \(Self.maximumArguments)")
        }
        do { try await store.put(template) } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    public func template(_ id: String) async throws(ProviderError) -> MessageTemplate {
        do {
            guard let template = try await store.template(id) else { throw ProviderError(.notFound, "no template \"\(id)\"") }
            return template
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// Deletes a template no active schedule uses (409 names the schedule otherwise).
    public func deleteTemplate(_ id: String) async throws(ProviderError) {
        // Under the schedule lock: no schedule can start using the template while it is checked.
        await lockSchedules()
        defer { unlockSchedules() }
        do {
            for schedule in try await store.schedules(state: .active) {
                if case .template(id, _) = schedule.send.message {
                    throw ProviderError(.conflict, "template \"\(id)\" is used by active schedule \"\(schedule.id)\"; cancel it first (DELETE /v1/schedules/\(schedule.id))")
                }
            }
            guard try await store.deleteTemplate(id) else { throw ProviderError(.notFound, "no template \"\(id)\"") }
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }

    /// The template a send names, checked: it exists and the send gives exactly the arguments it takes.
    func checkedTemplate(_ message: SendMessage) async throws -> MessageTemplate? {
        guard case .template(let id, let arguments) = message else { return nil }
        guard let template = try await store.template(id) else { throw ProviderError(.notFound, "no template \"\(id)\": PUT /v1/templates/\(id) first") }
        guard arguments.count == template.argumentCount else {
            throw ProviderError(.invalid, "template \"\(id)\" takes \(template.argumentCount) argument\(template.argumentCount == 1 ? "" : "s") (\"args\"), this send gives \(arguments.count)")
        }
        return template
    }
}
