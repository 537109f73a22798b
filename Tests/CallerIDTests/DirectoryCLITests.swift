import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

/// `lookup install`, `lookup feed`, `lookup diff`: the CLI contract.
@Suite struct DirectoryCLITests {
    static let spam = try! Category("spam", action: .block)

    static func v1() -> [DirectoryTestFile] {
        [DirectoryTestFile(name: "a-1.cid", region: "a", entries: (0..<300).map {
            Entry(number: 79_130_000_000 + UInt64($0 * 10), label: "Shop \($0)", category: $0 % 10 == 0 ? spam : .identify)
        }),
         DirectoryTestFile(name: "b-1.cid", region: "b", entries: (0..<200).map {
            Entry(number: 44_200_000_000 + UInt64($0), label: "Pub \($0)")
        })]
    }

    static func v2() -> [DirectoryTestFile] {
        var files = v1()
        files[0].entries.removeFirst(2)                       // 79130000000 (spam) and 79130000010 go
        files[0].entries[0].label = "Renamed"                 // 79130000020 changes label
        files[0].entries.append(Entry(number: 79_139_999_999, label: "New"))
        return files
    }

    @Test func helpForEachCommand() throws {
        for (command, words) in [("install", ["--store", "--rule", "--allow", "--slots"]), ("feed", ["--slot", "--chunk", "--simulate", "--max-entries"]),
                                 ("diff", ["OLD", "NEW", "identify|block"])] {
            let r = try lookup([command, "--help"])
            #expect(r.status == 0 && r.stderr.isEmpty)
            for w in words { #expect(r.stdout.contains(w), "\(command) --help lacks \(w)") }
        }
        let usage = try lookup(["--help"]).stdout
        for c in ["lookup install", "lookup feed", "lookup diff"] { #expect(usage.contains(c)) }
    }

    @Test func installFeedAndDiff() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), Self.v1())
        try writeBuildDirectory(dir.path("v2"), Self.v2())
        let store = dir.path("store")

        let i1 = try lookup(["install", "--store", store, dir.path("v1"), "--json"])
        #expect(i1.status == 0, "\(i1.stderr)")
        let r1 = try #require(try jsonObjects(i1.stdout).first)
        #expect(r1["generation"] as? Int == 1 && (r1["added"] as? [String]) == ["a", "b"])

        // One-shot feed through the streaming checker, then chunked through the simulator.
        let f1 = try lookup(["feed", "--store", store, "--json"])
        #expect(f1.status == 0, "\(f1.stderr)")
        let j1 = try #require(try jsonObjects(f1.stdout).first)
        #expect(j1["identification"] as? Int == 470 && j1["blocking"] as? Int == 30 && j1["requests"] as? Int == 1)
        #expect(j1["error"] is NSNull && (j1["heap_peak_bytes"] as? Int ?? -1) >= 0)
        let f2 = try lookup(["feed", "--store", store, "--chunk", "64", "--simulate", "--slot", "2/2", "--json"])
        let j2 = try #require(try jsonObjects(f2.stdout).first)
        #expect(f2.status == 0 && j2["slot"] as? Int == 2 && j2["slots"] as? Int == 2 && j2["simulated"] as? Bool == true)
        #expect((j2["identification"] as! Int) + (j2["blocking"] as! Int) == 250 && j2["requests"] as? Int == 4)
        // The store's plan has one slot: a run for 2/2 splits anew and says so.
        #expect((j2["note"] as? String)?.contains("the store's plan has 1 slot of at most 1999999; this run split the entries anew into 2") == true, "\(f2.stdout)")
        #expect(j1["note"] is NSNull)
        let resplit = try lookup(["feed", "--store", store, "--slot", "1/2"])
        #expect(resplit.status == 0 && resplit.stderr.contains("note: the store's plan has 1 slot"), "\(resplit.stderr)")
        let human = try lookup(["feed", "--store", store])
        #expect(human.status == 0 && human.stdout.contains("identification  470") && human.stdout.contains("CallKit         OK"))

        // The budget CallKit would refuse: error 5, exit 65.
        let over = try lookup(["feed", "--store", store, "--max-entries", "100", "--simulate", "--json"])
        #expect(over.status == 65)
        let jo = try #require(try jsonObjects(over.stdout).first)
        #expect((jo["error"] as? [String: Any])?["code"] as? Int == 5)
        #expect((jo["note"] as? String)?.contains("do not fit") == true)

