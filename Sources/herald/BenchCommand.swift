import ArgumentParser

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "Benchmarks support (see docs/benchmarks.md).",
        subcommands: [BenchPrepare.self, BenchBaseline.self, BenchDelivery.self, BenchScheduler.self, BenchProviderSchedule.self])
}
