import ArgumentParser
@main struct HeraldCommand: AsyncParsableCommand { func run() async throws {} }
