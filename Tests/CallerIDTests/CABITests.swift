import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import CallerID

// The C ABI (include/callerid.h, libcallerid.so) seen from outside: the C example
// (examples/c/cidquery.c) is compiled with the system C compiler against the built library
// and the header, run on databases built with the Swift API, and its output compared line by
// line with what the Swift API says about the same files. The Python ctypes example
// (examples/python/cidquery.py) is run the same way.

// MARK: - Locating the library and building the example (once per test run)

enum CABI {
    /// The package root, derived from this file's path (Tests/CallerIDTests/CABITests.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    #if canImport(Darwin)
    static let libraryFile = "libcallerid.dylib"
    #else
    static let libraryFile = "libcallerid.so"
    #endif

    /// Where SwiftPM puts the library of the configuration under test (``BuiltProducts``).
    static let searchedDirectories = BuiltProducts.directories

    static let libraryDirectory: URL? = BuiltProducts.file(libraryFile)?.deletingLastPathComponent()

    static var library: URL? { libraryDirectory?.appendingPathComponent(libraryFile) }

    static let include = packageRoot.appendingPathComponent("include")
    /// Compiled C programs: a folder of the system's temporary directory (tests write nothing
    /// into the source tree), one per test process.
    static let workDirectory = FileManager.default.temporaryDirectory
        .appendingPathComponent("callerid-cabi-tests-\(getpid())")

    static var missingLibraryMessage: String {
        """
        \(libraryFile) was not found; looked in:
        \(searchedDirectories.map(\.path).joined(separator: "\n"))
        run 'swift build' (or 'swift build --build-tests', as tools/test.sh does) first: it builds the 'callerid' product
        """
    }

    /// The compiled C example, or why it could not be built.
    static let cidquery: Result<URL, CABIFailure> = {
        guard let dir = libraryDirectory else { return .failure(CABIFailure(missingLibraryMessage)) }
        do {
            try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
            let temporary = workDirectory.appendingPathComponent("cidquery-\(getpid())")
            let output = workDirectory.appendingPathComponent("cidquery")
            let r = try runTool("cc", ["-std=c11", "-O1", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                                       "-I", include.path,
                                       packageRoot.appendingPathComponent("examples/c/cidquery.c").path,
                                       "-L", dir.path, "-Wl,-rpath," + dir.path, "-lcallerid", "-lpthread",
                                       "-o", temporary.path])
            guard r.status == 0 else { return .failure(CABIFailure("cc failed (\(r.status)):\n\(r.stderr)")) }
            guard rename(temporary.path, output.path) == 0 else { return .failure(CABIFailure("rename failed")) }
            return .success(output)
        } catch {
            return .failure(CABIFailure("cannot run cc: \(error)"))
        }
    }()

    /// The compiled C example; throws (failing the test) with the reason when there is none.
    static func program() throws -> URL { try cidquery.get() }
}

struct CABIFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `tool` (a path, or a name looked up on PATH) with `stdin` (or none), capturing its
/// output as ``lookup(_:stdin:environment:timeout:executable:sourceLocation:)`` does (the same
/// child runner); `environment` adds to the test's own.
func runTool(_ tool: String, _ args: [String], stdin: Data? = nil, environment extra: [String: String] = [:],
             timeout: TimeInterval = 120) throws -> CLIResult {
    let tool = tool == "python3" ? Python.executable : tool
    let (binary, arguments) = tool.contains("/") ? (URL(fileURLWithPath: tool), args) : (URL(fileURLWithPath: "/usr/bin/env"), [tool] + args)
    let run = try runChild(binary, arguments, stdin: stdin, environment: extra, timeout: timeout)
    if run.timedOut {
        Issue.record("\(tool) \(args.joined(separator: " ")) did not finish within \(Int(timeout)) s")
    }
    return run.result
}

// MARK: - Expected output, from the Swift API

private func foundLine(_ e: Entry) -> String {
    "found\t\(e.number)\t\(e.label)\t\(e.category.name)\t\(e.category.action)"
}