        // diff between the build folders, then between a folder and the store.
        let d = try lookup(["diff", dir.path("v1"), dir.path("v2")])
        #expect(d.status == 0)
        #expect(d.lines == [
            "-\tidentify\t79130000010\tShop 1",
            "-\tidentify\t79130000020\tShop 2",
            "-\tblock\t79130000000\tShop 0",
            "+\tidentify\t79130000020\tRenamed",
            "+\tidentify\t79139999999\tNew",
        ])
        #expect(try lookup(["diff", dir.path("v1"), store]).lines.isEmpty)
        let dj = try jsonObjects(try lookup(["diff", store, dir.path("v2"), "--json"]).stdout)
        #expect(dj.count == 5 && dj[0]["op"] as? String == "-" && dj[0]["list"] as? String == "identify" && dj[0]["number"] as? Int == 79_130_000_010)

        // Settings-only install: a rule and an allow list, files hard-linked.
        try Data("# allowed\n+44 20 0000 0005\n".utf8).write(to: URL(fileURLWithPath: dir.path("allow.txt")))
        let s = try lookup(["install", "--store", store, "--rule", "+44 20 0000 00##", "--allow", dir.path("allow.txt")])
        #expect(s.status == 0, "\(s.stderr)")
        #expect(s.stdout.contains("installed generation 2 (previous 1 kept)") && s.stdout.contains("3 hard-linked") == false && s.stdout.contains("2 hard-linked"))
        let blocked = try lookup(["diff", dir.path("v1"), store]).lines
        #expect(blocked.count == 99 && blocked.allSatisfy { $0.hasPrefix("+\tblock\t442000000") } && !blocked.contains("+\tblock\t44200000005\t"))

        // What a phone does after that install: the delta from the previous generation.
        let delta = try lookup(["feed", "--store", store, "--from-previous", "--json"])
        #expect(delta.status == 0, "\(delta.stderr)")
        let dj2 = try #require(try jsonObjects(delta.stdout).first)
        #expect(dj2["mode"] as? String == "delta" && dj2["from_generation"] as? Int == 1)
        #expect(dj2["blocking"] as? Int == 99 && dj2["identification"] as? Int == 0 && dj2["removed_blocking"] as? Int == 0)
        #expect(dj2["delta_changes"] as? Int == 99 && dj2["full_reload_calls"] as? Int == 2 + 500 + 99)
    }

    @Test func errorsAndExitCodes() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), Self.v1())
        let store = dir.path("store")
        #expect(try lookup(["install", dir.path("v1")]).status == 64)                               // no --store
        #expect(try lookup(["install", "--store", store, dir.path("nope")]).status == 66)
        #expect(try lookup(["feed", "--store", store]).status == 66)                                  // nothing installed
        #expect(try lookup(["install", "--store", store, dir.path("v1")]).status == 0)
        #expect(try lookup(["feed", "--store", store, "--slot", "3/2"]).status == 64)
        #expect(try lookup(["feed", "--store", store, "--chunk", "0"]).status == 64)
        #expect(try lookup(["install", "--store", store, "--rule", "+33 6 12 ## a"]).status == 64)
        let bigRule = try lookup(["install", "--store", store, "--rule", "+1 ### ### ####"])
        #expect(bigRule.status == 64 && bigRule.stderr.contains("expands to 10,000,000,000 numbers"))   // no extension holds it: a bad rule
        #expect(try lookup(["diff", dir.path("v1")]).status == 64)

        // A truncated file: refused (65), the store keeps generation 1 in use.
        try writeBuildDirectory(dir.path("bad"), DirectoryCLITests.v2())
        let victim = dir.path("bad/a-1.cid")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: victim))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: victim))
        let bad = try lookup(["install", "--store", store, dir.path("bad")])
        #expect(bad.status == 65 && bad.stderr.contains("a-1.cid") && bad.stderr.contains("truncated"))
        #expect(try lookup(["diff", dir.path("v1"), store]).lines.isEmpty)
        #expect(try lookup(["feed", "--store", store]).status == 0)
    }

    /// A build directory holding a format 1.0 file (its manifest size and XXH3 right)
    /// is refused by `lookup install` with the rebuild hint, exit 65, and the store keeps the
    /// generation it had in use.
    @Test func installRefusesFormat1Bundles() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), Self.v1())
        let store = dir.path("store")
        #expect(try lookup(["install", "--store", store, dir.path("v1")]).status == 0)
        let old = dir.path("old")
        try FileManager.default.createDirectory(atPath: old, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: CorruptionTests.fixture1_0, toPath: old + "/old-1.cid")
        let bytes = try FileManager.default.attributesOfItem(atPath: old + "/old-1.cid")[.size] as! Int
        let hash = try Checksum.xxh3(fileAt: old + "/old-1.cid")
        let manifest = """
            {"manifest_version": 1, "format_version": "1.0", "dataset_version": "old", "build_time": "2026-01-01T00:00:00Z",
             "generator": "tests", "max_entries": 1999999, "files": [
            {"file": "old-1.cid", "region": "old", "kind": "all", "shard": 1, "shards": 1, "entries": 3,
             "bytes": \(bytes), "xxh3": "\(hex16(hash))", "format_version": "1.0"}
            ]}
            """
        try Data(manifest.utf8).write(to: URL(fileURLWithPath: old + "/manifest.json"))
        let r = try lookup(["install", "--store", store, old])
        #expect(r.status == 65)
        #expect(r.stderr.contains("old-1.cid") && r.stderr.contains("unsupported version 1.0") && r.stderr.contains("rebuild"), "\(r.stderr)")
        #expect(try lookup(["diff", dir.path("v1"), store]).lines.isEmpty)  // generation 1 still in use
    }
}
