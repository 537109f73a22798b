// swift-tools-version: 6.0
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "CallerID",
    products: [
        .library(name: "CallerID", targets: ["CallerID"]),
        .library(name: "CallerIDPipeline", targets: ["CallerIDPipeline"]),
        .library(name: "CallerIDDirectory", targets: ["CallerIDDirectory"]),
        .executable(name: "lookup", targets: ["lookup"]),
        // libcallerid.so: the C ABI (header: include/callerid.h; see docs/C-ABI.md).
        .library(name: "callerid", type: .dynamic, targets: ["CallerIDC"]),
    ],
    targets: [
        // C module over Debian's liblz4 and libxxhash (plus mallinfo2 and C11 atomics).
        // Internal to the package: never a product.
        .systemLibrary(
            name: "CLZ4Shim",
            path: "CLZ4Shim",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev", "libxxhash-dev"])]
        ),
        .target(
            name: "CallerID",
            dependencies: ["CLZ4Shim"],
            swiftSettings: strictSettings
        ),
        // Ingestion: input formats, encodings, number normalization, regions, shards, manifest.
        .target(
            name: "CallerIDPipeline",
            dependencies: ["CallerID"],
            swiftSettings: strictSettings
        ),
        // Feeding a Call Directory: installed store, merged stream, slots, chunked/incremental loading.
        .target(
            name: "CallerIDDirectory",
            dependencies: ["CallerID"],
            swiftSettings: strictSettings
        ),
        // Exports the C functions of include/callerid.h (`@c`); built into libcallerid.so.
        .target(
            name: "CallerIDC",
            dependencies: ["CallerID"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "lookup",
            dependencies: ["CallerID", "CallerIDPipeline", "CallerIDDirectory"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CallerIDTests",
            dependencies: ["CallerID", "CallerIDPipeline", "CallerIDDirectory", "lookup"],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
