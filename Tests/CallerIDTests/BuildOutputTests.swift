import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import CallerID
@testable import CallerIDPipeline
@testable import lookup

// What `lookup build` does to its outputs, its progress
// line and its summary. Every test works in its own temporary directory; nothing here touches
// /dev/null or /dev/stdout (a FIFO and a device node made in the temporary directory stand in).

// MARK: - Helpers

private func write(_ text: String, to path: String) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
}

private func fileType(_ path: String) -> mode_t? {
    var st = stat()
    guard lstat(path, &st) == 0 else { return nil }
    return st.st_mode & S_IFMT
}

private func linkTarget(_ path: String) -> String? {
    try? FileManager.default.destinationOfSymbolicLink(atPath: path)
}

private func entries(_ dir: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
}

/// Drains a FIFO while `body` runs (non-blocking opens and reads: a writer that never comes, or
/// a FIFO replaced by a regular file, cannot hang the test), then returns what came through.
private func readingFIFO(_ path: String, while body: () throws -> Void) rethrows -> [UInt8] {
    final class Box: @unchecked Sendable {
        let lock = NSLock()
        var done = false
        var bytes: [UInt8] = []
    }
    let box = Box()
    let fd = open(path, O_RDONLY | O_NONBLOCK)
    let group = DispatchGroup()
    onThread(in: group) {
        guard fd >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var finishing = false
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n > 0 {
                box.lock.lock(); box.bytes.append(contentsOf: buffer[0..<n]); box.lock.unlock()
                continue
            }
            if finishing { break }
            box.lock.lock(); finishing = box.done; box.lock.unlock()
            if !finishing { usleep(2_000) }
        }
        close(fd)
    }
    defer {
        box.lock.lock(); box.done = true; box.lock.unlock()
        group.wait()
    }
    try body()
    box.lock.lock(); box.done = true; box.lock.unlock()
    group.wait()
    return box.bytes
}

private let twoRows = "79131234567\tAlpha\n79131234568\tBeta\n"

/// What a program writing to a terminal left visible: per line, the text after the last
/// carriage return once "ESC [ K" (erase to end of line) has been applied.
private func visibleLines(_ typescript: String) -> [String] {
    typescript.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false).map { line in
        var shown = ""
        var rest = Substring(line)
        while let r = rest.firstIndex(where: { $0 == "\r" || $0 == "\u{1B}" }) {
            shown += rest[..<r]
            if rest[r] == "\r" {
                shown = ""
                rest = rest[rest.index(after: r)...]
            } else {
                // ESC [ K: the cursor is at the line start in our output, so the line is empty.
                rest = rest[rest.index(after: r)...]
                if rest.hasPrefix("[K") { rest = rest.dropFirst(2) }
            }
        }
        return shown + rest
    }
}

/// Runs `lookup ARGS` on a pseudo-terminal (`script`) `columns` wide, returning everything it
/// printed (400 by default: a narrower one would cut a progress line that holds a long temporary
/// path, such as macOS's `/var/folders/…`).
private func lookupOnTerminal(_ args: [String], columns: Int = 400) throws -> (status: Int32, output: String) {
    let binary = try #require(lookupBinaryPath(), "the lookup executable was not found")
    let command = ([binary] + args).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
    let r = try runTool("/usr/bin/script", ["-qec", "stty cols \(columns) && " + command, "/dev/null"], timeout: 60)
    return (r.status, r.stdout + r.stderr)
}

private func lookupBinaryPath() -> String? {
    BuiltProducts.lookup?.path
}

// MARK: - Outputs that are not regular files

@Suite struct OutputTargetTests {
    @Test func symlinkOutputIsWrittenThroughToItsTarget() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try write(twoRows, to: tsv)
        try write("old", to: dir.path("real.cid"))
        try FileManager.default.createSymbolicLink(atPath: dir.path("link.cid"), withDestinationPath: "real.cid")
        try FileManager.default.createSymbolicLink(atPath: dir.path("link2.cid"), withDestinationPath: dir.path("link.cid"))

