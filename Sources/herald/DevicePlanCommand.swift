import ArgumentParser
import Foundation
import HeraldCore
import HeraldDevice

struct DevicePlanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Print every local delivery a set of requests would make in a window, without waiting (docs/device-plan.md).",
        discussion: """
            The requests are added at --from in file order (replacement by id and the 64 limit apply as on a
            device), then time runs to --until with the events applied at their instants. One JSON object per
            line, in order: {"id","fire" (UTC),"local" (with offset),"timeZone","trigger","presented","content"}.
            Requests dropped by the 64 limit are reported on standard error.

            Example: herald device plan --requests plan.json --from 2026-03-28T00:00:00Z --until 2026-04-04T00:00:00Z --time-zone Europe/Paris
            """
    )

    @Option(help: ArgumentHelp("A JSON array of requests.", valueName: "FILE.json"))
    var requests: String

    @Option(help: ArgumentHelp("When the requests are added (ISO 8601 with Z or an offset).", valueName: "ISO8601"))
    var from: String

    @Option(help: ArgumentHelp("The end of the window (inclusive).", valueName: "ISO8601"))
    var until: String

    @Option(help: ArgumentHelp("The device's time zone at --from.", valueName: "IANA"))
    var timeZone: String

    @Option(help: ArgumentHelp("A JSON array of events: time-zone moves, locations, location services, authorization.", valueName: "FILE.json"))
    var events: String?

    func run() throws {
        func instant(_ text: String, _ flag: String) throws -> Int64 {
            guard let parsed = PlanFormat.parseDateTime(text)?.instant else {
                throw ValidationError("\(flag) must be an ISO 8601 instant with Z or an offset, e.g. 2026-06-10T13:00:00Z; not \"\(text)\"")
            }
            return parsed
        }
        let start = try instant(from, "--from")
        let end = try instant(until, "--until")
        guard end >= start else { throw ValidationError("--until must not be before --from") }
        let zone: TimeZone
        do { zone = try PlanFormat.timeZone(timeZone) } catch { throw ValidationError("--time-zone: \(error)") }

        func array(_ path: String, _ what: String) throws -> [JSONValue] {
            let text = try readText(path, what: what)
            guard let value = try? JSONReader.parse(text.utf8), case .array(let items) = value else {
                throw ValidationError("\(path) must hold a JSON array of \(what)s")
            }
            return items
        }
        var parsedRequests: [LocalRequest] = []
        for (index, item) in try array(requests, "request").enumerated() {
            do { parsedRequests.append(try PlanFormat.request(item)) } catch {
                throw ValidationError("\(requests), request \(index + 1): \(error)")
            }
        }
        var authorization = PlanFormat.Authorization()
        var parsedEvents: [PlanFormat.Event] = []
        if let events {
            for (index, item) in try array(events, "event").enumerated() {
                do { parsedEvents.append(try PlanFormat.event(item, current: &authorization)) } catch {
                    throw ValidationError("\(events), event \(index + 1): \(error)")
                }
            }
        }
        let plan: LocalPlanner.Plan
        do {
            plan = try LocalPlanner.plan(requests: parsedRequests, events: parsedEvents, from: start, until: end, timeZone: zone)
        } catch {
            throw ValidationError("\(requests): \(error.message)")
        }
        for id in plan.dropped { printError("herald: request \"\(id)\" was dropped: only the 64 soonest-firing requests stay pending") }
        for delivery in plan.deliveries { printLineFlushed(LocalPlanner.line(delivery)) }
    }
}