/// What `cidquery lookup` prints for `text`, according to the Swift API.
private func expectedLookupLine(_ db: Database, _ text: String) -> String {
    do {
        let n = try PhoneNumber.parse(text)
        do {
            if let e = try db.lookup(n) { return foundLine(e) }
            return "not-found\t\(n)"
        } catch {
            return "error\t\(n)\t\(error.code)\t\(error.message)"
        }
    } catch {
        return "invalid\t\(text)\t\(error.message)"
    }
}

private func dumpLine(_ e: Entry) -> String { "\(e.number)\t\(e.label)\t\(e.category.name)" }

/// The checksum cidquery.c computes per entry (FNV-1a 64 of the label, mixed with the
/// number and the category's index).
private func entryMix(_ view: EntryView, _ db: Database) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in view.labelBytes {
        h ^= UInt64(b)
        h = h &* 0x100_0000_01b3
    }
    let index = db.categories.firstIndex(of: view.category) ?? -1
    return h ^ (view.number &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(index + 1)
}

private func hex16(_ v: UInt64) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: 16 - s.count) + s
}

/// A database of `count` random records (all test categories, compressed and raw label
/// chunks, several blocks) and its entries in ascending order.
private func fixture(_ dir: TempDir, name: String = "db.cid", count: Int = 5000, seed: UInt64 = 77)
    throws -> (path: String, db: Database, sorted: [Entry])
{
    let (records, expected) = randomRecords(count: count, seed: seed)
    let path = dir.path(name)
    var options = BuildOptions()
    options.blockSize = 64
    _ = try buildDatabase(records, at: path, options: options)
    let db = try Database(path: path, verify: true)
    return (path, db, expected.values.sorted { $0.number < $1.number })
}

/// Numbers to look up: present ones, absent neighbours, out-of-range values, written forms.
private func probes(_ sorted: [Entry], seed: UInt64) -> [String] {
    var rng = SeededGenerator(seed: seed)
    let present = Set(sorted.map(\.number))
    var texts: [String] = []
    for _ in 0..<200 {
        let e = sorted[Int.random(in: 0..<sorted.count, using: &rng)]
        texts.append(String(e.number))
        if !present.contains(e.number + 1) { texts.append(String(e.number + 1)) }
    }
    let first = sorted[0].number
    texts += ["1", "999999999999999", "+\(first)", "+" + String(first).map(String.init).joined(separator: " "),
              "0913", "12ab", ""]
    return texts
}

// MARK: - Tests

@Suite("C ABI: libcallerid.so through C and Python")
struct CABITests {
    @Test func libraryIsBuilt() throws {
        let library = try #require(CABI.library, Comment(rawValue: CABI.missingLibraryMessage))
        #expect(FileManager.default.fileExists(atPath: library.path))
    }

    /// Every function the header declares is exported by the library, and nothing else with
    /// the prefix (in optimized builds, `@c` functions that are not `public` are dropped).
    @Test func everyDeclaredFunctionIsExported() throws {
        let library = try #require(CABI.library, Comment(rawValue: CABI.missingLibraryMessage))
        var header = try String(contentsOf: CABI.include.appendingPathComponent("callerid.h"), encoding: .utf8)
        while let open = header.range(of: "/*"), let close = header.range(of: "*/", range: open.upperBound..<header.endIndex) {
            header.removeSubrange(open.lowerBound..<close.upperBound)
        }
        let declared = Set(header.matches(of: try Regex("(cid_[a-z_]+)\\s*\\(")).compactMap { $0.output[1].substring.map(String.init) })
        #expect(declared.count >= 19)
        #if os(Linux)
        let nm = try runTool("nm", ["-D", "--defined-only", library.path])
        #expect(nm.status == 0, "\(nm.stderr)")
        let exported = Set(nm.lines.compactMap { line -> String? in
            let parts = line.split(separator: " ")
            return parts.count == 3 && parts[1] == "T" && parts[2].hasPrefix("cid_") ? String(parts[2]) : nil
        })
        #expect(declared.subtracting(exported).isEmpty, "declared, not exported: \(declared.subtracting(exported).sorted())")
        #expect(exported.subtracting(declared).isEmpty, "exported, not declared: \(exported.subtracting(declared).sorted())")
        #endif
    }

