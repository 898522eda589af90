import ArgumentParser
import Foundation
import HeraldClient
import HeraldCore

/// The shared state of a `herald push send` run: the tokens left, the tally, and the lines
/// written (buffered, flushed every 64 KiB, every 100 ms and at the end, instead of one system
/// call per token).
final class SendRun: Sendable {
    private struct State {
        var next = 0
        var stopped = false
        var tally = Tally()
        var output: [UInt8] = []
        var lastFlush = ContinuousClock.now
    }
    private let targets: [String]
    private let single: Bool
    private let bar: ProgressBar
    private let state = Locked(State())

    init(targets: [String], single: Bool, bar: ProgressBar) {
        (self.targets, self.single, self.bar) = (targets, single, bar)
    }

    /// The next token to send, or `nil` when all are taken or the run was stopped.
    func next() -> String? {
        state.withLock { s in
            guard !s.stopped, s.next < targets.count else { return nil }
            defer { s.next += 1 }
            return targets[s.next]
        }
    }

    func stop() { state.withLock { $0.stopped = true } }

    /// Counts an outcome and writes its line. Workers call this concurrently: the progress bar (whose
    /// state is not locked) and the writes happen under the lock, so output keeps its order and
    /// the bar draws from one worker at a time (at most once per percent).
    func record(_ token: String, _ result: APNsResult?) {
        let line = PushCommand.Send.line(token: token, result: result, single: single)
        state.withLock { s in
            s.tally.add(result)
            if let line {
                s.output.append(contentsOf: line.utf8)
                s.output.append(UInt8(ascii: "\n"))
            }
            bar.update(s.tally.done)
            let now = ContinuousClock.now
            guard s.output.count >= 1 << 16 || now - s.lastFlush >= .milliseconds(100) else { return }
            s.lastFlush = now
            if !s.output.isEmpty { FileHandle.standardOutput.write(Data(s.output)) }
            s.output.removeAll(keepingCapacity: true)
        }
    }

    /// Writes what is left and returns the tally.
    func finish() -> Tally {
        let (tally, rest) = state.withLock { s in
            defer { s.output.removeAll() }
            return (s.tally, s.output)
        }
        if !rest.isEmpty { FileHandle.standardOutput.write(Data(rest)) }
        return tally
    }
}

/// What a run of `herald push send` came to.
struct Tally {
    var done = 0
    var accepted = 0
    var rejected = 0
    var transportFailures = 0
    var unanswered = 0
    var byReason: [String: Int] = [:]
    var lastTransportError: String?
    /// What to check for the provider-token refusals seen (at most one line per reason).
    var tokenAdvice: [String: String] = [:]

    mutating func add(_ result: APNsResult?) {
        done += 1
        guard let result else { unanswered += 1; return }
        if result.isAccepted { accepted += 1 } else if result.status == 0 {
            transportFailures += 1
            lastTransportError = result.transportError
        } else {
            rejected += 1
            byReason["\(result.status) \(result.reason?.rawValue ?? "(no reason)")", default: 0] += 1
            if let reason = result.reason, let advice = reason.providerTokenAdvice { tokenAdvice[reason.rawValue] = advice }
        }
    }

    var summary: String {
        var text = "sent \(accepted), failed \(rejected + transportFailures + unanswered)"
        let parts = byReason.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            + (transportFailures > 0 ? ["no answer (connection): \(transportFailures)"] : [])
            + (unanswered > 0 ? ["no answer (time-out): \(unanswered)"] : [])
        if !parts.isEmpty { text += " (" + parts.joined(separator: ", ") + ")" }
        return text
    }
}

/// A one-line progress bar on standard error.
final class ProgressBar: @unchecked Sendable {
    let total: Int
    let enabled: Bool
    private var lastDrawn = -1

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    func update(_ done: Int) {
        guard enabled, total > 0 else { return }
        let percent = done * 100 / total
        guard percent != lastDrawn || done == total else { return }
        lastDrawn = percent
        let width = 30
        let filled = done * width / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(done)/\(total) \(percent)%".utf8))
    }

    func finish() { if enabled { FileHandle.standardError.write(Data("\n".utf8)) } }
}
