import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

/// The merged stream: precedence, allow list, category choice, rules, ranges, bounded heap.
@Suite struct DirectoryMergeTests {
    static let spam = try! Category("spam", action: .block)
    static let collector = try! Category("collector", action: .block)

    @Test func overlappingFilesFollowPriorityThenManifestOrder() throws {
        let dir = TempDir()
        let files = [
            DirectoryTestFile(name: "a.cid", region: "a", entries: [
                Entry(number: 100, label: "A100"), Entry(number: 200, label: "A200"),
                Entry(number: 300, label: "", category: Self.spam), Entry(number: 500, label: "A500"),
            ]),
            DirectoryTestFile(name: "b.cid", region: "b", entries: [
                Entry(number: 100, label: "B100"), Entry(number: 200, label: "B200"),
                Entry(number: 300, label: "", category: Self.collector), Entry(number: 400, label: "B400"),
                Entry(number: 500, label: "", category: Self.collector),
            ], priority: 1),
            DirectoryTestFile(name: "c.cid", region: "c", entries: [
                Entry(number: 100, label: "C100"), Entry(number: 600, label: "C600"),
            ]),
        ]
        try writeBuildDirectory(dir.path("build"), files)
        let snapshot = try DirectorySnapshot(directory: dir.path("build"))
        #expect(snapshot.filesByPrecedence == ["b.cid", "a.cid", "c.cid"])
        let lists = try streamLists(snapshot)
        // b (priority 1) wins 100 and 200; a beats c (listed earlier) on nothing else here.
        #expect(lists.identification.map(\.0) == [100, 200, 400, 500, 600])
        #expect(lists.identification.map(\.1) == ["B100", "B200", "B400", "A500", "C600"])
        // 500 is identified by a and blocked by b: each list is merged on its own.
        #expect(lists.blocking == [300, 500])
        #expect(sameLists(lists, expectedLists(files)))

        // Category choice is applied to the winner: b's "collector" wins 300 over a's "spam".
        let onlySpam = try DirectorySnapshot(directory: dir.path("build"), settings: FeedSettings(blockCategories: ["spam"]))
        #expect(try streamLists(onlySpam).blocking == [])
        let onlyCollector = try DirectorySnapshot(directory: dir.path("build"), settings: FeedSettings(blockCategories: ["collector"]))
        #expect(try streamLists(onlyCollector).blocking == [300, 500])
        // The allow list removes from blocking only.
        let allowed = try DirectorySnapshot(directory: dir.path("build"), settings: FeedSettings(allowList: [500, 300, 999]))
        #expect(try streamLists(allowed).blocking == [])
        #expect(try streamLists(allowed).identification.map(\.0) == [100, 200, 400, 500, 600])
    }

    @Test(arguments: [1 as UInt64, 2, 3, 4])
    func randomOverlapsMatchTheOracle(seed: UInt64) throws {
        let dir = TempDir()
        let files = randomDirectoryFiles(seed: seed, count: 6, entries: 3_000, span: 20_000)
        try writeBuildDirectory(dir.path("build"), files)
        var rng = SeededGenerator(seed: seed &* 31)
        let allow = (0..<500).map { _ in 79_000_000_000 + UInt64.random(in: 0..<20_000, using: &rng) }
        let settings = FeedSettings(allowList: allow, blockCategories: seed % 2 == 0 ? ["spam", "survey"] : nil,
                                    rules: [try BlockingRule("+79 000 01# ###"), try BlockingRule("79000015000..79000016500")])
        let snapshot = try DirectorySnapshot(directory: dir.path("build"), settings: settings)
        #expect(sameLists(try streamLists(snapshot), expectedLists(files, settings: settings)))
        // A sub-range is the same stream cut.
        let range: Range<UInt64> = 79_000_005_000..<79_000_012_345
        #expect(sameLists(try streamLists(snapshot, range: range), expectedLists(files, settings: settings, range: range)))
    }