    /// The header compiles as C99 (no static asserts), C11 and C++ with strict warnings, and
    /// with Clang's nullability-completeness check when Clang is around.
    @Test func headerCompilesCleanly() throws {
        let dir = TempDir()
        let source = dir.path("t.c")
        try Data("#include \"callerid.h\"\nint main(void) { cid_entry e; (void)e; return cid_status_name(CID_OK)[0] == 0; }\n".utf8)
            .write(to: URL(fileURLWithPath: source))
        let strict = ["-fsyntax-only", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I", CABI.include.path]
        for (tool, flags) in [("cc", ["-std=c99"]), ("cc", ["-std=c11"]), ("c++", ["-x", "c++", "-std=c++11"])] {
            let r = try runTool(tool, flags + strict + [source])
            #expect(r.status == 0, "\(tool) \(flags.joined(separator: " ")): \(r.stderr)")
        }
        let clang = ["/opt/swift/usr/bin/clang", "/usr/bin/clang"].first { FileManager.default.isExecutableFile(atPath: $0) }
        if let clang {
            let r = try runTool(clang, ["-std=c11", "-Wnullability-completeness", "-Wnullability"] + strict + [source])
            #expect(r.status == 0, "clang: \(r.stderr)")
        }
    }

    @Test func infoMatchesSwift() throws {
        let exe = try CABI.program()
        let dir = TempDir()
        let (path, db, _) = try fixture(dir)
        let r = try runTool(exe.path, [path, "info"])
        var expected = ["version\t\(CallerIDVersion.library)", "format\t\(CallerIDVersion.format)", "entries\t\(db.count)"]
        for (i, c) in db.categories.enumerated() { expected.append("category\t\(i)\t\(c.name)\t\(c.action)") }
        #expect(r.status == 0)
        expectSameLines(r.lines, expected, "info")
    }

    /// Found, not found, written forms and invalid text, through cid_parse_number + cid_lookup.
    @Test func lookupsMatchSwift() throws {
        let exe = try CABI.program()
        let dir = TempDir()
        let (path, db, sorted) = try fixture(dir)
        let texts = probes(sorted, seed: 1)
        let r = try runTool(exe.path, [path, "lookup"] + texts)
        #expect(r.status == 0, "\(r.stderr)")
        expectSameLines(r.lines, texts.map { expectedLookupLine(db, $0) }, "lookup")
        #expect(r.lines.contains { $0.hasPrefix("found\t") } && r.lines.contains { $0.hasPrefix("not-found\t") }
                && r.lines.contains { $0.hasPrefix("invalid\t") })
    }

    /// cid_lookup_copy: NUL-terminated copies, truncation on a UTF-8 boundary, full length reported.
    @Test(arguments: [0, 1, 2, 4, 7, 12, 64, 1 << 16])
    func copyTruncatesOnCharacterBoundaries(size: Int) throws {
        let exe = try CABI.program()
        let dir = TempDir()
        let (path, db, sorted) = try fixture(dir)
        // Every distinct label once (multi-byte ones included), plus a number that is absent.
        var seen = Set<String>()
        var numbers = sorted.filter { seen.insert($0.label).inserted }.map(\.number)
        numbers.append(1)
        let r = try runTool(exe.path, [path, "copy", String(size)] + numbers.map(String.init))
        #expect(r.status == 0, "\(r.stderr)")
        var sawTruncation = false
        let expected = try numbers.map { n -> String in
            guard let e = try db.lookup(n) else { return "not-found\t\(n)\t0\t" }
            let bytes = Array(e.label.utf8)
            var k = min(bytes.count, max(size - 1, 0))
            if k < bytes.count { while k > 0 && bytes[k] & 0xC0 == 0x80 { k -= 1 } }
            sawTruncation = sawTruncation || k < bytes.count
            let copied = size == 0 ? "" : String(decoding: bytes[0..<k], as: UTF8.self)
            return "\(k < bytes.count ? "truncated" : "ok")\t\(n)\t\(bytes.count)\t\(copied)"
        }
        expectSameLines(r.lines, expected, "copy into \(size) bytes")
        #expect(sawTruncation == (size < 1 << 16), "truncation expected for every buffer shorter than the longest label")
    }

