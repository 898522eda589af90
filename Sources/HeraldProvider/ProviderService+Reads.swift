import Crypto
import Foundation
import HeraldClient
import HeraldCore
import Logging
import Tracing

extension ProviderService {
    // MARK: reads (the REST API's lists and the dashboard): off the actor, failures as ProviderError

    /// One page of registrations in token order, after the token `after`.
    public nonisolated func registrations(_ filter: RegistrationFilter, after: String?, limit: Int) async throws(ProviderError) -> [Registration] {
        try await Self.reading { try await store.registrations(filter, after: after?.lowercased(), limit: limit) }
    }

    /// A token's registration.
    public nonisolated func registration(token: String) async throws(ProviderError) -> Registration {
        guard let found = try await Self.reading({ try await store.registration(token: token.lowercased()) }) else {
            throw ProviderError(.notFound, "no registration for token \(token)")
        }
        return found
    }

    /// The badge count each registration shows, by token.
    public nonisolated func badges(of registrations: [Registration]) async throws(ProviderError) -> [String: Int] {
        let counts = try await Self.reading { try await store.badges(keys: registrations.map(\.badgeKey)) }
        return registrations.reduce(into: [:]) { found, r in found[r.token] = counts[r.badgeKey] ?? 0 }
    }

    /// Sets the badge count a registration shows (its user's, or its own): the app was opened.
    public func setBadge(token: String, to value: Int) async throws(ProviderError) -> Registration {
        guard (0...BadgeCount.maximum).contains(value) else { throw ProviderError(.invalid, "\"badge\" must be from 0 to \(BadgeCount.maximum)") }
        let registration = try await registration(token: token)
        do { try await store.setBadges(keys: [registration.badgeKey], to: value) } catch {
            throw ProviderError(.internalFailure, "could not store the badge count: \(error)")
        }
        return registration
    }

    /// How many registrations there are by language, time zone and topic.
    public nonisolated func registrationCounts() async throws(ProviderError) -> RegistrationCounts {
        try await Self.reading { try await store.registrationCounts() }
    }

    /// One page of templates in id order, after the id `after`.
    public nonisolated func templates(after: String?, limit: Int) async throws(ProviderError) -> [MessageTemplate] {
        try await Self.reading { try await store.templates(after: after, limit: limit) }
    }

    /// One page of sends, newest first, after the send `after` (which must exist); only a
    /// schedule's when given.
    public nonisolated func sends(after: String?, scheduleID: String?, limit: Int) async throws(ProviderError) -> [SendSummary] {
        if let after, try await !Self.reading({ try await store.sendExists(id: after) }) {
            throw ProviderError(.invalid, "after must be the id of a send (the previous page's next)")
        }
        return try await Self.reading { try await store.sends(after: after, scheduleID: scheduleID, limit: limit) }
    }

    /// Runs a read, reporting a storage failure as the service's own.
    static func reading<T>(_ read: () async throws -> T) async throws(ProviderError) -> T {
        do { return try await read() } catch { throw ProviderError(.internalFailure, "could not read the provider database: \(error)") }
    }
}