        for output in ["link.cid", "link2.cid"] {
            let r = try lookup(["build", "-o", dir.path(output), tsv])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(fileType(dir.path(output)) == S_IFLNK, "\(output) was replaced")
            #expect(fileType(dir.path("real.cid")) == S_IFREG)
            #expect(try Database(path: dir.path("real.cid")).count == 2, "the target holds the new database")
        }
        #expect(linkTarget(dir.path("link.cid")) == "real.cid")
        #expect(!entries(dir.url.path).contains { $0.contains(".tmp-") })
    }

    @Test func danglingSymlinkCreatesItsTarget() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try write(twoRows, to: tsv)
        try FileManager.default.createDirectory(atPath: dir.path("sub"), withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: dir.path("dangling.cid"), withDestinationPath: "sub/new.cid")
        // The pipeline path (--country) and the library's own writer take the same route.
        let r = try lookup(["build", "-o", dir.path("dangling.cid"), tsv, "--country", "RU"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(fileType(dir.path("dangling.cid")) == S_IFLNK)
        #expect(try Database(path: dir.path("sub/new.cid")).count == 2)
        #expect(entries(dir.path("sub")) == ["new.cid"])
    }

    @Test func libraryWriterFollowsSymlinks() throws {
        let dir = TempDir()
        try FileManager.default.createSymbolicLink(atPath: dir.path("a.cid"), withDestinationPath: "b.cid")
        try FileManager.default.createSymbolicLink(atPath: dir.path("b.cid"), withDestinationPath: "c.cid")
        var builder = DatabaseBuilder()
        try builder.add(79131234567, label: "X")
        _ = try builder.write(to: dir.path("a.cid"))
        #expect(fileType(dir.path("a.cid")) == S_IFLNK)
        #expect(fileType(dir.path("b.cid")) == S_IFLNK)
        #expect(try Database(path: dir.path("c.cid")).count == 1)
        // A loop is an error, not a hang or a replaced link.
        try FileManager.default.createSymbolicLink(atPath: dir.path("loop1"), withDestinationPath: "loop2")
        try FileManager.default.createSymbolicLink(atPath: dir.path("loop2"), withDestinationPath: "loop1")
        #expect(throws: CallerIDError.self) { try builder.write(to: dir.path("loop1")) }
        #expect(fileType(dir.path("loop1")) == S_IFLNK)
    }

    @Test func fifoOutputIsStreamedNotReplaced() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv"), fifo = dir.path("out.fifo")
        try write(twoRows, to: tsv)
        #expect(mkfifo(fifo, 0o644) == 0)
        var status: Int32 = -1
        let bytes = try readingFIFO(fifo) { status = try lookup(["build", "-o", fifo, tsv]).status }
        #expect(status == 0)
        #expect(fileType(fifo) == S_IFIFO, "the FIFO was replaced")
        // What came through the pipe is the database.
        try Data(bytes).write(to: URL(fileURLWithPath: dir.path("copy.cid")))
        #expect(try Database(path: dir.path("copy.cid")).count == 2)
    }

    @Test func errorsFileThroughFifoAndSymlink() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv"), fifo = dir.path("errors.fifo")
        try write(twoRows + "bad\tGamma\n", to: tsv)
        #expect(mkfifo(fifo, 0o644) == 0)
        var r: CLIResult? = nil
        let bytes = try readingFIFO(fifo) {
            r = try lookup(["build", "-o", dir.path("x.cid"), tsv, "--country", "RU", "--skip-bad-rows", "--errors", fifo])
        }
        #expect(r?.status == 0, "\(r?.stderr ?? "")")
        #expect(fileType(fifo) == S_IFIFO)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("file\tline\traw\treason\tmessage\n"))
        #expect(text.contains("\t3\tbad\t"))

        try FileManager.default.createSymbolicLink(atPath: dir.path("errors.link"), withDestinationPath: "errors.tsv")
        let s = try lookup(["build", "-o", dir.path("x.cid"), tsv, "--country", "RU", "--skip-bad-rows", "--errors", dir.path("errors.link")])
        #expect(s.status == 0)
        #expect(fileType(dir.path("errors.link")) == S_IFLNK)
        #expect(try String(contentsOfFile: dir.path("errors.tsv"), encoding: .utf8).contains("\t3\tbad\t"))
    }

    /// A character device made here (major 1, minor 3: the null device) stands in for
    /// /dev/null; skipped where device nodes cannot be made.
    @Test func characterDeviceStaysADevice() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv"), device = dir.path("null")
        try write(twoRows, to: tsv)
        guard mknod(device, S_IFCHR | 0o666, dev_t((1 << 8) | 3)) == 0 else { return }
        for extra in [[], ["--country", "RU"]] {
            let r = try lookup(["build", "-o", device, tsv] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(fileType(device) == S_IFCHR, "the device was replaced by a file")
        }
        let e = try lookup(["build", "-o", dir.path("x.cid"), tsv, "--country", "RU", "--errors", device])
        #expect(e.status == 0)
        #expect(fileType(device) == S_IFCHR)
        // The real /dev/null, looked at only.
        #expect(fileType("/dev/null") == S_IFCHR)
    }

    @Test func directoryOutputThroughSymlink() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try write(twoRows, to: tsv)
        let first = try lookup(["build", "-o", dir.path("real"), tsv, "--country", "RU", "--top", "1", "--weight-field", "1"])
        #expect(first.status == 0, "\(first.stderr)")
        try FileManager.default.createSymbolicLink(atPath: dir.path("current"), withDestinationPath: "real")
        try write(twoRows + "79131234569\tGamma\n", to: tsv)
        let r = try lookup(["build", "-o", dir.path("current"), tsv, "--country", "RU", "--top", "1", "--weight-field", "1"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(fileType(dir.path("current")) == S_IFLNK)
        #expect(try Database(path: dir.path("real/all.cid")).count == 3)
        #expect(entries(dir.url.path) == ["current", "in.tsv", "real"])
    }
}

