import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory
import CallerIDQuery

// `lookup NUMBER --db DIR` and `lookup - --db DIR` over build directories and stores of many
// packs ask only the packs whose manifest bounds can hold the number, and give the answers
// asking every pack gives: the model below is that logic, run through the library.

/// One pack of a test directory: entries, ranges, and what its manifest entry says.
private struct TestPack {
    var name: String
    var entries: [Entry] = []
    var ranges: [(UInt64, UInt64, String)] = []
    var priority: Int? = nil
    var kind = "all"
    /// Write `first_number`, `last_number` and `ranges` (false: a manifest of an older build).
    var bounds = true
}

/// Writes the packs and a manifest (the model's own encoder), in the given order.
private func writePacks(_ dir: String, _ packs: [TestPack]) throws {
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    var files: [DirectoryManifest.File] = []
    for p in packs {
        let path = dir + "/" + p.name
        var builder = DatabaseBuilder()
        for (first, last, label) in p.ranges { try builder.addRange(first, last, label: label) }
        for e in p.entries { try builder.add(e.number, label: e.label, category: e.category) }
        _ = try builder.write(to: path)
        let bytes = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        var f = DirectoryManifest.File(file: p.name, region: p.name, kind: p.kind, entries: p.entries.count, bytes: bytes,
                                       xxh3: try Checksum.xxh3(fileAt: path), priority: p.priority)
        if p.bounds {
            let numbers = p.entries.map(\.number)
            f.firstNumber = numbers.min()
            f.lastNumber = numbers.max()
            f.ranges = p.ranges.count
        }
        files.append(f)
    }
    try DirectoryManifest(files: files, datasetVersion: "test").jsonData().write(to: URL(fileURLWithPath: dir + "/manifest.json"))
}

/// The answer lines of asking every pack, the logic before packs were skipped: every database
/// of every `--db` in precedence order (manifest order, higher priority first); one database
/// answers with its own precedence, several with an entry of any first, then a range.
private func askEveryPack(_ dbs: [String], _ numbers: [UInt64]) throws -> [String] {
    var databases: [Database] = []
    for path in dbs {
        let set = try DatabaseSet.resolve(path: path)
        var order = Array(set.files.indices)
        if let m = set.manifest {
            order.sort {
                let a = m.files[$0].priority ?? 0, b = m.files[$1].priority ?? 0
                return a != b ? a > b : $0 < $1
            }
        }
        databases += try order.map { try Database(path: set.files[$0]) }
    }
    return try numbers.map { n in
        var found: Entry? = nil
        if databases.count == 1 {
            found = try databases[0].withAnswer(n) { $0.entry }
        } else {
            // As the phone: the first blocking entry blocks (shown with the first identifying
            // entry's label when there is one), else the first identifying entry; else a range.
            var identifying: Entry? = nil, blocking: Entry? = nil
            for db in databases {
                guard let e = try db.withEntry(n, { $0.entry }) else { continue }
                if e.category.action == .block { blocking = blocking ?? e } else { identifying = identifying ?? e }
            }
            if let b = blocking {
                found = Entry(number: n, label: identifying?.label ?? b.label, category: b.category)
            } else {
                found = identifying
            }
            for db in databases where found == nil && db.rangeCount > 0 { found = try db.withRange(n) { $0.entry } }
        }
        guard let e = found else { return "\(n)\t-" }
        var line = "\(n)\t\(e.label)\t\(e.category.name)"
        if case .range(let first, let last) = e.match { line += "\trange:\(first)-\(last)" }
        return line
    }
}

/// Numbers to ask: every entry, every bound and range end with its neighbours, numbers
/// between and outside every pack.
private func probes(_ packs: [TestPack], extra: [UInt64] = []) -> [UInt64] {
    var set = Set(extra)
    for p in packs {
        for e in p.entries { set.insert(e.number) }
        let ends = [p.entries.map(\.number).min(), p.entries.map(\.number).max()].compactMap { $0 } + p.ranges.flatMap { [$0.0, $0.1] }
        for n in ends { set.formUnion([n - 1, n, n + 1]) }
    }
    return set.sorted()
}

