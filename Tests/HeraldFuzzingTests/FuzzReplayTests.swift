import Foundation
import HeraldFuzzing
import Testing

/// Replays the fuzz corpora and every crasher ever found (`Fuzz/corpus`, `Fuzz/crashers`) through
/// the same targets libFuzzer drives: a crasher that comes back fails (traps) the suite.
@Suite("Fuzz replay")
struct FuzzReplayTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz").path

    @Test("every committed corpus input and crasher runs through its target", arguments: FuzzTargets.all.keys.sorted())
    func replay(target: String) throws {
        let run = try #require(FuzzTargets.all[target])
        var count = 0
        for folder in ["corpus", "crashers"] {
            let directory = (Self.fuzzDirectory as NSString).appendingPathComponent("\(folder)/\(target)")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for name in names.sorted() where !name.hasPrefix(".") {
                let data = try #require(FileManager.default.contents(atPath: (directory as NSString).appendingPathComponent(name)))
                run(Array(data))
                count += 1
            }
        }
        #expect(count > 0, "no corpus for \(target) in \(Self.fuzzDirectory)")
    }
}
