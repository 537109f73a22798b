import Foundation
@testable import CallerID

/// A deterministic 64-bit generator (SplitMix64) so property tests are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// CALLERID_DEEP_TESTS=1: the sweeps that sample byte positions by default try every one
/// (docs/TESTING.md).
let deepTests = ProcessInfo.processInfo.environment["CALLERID_DEEP_TESTS"] == "1"

/// A fresh temporary directory, removed when the value is released.
final class TempDir {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("callerid-tests-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    /// A directory under `parent` (another file system than the temporary folder's, say); nil
    /// when `parent` is missing or cannot be written.
    init?(in parent: String) {
        url = URL(fileURLWithPath: parent).appendingPathComponent("callerid-tests-\(UUID().uuidString)")
        guard (try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)) != nil else { return nil }
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: url) }
}

let testCategories: [Category] = [
    .identify, .block,
    try! Category("spam", action: .block),
    try! Category("collector", action: .block),
    try! Category("survey", action: .block),
    try! Category("taxi", action: .identify),
]

let sampleLabels = [
    "", "Pizza Hut", "Сбербанк", "ООО «Ромашка»", "스타벅스 강남점", "Debt collector", "Survey", "Taxi 24/7",
    "A", String(repeating: "long label ", count: 40), "Ünïcödé ✓", "Аптека №1",
]

/// Random records: clustered runs and scattered numbers, some duplicates; returns the records
/// in input order and the expected final map (last record per number wins). Numbers lie in
/// `minNumber...maxNumber`: any 64-bit key shape by default; ``plausibleNumbers`` for input that
/// `lookup build` must take (it checks numbers as the pipeline does).
func randomRecords(count: Int, seed: UInt64, duplicateRate: Double = 0.05, minNumber: UInt64 = 1,
                   maxNumber: UInt64 = PhoneNumber.maximum)
    -> (records: [Entry], expected: [UInt64: Entry])
{
    var rng = SeededGenerator(seed: seed)
    var records: [Entry] = []
    records.reserveCapacity(count)
    var expected: [UInt64: Entry] = [:]
    var runNumber: UInt64 = 0
    var runLeft = 0
    var runLabel = ""
    while records.count < count {
        let number: UInt64
        let label: String
        if runLeft > 0 {
            runNumber = min(runNumber + UInt64.random(in: 1...3, using: &rng), maxNumber)
            number = min(runNumber, maxNumber)
            label = runLabel
            runLeft -= 1
        } else if !records.isEmpty, Double.random(in: 0..<1, using: &rng) < duplicateRate {
            number = records[Int.random(in: 0..<records.count, using: &rng)].number
            label = sampleLabels.randomElement(using: &rng)! + " dup"
        } else if Double.random(in: 0..<1, using: &rng) < 0.1 {
            runNumber = UInt64.random(in: minNumber...maxNumber, using: &rng)
            runLeft = Int.random(in: 2...300, using: &rng)
            runLabel = "Run \(Int.random(in: 0..<1000, using: &rng))"
            number = runNumber
            label = runLabel
        } else {
            number = UInt64.random(in: minNumber...maxNumber, using: &rng)
            let r = Int.random(in: 0..<100, using: &rng)
            label = r < 60 ? sampleLabels[r % sampleLabels.count] : "Business \(Int.random(in: 0..<5000, using: &rng))"
        }
        let category = testCategories[Int.random(in: 0..<testCategories.count, using: &rng)]
        let e = Entry(number: number, label: label, category: category)
        records.append(e)
        expected[number] = e
    }
    return (records, expected)
}

/// Numbers every rule set takes: Russian mobile numbers (+7 9…, 10 national digits), of the
/// length and shape libphonenumber and the built-in table give +7.
let plausibleNumbers: ClosedRange<UInt64> = 79_000_000_000...79_999_999_999

