import ArgumentParser

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "Benchmarks support (see docs/benchmarks.md).",
        discussion: "Example: scripts/bench.sh --quick (every benchmark at once; the scripts drive these commands).",
        subcommands: [BenchPrepare.self, BenchBaseline.self, BenchDelivery.self, BenchBroadcast.self, BenchScale.self, BenchScaleGenerator.self, BenchScheduler.self, BenchProviderSchedule.self])
}
