import Foundation
import Testing
@testable import CallerID

// `lookup NUMBER` with ranges: match kinds in TSV and JSON, several --db, batch mode, and the
// build, info and verify commands on a numbering plan.

@Suite struct RangeCLITests {
    /// plan.cid: two ranges and one entry inside the first; dir.cid: a directory with an entry
    /// inside the second range and another that the plan also holds.
    func fixture(_ dir: TempDir) throws -> (plan: String, directory: String) {
        var plan = DatabaseBuilder()
        try plan.addRange(79_130_000_000, 79_139_999_999, label: "МТС, Новосибирская область")
        try plan.addRange(79_160_000_000, 79_160_099_999, label: "spam range", category: .block)
        try plan.add(79_130_000_005, label: "Plan entry")
        _ = try plan.write(to: dir.path("plan.cid"))
        var directory = DatabaseBuilder()
        try directory.add(79_160_000_007, label: "Pizza Hut")
        try directory.add(79_130_000_005, label: "Directory entry")
        try directory.addRange(79_130_000_000, 79_130_999_999, label: "directory range")
        _ = try directory.write(to: dir.path("dir.cid"))
        return (dir.path("plan.cid"), dir.path("dir.cid"))
    }

    @Test func tsvAndJSONSayHowANumberWasFound() throws {
        let dir = TempDir()
        let (plan, _) = try fixture(dir)
        var r = try lookup(["79130000001", "--db", plan])
        #expect(r.status == 0)
        #expect(r.lines == ["79130000001\tМТС, Новосибирская область\tidentify\trange:79130000000-79139999999"])
        r = try lookup(["79130000005", "--db", plan])
        #expect(r.lines == ["79130000005\tPlan entry\tidentify"])   // entries: three columns, as before
        r = try lookup(["79150000000", "--db", plan])
        #expect(r.status == 1)
        #expect(r.lines == ["79150000000\t-"])

        r = try lookup(["79160000042", "--db", plan, "--json"])
        let o = try #require(try jsonObjects(r.stdout).first)
        #expect(o["match"] as? String == "range")
        #expect((o["range"] as? [Any])?.compactMap(uint64) == [79_160_000_000, 79_160_099_999])
        #expect(o["category"] as? String == "block")
        r = try lookup(["79130000005", "--db", plan, "--json"])
        let e = try #require(try jsonObjects(r.stdout).first)
        #expect(e["match"] as? String == "entry")
        #expect(e["range"] == nil)
    }

    @Test func severalDatabasesEntriesFirstThenEarlierDb() throws {
        let dir = TempDir()
        let (plan, directory) = try fixture(dir)
        // An entry of the later db wins over a range of the earlier one.
        var r = try lookup(["79160000007", "--db", plan, "--db", directory])
        #expect(r.lines == ["79160000007\tPizza Hut\tidentify"])
        // Entries in both: the earlier --db wins.
        r = try lookup(["79130000005", "--db", plan, "--db", directory])
        #expect(r.lines == ["79130000005\tPlan entry\tidentify"])
        r = try lookup(["79130000005", "--db", directory, "--db", plan])
        #expect(r.lines == ["79130000005\tDirectory entry\tidentify"])
        // Ranges in both: the earlier --db wins (whatever their widths).
        r = try lookup(["79130000006", "--db", plan, "--db", directory])
        #expect(r.lines == ["79130000006\tМТС, Новосибирская область\tidentify\trange:79130000000-79139999999"])
        r = try lookup(["79130000006", "--db", directory, "--db", plan])
        #expect(r.lines == ["79130000006\tdirectory range\tidentify\trange:79130000000-79130999999"])
        // LOOKUP_DB still works alone.
        r = try lookup(["79130000006"], environment: ["LOOKUP_DB": plan])
        #expect(r.lines.first?.hasSuffix("range:79130000000-79139999999") == true)
    }

    @Test func batchModeAnswersTheSameWay() throws {
        let dir = TempDir()
        let (plan, directory) = try fixture(dir)
        let input = "79160000007\n79130000001\n79150000000\n"
        let r = try lookup(["-", "--db", plan, "--db", directory], stdin: Data(input.utf8))
        #expect(r.lines == ["79160000007\tPizza Hut\tidentify",
                            "79130000001\tМТС, Новосибирская область\tidentify\trange:79130000000-79139999999",
                            "79150000000\t-"])
        let j = try lookup(["-", "--db", plan, "--json"], stdin: Data(input.utf8))
        #expect(try jsonObjects(j.stdout).map { $0["match"] as? String } == ["range", "range", nil])
    }

    @Test func buildKeepRangesInfoAndVerify() throws {
        let dir = TempDir()
        let csv = dir.path("plan.csv")
        try """
        code;from;to;operator;region
        913;0;9999999;МТС;Новосибирская область
        913;5000000;5000099;Билайн;
        914;1;1;Ростелеком;Москва
        915;0;99;;Омск

        """.write(toFile: csv, atomically: true, encoding: .utf8)
        let out = dir.path("plan.cid")
        let b = try lookup(["build", "-o", out, "--format", "csv", "--delimiter", ";", "--number-prefix-field", "1",
                            "--number-field", "2", "--range-end-field", "3", "--pad-number", "7", "--label-field", "4",
                            "--label-field", "5", "--country", "RU", "--keep-ranges", "--json", csv])
        #expect(b.status == 0, "\(b.stderr)")
        let summary = try #require(try jsonObjects(b.stdout).first)
        #expect(uint64(summary["ranges_kept"]) == 4)   // the narrower range cuts the wide one in two
        #expect(uint64(summary["entries"]) == 1)
        var r = try lookup(["79135000050", "--db", out])
        #expect(r.lines == ["79135000050\tБилайн\tidentify\trange:79135000000-79135000099"])
        r = try lookup(["79135000100", "--db", out])
        #expect(r.lines == ["79135000100\tМТС, Новосибирская область\tidentify\trange:79135000100-79139999999"])
        r = try lookup(["79140000001", "--db", out])
        #expect(r.lines == ["79140000001\tРостелеком, Москва\tidentify"])
        r = try lookup(["79150000050", "--db", out])
        #expect(r.lines == ["79150000050\tОмск\tidentify\trange:79150000000-79150000099"])
        let info = try lookup(["info", out, "--json"])
        #expect(uint64(try jsonObjects(info.stdout).first?["ranges"]) == 4)
        #expect(try lookup(["info", out]).stdout.contains("ranges            4 in "))
        let v = try lookup(["verify", out])
        #expect(v.lines == ["\(out): OK (1 entries, 4 ranges)"])
        // dump lists entries only.
        #expect(try lookup(["dump", "--db", out]).lines == ["79140000001\tРостелеком, Москва\tidentify"])
    }
}