    @Test func prefixAndRangeRulesExpandIntoBlocking() throws {
        let r = try BlockingRule("+33 6 12 ## ## ##")
        #expect(r.first == 33_612_000_000 && r.last == 33_612_999_999 && r.count == 1_000_000)
        #expect(try BlockingRule("33612000000..33612000009").count == 10)
        #expect(try BlockingRule("+33 6 12 00 00 00 – +33 6 12 00 00 99").count == 100)
        #expect(try BlockingRule("+7 913 123-45-67").count == 1)
        for bad in ["", "+33 6 1# 2", "0612######", "33612abc", "1..2..3", "500..400", "+1 234 567 890 1234 ##"] {
            #expect(throws: DirectoryError.self, "\(bad)") { try BlockingRule(bad) }
        }
        let dir = TempDir()
        try writeBuildDirectory(dir.path("build"), [DirectoryTestFile(name: "x.cid", region: "x", entries: [
            Entry(number: 33_612_000_005, label: "", category: Self.spam),
            Entry(number: 33_612_000_050, label: "Shop"),
            Entry(number: 33_700_000_000, label: "", category: Self.spam),
        ])])
        let settings = FeedSettings(allowList: [33_612_000_007], rules: [try BlockingRule("+33 6 12 00 00 0#"), try BlockingRule("33612000008..33612000012")])
        let lists = try streamLists(try DirectorySnapshot(directory: dir.path("build"), settings: settings))
        // 0…12 from the two (overlapping) rules, 5 also in the file: once; 7 allowed.
        #expect(lists.blocking == [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12].map { 33_612_000_000 + $0 } + [33_700_000_000])
        #expect(lists.identification.map(\.0) == [33_612_000_050])
    }

    @Test func manifestIsReadTolerantly() throws {
        let json = """
            {"files": [{"file": "a.cid", "bytes": 10, "xxh3": "00000000000000ff", "priority": 3, "new": {"x": 1}},
                       {"file": "b.cid", "bytes": 5, "xxh3": "0123456789abcdef", "region": null, "entries": null}], "extra": true}
            """
        let m = try DirectoryManifest.decode(Data(json.utf8), path: "m.json")
        #expect(m.files.map(\.file) == ["a.cid", "b.cid"])
        #expect(m.files[0].priority == 3 && m.files[0].xxh3 == 0xff && m.files[1].regionKey == "b.cid")
        for bad in [#"{"files": [{"file": "a.cid", "bytes": 1}]}"#,
                    #"{"files": [{"file": "../a.cid", "bytes": 1, "xxh3": "0000000000000000"}]}"#,
                    #"{"files": [{"file": "a.cid", "bytes": 1, "xxh3": "xyz"}]}"#,
                    #"{"files": [{"file": "a", "bytes": 1, "xxh3": "0000000000000000"}, {"file": "a", "bytes": 1, "xxh3": "0000000000000000"}]}"#,
                    "not json"] {
            #expect(throws: DirectoryError.self, "\(bad)") { try DirectoryManifest.decode(Data(bad.utf8), path: "m.json") }
        }
    }

    /// mallinfo2 is process-wide: measured in a child process (exit test). 50 overlapping
    /// files of 4,000 entries each, both lists merged; heap sampled every 64 entries. Bound:
    /// 64 KiB plus 6 KiB per open file above the baseline taken after opening the files, and
    /// nothing that grows while streaming.
    @Test func mergeOf50FilesKeepsHeapBounded() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            let files = randomDirectoryFiles(seed: 50, count: 50, entries: 4_000, span: 2_000_000)
            try writeBuildDirectory(dir.path("build"), files)
            let beforeOpen = currentHeapBytes()
            let snapshot = try DirectorySnapshot(directory: dir.path("build"))
            let opened = currentHeapBytes()
            var peak = opened
            var growth = 0
            var seen = 0
            for list in CallDirectoryList.allCases {
                var s = snapshot.stream(list)
                _ = try s.next()   // the first call opens the cursors
                let started = currentHeapBytes()
                peak = max(peak, started)
                var labelBytes = 0
                while try s.next() {
                    labelBytes &+= s.labelByteCount
                    seen += 1
                    if seen & 63 == 0 {
                        let now = currentHeapBytes()
                        peak = max(peak, now)
                        growth = max(growth, now - started)
                    }
                }
                if labelBytes < 0 { exit(4) }
            }
            let report = "50 files: open \(opened - beforeOpen) B; merge peak above open \(peak - opened) B (\((peak - opened) / 50) B per file); growth while streaming \(growth) B; \(seen) entries\n"
            FileHandle.standardError.write(Data(report.utf8))
            guard seen > 150_000 else { exit(3) }
            exit(peak - opened <= 64 * 1024 + 50 * 6 * 1024 && growth <= 1024 ? 0 : 2)
        }
    }
}
