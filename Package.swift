// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "herald",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .library(name: "HeraldStore", targets: ["HeraldStore"]),
        .library(name: "HeraldStoreSQLite", targets: ["HeraldStoreSQLite"]),
        .library(name: "HeraldStorePostgres", targets: ["HeraldStorePostgres"]),
        .library(name: "HeraldGateway", targets: ["HeraldGateway"]),
        .library(name: "HeraldDashboard", targets: ["HeraldDashboard"]),
        .library(name: "HeraldClient", targets: ["HeraldClient"]),
        .library(name: "HeraldDevice", targets: ["HeraldDevice"]),
        .library(name: "HeraldNotifications", targets: ["HeraldNotifications"]),
        .library(name: "HeraldProviderAPI", targets: ["HeraldProviderAPI"]),
        .library(name: "HeraldProvider", targets: ["HeraldProvider"]),
        .library(name: "HeraldProviderServer", targets: ["HeraldProviderServer"]),
        .library(name: "HeraldTesting", targets: ["HeraldTesting"]),
        .library(name: "HeraldFuzzing", targets: ["HeraldFuzzing"]),
    ],
    dependencies: [
        // Up to the next minor release only: HeraldGateway's device-port allocator
        // (LazyPageAllocator.swift) uses NIOCore's `CustomByteBufferAllocator` SPI, which has no
        // source-stability promise. A minor release of SwiftNIO is taken deliberately: update
        // this range, build, and re-run `scripts/bench-delivery.sh` (its memory row is what the
        // SPI buys: 35 -> 32.5 KiB per idle device).
        .package(url: "https://github.com/apple/swift-nio.git", .upToNextMinor(from: "2.101.2")),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird.git", from: "2.1.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // Traces (docs/operations.md, "Tracing"): the API everywhere, the OTLP/HTTP exporter in the
        // executable only (its gRPC exporter, and gRPC's build time, left out by the trait).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // No I/O: tokens, topics, headers, payloads, reasons, validation, ES256 provider tokens.
        .target(
            name: "HeraldCore",
            dependencies: [
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Storage protocols and the in-memory store.
        .target(
            name: "HeraldStore",
            dependencies: [
                "HeraldCore",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The embedded store (SQLite through GRDB), with its migrations.
        .target(
            name: "HeraldStoreSQLite",
            dependencies: [
                "HeraldCore", "HeraldStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The clustered store (PostgreSQL through postgres-nio), with its migrations: several gateway
        // nodes share it, and it carries the hints that route a push to the node holding its device.
        .target(
            name: "HeraldStorePostgres",
            dependencies: [
                "HeraldCore", "HeraldStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // SwiftNIO pieces shared by the gateway and the client: flush coalescing, HTTP/2 window returns.
        .target(
            name: "HeraldNIO",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ]
        ),
        // The pages people look at: the gateway's and the provider's dashboards and the browser
        // device, as mustache templates, stylesheet and small JavaScript modules (no I/O).
        .target(
            name: "HeraldDashboard",
            dependencies: [
                "HeraldCore",
                .product(name: "Mustache", package: "swift-mustache"),
            ]
        ),
        // Herald's HTTP/1 surfaces on Hummingbird 2: the one query-string reader, pages and assets
        // with the same security headers, a server started on its own port, and a router answering
        // inside a raw SwiftNIO pipeline (the device port's page).
        .target(
            name: "HeraldHTTP",
            dependencies: [
                "HeraldDashboard",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The gateway: provider HTTP/2 port, intake, admin/metrics.
        .target(
            name: "HeraldGateway",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldNIO", "HeraldDashboard", "HeraldHTTP",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The device side: identity, the gateway connection (WebSocket over TLS), reconnection.
        .target(
            name: "HeraldDevice",
            dependencies: [
                "HeraldCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // An app's notification center on a Linux device: UserNotifications' shape over the device
        // agent's socket, its messages generated from docs/device-events.schema.json
        // (scripts/generate-agent-messages.py). Foundation only, so that an app's build stays small.
        .target(name: "HeraldNotifications"),
        // The provider's clients: APNs (HTTP/2 over NIO, the measured hot path) and Web Push (any
        // push service, HTTP/1.1 or HTTP/2, on async-http-client).
        .target(
            name: "HeraldClient",
            dependencies: [
                "HeraldCore", "HeraldNIO",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        // The provider service's REST API as generated from its spec, openapi.yaml (the source of
        // truth): types and routing from swift-openapi-generator, committed with the spec as
        // scripts/generate-openapi.sh wrote them.
        .target(
            name: "HeraldProviderAPI",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            exclude: ["openapi.yaml", "openapi-generator-config.yaml"]
        ),
        // The provider service: registrations, localization, sending, pruning, schedules, and the
        // REST API's operations (ProviderAPI, what the generated routing calls).
        .target(
            name: "HeraldProvider",
            dependencies: [
                "HeraldCore", "HeraldClient", "HeraldProviderAPI",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The provider service's HTTP server: Hummingbird 2 serving the generated API, with the
        // bearer token, body limit and error shapes as middleware, /health, /metrics and the spec.
        .target(
            name: "HeraldProviderServer",
            dependencies: [
                "HeraldCore", "HeraldProvider", "HeraldProviderAPI", "HeraldDashboard", "HeraldHTTP",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Test support: in-process gateway on port 0, test clock, key fixtures.
        .target(
            name: "HeraldTesting",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldGateway", "HeraldClient", "HeraldDevice",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // What operators hand Herald besides flags and the network: configuration files and
        // backup manifests, read strictly and bounded (the executable does the file I/O).
        .target(
            name: "HeraldOperations",
            dependencies: [
                "HeraldCore",
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // The fuzz targets (every reader of outside input), driven by libFuzzer in Fuzz/ and
        // replayed over the committed corpora and crashers by the test suite.
        .target(
            name: "HeraldFuzzing",
            dependencies: [
                "HeraldCore", "HeraldDevice", "HeraldProvider", "HeraldOperations",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldStoreSQLite", "HeraldStorePostgres", "HeraldGateway", "HeraldClient", "HeraldDevice", "HeraldProvider",
                "HeraldProviderServer", "HeraldOperations", "HeraldHTTP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "HeraldCoreTests",
            dependencies: ["HeraldCore"],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "HeraldDeviceTests",
            dependencies: [
                "HeraldCore", "HeraldDevice", "HeraldTesting",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),
        // The app library against a real device runtime and its agent socket.
        .testTarget(
            name: "HeraldNotificationsTests",
            dependencies: ["HeraldNotifications", "HeraldCore", "HeraldDevice", "HeraldTesting"]
        ),
        .testTarget(
            name: "HeraldStoreTests",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldStoreSQLite", "HeraldStorePostgres", "HeraldTesting", .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // A store as an earlier schema left it (the upgrade tests).
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "HeraldHTTPTests",
            dependencies: [
                "HeraldDashboard", "HeraldHTTP",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
        .testTarget(
            name: "HeraldDashboardTests",
            dependencies: ["HeraldCore", "HeraldDashboard"]
        ),
        .testTarget(
            name: "HeraldGatewayTests",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldStoreSQLite", "HeraldStorePostgres", "HeraldGateway", "HeraldClient", "HeraldDevice",
                "HeraldDashboard", "HeraldTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),
        // APNsClient against a scripted HTTP/2 server and against a gateway; the HTTP/2 request
        // table (HeraldNIO) every HTTP/2 endpoint shares, on an EmbeddedChannel.
        .testTarget(
            name: "HeraldClientTests",
            dependencies: [
                "HeraldCore", "HeraldClient", "HeraldDevice", "HeraldNIO", "HeraldTesting",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ]
        ),
        // The provider service and its REST API (HeraldProvider, HeraldProviderServer).
        .testTarget(
            name: "HeraldProviderTests",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldClient", "HeraldDevice", "HeraldProvider", "HeraldProviderServer", "HeraldTesting",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Every role together in one process: a gateway, devices running the notification
        // center, and providers, over real sockets.
        .testTarget(
            name: "HeraldEndToEndTests",
            dependencies: ["HeraldCore", "HeraldClient", "HeraldDevice", "HeraldTesting"]
        ),
        // The fuzz corpora and crashers replayed through the fuzz targets.
        .testTarget(
            name: "HeraldFuzzingTests",
            dependencies: ["HeraldFuzzing"]
        ),
        .testTarget(
            name: "HeraldCLITests",
            dependencies: [
                "herald", "HeraldTesting", "HeraldCore", "HeraldStore", "HeraldStoreSQLite", "HeraldClient",
            ]
        ),
    ]
)

// Herald's own targets build without warnings: every warning (a Swift 6 concurrency warning is a
// data race the compiler could not rule out) fails the build. Dependencies are not affected. The
// code swift-openapi-generator wrote (HeraldProviderAPI) is held to the same rule:
// scripts/generate-openapi.sh rewrites the generator's `public import`s, the only thing in it
// that warned.
for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
}
