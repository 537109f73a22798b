// swift-tools-version: 6.1
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The system codecs (Debian's liblz4 and libxxhash) are used on Linux with the default trait;
/// everywhere else, and on Linux with `--traits PortableCodecs`, the package's own C codecs
/// (Sources/CPortable) are, and nothing links liblz4 or libxxhash. docs/PORTABILITY.md.
let systemCodecs: TargetDependencyCondition? = .when(platforms: [.linux], traits: ["SystemCodecs"])

let package = Package(
    name: "CallerID",
    products: [
        .library(name: "CallerID", targets: ["CallerID"]),
        .library(name: "CallerIDPipeline", targets: ["CallerIDPipeline"]),
        .library(name: "CallerIDDirectory", targets: ["CallerIDDirectory"]),
        .executable(name: "lookup", targets: ["lookup"]),
        // libcallerid.so: the C ABI (header: include/callerid.h; see docs/C-ABI.md).
        .library(name: "callerid", type: .dynamic, targets: ["CallerIDC"]),
        // libcallerid-phonenumber.so: the C interface over libphonenumber that the pipeline loads
        // with dlopen when it first needs it (nothing links it: `lookup` starts without
        // libphonenumber, ICU and protobuf). Linux with Debian's libphonenumber-dev; docs/PIPELINE.md.
        .library(name: "callerid-phonenumber", type: .dynamic, targets: ["CallerIDPhoneNumber"]),
    ],
    traits: [
        .trait(name: "SystemCodecs", description: "LZ4 and XXH3 from the system's liblz4 and libxxhash (Linux only; elsewhere the portable codecs are used)."),
        .trait(name: "PortableCodecs", description: "LZ4 and XXH3 from the package's own C code: no liblz4 or libxxhash at build or run time."),
        .default(enabledTraits: ["SystemCodecs"]),
    ],
    targets: [
        // C module over Debian's liblz4 and libxxhash. Internal to the package: never a product.
        // Only with the SystemCodecs trait on Linux.
        .systemLibrary(
            name: "CLZ4Shim",
            path: "CLZ4Shim",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev", "libxxhash-dev"])]
        ),
        // Portable C: LZ4 block codec, XXH3/XXH64, prefetch hint, rename exchange, heap statistics.
        .target(name: "CPortable", path: "Sources/CPortable"),
        .target(
            name: "CallerID",
            dependencies: ["CPortable", .target(name: "CLZ4Shim", condition: systemCodecs)],
            swiftSettings: strictSettings
        ),
        // C++ over Google's libphonenumber behind a C interface (include/callerid_phonenumber.h).
        // Only in the callerid-phonenumber product above; no Swift target depends on it.
        .target(
            name: "CallerIDPhoneNumber",
            path: "Sources/CallerIDPhoneNumber",
            linkerSettings: [.linkedLibrary("phonenumber")]
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
            dependencies: ["CallerID", "CallerIDPipeline", "CallerIDDirectory", "lookup", "CPortable",
                           .target(name: "CLZ4Shim", condition: systemCodecs)],
            exclude: ["Fixtures"],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
