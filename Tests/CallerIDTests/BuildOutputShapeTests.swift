import Foundation
import Testing
@testable import CallerID
@testable import CallerIDPipeline

// Whether `lookup build -o OUT` writes one database file or a build directory is decided by the
// options and OUT, never by the data: a single database file is not a Call Directory
// extension and has no entry cap. A mismatch is a usage error said before any input is read.

@Suite struct BuildOutputShapeTests {
    private static func isDirectory(_ path: String) -> Bool? {
        var d: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &d) ? d.boolValue : nil
    }

    // Before: more entries than maxEntries (default 1,999,999) silently turned `-o d.cid` into a
    // folder `d.cid/` of shards (3.9M rows: two databases, and `lookup dump --db d.cid` failed),
    // while the same options with fewer entries wrote a file.
    @Test func outputShapeComesFromTheOptionsNeverFromTheData() throws {
        let dir = TempDir()
        for count in [1, 5] {
            let tsv = dir.path("in-\(count).tsv")
            try write((0..<count).map { "7913123456\($0)\tShop \($0)\n" }.joined(), tsv)
            // No option asks for a directory: one file holding everything.
            let plain = try #require(try runPipeline([tsv], PipelineOptions(), to: dir.path("one-\(count).cid")).summary)
            #expect(!plain.isDirectory && Self.isDirectory(dir.path("one-\(count).cid")) == false)
            #expect(try entries(dir.path("one-\(count).cid")).count == count)
            // A cap asks for a build directory: shards, whatever the count.
            var capped = PipelineOptions()
            capped.maxEntries = 2
            let shards = try #require(try runPipeline([tsv], capped, to: dir.path("capped-\(count)")).summary)
            #expect(shards.isDirectory && Self.isDirectory(dir.path("capped-\(count)")) == true, "\(count) entries")
            #expect(shards.files.count == (count + 1) / 2)
            #expect(FileManager.default.fileExists(atPath: dir.path("capped-\(count)/manifest.json")))
        }
    }

    // Before: a build directory asked for with `-o` an existing file read and sorted every row,
    // then failed with "-o must name a directory" and exit 74 (56 s for 2M rows); a folder that
    // is not a build's likewise. Now exit 64 before any input is read: the input here does not
    // exist, which a build that read it first would report (66).
    @Test(arguments: [
        (["--max-entries", "2"], "file.cid", "--max-entries"),
        (["--split-by", "field", "--region-field", "3"], "file.cid", "--split-by"),
        (["--block-list", "separate"], "file.cid", "--block-list separate"),
        ([String](), "notabuild/", "not the output of a build"),
        (["--max-entries", "2"], "notabuild", "not the output of a build"),
    ])
    func mismatchedOutputIsAUsageErrorBeforeReading(options: [String], output: String, says: String) throws {
        let dir = TempDir()
        try write("an earlier file", dir.path("file.cid"))
        try FileManager.default.createDirectory(atPath: dir.path("notabuild"), withIntermediateDirectories: false)
        try write("precious", dir.path("notabuild/notes.txt"))
        let r = try lookup(["build", "-o", dir.path(output), dir.path("missing.tsv")] + options)
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains(says), "\(r.stderr)")
        #expect(try String(contentsOfFile: dir.path("file.cid"), encoding: .utf8) == "an earlier file")
        #expect(try String(contentsOfFile: dir.path("notabuild/notes.txt"), encoding: .utf8) == "precious")
    }

    // Before: `-o d.cid --max-entries 2` wrote a file for 1 entry and a folder for 3.
    @Test func maxEntriesAlwaysWritesABuildDirectory() throws {
        let dir = TempDir()
        try write("79131234567\tOne\n", dir.path("in.tsv"))
        let r = try lookup(["build", "-o", dir.path("d.cid"), dir.path("in.tsv"), "--max-entries", "2"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.isDirectory(dir.path("d.cid")) == true)
        #expect(r.stdout.hasPrefix("wrote \(dir.path("d.cid"))/ (1 database and manifest.json)"), "\(r.stdout)")
    }
}

// Before: a build directory was created 0700 (mkdtemp) and new files 0644 whatever the umask,
// so `rsync -a` of a build carried 0700 to a web root. Now folders and files follow the umask.
@Suite struct BuildOutputPermissionTests {
    private static func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test(arguments: [0o022, 0o002, 0o027])
    func foldersAndFilesFollowTheUmask(umask: Int) throws {
        let dir = TempDir()
        let lookupPath = try #require(BuiltProducts.lookup, "\(BuiltProducts.missing("lookup"))").path
        try "79131234567\tOne\nbad\trow\n".write(toFile: dir.path("in.tsv"), atomically: false, encoding: .utf8)
        func build(_ args: [String]) throws {
            // The umask of the child only: the test process's is shared with tests running beside it.
            let quoted = ([lookupPath, "build"] + args).map { "'\($0)'" }.joined(separator: " ")
            let r = try runTool("/bin/sh", ["-c", "umask \(String(umask, radix: 8)) && exec \(quoted)"])
            #expect(r.status == 0, "\(r.stderr)")
        }
        try build(["-o", dir.path("bundle") + "/", dir.path("in.tsv"), "--skip-bad-rows", "--errors", dir.path("errors.tsv")])
        try build(["-o", dir.path("one.cid"), dir.path("in.tsv"), "--skip-bad-rows"])
        #expect(try Self.mode(dir.path("bundle")) == 0o777 & ~umask)
        for file in ["bundle/all.cid", "bundle/manifest.json", "errors.tsv", "one.cid"] {
            #expect(try Self.mode(dir.path(file)) == 0o666 & ~umask, "\(file)")
        }
        // A file that is replaced keeps its own bits.
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: dir.path("one.cid"))
        try build(["-o", dir.path("one.cid"), dir.path("in.tsv"), "--skip-bad-rows"])
        #expect(try Self.mode(dir.path("one.cid")) == 0o640)
    }
}
