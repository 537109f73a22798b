import Testing
import Foundation
@testable import CallerID

/// `lookup build` with pipeline options: the CLI contract (outputs, errors file, exit codes).
@Suite struct PipelineCLITests {
    @Test func helpListsPipelineOptions() throws {
        let r = try lookup(["build", "--help"])
        #expect(r.status == 0)
        for option in ["--format", "--encoding", "--country", "--split-by", "--max-entries", "--top", "--errors", "--max-bad-rows"] {
            #expect(r.stdout.contains(option), "\(option) missing from build --help")
        }
    }

    @Test func csvWithCountryAndErrorsFile() throws {
        let dir = TempDir()
        let csv = dir.path("stores.csv"), out = dir.path("stores.cid"), errors = dir.path("errors.tsv")
        try Data("name,phone,country\nA,02-758-8163,KR\nB,4.93E+12,DE\nC,(403) 945-8107 ext. 5,CA\nD,,US\n".utf8).write(to: URL(fileURLWithPath: csv))
        // Default: any bad row aborts, nothing written, the errors file still lists them.
        let strict = try lookup(["build", "-o", out, csv, "--country-field", "country", "--errors", errors])
        #expect(strict.status == 65)
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(strict.stderr.contains("\(csv):3: "))
        let tsv = try String(contentsOfFile: errors, encoding: .utf8)
        #expect(splitLines(tsv).first == "file\tline\traw\treason\tmessage")
        #expect(splitLines(tsv).dropFirst().map { $0.split(separator: "\t", omittingEmptySubsequences: false)[3] } == ["scientific-notation"])   // the build stops at the first bad row

        let ok = try lookup(["build", "-o", out, csv, "--country-field", "country", "--max-bad-rows", "50%", "--json"])
        #expect(ok.status == 0, "\(ok.stderr)")
        let s = try #require(try jsonObjects(ok.stdout).first)
        #expect(s["entries"] as? Int == 2)
        #expect(s["bad_rows"] as? Int == 2)
        #expect((s["rejected_by_reason"] as? [String: Int]) == ["no-number": 1, "scientific-notation": 1])
        #expect((s["warnings"] as? [String: Int]) == ["extension-cut": 1])
        #expect(ok.stderr.contains("warning: extension"))
        #expect(try lookup(["14039458107", "--db", out]).stdout == "14039458107\tC\tidentify\n")
        #expect(try lookup(["build", "-o", out, csv, "--country-field", "country", "--max-bad-rows", "1"]).status == 65)
    }

    @Test func directoryOutputsAndUsageErrors() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv"), out = dir.path("out")
        try Data((0..<50).map { "7913123\(String(format: "%04d", $0))\tL\($0 % 3)\t\($0 % 5 == 0 ? "spam" : "")\t\($0)" }.joined(separator: "\n").utf8)
            .write(to: URL(fileURLWithPath: tsv))
        let r = try lookup(["build", "-o", out, tsv, "--max-entries", "20", "--top", "5", "--weight-field", "4", "--block-list", "separate"])
        #expect(r.status == 0, "\(r.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        #expect(files == ["all-1.cid", "all-2.cid", "all-block.cid", "manifest.json", "top.cid"])
        #expect(try lookup(["verify"] + files.filter { $0.hasSuffix(".cid") }.map { "\(out)/\($0)" }).status == 0)
        #expect(try Database(path: "\(out)/top.cid").count == 5)
        for bad in [["--top", "5"], ["--format", "xml"], ["--encoding", "ebcdic"], ["--country", "QQ"], ["--max-bad-rows", "lots"],
                    ["--split-by", "field"], ["--split-by", "prefix"], ["--delimiter", "ab"]] {
            let u = try lookup(["build", "-o", dir.path("x"), tsv] + bad)
            #expect(u.status == 64, "\(bad): \(u.status) \(u.stderr)")
        }
        #expect(try lookup(["build", "-o", dir.path("x"), dir.path("missing.csv")]).status == 66)
    }
}