private func randomEntries(_ rng: inout SeededGenerator, count: Int, in span: ClosedRange<UInt64>, label: String,
                           category: Category = .identify) -> [Entry] {
    var numbers = Set<UInt64>()
    while numbers.count < count { numbers.insert(UInt64.random(in: span, using: &rng)) }
    return numbers.sorted().map { Entry(number: $0, label: "\(label) \($0 % 1000)", category: category) }
}

@Suite("Queries over many packs")
struct PackQueryTests {
    /// Packs with overlapping and disjoint bounds, priorities, a block list, a pack of kept
    /// ranges (whose ranges reach far outside its entries), an empty pack, and two packs of an
    /// older manifest without bounds (one with ranges), which must always be asked.
    private func fixture(_ dir: TempDir) throws -> (path: String, packs: [TestPack]) {
        var rng = SeededGenerator(seed: 11)
        let block = try Category.named("spam")
        let packs = [
            TestPack(name: "a.cid", entries: randomEntries(&rng, count: 60, in: 79_130_001_000...79_130_001_999, label: "A")),
            TestPack(name: "a-block.cid", entries: randomEntries(&rng, count: 30, in: 79_130_001_000...79_130_001_999, label: "", category: block),
                     kind: "block"),
            TestPack(name: "b.cid", entries: randomEntries(&rng, count: 60, in: 79_130_001_500...79_130_002_500, label: "B"), priority: 2),
            TestPack(name: "c.cid", entries: randomEntries(&rng, count: 40, in: 79_130_005_000...79_130_005_999, label: "C")),
            TestPack(name: "plan.cid", entries: [Entry(number: 79_130_008_500, label: "Plan entry"), Entry(number: 79_130_008_600, label: "Plan 2")],
                     ranges: [(79_130_000_900, 79_130_001_099, "Plan low"), (79_130_004_000, 79_130_006_999, "Plan mid"),
                              (79_130_008_000, 79_130_008_999, "Plan high")]),
            TestPack(name: "old.cid", entries: randomEntries(&rng, count: 40, in: 79_130_003_000...79_130_003_999, label: "Old")
                        + [Entry(number: 79_130_001_200, label: "Old low")], bounds: false),
            TestPack(name: "oldplan.cid", ranges: [(79_130_007_000, 79_130_007_999, "Old plan")], bounds: false),
            TestPack(name: "top.cid", entries: [Entry(number: 79_130_001_100, label: "Top 1"), Entry(number: 79_130_003_500, label: "Top 2"),
                                                Entry(number: 79_130_005_500, label: "Top 3"), Entry(number: 79_130_009_000, label: "Top 4")],
                     priority: -1),
            TestPack(name: "empty.cid"),
        ]
        let path = dir.path("bundle")
        try writePacks(path, packs)
        return (path, packs)
    }

