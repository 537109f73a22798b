// swift-tools-version: 6.0
// Benchmarks live in their own package so that the product never depends on peer libraries.
import Foundation
import PackageDescription

// A path dependency's identity is its directory name, which depends on where the
// repository was cloned: derive it instead of hard-coding it.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let rootIdentity = root.lastPathComponent.lowercased()

let package = Package(
    name: "CallerIDBenchmarks",
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "callerid-bench",
            dependencies: [.product(name: "CallerID", package: rootIdentity)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
