// swift-tools-version: 6.0
// Benchmarks live in their own package so that the product never depends on peer libraries
// (SQLite, LMDB): their module maps are here, never in the root Package.swift.
//
//   bash tools/bench.sh            # the whole comparison; rewrites BENCHMARKS.md and docs/*.png
//   bash tools/bench.sh --quick    # CI smoke run (small sizes, < 60 s)
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
        // Debian's libsqlite3-dev, liblmdb-dev and liblz4-dev, each behind a small shim header.
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CLMDB", providers: [.apt(["liblmdb-dev"])]),
        .systemLibrary(name: "CBenchSupport", providers: [.apt(["liblz4-dev"])]),
        // The harness: one executable, one file per engine (Sources/callerid-bench/Engines).
        .executableTarget(
            name: "callerid-bench",
            dependencies: [
                .product(name: "CallerID", package: rootIdentity),
                .product(name: "CallerIDPipeline", package: rootIdentity),
                "CSQLite", "CLMDB", "CBenchSupport",
            ]
        ),
        // CallerID through its C ABI (libcallerid.so, include/callerid.h): a C program that
        // reuses the lookup timing of examples/c/bench.c and prints the harness's JSON.
        .executableTarget(
            name: "callerid-cabi-bench",
            dependencies: [.product(name: "callerid", package: rootIdentity)],
            cSettings: [.unsafeFlags(["-I", root.appendingPathComponent("include").path,
                                      "-I", root.appendingPathComponent("examples/c").path])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