// MARK: - Range expansion, per row and in total

@Suite struct RangeExpansionTests {
    private func ranges(_ dir: TempDir) throws -> String {
        let csv = dir.path("ranges.csv")
        // Three rows of 10 numbers each.
        try write("from,to,name\n79130000000,79130000009,A\n79130000100,79130000109,B\n79130000200,79130000209,C\n", to: csv)
        return csv
    }

    @Test func totalLimitAbortsBeforeMemoryGrows() throws {
        let dir = TempDir()
        let csv = try ranges(dir)
        let base = ["build", "-o", dir.path("out.cid"), csv, "--number-field", "from", "--range-end-field", "to", "--label-field", "name",
                    "--skip-bad-rows", "--json"]
        let over = try lookup(base + ["--max-expanded-total", "25"])
        #expect(over.status == 65, "\(over.stderr)")
        #expect(over.stderr.contains("--max-expanded-total"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("out.cid")))

        let ok = try lookup(base + ["--max-expanded-total", "30"])
        #expect(ok.status == 0, "\(ok.stderr)")
        let s = try #require(try jsonObjects(ok.stdout).first)
        #expect(s["range_numbers"] as? Int == 30)
        #expect(s["entries"] as? Int == 30)
        #expect(try lookup(base + ["--max-expanded-total", "0"]).status == 64)
    }

    @Test func totalLimitInTheLibrary() throws {
        let dir = TempDir()
        let csv = try ranges(dir)
        var options = PipelineOptions()
        options.numberField = .name("from")
        options.rangeEndField = .name("to")
        options.maxBadRows = .unlimited
        options.maxExpandedTotal = 20
        let pipeline = try Pipeline(options: options)
        #expect(throws: PipelineError.self) { try pipeline.add(file: csv) }
        #expect(pipeline.rangeNumbers <= 20, "the limit stops the expansion, not the build after it")
    }

