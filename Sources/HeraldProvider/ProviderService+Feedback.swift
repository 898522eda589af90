import Crypto
import Foundation
import HeraldClient
import HeraldCore
import Logging
import Tracing

extension ProviderService {
    // MARK: feedback and receipts

    /// What one reading of the gateway's feedback lists did.
    public struct FeedbackPoll: Sendable, Hashable {
        /// Dead tokens the gateway listed.
        public var read = 0
        /// Registrations removed (listed and not registered again after the listed time).
        public var pruned: [String] = []
        /// Topics whose list could not be read, with why.
        public var errors: [String: String] = [:]
    }

    /// Reads (and so clears) the feedback list of every topic with registrations, and prunes the
    /// tokens it names unless their app registered them again after the listed time.
    public func pollFeedback() async throws(ProviderError) -> FeedbackPoll {
        var poll = FeedbackPoll()
        let topics: [String]
        do { topics = try await store.topics() } catch { throw ProviderError(.internalFailure, "\(error)") }
        for topic in topics {
            do {
                let items = try await sender.feedback(topic: topic)
                poll.read += items.count
                for item in items where try await store.prune(item.token.lowercased(), unregisteredAt: item.timestamp) {
                    poll.pruned.append(item.token.lowercased())
                }
            } catch {
                poll.errors[topic] = "\(error)"
            }
        }
        return poll
    }

    /// Polls the feedback lists every `interval` milliseconds on the service's clock, from now on.
    public func startFeedbackPolling(every interval: Int64, log: @escaping @Sendable (FeedbackPoll) -> Void = { _ in }) {
        feedbackAlarm?.cancel()
        guard interval > 0 else { return }
        feedbackAlarm = clock.setAlarm(at: clock.nowMilliseconds() + interval) { [work] in
            work.spawn {
                if let poll = try? await self.pollFeedback() { log(poll) }
                await self.startFeedbackPolling(every: interval, log: log)
            }
        }
    }

    public func stopFeedbackPolling() {
        feedbackAlarm?.cancel()
        feedbackAlarm = nil
    }

    /// The gateway's receipts for the accepted deliveries of sends: the latest status per token
    /// (`delivered`, `stored`, `acked`, `expired`, …; `unknown` when the gateway has no receipt).
    public func receipts(sendIDs: [String]) async throws(ProviderError) -> [String: String] {
        var apnsIDs: [(token: String, apnsID: String)] = []
        for id in sendIDs {
            for delivery in try await report(id: id).deliveries where delivery.status == 200 {
                if let apnsID = delivery.apnsID { apnsIDs.append((delivery.token, apnsID)) }
            }
        }
        do {
            let sender = self.sender
            let statuses = try await concurrentMap(apnsIDs, limit: 64) { token, apnsID in
                (token, try await sender.receipt(apnsID: apnsID)?.deliveries.first { $0.token.lowercased() == token }?.status ?? "unknown")
            }
            return Dictionary(statuses, uniquingKeysWith: { _, last in last })
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.gatewayFailed, "the gateway's receipts could not be read: \(error)") }
    }

    public func report(id: String) async throws(ProviderError) -> SendReport {
        do {
            guard let report = try await store.send(id: id) else { throw ProviderError(.notFound, "no send \(id)") }
            return report
        } catch let error as ProviderError { throw error } catch { throw ProviderError(.internalFailure, "\(error)") }
    }
}
