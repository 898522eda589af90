// swift-tools-version: 6.2
import PackageDescription

// libFuzzer harnesses for Herald's readers of outside input (docs/security.md). Build and run:
//   cd Fuzz && swift build -c release --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address
//   HERALD_FUZZ_TARGET=device-frames SWIFT_BACKTRACE=enable=no .build/release/herald-fuzz corpus/device-frames
// or scripts/fuzz.sh, which does both for every target.
let package = Package(
    name: "herald-fuzz",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "herald", path: "..")],
    targets: [
        .executableTarget(
            name: "herald-fuzz",
            dependencies: [.product(name: "HeraldFuzzing", package: "herald")],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
    ]
)