    @Test func batchLookupMatchesSwift() throws {
        let exe = try CABI.program()
        let dir = TempDir()
        let (path, db, sorted) = try fixture(dir)
        let texts = probes(sorted, seed: 2).filter { (try? PhoneNumber.parse($0)) != nil }
        let r = try runTool(exe.path, [path, "batch"] + texts)
        #expect(r.status == 0, "\(r.stderr)")
        var expected = texts.map { expectedLookupLine(db, $0) }
        let found = expected.filter { $0.hasPrefix("found\t") }.count
        expected.append("batch\t\(found) of \(texts.count) found")
        expectSameLines(r.lines, expected, "batch")
    }

    /// Cursors from a number and filtered by action, by category names, and by both.
    @Test(arguments: [
        ([String](), 0),
        (["--action", "block"], 0),
        (["--action", "identify"], 3),
        (["--category", "spam", "--category", "taxi"], 1),
        (["--action", "block", "--category", "spam", "--category", "taxi", "--category", "nosuch"], 2),
        (["--category", "nosuch"], 0),
    ])
    func cursorMatchesSwift(filterArgs: [String], startAt quarter: Int) throws {
        let exe = try CABI.program()
        let dir = TempDir()
        let (path, db, sorted) = try fixture(dir)
        let from = quarter == 0 ? 0 : sorted[sorted.count * quarter / 4].number
        var action: CategoryAction?
        var names: Set<String>?
        var i = 0
        while i < filterArgs.count {
            if filterArgs[i] == "--action" { action = filterArgs[i + 1] == "block" ? .block : .identify }
            if filterArgs[i] == "--category" { names = (names ?? []).union([filterArgs[i + 1]]) }
            i += 2
        }
        // The Swift API has one rule per filter: use it where it can say the same, else filter after.
        let swiftFilter: CategoryFilter? = names == nil ? action.map { .action($0) } : .names(names!)
        let expected = db.entries(from: from, filter: swiftFilter)
            .filter { action == nil || $0.category.action == action }
            .map(dumpLine)
        let fromArgs = from == 0 ? [] : ["--from", String(from)]  // 0 is not an E.164 number
        let r = try runTool(exe.path, [path, "dump"] + fromArgs + filterArgs)
        #expect(r.status == 0, "\(r.stderr)")
        expectSameLines(r.lines, expected, "dump \(filterArgs)")
        if filterArgs.isEmpty && from == 0 { #expect(expected.count == sorted.count) }

        let limited = try runTool(exe.path, [path, "dump", "--limit", "7"] + fromArgs + filterArgs)
        expectSameLines(limited.lines, Array(expected.prefix(7)), "dump --limit 7 \(filterArgs)")
    }

    /// Three databases with overlapping numbers: ascending, no duplicates, earlier database
    /// wins; the rules of the Swift merged stream: the action filter applies to each database
    /// before the merge, the category filter to the winning entry.
    @Test(arguments: [[String](), ["--action", "block"], ["--category", "taxi"],
                      ["--action", "identify", "--category", "taxi", "--category", "identify"]])
    func mergedCursorFollowsPrecedence(filterArgs: [String]) throws {
        let exe = try CABI.program()
        let dir = TempDir()
        let a = try fixture(dir, name: "a.cid", count: 3000, seed: 11)
        // b and c reuse some of a's numbers (with other labels and categories) and add their own.
        var rng = SeededGenerator(seed: 12)
        var recordsB: [Entry] = [], recordsC: [Entry] = []
        for (k, e) in a.sorted.enumerated() where k % 3 == 0 {
            let c = testCategories[Int.random(in: 0..<testCategories.count, using: &rng)]
            recordsB.append(Entry(number: e.number, label: "B " + e.label, category: c))
            if k % 2 == 0 { recordsC.append(Entry(number: e.number, label: "C", category: .block)) }
        }
        let (extraB, _) = randomRecords(count: 1500, seed: 13)
        let (extraC, _) = randomRecords(count: 1500, seed: 14)
        recordsB += extraB
        recordsC += extraC + recordsB.prefix(200).map { Entry(number: $0.number, label: "C over B", category: .identify) }
        _ = try buildDatabase(recordsB, at: dir.path("b.cid"))
        _ = try buildDatabase(recordsC, at: dir.path("c.cid"))
        let dbs = [a.db, try Database(path: dir.path("b.cid")), try Database(path: dir.path("c.cid"))]

        var action: CategoryAction?
        var names: Set<String>?
        for (i, arg) in filterArgs.enumerated() where i % 2 == 0 {
            if arg == "--action" { action = filterArgs[i + 1] == "block" ? .block : .identify }
            if arg == "--category" { names = (names ?? []).union([filterArgs[i + 1]]) }
        }
        // The expected union from the Swift API: among the entries of the chosen action, the
        // first database holding a number wins; then the winner's category must be chosen.
        var winner: [UInt64: (Entry, Int)] = [:]
        for (source, db) in dbs.enumerated().reversed() {
            for e in db.entries(filter: action.map { .action($0) }) { winner[e.number] = (e, source) }
        }
        let from = a.sorted[a.sorted.count / 5].number
        let expected = winner.keys.sorted()
            .filter { $0 >= from }
            .compactMap { winner[$0] }
            .filter { (e, _) in names == nil || names!.contains(e.category.name) }
            .map { (e, source) in "\(dumpLine(e))\t\(source)" }
        #expect(expected.contains { $0.hasSuffix("\t1") } && expected.contains { $0.hasSuffix("\t2") })
        if let action {
            // The data tells the rules apart: filtering the winners of an unfiltered merge by
            // action (an entry of the other action hiding later ones) would give other lines.
            var anyWinner: [UInt64: Entry] = [:]
            for db in dbs.reversed() { for e in db.entries() { anyWinner[e.number] = e } }
            let hidden = winner.filter { $0.key >= from && anyWinner[$0.key]?.category.action != action }
            #expect(!hidden.isEmpty)
        }

        let r = try runTool(exe.path, [a.path, "merge", dir.path("b.cid"), dir.path("c.cid"), "--from", String(from)] + filterArgs)
        #expect(r.status == 0, "\(r.stderr)")
        expectSameLines(r.lines, expected, "merge \(filterArgs)")
        let numbers = r.lines.compactMap { UInt64($0.prefix { $0 != "\t" }) }
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "strictly ascending")
    }