func buildDatabase(_ records: [Entry], at path: String, options: BuildOptions = BuildOptions()) throws -> BuildSummary {
    var builder = DatabaseBuilder(options: options)
    for r in records { try builder.add(r.number, label: r.label, category: r.category) }
    return try builder.write(to: path)
}

/// The products of the build configuration under test: SwiftPM puts the `lookup` executable and
/// `libcallerid.so` in the folder that holds the test bundle (`.build/<triple>/debug` for
/// `swift test`, `…/release` for `swift test -c release`, the sanitizer scratch paths for
/// tools/sanitize.sh). Tests use only those, never another configuration's `.build/debug`:
/// a release or sanitized run must test its own binaries.
enum BuiltProducts {
    /// The package root, from this file's path (Tests/CallerIDTests/TestSupport.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Where the products are looked for: the bundle's folder (Linux: the test executable's
    /// folder), its parent (macOS: beside the `.xctest` bundle), the executable's folder.
    static let directories: [URL] = {
        var dirs = [Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent()]
        if let exe = Bundle.main.executableURL?.deletingLastPathComponent(), !dirs.contains(exe) { dirs.append(exe) }
        return dirs
    }()

    /// The first regular file called `name` in ``directories``.
    static func file(_ name: String) -> URL? {
        directories.map { $0.appendingPathComponent(name) }.first { url in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
    }

    /// The built `lookup` executable (SIGPIPE ignored from then on: a child that exits before
    /// reading all of its stdin must not kill the test runner).
    static let lookup: URL? = {
        _ = signal(SIGPIPE, SIG_IGN)
        return file("lookup").flatMap { FileManager.default.isExecutableFile(atPath: $0.path) ? $0 : nil }
    }()

    /// Why a product is missing: the folders searched.
    static func missing(_ name: String) -> String {
        "\(name) was not found beside the test bundle; build the products of this configuration first "
            + "(swift build --build-tests). Looked in:\n" + directories.map(\.path).joined(separator: "\n")
    }
}

/// The Python interpreter the tests run their helper scripts with: the one `python3` names on
/// PATH, resolved once. A version manager's shim (pyenv) starts a dozen shell processes before
/// the interpreter on every call; resolving it once keeps that out of each of the suite's
/// Python runs, while the interpreter stays the one a developer's PATH chooses.
/// `CALLERID_PYTHON`, when set, is used as it is: tools/sanitize.sh points it at its wrapper
/// that preloads the sanitizer's runtime (which the C ABI tests' instrumented library needs).
enum Python {
    static let executable: String = {
        if let given = ProcessInfo.processInfo.environment["CALLERID_PYTHON"], !given.isEmpty { return given }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import sys; print(sys.executable)"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return "python3" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let path = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard process.terminationStatus == 0, path.hasPrefix("/"), FileManager.default.isExecutableFile(atPath: path)
        else { return "python3" }
        return path
    }()

    /// A process that runs `script` with ``executable``.
    static func process(_ script: String, _ args: [String]) -> Process {
        let process = Process()
        if executable.hasPrefix("/") {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = [script] + args
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [executable, script] + args
        }
        return process
    }
}

extension Array where Element: BitwiseCopyable {
    /// The elements a span lends, copied.
    init(copying span: Span<Element>) {
        self.init()
        reserveCapacity(span.count)
        for i in span.indices { append(span[i]) }
    }
}

/// What the label rule's automaton (`LabelText.ruleStep`) must pass: text `LabelText.check`
/// allows that holds no joiner (U+200C, U+200D) and no variation selector (their neighbours
/// decide, so the automaton leaves them to `check`).
func ruleAllowsWithoutJoiner(_ bytes: [UInt8]) -> Bool {
    guard bytes.withUnsafeBytes({ LabelText.check($0) }) == nil else { return false }
    return !String(decoding: bytes, as: UTF8.self).unicodeScalars.contains {
        $0.value == 0x200C || $0.value == 0x200D || LabelText.classify($0.value) == .selector
    }
}