    /// The sort behind de-duplication: ascending numbers, input order kept among equal numbers,
    /// on data with long runs of one number and numbers across the whole 64-bit range.
    @Test(arguments: [0, 1, 2, 3])
    func sortedOrderIsStable(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let pipeline = try Pipeline(options: PipelineOptions())
        let n = 50_000
        for i in 0..<n {
            switch (seed, i % 7) {
            case (0, _): pipeline.numbers.append(79_130_000_000 + rng.next() % 2_000)
            case (1, _): pipeline.numbers.append(7)            // one number only
            case (2, let k) where k < 3: pipeline.numbers.append(rng.next())
            default: pipeline.numbers.append(79_130_000_000 + UInt64(i / 3))
            }
        }
        let order = pipeline.sortedOrder()
        let expected = (0..<Int32(n)).sorted { a, b in
            let x = pipeline.numbers[Int(a)], y = pipeline.numbers[Int(b)]
            return x != y ? x < y : a < b
        }
        #expect(order == expected)
    }
}

// MARK: - Switching an output directory

@Suite struct OutputDirectorySwitchTests {
    private func build(_ dir: TempDir, rows: String, extra: [String] = [], environment: [String: String] = [:]) throws -> CLIResult {
        let tsv = dir.path("in.tsv")
        try write(rows, to: tsv)
        return try lookup(["build", "-o", dir.path("out"), tsv, "--country", "RU", "--top", "1", "--weight-field", "1"] + extra,
                          environment: environment)
    }

    private func count(_ dir: TempDir) -> Int? { try? Database(path: dir.path("out/all.cid")).count }

    @Test func leftoversOfAnEarlierRunAreCleaned() throws {
        let dir = TempDir()
        #expect(try build(dir, rows: twoRows).status == 0)
        // What a killed build leaves: its temporary directory, an old directory, a temporary file.
        for leftover in [".out.tmp-1A2B3C4D", ".out.old-1A2B3C4D"] {
            try FileManager.default.createDirectory(atPath: dir.path(leftover), withIntermediateDirectories: false)
            try write("{}", to: dir.path("\(leftover)/manifest.json"))
        }
        try write("x", to: dir.path(".out.tmp-file"))
        try write("keep", to: dir.path(".other.tmp-1A2B3C4D"))
        #expect(try build(dir, rows: twoRows + "79131234569\tGamma\n").status == 0)
        #expect(count(dir) == 3)
        #expect(entries(dir.url.path) == [".other.tmp-1A2B3C4D", "in.tsv", "out"])
    }

    @Test func aMissingDirectoryIsRecoveredFromItsOldCopy() throws {
        let dir = TempDir()
        #expect(try build(dir, rows: twoRows).status == 0)
        // A kill between "rename DIR away" and "rename the new one in".
        try FileManager.default.moveItem(atPath: dir.path("out"), toPath: dir.path(".out.old-0F0F0F0F"))
        // Even a run that fails puts the previous build back.
        let failed = try build(dir, rows: twoRows + "bad\tGamma\n")
        #expect(failed.status == 65)
        #expect(count(dir) == 2, "the previous build is back in place")
        #expect(entries(dir.url.path) == ["in.tsv", "out"])
    }

    /// A real `lookup build` killed (SIGKILL) at each step of the switch, on both the atomic
    /// exchange and the two-rename fallback: readers always find a complete directory (old or
    /// new) or, in the fallback's gap, the next run puts one back; leftovers go on the next run.
    @Test(arguments: [("before-switch", false), ("after-switch", false), ("before-switch", true), ("between-renames", true), ("after-switch", true)])
    func killedDuringTheSwitch(step: String, fallback: Bool) throws {
        let dir = TempDir()
        #expect(try build(dir, rows: twoRows).status == 0)
        var environment = ["LOOKUP_TEST_KILL_AT": step]
        if fallback { environment["LOOKUP_TEST_NO_EXCHANGE"] = "1" }
        let killed = try build(dir, rows: twoRows + "79131234569\tGamma\n", environment: environment)
        #expect(killed.status == SIGKILL, "\(killed.stderr)")
        switch step {
        case "before-switch": #expect(count(dir) == 2)
        case "after-switch": #expect(count(dir) == 3)
        default: #expect(count(dir) == nil)    // the gap the fallback cannot avoid
        }
        // The next run: recovery first (a failing run still leaves a complete directory)…
        let failed = try build(dir, rows: "bad\tX\n")
        #expect(failed.status == 65)
        #expect(count(dir) != nil)
        // …and a successful one cleans everything up.
        #expect(try build(dir, rows: twoRows + "79131234569\tGamma\n79131234570\tDelta\n").status == 0)
        #expect(count(dir) == 4)
        #expect(entries(dir.url.path) == ["in.tsv", "out"])
    }
}

