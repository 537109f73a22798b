import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import CallerID
@testable import CallerIDDirectory

// The reader when its file is rewritten in place,
// batch mode as a co-process and on hostile line lengths, escaping of labels in TSV output,
// usage errors, and the Python example without its library.

/// The built `lookup` executable (same search as CLITests).
private let lookupBinary: URL? = BuiltProducts.lookup

private func smallEntries(_ numbers: ClosedRange<UInt64>, label: String = "Entry") -> [Entry] {
    numbers.map { Entry(number: $0, label: "\(label) \($0)") }
}

/// Truncates `path` in place (same inode), as `cp new.cid live.cid` does before it writes.
private func truncateInPlace(_ path: String, to size: Int, thenWrite text: String = "") throws {
    let handle = try #require(FileHandle(forUpdatingAtPath: path))
    try handle.truncate(atOffset: UInt64(size))
    if !text.isEmpty { try handle.write(contentsOf: Data(text.utf8)) }
    try handle.close()
}

/// A child process whose stdin and stdout are pipes we hold, read with a deadline.
final class CoProcess {
    let process = Process()
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    private var pending: [UInt8] = []

    init(_ binary: URL, _ args: [String]) throws {
        process.executableURL = binary
        process.arguments = args
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
    }

    func send(_ line: String) throws { try stdin.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8)) }

    /// The next line of stdout, or nil when none arrived within `seconds` (or at end of output).
    func readLine(within seconds: Double) -> String? {
        let fd = stdout.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let nl = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<nl], as: UTF8.self)
                pending.removeSubrange(...nl)
                return line
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { return nil }
            pending += chunk[..<n]
        }
    }

    /// Closes stdin and waits for the exit (killing the child after `seconds`).
    func finish(within seconds: Double) -> (status: Int32, reason: Process.TerminationReason, stderr: String) {
        try? stdin.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(2000) }
        if process.isRunning {
            process.terminate()
            Issue.record("the child did not exit within \(seconds) s after its stdin was closed")
        }
        process.waitUntilExit()
        let err = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationStatus, process.terminationReason, err)
    }
}

