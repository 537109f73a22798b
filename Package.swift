// swift-tools-version: 6.3
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The modules that lend views and spans whose lifetime the compiler checks (`@_lifetime`:
/// an ``EntryView`` cannot outlive the call or the batch that lent it). Code that only uses
/// those types needs nothing.
let lendingSettings: [SwiftSetting] = strictSettings + [.enableExperimentalFeature("Lifetimes")]

/// The system codecs (Debian's libxxhash; liblz4 to write LZ4 label groups) are used on Linux
/// with the default trait; everywhere else, and on Linux with `--traits PortableCodecs`, the
/// package's own C code (Sources/CPortable) is, nothing links libxxhash or liblz4, and builds
/// write symbol-coded labels. Every build reads LZ4 groups with its own decoder. docs/PORTABILITY.md.
let systemCodecs: TargetDependencyCondition? = .when(platforms: [.linux], traits: ["SystemCodecs"])

let package = Package(
    name: "CallerID",
    // Span (lent by EntryBatch and EntryView) back-deploys to macOS 10.14.4 and iOS 12.2; a Call
    // Directory app's own floor is higher.
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "CallerID", targets: ["CallerID"]),
        .library(name: "CallerIDPipeline", targets: ["CallerIDPipeline"]),
        .library(name: "CallerIDDirectory", targets: ["CallerIDDirectory"]),
        // URLSessionHTTPClient for DirectoryFetcher in apps (Apple platforms; Linux with FoundationNetworking).
        .library(name: "CallerIDURLSession", targets: ["CallerIDURLSession"]),
        .executable(name: "lookup", targets: ["lookup"]),
        // libcallerid.so: the C ABI (header: include/callerid.h; see docs/C-ABI.md).
        .library(name: "callerid", type: .dynamic, targets: ["CallerIDC"]),
        // libcallerid-phonenumber.so: the C interface over libphonenumber that the pipeline loads
        // with dlopen when it first needs it (nothing links it: `lookup` starts without
        // libphonenumber, ICU and protobuf). Linux with Debian's libphonenumber-dev; docs/PIPELINE.md.
        .library(name: "callerid-phonenumber", type: .dynamic, targets: ["CallerIDPhoneNumber"]),
    ],
    traits: [
        .trait(name: "SystemCodecs", description: "XXH3 and XXH64 from the system's libxxhash, LZ4 label groups written with liblz4 (Linux only; elsewhere the portable code is used)."),
        .trait(name: "PortableCodecs", description: "XXH3 and XXH64 from the package's own C code, no LZ4 writer: no libxxhash or liblz4 at build or run time."),
        .default(enabledTraits: ["SystemCodecs"]),
    ],
    targets: [
        // C module over Debian's libxxhash and liblz4 (whose LZ4HC writes the LZ4 label groups
        // of format 3.1; CLZ4Shim/include/clz4shim.h). Internal to the package: never a product.
        // Only with the SystemCodecs trait on Linux.
        .systemLibrary(
            name: "CLZ4Shim",
            path: "CLZ4Shim",
            pkgConfig: "libxxhash",
            providers: [.apt(["libxxhash-dev", "liblz4-dev"])]
        ),
        // Debian's libsodium (Ed25519, SHA-256) for signed build directories, Linux only; Apple
        // platforms use CryptoKit. Opened with dlopen on first use, never linked (the tool's
        // start-up does not load it); needs libsodium-dev's headers to build.
        .target(name: "CSodium", dependencies: ["CLibraryLoader"], path: "Sources/CSodium"),
        // libcurl opened with dlopen when `lookup fetch` runs, never linked: the tool's start-up
        // does not load libcurl, OpenSSL and their dependencies (docs/CALL-DIRECTORY.md).
        .target(name: "CHTTPLoader", dependencies: ["CLibraryLoader"], path: "Sources/CHTTPLoader"),
        // libmicrohttpd opened with dlopen when `lookup serve` starts, never linked: `lookup NUMBER`
        // starts without it (docs/SERVE.md). No headers needed to build.
        .target(name: "CHTTPServer", dependencies: ["CLibraryLoader"], path: "Sources/CHTTPServer"),
        // dlopen of the libraries above at first use, and their symbols: the package's one loader
        // (the shims above and the pipeline's libcallerid-phonenumber).
        .target(name: "CLibraryLoader", path: "Sources/CLibraryLoader"),
        // Portable C: XXH3/XXH64, the LZ4 block decoder, prefetch hint, rename exchange, heap statistics.
        .target(name: "CPortable", path: "Sources/CPortable"),
        .target(
            name: "CallerID",
            dependencies: ["CPortable", .target(name: "CLZ4Shim", condition: systemCodecs)],
            swiftSettings: lendingSettings
        ),
        // C++ over Google's libphonenumber behind a C interface (include/callerid_phonenumber.h).
        // Only in the callerid-phonenumber product above; no Swift target depends on it.
        .target(
            name: "CallerIDPhoneNumber",
            path: "Sources/CallerIDPhoneNumber",
            linkerSettings: [.linkedLibrary("phonenumber"), .linkedLibrary("protobuf")]
        ),
        // Ingestion: input formats, encodings, number normalization, regions, shards, manifest.
        // Depends on CallerIDDirectory for the one manifest model and SHA-256 (never the reverse).
        .target(
            name: "CallerIDPipeline",
            dependencies: ["CallerID", "CallerIDDirectory", "CLibraryLoader"],
            swiftSettings: strictSettings
        ),
        // Feeding a Call Directory: installed store, merged stream, slots, chunked/incremental loading.
        .target(
            name: "CallerIDDirectory",
            dependencies: ["CallerID", .target(name: "CSodium", condition: .when(platforms: [.linux]))],
            swiftSettings: lendingSettings
        ),
        // An HTTPClient over URLSession; separate so CallerIDDirectory never links FoundationNetworking.
        .target(
            name: "CallerIDURLSession",
            dependencies: ["CallerIDDirectory"],
            swiftSettings: strictSettings
        ),
        // Exports the C functions of include/callerid.h (`@c`); built into libcallerid.so.
        .target(
            name: "CallerIDC",
            dependencies: ["CallerID", "CPortable"],
            swiftSettings: strictSettings
        ),
        // The multi-pack query engine: the packs of several --db or a store, opened when a
        // number needs them and withdrawn when their file changes; answers in the tool's formats.
        .target(
            name: "CallerIDQuery",
            dependencies: ["CallerID", "CallerIDPipeline", "CallerIDDirectory"],
            swiftSettings: strictSettings
        ),
        // `lookup serve`'s request handling over libmicrohttpd (CHTTPServer): endpoints, batches,
        // metrics, the access log.
        .target(
            name: "CallerIDServe",
            dependencies: ["CallerID", "CallerIDDirectory", "CallerIDQuery", "CHTTPServer"],
            swiftSettings: strictSettings
        ),
        // The tool: arguments in, output and exit codes out; the logic lives in the libraries.
        .executableTarget(
            name: "lookup",
            dependencies: ["CallerID", "CallerIDPipeline", "CallerIDDirectory", "CallerIDQuery", "CallerIDServe", "CHTTPLoader"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CallerIDTests",
            dependencies: ["CallerID", "CallerIDPipeline", "CallerIDDirectory", "CallerIDURLSession", "CallerIDQuery", "CallerIDServe", "lookup", "CPortable",
                           .target(name: "CLZ4Shim", condition: systemCodecs)],
            exclude: ["Fixtures"],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
