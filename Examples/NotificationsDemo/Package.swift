// swift-tools-version: 6.2
import PackageDescription

// An app on a Herald device, built from its own package against the library as an app
// developer's would be: only HeraldNotifications (Foundation only) is compiled from Herald.
let package = Package(
    name: "NotificationsDemo",
    dependencies: [
        .package(name: "herald", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "NotificationsDemo",
            dependencies: [.product(name: "HeraldNotifications", package: "herald")],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
    ]
)