/// A database whose labels hold control bytes (a newline, an OSC terminal sequence), which
/// the builder refuses: crafted from a raw-label build by replacing placeholder bytes and
/// resealing every checksum. It opens (labels are checked only by verify).
private func hostileLabelDatabase(_ dir: TempDir) throws -> String {
    var options = BuildOptions()
    options.compressLabels = false
    let path = dir.path("hostile.cid")
    _ = try buildDatabase([Entry(number: 100, label: "Line1<NL>forged<TAB>line"),
                           Entry(number: 101, label: "Term<ESC>]0;pwned<BEL>")], at: path, options: options)
    var image = ImageEditor(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    func replace(_ token: String, _ byte: UInt8) throws {
        let t = Array(token.utf8)
        let at = try #require((0...(image.bytes.count - t.count)).first { Array(image.bytes[$0..<($0 + t.count)]) == t })
        // Same length: pad with the byte itself so the label length is unchanged.
        for k in 0..<t.count { image.bytes[at + k] = k == 0 ? byte : 0x5F }
    }
    try replace("<NL>", 0x0A)
    try replace("<TAB>", 0x09)
    try replace("<ESC>", 0x1B)
    try replace("<BEL>", 0x07)
    image.seal()
    try Data(image.bytes).write(to: URL(fileURLWithPath: path))
    return path
}

@Suite("Reader and query CLI: files rewritten in place, batch mode, escaping, usage errors")
struct ReaderAndQueryCLITests {
    // MARK: A file rewritten while open

    @Test func copyMappingAnswersAfterTheFileIsTruncated() throws {
        let dir = TempDir()
        let path = dir.path("live.cid")
        let entries = smallEntries(1000...1200)
        _ = try buildDatabase(entries, at: path)
        let copy = try Database(path: path, mapping: .copy)
        let mapped = try Database(path: path)
        #expect(copy.fileChange == .none && mapped.fileChange == .none)
        try copy.checkFile()
        try mapped.checkFile()

        try truncateInPlace(path, to: 0, thenWrite: "not a database any more")
        for e in entries { #expect(try copy.lookup(e.number) == e) }
        #expect(try copy.lookup(999) == nil)
        try copy.verify()
        #expect(copy.fileChange == .modifiedInPlace)
        try copy.checkFile()  // the copy does not depend on the file
        // The mapped reader must not be touched now (SIGBUS); the check tells it so.
        #expect(mapped.fileChange == .modifiedInPlace)
        let error = #expect(throws: CallerIDError.self) { try mapped.checkFile() }
        #expect(error?.code == .fileChanged)
        #expect(error?.message.contains(path) == true)
        #expect(error?.message.contains("rename") == true)
    }

    @Test func replacementByRenameIsSafeAndReported() throws {
        let dir = TempDir()
        let path = dir.path("live.cid")
        let old = smallEntries(1000...1100, label: "Old")
        _ = try buildDatabase(old, at: path)
        let mapped = try Database(path: path)
        _ = try buildDatabase(smallEntries(1000...1100, label: "New"), at: path)  // temporary file + rename
        #expect(mapped.fileChange == .replaced)
        try mapped.checkFile()
        for e in old { #expect(try mapped.lookup(e.number) == e) }
        try FileManager.default.removeItem(atPath: path)
        #expect(mapped.fileChange == .removed)
        try mapped.checkFile()
    }

    // MARK: Batch mode as a co-process; a file truncated under it

    @Test func batchAnswersEachLineBeforeStdinIsClosedAndReportsATruncatedFile() throws {
        let binary = try #require(lookupBinary, "build the lookup executable first")
        let dir = TempDir()
        let path = dir.path("live.cid")
        _ = try buildDatabase(smallEntries(1000...1200), at: path)
        let child = try CoProcess(binary, ["-", "--db", path])
        try child.send("1000")
        #expect(child.readLine(within: 20) == "1000\tEntry 1000\tidentify")
        try child.send("hello")  // not a number: still one answer line, at once
        #expect(child.readLine(within: 20) == "hello\t-")
        try child.send("1200")
        #expect(child.readLine(within: 20) == "1200\tEntry 1200\tidentify")

        try truncateInPlace(path, to: 64)
        try child.send("1100")
        let end = child.finish(within: 20)
        #expect(end.reason == .exit, "killed by signal \(end.status)")
        #expect(end.status == 74)
        #expect(end.stderr.contains("changed") && end.stderr.contains(path), "\(end.stderr)")
    }

    @Test func overlongBatchLinesAreCappedAndSkipped() throws {
        let dir = TempDir()
        let path = dir.path("db.cid")
        _ = try buildDatabase(smallEntries(1000...1010), at: path)
        var input = Data(repeating: UInt8(ascii: "7"), count: 2 << 20)
        input.append(contentsOf: Array("\n1005\n".utf8))
        let r = try lookup(["-", "--db", path], stdin: input)
        #expect(r.status == 0)
        #expect(r.stdoutData.count < 1024, "the 2 MB line is not echoed back (\(r.stdoutData.count) bytes)")
        #expect(r.lines.count == 2)
        #expect(r.lines.first?.hasSuffix("\t-") == true)
        #expect(r.lines.last == "1005\tEntry 1005\tidentify")
        #expect(r.stderr.contains("stdin:1:") && r.stderr.contains("too long"), "\(r.stderr)")
        let json = try lookup(["-", "--db", path, "--json"], stdin: input)
        #expect(json.lines.count == 2 && json.stdoutData.count < 1024)
        #expect(json.lines.first?.contains("\"found\":false") == true)
    }

    // MARK: Control bytes in labels

    @Test func tsvOutputEscapesControlBytesInLabels() throws {
        let dir = TempDir()
        let path = try hostileLabelDatabase(dir)
        let dump = try lookup(["dump", "--db", path])
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.lines == ["100\tLine1\\n___forged\\t____line\tidentify",
                               "101\tTerm\\u001b____]0;pwned\\u0007____\tidentify"])
        #expect(!dump.stdoutData.contains(0x1B) && !dump.stdoutData.contains(0x07))
        let point = try lookup(["101", "--db", path])
        #expect(point.lines == ["101\tTerm\\u001b____]0;pwned\\u0007____\tidentify"])
        let json = try lookup(["dump", "--db", path, "--json"])
        #expect(json.lines.count == 2)
    }

    // MARK: Unknown categories

    @Test(arguments: ["nope", "spam,nope"])
    func dumpRefusesUnknownCategories(_ names: String) throws {
        let dir = TempDir()
        let path = dir.path("db.cid")
        _ = try buildDatabase([Entry(number: 100, label: "A"), Entry(number: 101, label: "B", category: try Category("spam", action: .block))],
                              at: path)
        let r = try lookup(["dump", "--db", path, "--category", names])
        #expect(r.status == 64)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("'nope'") && r.stderr.contains("identify") && r.stderr.contains("spam"), "\(r.stderr)")
        let ok = try lookup(["dump", "--db", path, "--category", "SPAM"])
        #expect(ok.status == 0 && ok.lines == ["101\tB\tspam"])
    }

    // MARK: Unknown commands

    @Test(arguments: ["nosuchcommand", "Dump", "x1"])
    func unknownCommandIsAUsageError(_ word: String) throws {
        let r = try lookup([word, "--db", "/nonexistent/db.cid"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("unknown command '\(word)'") && r.stderr.contains("dump") && r.stderr.contains("verify"),
                "\(r.stderr)")
        let number = try lookup(["12ab", "--db", "/nonexistent/db.cid"])
        #expect(number.status == 65, "a digit-led word is still a (bad) number")
    }

    // MARK: Build directories and stores where a database is expected

    @Test func buildDirectoriesAndStoresAreDatabaseSets() throws {
        let dir = TempDir()
        let build = dir.path("build")
        try writeBuildDirectory(build, [
            DirectoryTestFile(name: "a.cid", region: "a", entries: [Entry(number: 100, label: "A 100"), Entry(number: 200, label: "A 200")]),
            DirectoryTestFile(name: "b.cid", region: "b", entries: [Entry(number: 200, label: "B 200"), Entry(number: 300, label: "B 300")]),
        ])
        for db in [build, build + "/"] {
            #expect(try lookup(["100", "--db", db]).lines == ["100\tA 100\tidentify"])
            #expect(try lookup(["300", "--db", db]).lines == ["300\tB 300\tidentify"])
            let both = try lookup(["200", "--db", db])
            #expect(both.status == 0 && both.lines == ["200\tA 200\tidentify"], "the first database in manifest order wins")
            let none = try lookup(["400", "--db", db])
            #expect(none.status == 1 && none.lines == ["400\t-"])
        }
        let batch = try lookup(["-", "--db", build], stdin: Data("100\n300\n400\n".utf8))
        #expect(batch.status == 0 && batch.lines == ["100\tA 100\tidentify", "300\tB 300\tidentify", "400\t-"])

        let info = try lookup(["info", build])
        #expect(info.status == 0, "\(info.stderr)")
        #expect(info.stdout.contains(build + "/a.cid") && info.stdout.contains(build + "/b.cid"))
        let infoJSON = try lookup(["info", build, "--json"])
        #expect(try jsonObjects(infoJSON.stdout).count == 2)
        let verify = try lookup(["verify", build])
        #expect(verify.status == 0 && verify.lines == ["\(build)/a.cid: OK (2 entries)", "\(build)/b.cid: OK (2 entries)",
                                                  "2 files verified: all intact"],
                "\(verify.stdout)\(verify.stderr)")

        let store = dir.path("store")
        let install = try lookup(["install", "--store", store, build])
        #expect(install.status == 0, "\(install.stderr)")
        #expect(try lookup(["300", "--db", store]).lines == ["300\tB 300\tidentify"])
        let verifyStore = try lookup(["verify", store, "--json"])
        #expect(verifyStore.status == 0 && verifyStore.lines.count == 2, "\(verifyStore.stdout)\(verifyStore.stderr)")
        #expect(try lookup(["info", store]).status == 0)

        // A directory that is neither: a clear message (no database there: 66), not "not a regular file".
        try FileManager.default.createDirectory(atPath: dir.path("plain"), withIntermediateDirectories: true)
        let plain = try lookup(["100", "--db", dir.path("plain")])
        #expect(plain.status == 66 && plain.stderr.contains("neither a build directory"), "\(plain.stderr)")
    }

    // MARK: The Python example without its library

    @Test func pythonExampleWithoutLibraryPrintsAnErrorLine() throws {
        let script = CABI.packageRoot.appendingPathComponent("examples/python/cidquery.py").path
        let r = try runTool("python3", [script, "--lib", "/nonexistent/libcallerid.so", "db.cid", "info"])
        #expect(r.status == 69)
        #expect(r.stderr.hasPrefix("error: "), "\(r.stderr)")
        #expect(!r.stderr.contains("Traceback"))
        let env = try runTool("env", ["-u", "CALLERID_LIB", "LD_LIBRARY_PATH=", Python.executable, script, "db.cid", "info"])
        #expect(!env.stderr.contains("Traceback"), "\(env.stderr)")
        // With the library, bad arguments are usage errors too (not KeyError / IndexError tracebacks).
        let library = try #require(CABI.library, Comment(rawValue: CABI.missingLibraryMessage))
        let dir = TempDir()
        let db = dir.path("db.cid")
        _ = try buildDatabase(smallEntries(100...110), at: db)
        for args in [["dump", "--action"], ["dump", "--action", "nope"], ["dump", "--limit", "x"]] {
            let usage = try runTool("python3", [script, "--lib", library.path, db] + args)
            #expect(usage.status == 64 && usage.stderr.hasPrefix("error: ") && !usage.stderr.contains("Traceback"),
                    "\(args): \(usage.stderr)")
        }
    }
}