// MARK: - Progress

@Suite struct BuildProgressTests {
    @Test func plainBuildAnnouncesPhasesAndClearsTheLine() throws {
        let dir = TempDir()
        try write(twoRows, to: dir.path("in.tsv"))
        let r = try lookupOnTerminal(["build", "-o", dir.path("out.cid"), dir.path("in.tsv")])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.output.contains("\(dir.path("in.tsv")): 100%  2 rows"), "\(r.output)")
        #expect(r.output.contains("writing out.cid (1 of 1)"), "\(r.output)")
        let visible = visibleLines(r.output).filter { !$0.isEmpty }
        #expect(visible.first?.hasPrefix("wrote ") == true, "left on screen: \(visible)")
        #expect(!visible.contains { $0.contains("rows so far") || $0.contains("reading") || $0.contains("writing") })
    }

    /// The progress line fits the terminal it is drawn on (a line that wraps cannot be redrawn):
    /// on 40 columns a long path is cut to 39 characters, on 400 it is shown whole.
    @Test func progressLineFitsTheTerminalsWidth() throws {
        let dir = TempDir()
        try write(twoRows, to: dir.path("in.tsv"))
        for columns in [40, 400] {
            let r = try lookupOnTerminal(["build", "-o", dir.path("out.cid"), dir.path("in.tsv")], columns: columns)
            #expect(r.status == 0, "\(r.output)")
            let reading = try #require(r.output.components(separatedBy: "\u{1B}[K").first { $0.contains("in.tsv") || $0.hasPrefix("/") },
                                       "\(r.output)")
            let line = reading.trimmingCharacters(in: .whitespacesAndNewlines)
            if columns == 40 {
                #expect(line.count == 39 && line.hasSuffix("…"), "\(line)")
            } else {
                #expect(line.contains("in.tsv: 100%  2 rows") && !line.contains("…"), "\(line)")
            }
        }
    }

    @Test func allBadFileLeavesNoProgress() throws {
        let dir = TempDir()
        try write("x\ty\n", to: dir.path("bad.tsv"))
        let r = try lookupOnTerminal(["build", "-o", dir.path("out.cid"), dir.path("bad.tsv"), "--skip-bad-rows"])
        #expect(r.status == 0, "\(r.output)")
        let visible = visibleLines(r.output).filter { !$0.isEmpty }
        #expect(!visible.contains { $0.contains("rows so far") || $0.contains("reading") }, "\(visible)")
        #expect(visible.contains { $0.contains("bad.tsv:1:") })
    }

    @Test func pipelineBuildAnnouncesEveryPhase() throws {
        let dir = TempDir()
        try write("from,to,name,region\n79130000000,79130000099,A,North\n79130001000,79130001099,B,South\n", to: dir.path("r.csv"))
        let r = try lookupOnTerminal(["build", "-o", dir.path("out"), dir.path("r.csv"), "--range-end-field", "to", "--number-field", "from",
                                      "--region-field", "region", "--split-by", "field"])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.output.contains("\(dir.path("r.csv")):"), "reading")
        #expect(r.output.contains("sorting 200 numbers"))
        #expect(r.output.contains("writing North.cid (1 of 2)"))
        #expect(r.output.contains("writing South.cid (2 of 2)"))
        let visible = visibleLines(r.output).filter { !$0.isEmpty }
        #expect(visible.first?.hasPrefix("wrote ") == true, "left on screen: \(visible)")
    }

    @Test func progressLineRateLimitsUpdatesButNotPhases() {
        final class Sink: @unchecked Sendable { var text = "" }
        let sink = Sink()
        var clock = 0.0
        let line = ProgressLine(enabled: true, now: { clock }, write: { sink.text += $0 })
        line.phase("reading a")
        line.update("reading a: 10 rows")      // too soon after the phase line
        clock = 1
        line.update("reading a: 20 rows")
        line.phase("writing b")                // a phase always shows
        line.clear()
        line.clear()                           // nothing left to clear
        #expect(sink.text == "\r\u{1B}[Kreading a\r\u{1B}[Kreading a: 20 rows\r\u{1B}[Kwriting b\r\u{1B}[K")
        let off = ProgressLine(enabled: false, now: { 0 }, write: { sink.text += $0 })
        sink.text = ""
        off.phase("x"); off.update("y"); off.clear()
        #expect(sink.text.isEmpty)
    }
}

