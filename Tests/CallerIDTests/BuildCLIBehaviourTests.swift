import Foundation
import Testing
@testable import CallerID

/// CLI behaviour a user trips on: `-o DIR/`, counts in messages, `diff` of two files.
@Suite struct BuildCLIBehaviourTests {
    /// A refused number is placed by its calling code, never by libphonenumber's "unknown
    /// region" code ZZ ("a local number of ZZ (+7)").
    @Test func aRefusedNumberNamesItsCallingCodeNotAnUnknownRegion() throws {
        let dir = TempDir()
        try "123 4567\tShop\n+7 913 123 45 67\tPizza\n".write(toFile: dir.path("in.tsv"), atomically: true, encoding: .utf8)
        let r = try lookup(["build", "-o", dir.path("out.cid"), dir.path("in.tsv"), "--country", "RU", "--skip-bad-rows"])
        #expect(r.status == 0, "\(r.stderr)")
        let line = try #require(r.stderr.split(separator: "\n").first { $0.contains("'123 4567'") }, "\(r.stderr)")
        #expect(!line.contains("ZZ") && line.contains("+7"), "\(line)")
    }

    static let rows = "79131234567\tPizza\n79131234568\tSushi\tspam\n442079460001\tPub\n"

    /// `-o DIR/` always writes a build directory with manifest.json, even when the data fits one
    /// database, with or without pipeline options; a second build replaces it.
    @Test func trailingSlashAlwaysWritesABuildDirectory() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try Data(Self.rows.utf8).write(to: URL(fileURLWithPath: tsv))
        for (name, extra) in [("plain", [String]()), ("capped", ["--max-entries", "1999999"])] {
            let out = dir.path(name) + "/"
            for round in 1...2 {
                let r = try lookup(["build", "-o", out, tsv] + extra)
                #expect(r.status == 0, "\(name) round \(round): \(r.stderr)")
                #expect(r.stdout.hasPrefix("wrote \(out) (1 database and manifest.json)"), "\(r.stdout)")
                let files = try FileManager.default.contentsOfDirectory(atPath: dir.path(name)).sorted()
                #expect(files.contains("manifest.json") && files.filter { $0.hasSuffix(".cid") }.count == 1, "\(files)")
            }
            let q = try lookup(["79131234568", "--db", out])
            #expect(q.status == 0 && q.stdout.hasPrefix("79131234568\tSushi"), "\(q.stdout)\(q.stderr)")
        }
        // Without the slash, small data stays one file.
        let r = try lookup(["build", "-o", dir.path("one.cid"), tsv])
        #expect(r.status == 0)
        var isDirectory: ObjCBool = true
        #expect(FileManager.default.fileExists(atPath: dir.path("one.cid"), isDirectory: &isDirectory) && !isDirectory.boolValue)
    }

    /// A build with and without pipeline options counts the same file the same way in its JSON
    /// summary: rows read (bad ones included), entries, duplicates merged, bad rows, and the
    /// bad rows by reason.
    @Test func plainAndPipelineSummariesCountAlike() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try Data("79131234567\tA\n79131234567\tB\tblock\nbad\tx\n442079460001\tPub\n".utf8).write(to: URL(fileURLWithPath: tsv))
        func counts(_ extra: [String], _ name: String, pipeline: Bool) throws -> [String: Int] {
            let r = try lookup(["build", "-o", dir.path(name), tsv, "--json"] + extra)
            #expect(r.status == 0, "\(extra): \(r.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            #expect(json["rejected_by_reason"] as? [String: Int] == ["letters": 1], "\(name)")
            return ["rows", "entries", "duplicates_merged", "bad_rows"].reduce(into: [:]) { $0[$1] = json[$1] as? Int }
        }
        let plain = try counts(["--skip-bad-rows"], "plain.cid", pipeline: false)
        #expect(plain == ["rows": 4, "entries": 2, "duplicates_merged": 1, "bad_rows": 1])
        #expect(try counts(["--max-bad-rows", "1"], "pipeline.cid", pipeline: true) == plain)
    }

    /// A build stopped by the bad-row count limit says how much it read rather than giving a
    /// share of a total it never counted; a build that read everything gives the share.
    @Test func badRowCountsSayWhatWasRead() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try Data("79131234567\tA\nbad\tx\n79131234568\tB\nworse\ty\n".utf8).write(to: URL(fileURLWithPath: tsv))
        let stopped = try lookup(["build", "-o", dir.path("a.cid"), tsv, "--no-progress"])
        #expect(stopped.status == 65)
        #expect(stopped.stderr.contains("1 bad row in the first 2 rows read (stopped at the --max-bad-rows limit"), "\(stopped.stderr)")
        #expect(!stopped.stderr.contains("1 bad row of 2"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("a.cid")))

        let read = try lookup(["build", "-o", dir.path("b.cid"), tsv, "--max-bad-rows", "60%"])
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stderr.contains("2 bad rows of 4"), "\(read.stderr)")
    }

    /// `lookup diff OLD NEW` takes database files as well as build directories and stores.
    @Test func diffTakesDatabaseFiles() throws {
        let dir = TempDir()
        try Data(Self.rows.utf8).write(to: URL(fileURLWithPath: dir.path("old.tsv")))
        // New: one removal, one label change, one category change (identify -> block), one addition.
        try Data("79131234567\tPizza Hut\n79131234568\tSushi\n442079460002\tInn\n".utf8).write(to: URL(fileURLWithPath: dir.path("new.tsv")))
        #expect(try lookup(["build", "-o", dir.path("old.cid"), dir.path("old.tsv")]).status == 0)
        #expect(try lookup(["build", "-o", dir.path("new.cid"), dir.path("new.tsv")]).status == 0)
        #expect(try lookup(["build", "-o", dir.path("newdir") + "/", dir.path("new.tsv")]).status == 0)

        let d = try lookup(["diff", dir.path("old.cid"), dir.path("new.cid")])
        #expect(d.status == 0, "\(d.stderr)")
        #expect(d.lines == [
            "-\tidentify\t79131234567\tPizza",
            "-\tidentify\t442079460001\tPub",
            "-\tblock\t79131234568\tSushi",
            "+\tidentify\t79131234567\tPizza Hut",
            "+\tidentify\t79131234568\tSushi",
            "+\tidentify\t442079460002\tInn",
        ], "\(d.lines)")
        // A file against the build directory of the same rows, and a file against itself: nothing.
        #expect(try lookup(["diff", dir.path("new.cid"), dir.path("newdir")]).lines.isEmpty)
        let same = try lookup(["diff", dir.path("old.cid"), dir.path("old.cid")])
        #expect(same.status == 0 && same.lines.isEmpty)
        let missing = try lookup(["diff", dir.path("nope.cid"), dir.path("old.cid")])
        #expect(missing.status == 66 && missing.stderr.contains("nope.cid"))
    }

    /// Before: an input file that exists but cannot be read (`/proc/self/mem`, which the system
    /// refuses to read at its start; a file without read permission for a user who is not root)
    /// ended the build with 74 (EX_IOERR) and "The operation could not be completed". sysexits
    /// says 66 (EX_NOINPUT) for an input file that cannot be opened or read, and the message now
    /// names the system's reason; with and without pipeline options.
    @Test func anInputThatCannotBeReadExitsNoInput() throws {
        let dir = TempDir()
        var unreadable = ["/proc/self/mem"]
        if getuid() != 0 {
            let locked = dir.path("locked.tsv")
            try Data(Self.rows.utf8).write(to: URL(fileURLWithPath: locked))
            chmod(locked, 0)
            unreadable.append(locked)
        }
        for input in unreadable {
            for extra in [[String](), ["--country", "RU"]] {
                let r = try lookup(["build", "-o", dir.path("a.cid"), input] + extra)
                #expect(r.status == 66, "\(input) \(extra): \(r.status) \(r.stderr)")
                #expect(r.stderr.contains(input) && !r.stderr.contains("could not be completed"), "\(r.stderr)")
            }
        }
        #expect(try lookup(["build", "-o", dir.path("a.cid"), "/proc/self/mem"]).stderr.contains("Input/output error"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("a.cid")))
    }

    /// Before: `lookup fetch --region x` said only "unknown option '--region'". An unknown option
    /// a typo away from one the command takes now names it, in every command; a far one does not.
    @Test func anUnknownOptionNamesTheNearestOneTheCommandTakes() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try Data(Self.rows.utf8).write(to: URL(fileURLWithPath: tsv))
        for (args, near) in [(["fetch", "--region", "x"], "--regions"), (["build", "-o", dir.path("a.cid"), tsv, "--contry", "RU"], "--country"),
                             (["79131234567", "--jsn"], "--json"), (["build", "-o", dir.path("a.cid"), tsv, "--skip-bad-row"], "--skip-bad-rows")] {
            let r = try lookup(args)
            #expect(r.status == 64, "\(args): \(r.stderr)")
            #expect(r.errorLines.first == "error: unknown option '\(args.first { $0.hasPrefix("--") }!)' (did you mean \(near)?)", "\(r.stderr)")
        }
        let far = try lookup(["build", "-o", dir.path("a.cid"), tsv, "--xyz"])
        #expect(far.status == 64 && far.errorLines.first == "error: unknown option '--xyz'", "\(far.stderr)")
    }
}