    /// Merging a database with copies of itself gives the database, every entry from source 0.
    @Test func mergedCursorOverManyCopiesIsTheDatabase() throws {
        let exe = try CABI.program()
        let dir = TempDir()
        let (path, db, _) = try fixture(dir, count: 3000, seed: 21)
        let copies = (1..<24).map { _ in path }
        let r = try runTool(exe.path, [path, "merge"] + copies)
        #expect(r.status == 0, "\(r.stderr)")
        expectSameLines(r.lines, db.entries().map { dumpLine($0) + "\t0" }, "merge of 24 copies")
    }

    /// 4 threads × 100,000 lookups on one shared handle, plus one cursor per thread at the
    /// same time; the checksums equal the Swift API's.
    @Test func threadedLookupsMatchSwift() throws {
        let exe = try CABI.program()
        let dir = TempDir()
        let (path, db, sorted) = try fixture(dir, count: 20000, seed: 5)
        var rng = SeededGenerator(seed: 6)
        let present = Set(sorted.map(\.number))
        var numbers = sorted.map(\.number)
        numbers += sorted.prefix(4000).map(\.number).filter { !present.contains($0 + 1) }.map { $0 + 1 }
        numbers.shuffle(using: &rng)
        let queryFile = dir.path("numbers.txt")
        try Data(numbers.map(String.init).joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: queryFile))