// MARK: - The summary counts what was stored; listings cut names cleanly

@Suite struct BuildSummaryTests {
    @Test func distinctLabelsMatchInfo() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv"), out = dir.path("out.cid")
        // "Old" is overridden by the last row for its number; "Same" twice.
        try write("79131234567\tOld\n79131234568\tSame\n79131234569\tSame\n79131234570\tSpam\tspam\n79131234567\tNew\n", to: tsv)
        let r = try lookup(["build", "-o", out, tsv, "--country", "RU", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let s = try #require(try jsonObjects(r.stdout).first)
        let info = try #require(try jsonObjects(try lookup(["info", "--db", out, "--json"]).stdout).first)
        #expect(s["distinct_labels"] as? Int == info["distinct_labels"] as? Int)
        #expect(s["distinct_labels"] as? Int == 3)   // New, Same, Spam: not Old
    }

    @Test func distinctLabelsAcrossADirectory() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv"), out = dir.path("out")
        try write("79131234567\tX\n79131234568\tB\n79131234569\tA\n79131234567\tC\n", to: tsv)
        let r = try lookup(["build", "-o", out, tsv, "--country", "RU", "--max-entries", "2", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let s = try #require(try jsonObjects(r.stdout).first)
        #expect(s["distinct_labels"] as? Int == 3)   // C, B, A: not the overridden X
    }

    @Test(arguments: [
        ("short.cid", 28, "short.cid"),
        ("Республика_Северная_Осетия-Алания.cid", 28, "Республика_Северная_Осетия-…"),
        ("Ханты-Мансийский_автономный_округ_Югра.cid", 28, "Ханты-Мансийский_автономный…"),
        ("abcdefghijklmnopqrstuvwxyz0123456789.cid", 28, "abcdefghijklmnopqrstuvwxyz0…"),
        ("e\u{301}e\u{301}e\u{301}e\u{301}", 3, "e\u{301}e\u{301}…"),
    ])
    func namesAreCutOnABoundaryWithAnEllipsis(name: String, width: Int, expected: String) {
        let cut = fitted(name, width: width)
        #expect(cut == expected)
        #expect(cut.count <= width)
    }

    @Test func listingShowsAnEllipsisForLongRegionNames() throws {
        let dir = TempDir()
        let csv = dir.path("r.csv")
        try write("number,name,region\n79131234567,A,Ханты-Мансийский автономный округ Югра\n79131234568,B,Юг\n", to: csv)
        let r = try lookup(["build", "-o", dir.path("out"), csv, "--region-field", "region", "--split-by", "field"])
        #expect(r.status == 0, "\(r.stderr)")
        // The region's file name is its transliteration (docs/PIPELINE.md), cut with an ellipsis.
        #expect(r.stdout.contains("Khanty-Mansiyskiy_…"), "\(r.stdout)")
        #expect(!r.stdout.contains("Khanty-Mansiyskiy_avtonomnyy_o "))
    }
}