    @Test func everyAnswerOverADirectoryEqualsAskingEveryPack() throws {
        let dir = TempDir()
        let (bundle, packs) = try fixture(dir)
        _ = try buildDatabase([Entry(number: 79_130_005_001, label: "Extra")], at: dir.path("extra.cid"))
        var plan = DatabaseBuilder()
        try plan.addRange(79_130_000_000, 79_130_009_999, label: "Extra plan")
        try plan.add(79_130_002_600, label: "Extra plan entry")
        _ = try plan.write(to: dir.path("extra-plan.cid"))
        let numbers = probes(packs, extra: [1, 79_130_000_000, 79_130_002_700, 79_130_004_500, 79_130_009_500, 999_999_999_999_999])
        #expect(numbers.count > 250)
        let input = Data(numbers.map { "\($0)\n" }.joined().utf8)

        let store = dir.path("store")
        let install = try lookup(["install", "--store", store, bundle])
        #expect(install.status == 0, "\(install.stderr)")
        for dbs in [[bundle], [store], [bundle, dir.path("extra-plan.cid")], [dir.path("extra-plan.cid"), bundle],
                    [dir.path("extra.cid"), store]] {
            let want = try askEveryPack(dbs, numbers)
            #expect(want.contains { $0.hasSuffix("\t-") } && want.contains { $0.contains("\trange:") })
            let args = dbs.flatMap { ["--db", $0] }
            let batch = try lookup(["-"] + args, stdin: input)
            #expect(batch.status == 0, "\(batch.stderr)")
            #expect(batch.lines == want, "\(dbs): \(zip(batch.lines, want).first { $0 != $1 }.map { "\($0) != \($1)" } ?? "counts")")
            // One process per number: a few of each kind.
            for (k, n) in numbers.enumerated() where k % 23 == 0 {
                let one = try lookup(["\(n)"] + args)
                #expect(one.lines == [want[k]], "\(dbs) \(n)")
                #expect(one.status == (want[k].hasSuffix("\t-") ? 1 : 0))
            }
        }
        let verify = try lookup(["verify", bundle])
        #expect(verify.status == 0, "\(verify.stderr)")

        // A batch longer than one group of numbers answered together (16,384), lines that are
        // not numbers among them: every answer in input order.
        let want = Dictionary(uniqueKeysWithValues: zip(numbers, try askEveryPack([bundle], numbers)))
        var lines: [String] = [], expected: [String] = []
        var rng = SeededGenerator(seed: 4)
        for i in 0..<17_000 {
            if i % 1_000 == 999 {
                lines.append("hello \(i)")
                expected.append("hello \(i)\t-")
            } else {
                let n = numbers.randomElement(using: &rng)!
                lines.append("\(n)")
                expected.append(want[n]!)
            }
        }
        let long = try lookup(["-", "--db", bundle], stdin: Data((lines.joined(separator: "\n") + "\n").utf8))
        #expect(long.status == 0 && long.lines.count == expected.count)
        #expect(long.lines == expected, "\(zip(long.lines, expected).enumerated().first { $1.0 != $1.1 }.map { "line \($0 + 1): \($1.0) != \($1.1)" } ?? "")")
        #expect(long.stderr.contains("stdin:1000:"), "\(long.stderr.prefix(300))")
    }

    /// Directories written by `lookup build`: regions split by prefix with separate block lists
    /// and a top-N set, and a `--keep-ranges` build cut into shards (its ranges in the first).
    @Test func pipelineBuildDirectoriesAnswerAsAskingEveryPack() throws {
        let dir = TempDir()
        var rng = SeededGenerator(seed: 5)
        var rows: [String] = []
        var numbers: [UInt64] = []
        for prefix: UInt64 in [7_913_000_0000, 7_495_000_0000, 1_212_555_0000] {
            for k in 0..<120 {
                let n = prefix + UInt64.random(in: 0...9999, using: &rng)
                numbers.append(n)
                let category = ["identify", "spam", "block", "identify"][k % 4]
                rows.append("\(n)\tName \(k)\t\(category)\t\(UInt64.random(in: 1...1000, using: &rng))")
            }
        }
        try (rows.joined(separator: "\n") + "\n").write(toFile: dir.path("rows.tsv"), atomically: true, encoding: .utf8)
        try "7913\tnsk\n7495\tmsk\n*\tworld\n".write(toFile: dir.path("regions.tsv"), atomically: true, encoding: .utf8)
        let split = dir.path("split")
        let b1 = try lookup(["build", "-o", split, dir.path("rows.tsv"), "--split-by", "prefix", "--region-map", dir.path("regions.tsv"),
                             "--block-list", "separate", "--top", "20", "--weight-field", "4"])
        #expect(b1.status == 0, "\(b1.stderr)")

        var csv = "from;to;label\n"
        for (k, n) in numbers.enumerated() where n / 10_000 == 7_913_000 { csv += "+\(n);+\(n);Entry \(k)\n" }
        csv += "+79130000000;+79130004999;Low range\n+79135000000;+79139999999;High range\n+74950000000;+74950009999;Moscow range\n"
        try csv.write(toFile: dir.path("plan.csv"), atomically: true, encoding: .utf8)
        let ranged = dir.path("ranged") + "/"
        let b2 = try lookup(["build", "-o", ranged, dir.path("plan.csv"), "--format", "csv", "--delimiter", ";", "--number-field", "from",
                             "--range-end-field", "to", "--label-field", "label", "--keep-ranges", "--max-entries", "40"])
        #expect(b2.status == 0, "\(b2.stderr)")
        let manifest = try DirectoryManifest.read(directory: ranged)
        #expect(manifest.files.count >= 3 && manifest.files[0].ranges == 3 && manifest.files.dropFirst().allSatisfy { $0.ranges == 0 },
                "\(manifest.files.map(\.ranges))")