        let threads = 4, lookups = 100_000
        // The expected sums: each number looked up once through the Swift API, its mix then
        // added as often as the threads ask for it.
        let mixes = try numbers.map { n in try db.withEntry(n, { entryMix($0, db) }) }
        var checksum: UInt64 = 0, found = 0
        for t in 0..<threads {
            for i in 0..<lookups {
                if let mix = mixes[(i + t * 7919) % numbers.count] {
                    checksum &+= mix
                    found += 1
                }
            }
        }
        var scan: UInt64 = 0
        try db.forEachEntry { scan &+= entryMix($0, db) }

        let r = try runTool(exe.path, [path, "threads", String(threads), String(lookups), queryFile])
        #expect(r.status == 0, "\(r.stderr)")
        expectSameLines(r.lines, [
            "threads\t\(threads)\tlookups\t\(threads * lookups)\tfound\t\(found)\tchecksum\t\(hex16(checksum))",
            "scan\t\(db.count)\tchecksum\t\(hex16(scan))\tagree\tyes",
        ], "threads")
    }

    @Test func missingFileGivesFileNotFound() throws {
        let exe = try CABI.program()
        let path = "/nonexistent-callerid-dir/missing.cid"
        var swiftError: CallerIDError?
        do { _ = try Database(path: path) } catch { swiftError = error }
        let r = try runTool(exe.path, [path, "info"])
        #expect(r.status == 66)
        #expect(r.stdout.isEmpty)
        #expect(splitLines(r.stderr) == ["error: file-not-found: \(swiftError?.message ?? "?")"])
    }

    /// Damaged files: refused at open (header, truncation, version) or, for damaged data,
    /// by verify, by --verify at open, and by the lookups and cursor steps that touch it —
    /// with the Swift API's codes and messages, and never a crash.
    @Test func damagedFilesGiveErrorCodes() throws {
        let exe = try CABI.program()
        let dir = TempDir()
        let (path, db, sorted) = try fixture(dir)
        let good = try [UInt8](fileData(path))
        let bad = dir.path("bad.cid")
        func swiftOpenError(verify: Bool = false) -> CallerIDError? {
            do { _ = try Database(path: bad, verify: verify); return nil } catch { return error }
        }

        var cases: [(String, [UInt8])] = [("header byte", good), ("truncated", Array(good.dropLast(100))), ("empty", [])]
        cases[0].1[20] ^= 0x40
        var v2 = good
        v2[8] = 4  // 2 and 3 are read; 4 is a newer major
        v2.replaceSubrange(56..<64, with: withUnsafeBytes(of: Codec.xxh3(Array(v2[0..<56])).littleEndian) { Array($0) })
        cases.append(("version 4", v2))
        for (what, bytes) in cases {
            try Data(bytes).write(to: URL(fileURLWithPath: bad))
            let expected = try #require(swiftOpenError(), "\(what): the Swift API should refuse it")
            let r = try runTool(exe.path, [bad, "lookup", "1"])
            #expect(r.status == 65, "\(what)")
            #expect(r.stdout.isEmpty)
            let name = expected.code == .unsupportedVersion ? "unsupported-version" : "corrupt"
            #expect(splitLines(r.stderr) == ["error: \(name): \(expected.message)"], "\(what)")
        }

        // Damaged block records: find a byte whose change opens, fails verify and makes some
        // lookups throw (a record header or value code that no longer fits).
        let labels = try #require(db.info.sections.first { $0.name == "block records" })
        func someLookupThrows() -> Bool {
            guard let damaged = try? Database(path: bad) else { return false }
            return sorted.contains { e in
                do { _ = try damaged.lookup(e.number); return false } catch { return true }
            }
        }
        var damagedOffset: Int?
        for offset in stride(from: labels.offset + 1, to: labels.offset + labels.bytes, by: 5) {
            var bytes = good
            bytes[offset] ^= 0xFF
            try Data(bytes).write(to: URL(fileURLWithPath: bad))
            if swiftOpenError() == nil, swiftOpenError(verify: true) != nil, someLookupThrows() {
                damagedOffset = offset
                break
            }
        }
        _ = try #require(damagedOffset, "no byte of the block records found whose change makes lookups fail")
        let verifyError = try #require(swiftOpenError(verify: true))

        let verified = try runTool(exe.path, ["--verify", bad, "info"])
        #expect(verified.status == 65)
        #expect(splitLines(verified.stderr) == ["error: corrupt: \(verifyError.message)"])

        let verify = try runTool(exe.path, [bad, "verify"])
        #expect(verify.status == 65)
        #expect(splitLines(verify.stderr) == ["error: corrupt: \(verifyError.message)"])

        // Every lookup answers as the Swift API does: found, not found or the same error.
        let damaged = try Database(path: bad)
        let texts = sorted.map { String($0.number) }
        let lookups = try runTool(exe.path, [bad, "lookup"] + texts)
        let expected = texts.map { expectedLookupLine(damaged, $0) }
        expectSameLines(lookups.lines, expected, "lookups on damaged data")
        #expect(expected.contains { $0.hasPrefix("error\t") } && expected.contains { $0.hasPrefix("found\t") })
        #expect(lookups.status == 65)

        // The cursor yields what the Swift cursor yields, then the same error.
        var swiftLines: [String] = []
        var cursorError: CallerIDError?
        var cursor = damaged.cursor()
        do {
            while let e = try cursor.next() { swiftLines.append(dumpLine(e)) }
        } catch {
            cursorError = error
        }
        let dump = try runTool(exe.path, [bad, "dump"])
        expectSameLines(dump.lines, swiftLines, "dump of damaged data")
        if let cursorError {
            #expect(dump.status == 65)
            #expect(splitLines(dump.stderr) == ["error: corrupt: \(cursorError.message)"])
        } else {
            #expect(dump.status == 0)
        }
    }

    /// NULL pointers, unknown flags, double close and free, handles of the wrong kind, use
    /// after close, a cursor outliving its handle: error codes, no crash.
    @Test func misuseGivesErrorCodes() throws {
        let exe = try CABI.program()
        let dir = TempDir()
        let (path, _, _) = try fixture(dir, count: 500)
        let r = try runTool(exe.path, [path, "selftest"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.lines.last == "selftest\tpassed")
        for line in r.lines where line.hasPrefix("FAIL") { Issue.record("selftest: \(line)") }
        #expect(r.lines.count > 30)
    }

    // MARK: Python

    /// The ctypes example gives the same answers as the C example and the Swift API.
    @Test func pythonExampleMatches() throws {
        let exe = try CABI.program()
        let library = try #require(CABI.library, Comment(rawValue: CABI.missingLibraryMessage))
        let script = CABI.packageRoot.appendingPathComponent("examples/python/cidquery.py").path
        let dir = TempDir()
        let (path, db, sorted) = try fixture(dir)
        _ = try fixture(dir, name: "b.cid", count: 2000, seed: 78)
        func python(_ args: [String]) throws -> CLIResult {
            try runTool("python3", [script, "--lib", library.path] + args)
        }

        let texts = probes(sorted, seed: 3)
        let lookups = try python([path, "lookup"] + texts)
        #expect(lookups.status == 0, "\(lookups.stderr)")
        expectSameLines(lookups.lines, texts.map { expectedLookupLine(db, $0) }, "python lookup")

        let from = String(sorted[sorted.count / 3].number)
        for args in [["info"], ["batch"] + texts, ["dump", "--from", from, "--action", "block"],
                     ["dump", "--category", "taxi", "--category", "spam", "--limit", "50"],
                     ["merge", dir.path("b.cid"), "--from", from, "--limit", "300"]] {
            let p = try python([path] + args)
            let c = try runTool(exe.path, [path] + args)
            #expect(p.status == 0 && c.status == 0, "\(args.first!): \(p.stderr) \(c.stderr)")
            #expect(!p.lines.isEmpty)
            expectSameLines(p.lines, c.lines, "python vs C: \(args.prefix(3))")
        }

        let missing = try python(["/nonexistent-callerid-dir/missing.cid", "info"])
        #expect(missing.status == 66)
        #expect(missing.stderr.hasPrefix("error: file-not-found: /nonexistent-callerid-dir/missing.cid"))
    }
}
