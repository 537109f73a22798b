import Foundation
import Testing
@testable import CallerID

// What `lookup` prints about sets of files and bad input: bounded, readable, and the same on
// a build with and without pipeline options.

@Suite struct ReportShapeTests {
    /// A build directory of `count` one-entry databases, and a store with it installed.
    private func bundle(in dir: TempDir, count: Int) throws -> (build: String, store: String) {
        var text = ""
        for i in 0..<count { text += "7913\(String(1_000_000 + i))\tShop \(i)\n" }
        try text.write(toFile: dir.path("in.tsv"), atomically: false, encoding: .utf8)
        let build = dir.path("bundle") + "/"
        let b = try lookup(["build", "-o", build, dir.path("in.tsv"), "--max-entries", "1"])
        #expect(b.status == 0, "\(b.stderr)")
        let store = dir.path("store") + "/"
        let i = try lookup(["install", "--store", store, build])
        #expect(i.status == 0, "\(i.stderr)")
        return (build, store)
    }

    // Before: `lookup dump --db bundle/` refused a set (and once listed all 217 file paths in
    // one 12 KB error line); now it prints the set's entries, one stream over its 40 files.
    @Test func dumpOfADirectoryPrintsTheEntriesOfAllItsFilesInOrder() throws {
        let dir = TempDir()
        let (build, store) = try bundle(in: dir, count: 40)
        let want = (0..<40).map { "7913\(String(1_000_000 + $0))\tShop \($0)\tidentify" }
        for set in [build, store] {
            let r = try lookup(["dump", "--db", set])
            #expect(r.status == 0 && r.stderr.isEmpty, "\(r.stderr)")
            #expect(r.lines == want)
            let from = try lookup(["dump", "--db", set, "--from", "79131000030"])
            #expect(from.lines == Array(want.suffix(10)))
        }
    }

    // Before: `verify DIR` printed no closing line, and `verify store/` named its files
    // `store//gen-1/…`.
    @Test func verifyOfADirectoryEndsWithCountsAndJoinsPathsWithOneSlash() throws {
        let dir = TempDir()
        let (build, store) = try bundle(in: dir, count: 3)
        let s = try lookup(["verify", store])
        #expect(s.status == 0, "\(s.stderr)")
        let storeFiles = (1...3).map { "\(dir.path("store"))/gen-1/all-\($0).cid: OK (1 entries)" }
        #expect(s.lines == storeFiles + ["3 files verified: all intact"])
        #expect(!s.stdout.contains("//"))

        // A damaged file among them: counted, exit 65.
        var bytes = try [UInt8](fileData("\(build)all-2.cid"))
        bytes[bytes.count / 2] ^= 0x5A
        try Data(bytes).write(to: URL(fileURLWithPath: "\(build)all-2.cid"))
        let b = try lookup(["verify", build])
        #expect(b.status == 65)
        #expect(b.lines.last == "3 files verified: 2 intact, 1 damaged")
        // One file: its line alone, as before.
        let one = try lookup(["verify", "\(build)all-1.cid"])
        #expect(one.lines == ["\(build)all-1.cid: OK (1 entries)"])
    }

    // Before: the plain TSV build summed its bad rows up as `  1\t…: no country…` (a TAB, the
    // quoted input left as '…'), unlike the pipeline's `rejected rows by reason:` table; then
    // by the text of each message with the quoted input taken out. Now every build groups them
    // by their reason code.
    @Test func plainBuildSummarisesBadRowsAsThePipelineDoes() throws {
        let dir = TempDir()
        let input = dir.path("in.tsv")
        try "79131234567\tok\n0913\tnational\n12a4\tletters\n77a7\tletters too\n".write(toFile: input, atomically: false, encoding: .utf8)
        let r = try lookup(["build", "-o", dir.path("out.cid"), input, "--skip-bad-rows"])
        #expect(r.status == 0, "\(r.stderr)")
        let tail = Array(r.errorLines.drop { !$0.hasPrefix("rejected rows by reason:") })
        #expect(tail == ["rejected rows by reason:",
                         "         2  letters",
                         "         1  national-without-country",
                         "3 bad rows of 4"], "\(r.stderr)")
        #expect(!r.stderr.contains("\t") && !r.stderr.contains("…"))
    }

    // Before: the --errors file escaped its raw column twice: a TAB of the input was `\\u{9}`.
    @Test func errorsFileEscapesEachCellOnce() throws {
        let dir = TempDir()
        let input = dir.path("in.tsv"), errors = dir.path("errors.tsv")
        try "79131234567\tok\tspam\textra\n7913\\1234\tbackslash\n".write(toFile: input, atomically: false, encoding: .utf8)
        let r = try lookup(["build", "-o", dir.path("out.cid"), input, "--validity", "any", "--skip-bad-rows", "--errors", errors])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = splitLines(try String(contentsOfFile: errors, encoding: .utf8))
        #expect(lines.count == 3)
        #expect(lines[0] == "file\tline\traw\treason\tmessage")
        #expect(lines[1].hasPrefix("\(input)\t1\t79131234567\\u{9}ok\\u{9}spam\\u{9}extra\textra-fields\tmore than 3 columns"), "\(lines[1])")
        #expect(lines[2].hasPrefix("\(input)\t2\t7913\\1234\tinvalid-character\tunexpected character '\\' in the number '7913\\1234'"), "\(lines[2])")
        #expect(lines.allSatisfy { $0.split(separator: "\t", omittingEmptySubsequences: false).count == 5 })
        // The message column reads as stderr shows the row.
        #expect(r.stderr.contains("\(input):2: unexpected character '\\' in the number '7913\\1234'"), "\(r.stderr)")
    }

    // Before: every line of `dump --json` said `"found":true`, a lookup's field.
    @Test func dumpJSONLinesAreEntriesWithoutFound() throws {
        let dir = TempDir()
        let path = dir.path("d.cid")
        _ = try buildDatabase([Entry(number: 79131234567, label: "Shop", category: .block)], at: path)
        let r = try lookup(["dump", "--db", path, "--json"])
        #expect(r.lines == [#"{"number":79131234567,"label":"Shop","category":"block","action":"block"}"#])
        // A lookup's answer still says whether it was found.
        #expect(try lookup(["79131234567", "--db", path, "--json"]).stdout.contains(#""found":true"#))
    }

    // Before: a directory given as build input was read and failed with 74 "Is a directory".
    @Test(arguments: [[String](), ["--validity", "any"]])
    func directoryAsBuildInputIsAUsageError(_ options: [String]) throws {
        let dir = TempDir()
        try FileManager.default.createDirectory(atPath: dir.path("inputs"), withIntermediateDirectories: true)
        try "79131234567\tok\n".write(toFile: dir.path("good.tsv"), atomically: false, encoding: .utf8)
        let r = try lookup(["build", "-o", dir.path("out.cid"), dir.path("good.tsv"), dir.path("inputs")] + options)
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains("input \(dir.path("inputs")) is a directory"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("out.cid")))
    }
}