        var probe = Set<UInt64>()
        for n in numbers { probe.formUnion([n - 1, n, n + 1]) }
        probe.formUnion([79_130_000_000, 79_134_999_999, 79_135_000_000, 74_950_000_500, 74_950_010_000, 1, 12_125_559_999])
        let all = probe.sorted()
        for build in [split, ranged] {
            let want = try askEveryPack([build], all)
            let batch = try lookup(["-", "--db", build], stdin: Data(all.map { "\($0)\n" }.joined().utf8))
            #expect(batch.status == 0, "\(batch.stderr)")
            #expect(batch.lines == want, "\(build): \(zip(batch.lines, want).first { $0 != $1 }.map { "\($0) != \($1)" } ?? "counts")")
            let verify = try lookup(["verify", build])
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        }
        // A range of the first shard answers far beyond that shard's entries.
        let far = try lookup(["79139999999", "--db", ranged])
        #expect(far.lines == ["79139999999\tHigh range\tidentify\trange:79135000000-79139999999"])
    }

    /// Before: every pack was opened for every query, so one damaged (or missing) pack anywhere
    /// in a 217-pack directory failed every query with exit 65 (66).
    @Test func aDamagedPackOutsideTheNumbersBoundsDoesNotStopItsQuery() throws {
        let dir = TempDir()
        let bundle = dir.path("bundle")
        try writePacks(bundle, [
            TestPack(name: "a.cid", entries: (100...199).map { Entry(number: $0, label: "A \($0)") }),
            TestPack(name: "b.cid", entries: (1000...1999).map { Entry(number: $0, label: "B \($0)") }),
            TestPack(name: "c.cid", entries: (5000...5099).map { Entry(number: $0, label: "C \($0)") }),
        ])
        let b = bundle + "/b.cid"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: b))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: b))   // truncated: cannot be opened
        try FileManager.default.removeItem(atPath: bundle + "/c.cid")

        let one = try lookup(["150", "--db", bundle])
        #expect(one.status == 0 && one.lines == ["150\tA 150\tidentify"], "\(one.stderr)")
        let miss = try lookup(["3000", "--db", bundle])
        #expect(miss.status == 1 && miss.lines == ["3000\t-"], "\(miss.stderr)")
        let batch = try lookup(["-", "--db", bundle], stdin: Data("150\n3000\n199\n".utf8))
        #expect(batch.status == 0 && batch.lines == ["150\tA 150\tidentify", "3000\t-", "199\tA 199\tidentify"], "\(batch.stderr)")

        // A number the damaged pack may hold opens it: the damage is reported as before.
        let damaged = try lookup(["1500", "--db", bundle])
        #expect(damaged.status == 65 && damaged.stderr.contains("b.cid"), "\(damaged.stderr)")
        let missing = try lookup(["5050", "--db", bundle])
        #expect(missing.status == 66 && missing.stderr.contains("c.cid"), "\(missing.stderr)")
        // In a batch, the answers before it are written first.
        let stopped = try lookup(["-", "--db", bundle], stdin: Data("150\n1500\n160\n".utf8))
        #expect(stopped.status == 65 && stopped.lines == ["150\tA 150\tidentify"] && stopped.stderr.contains("b.cid"), "\(stopped.stderr)")
        // verify still checks every file.
        let verify = try lookup(["verify", bundle])
        #expect(verify.status == 65 && verify.stderr.contains("b.cid") && verify.stderr.contains("c.cid"), "\(verify.stderr)")
    }

    /// Before: `verify` never compared the manifest's bounds with the files; a lookup now
    /// trusts them to leave files unopened, so a misstated bound would hide answers silently.
    @Test func verifyReportsAManifestThatMisstatesAPacksNumbers() throws {
        let dir = TempDir()
        let bundle = dir.path("bundle")
        try writePacks(bundle, [
            TestPack(name: "a.cid", entries: (100...199).map { Entry(number: $0, label: "A \($0)") }),
            TestPack(name: "plan.cid", entries: [Entry(number: 500, label: "P")], ranges: [(400, 499, "R")]),
        ])
        #expect(try lookup(["verify", bundle]).status == 0)
        var m = try DirectoryManifest.read(directory: bundle)
        let good = m
        m.files[0].lastNumber = 150
        try m.jsonData().write(to: URL(fileURLWithPath: bundle + "/manifest.json"))
        var v = try lookup(["verify", bundle])
        #expect(v.status == 65 && v.stderr.contains("a.cid") && v.stderr.contains("last_number 150") && v.stderr.contains("151"), "\(v.stderr)")
        m = good
        m.files[0].firstNumber = 101
        try m.jsonData().write(to: URL(fileURLWithPath: bundle + "/manifest.json"))
        v = try lookup(["verify", bundle, "--json"])
        #expect(v.status == 65 && v.stdout.contains("bad-manifest") && v.stdout.contains("first_number 101"), "\(v.stdout)")
        m = good
        m.files[1].ranges = 0
        try m.jsonData().write(to: URL(fileURLWithPath: bundle + "/manifest.json"))
        v = try lookup(["verify", bundle])
        #expect(v.status == 65 && v.stderr.contains("plan.cid") && v.stderr.contains("ranges 0"), "\(v.stderr)")
    }

    /// A batch opens a pack when a line first needs it. A build directory replaced by a later
    /// build meanwhile (or a store generation removed by later installs) would send it to a
    /// file of another build: it stops with exit 74 and says so, after the answers it gave.
    @Test func aBatchStopsWhenItsDirectoryIsReplacedBeforeAPackIsOpened() throws {
        let binary = try #require(BuiltProducts.lookup, "build the lookup executable first")
        let dir = TempDir()
        let packs = [
            TestPack(name: "a.cid", entries: (100...199).map { Entry(number: $0, label: "A \($0)") }),
            TestPack(name: "b.cid", entries: (1000...1999).map { Entry(number: $0, label: "B \($0)") }),
        ]
        let bundle = dir.path("bundle")
        try writePacks(bundle, packs)
        let child = try CoProcess(binary, ["-", "--db", bundle])
        try child.send("150")
        #expect(child.readLine(within: 20) == "150\tA 150\tidentify")
        // Replaced the way `lookup build` does it: the new directory renamed over the path.
        var newer = packs
        newer[1].entries = (1000...1999).map { Entry(number: $0, label: "New B \($0)") }
        try writePacks(dir.path("next"), newer)
        try FileManager.default.moveItem(atPath: bundle, toPath: dir.path("old"))
        try FileManager.default.moveItem(atPath: dir.path("next"), toPath: bundle)
        try child.send("160")   // its pack is open: answered from the build it was opened in
        #expect(child.readLine(within: 20) == "160\tA 160\tidentify")
        try child.send("1500")
        let end = child.finish(within: 20)
        #expect(end.status == 74 && end.stderr.contains("replaced") && end.stderr.contains("b.cid"), "\(end.stderr)")

        // A store: two more installs remove the generation the batch started with.
        let store = dir.path("store")
        #expect(try lookup(["install", "--store", store, bundle]).status == 0)
        let reader = try CoProcess(binary, ["-", "--db", store])
        try reader.send("150")
        #expect(reader.readLine(within: 20) == "150\tA 150\tidentify")
        for _ in 0..<2 {
            let again = try lookup(["install", "--store", store, dir.path("old")])
            #expect(again.status == 0, "\(again.stderr)")
            _ = try lookup(["install", "--store", store, bundle])
        }
        try reader.send("1500")
        let stop = reader.finish(within: 20)
        #expect(stop.status == 74 && stop.stderr.contains("generation 1") && stop.stderr.contains("removed"), "\(stop.stderr)")
    }

    /// The index gives, for any number, exactly the packs whose spans hold it, in pack order
    /// (random spans and numbers, fixed seed; bounds at 0 and UInt64.max included).
    @Test func thePackIndexFindsExactlyThePacksHoldingANumber() {
        var rng = SeededGenerator(seed: 9)
        for round in 0..<40 {
            var spans: [NumberSpan] = []
            for _ in 0..<Int.random(in: 0...60, using: &rng) {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0: spans.append(.none)
                case 1: spans.append(.all)
                default:
                    let a = round % 2 == 0 ? UInt64.random(in: 0...500, using: &rng) : UInt64.random(in: 0...UInt64.max, using: &rng)
                    let b = round % 2 == 0 ? UInt64.random(in: 0...500, using: &rng) : UInt64.random(in: 0...UInt64.max, using: &rng)
                    spans.append(.within(min(a, b), max(a, b)))
                }
            }
            let index = PackIndex(spans)
            var probes: [UInt64] = [0, 1, UInt64.max, UInt64.max - 1]
            for case .within(let a, let b) in spans { probes += [a, b, a &- 1, b &+ 1] }
            for _ in 0..<200 { probes.append(round % 2 == 0 ? UInt64.random(in: 0...501, using: &rng) : UInt64.random(in: 0...UInt64.max, using: &rng)) }
            for n in probes {
                let want = spans.indices.filter {
                    switch spans[$0] {
                    case .none: false
                    case .all: true
                    case .within(let a, let b): a <= n && n <= b
                    }
                }
                #expect(Array(index.candidates(n)) == want, "round \(round), number \(n)")
            }
        }
    }

    // MARK: Reading the manifest

    /// The scan of `Fields.lookup` gives the full decode's values of the fields it reads, on
    /// manifests as written and on damaged copies (fixed seed): wherever the full decode
    /// accepts a manifest the scan reads the same, and wherever the scan refuses one the full
    /// decode refuses it with the same message.
    @Test func theLookupScanAgreesWithTheFullDecode() throws {
        let dir = TempDir()
        let (bundle, _) = try fixture(dir)
        let written = try Data(contentsOf: URL(fileURLWithPath: bundle + "/manifest.json"))
        func fields(_ m: DirectoryManifest) -> [String] {
            m.files.map { "\($0.file) \($0.bytes) \($0.xxh3) \(String(describing: $0.priority)) \(String(describing: $0.firstNumber)) "
                + "\(String(describing: $0.lastNumber)) \(String(describing: $0.ranges))" }
        }
        let hand = [
            written,
            Data(#"{"files": [{"file": "a.cid", "bytes": 1, "xxh3": "0000000000000001", "priority": -3, "first_number": 18446744073709551615}]}"#.utf8),
            Data(#"{"files": [{"file": "\u0061.cid", "bytes": 1, "xxh3": "0000000000000001"}], "x": [1.5e3, true, null, {"y": "\""}]}"#.utf8),
            Data(#"{"files": [{"file": "a.cid", "bytes": 1.0, "xxh3": "0000000000000001"}]}"#.utf8),
            Data(#"{"files": [{"file": "a.cid", "bytes": 1, "xxh3": "0000000000000001", "ranges": 2, "ranges": 3}]}"#.utf8),
            Data(#"{"files": [{"file": "../a.cid", "bytes": 1, "xxh3": "0000000000000001"}]}"#.utf8),
            Data(#"{"files": [{"file": "a.cid", "bytes": 1, "xxh3": "000000000000001"}]}"#.utf8),
            Data(#"{"files": [{"file": "a.cid", "bytes": 1}]}"#.utf8),
            Data(#"{"files": []} x"#.utf8),
            Data("[]".utf8),
            Data(),
        ]
        var rng = SeededGenerator(seed: 3)
        var damaged: [Data] = []
        for _ in 0..<300 {
            var b = [UInt8](written)
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let i = Int.random(in: 0..<b.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: b[i] = UInt8.random(in: 0...255, using: &rng)
                case 1: b.remove(at: i)
                default: b.insert(Array("{}[]\",:0-\\e".utf8).randomElement(using: &rng)!, at: i)
                }
            }
            damaged.append(Data(b))
        }
        var accepted = 0, refused = 0
        for data in hand + damaged {
            let full = Result { () throws(DirectoryError) in try DirectoryManifest.decode(data, path: "m") }
            let fast = Result { () throws(DirectoryError) in try DirectoryManifest.decode(data, path: "m", fields: .lookup) }
            switch (full, fast) {
            case (.success(let a), .success(let b)):
                #expect(fields(a) == fields(b))
                accepted += 1
            case (.success, .failure(let e)):
                Issue.record("the scan refused what the full decode accepts: \(e.message)")
            case (.failure(let a), .failure(let b)):
                #expect(a == b)
                refused += 1
            case (.failure, .success):
                break   // a wrong type in a field the scan does not read
            }
        }
        #expect(accepted > 3 && refused > 100, "\(accepted) accepted, \(refused) refused")
        #expect(try DirectoryManifest.decode(written, path: "m", fields: .lookup).files[0].region == nil, "the scan reads only the lookup fields")
    }

    /// The library's verification of a directory (`lookup verify`): each pack's outcome under
    /// its own path, a damaged byte refused as corrupt, a missing path refused; and its dump
    /// (`lookup dump`): ascending from where it is asked to start, a lone file's unknown
    /// category refused before anything is written.
    @Test func verificationAndDumpAnswerThroughTheLibrary() throws {
        let dir = TempDir()
        let bundle = dir.path("bundle")
        try writePacks(bundle, [
            TestPack(name: "a.cid", entries: (100...199).map { Entry(number: $0, label: "A \($0)") }),
            TestPack(name: "plan.cid", entries: [Entry(number: 500, label: "P")], ranges: [(400, 499, "R")]),
        ])
        func verify(_ path: String) -> (directory: Bool, outcomes: [String: FileVerification.Outcome]) {
            var outcomes: [String: FileVerification.Outcome] = [:]
            let directory = Verification.verify(path) { outcomes[URL(fileURLWithPath: $0.path).lastPathComponent] = $0.outcome }
            return (directory, outcomes)
        }
        var v = verify(bundle)
        #expect(v.directory && v.outcomes.count == 2)
        if case .intact(let entries, let ranges)? = v.outcomes["a.cid"] { #expect(entries == 100 && ranges == 0) } else { Issue.record("a.cid: \(v.outcomes)") }
        if case .intact(let entries, let ranges)? = v.outcomes["plan.cid"] { #expect(entries == 1 && ranges == 1) } else { Issue.record("plan.cid: \(v.outcomes)") }

        var out = Output(capturing: true)
        try DatabasePaths.resolve(bundle).dump(from: 150, filter: .all, json: false, to: &out)
        let lines = out.withBytes { String(decoding: $0, as: UTF8.self) }.split(separator: "\n").map(String.init)
        let numbers = lines.compactMap { UInt64($0.split(separator: "\t")[0]) }
        #expect(numbers.count == lines.count && Array(numbers.prefix(50)) == Array(150...199) && numbers.last == 500)
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 })
        out.removeAll()
        #expect(throws: QueryError.self) {
            try DatabasePaths.resolve(bundle + "/a.cid").dump(from: 0, filter: .categories(["nosuch"]), json: false, to: &out)
        }
        #expect(out.count == 0)

        let file = bundle + "/a.cid"
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: file)))
        bytes[bytes.count / 2] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        v = verify(bundle)
        if case .refused(let error)? = v.outcomes["a.cid"] { #expect(error.codeName == "corrupt", "\(error)") } else { Issue.record("\(v.outcomes)") }
        if case .intact? = v.outcomes["plan.cid"] {} else { Issue.record("plan.cid: \(v.outcomes)") }
        v = verify(dir.path("missing.cid"))
        if case .refused(let error)? = v.outcomes["missing.cid"] { #expect(!v.directory && error.codeName == "file-not-found") } else { Issue.record("\(v.outcomes)") }
    }
}

