import Foundation
import Testing
@testable import CallerID
@testable import CallerIDPipeline

/// The bounded-memory build (`lookup build --memory`, `BuildOptions.memoryLimit`): rows beyond
/// the limit are sorted in runs spilled beside the output and merged when it is written. Its
/// output must be the in-memory build's, byte for byte, and a killed or failed build must leave
/// the old output and, after the next build, no temporaries. (Before `--memory` every row
/// stayed in memory: 4M rows took 257-336 MB, 40M would not fit a small machine.)
@Suite struct BoundedBuildTests {
    /// A memory limit that makes runs of a few hundred rows.
    static let tinyMemory = 16 * 1024

    /// TSV rows of plausible numbers (so every build takes them), with repeats, several
    /// categories and labels, and a region column; `bad` rows with a broken number.
    static func tsv(rows: Int, seed: UInt64, bad: Int = 0, regions: Bool = false) -> String {
        var rng = SeededGenerator(seed: seed)
        var lines: [String] = []
        var numbers: [UInt64] = []
        let categories = ["", "spam", "taxi", "collector", "identify"]
        let regionNames = ["Москва", "Île-de-France", "서울", "Texas"]
        for i in 0..<rows {
            let number = !numbers.isEmpty && rng.next() % 5 == 0
                ? numbers[Int(rng.next() % UInt64(numbers.count))]
                : plausibleNumbers.lowerBound + rng.next() % 900_000_000
            numbers.append(number)
            let label = rng.next() % 3 == 0 ? "Business \(rng.next() % 400)" : sampleLabels[Int(rng.next() % UInt64(sampleLabels.count))]
            var line = "\(number)\t\(label)\t\(categories[Int(rng.next() % 5)])"
            if regions { line += "\t" + regionNames[Int(number % 4)] }
            if i < bad { line = "7-not-a-number-\(i)\tx" }
            lines.append(line)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func spilledBuildWritesTheInMemoryBytes(seed: UInt64) throws {
        let dir = TempDir()
        let (records, _) = randomRecords(count: 6_000 + Int(seed) * 700, seed: seed, duplicateRate: 0.2)
        var options = BuildOptions()
        options.blockSize = [256, 64, 1024, 7, 256][Int(seed) - 1]
        options.compressLabels = seed != 3
        var memory = DatabaseBuilder(options: options)
        options.memoryLimit = Self.tinyMemory
        var bounded = DatabaseBuilder(options: options, spillingNextTo: dir.path("b.cid"))
        for r in records {
            try memory.add(r.number, label: r.label, category: r.category)
            try bounded.add(r.number, label: r.label, category: r.category)
        }
        #expect(bounded.runsSpilled > 3)
        #expect(bounded.count == memory.count)
        let a = try memory.write(to: dir.path("a.cid"))
        let b = try bounded.write(to: dir.path("b.cid"))
        #expect(a == b)
        #expect(try Data(contentsOf: dir.url.appendingPathComponent("a.cid")) == Data(contentsOf: dir.url.appendingPathComponent("b.cid")))
        // Written again, the same bytes (the rows in memory are spilled once).
        let again = try bounded.write(to: dir.path("c.cid"))
        #expect(again == a)
        #expect(try Data(contentsOf: dir.url.appendingPathComponent("a.cid")) == Data(contentsOf: dir.url.appendingPathComponent("c.cid")))
        try Database(path: dir.path("b.cid")).verify()
        // A row added after a write (a number again, another label): the next write has it.
        try memory.add(records[0].number, label: "Later", category: .block)
        try bounded.add(records[0].number, label: "Later", category: .block)
        #expect(try memory.write(to: dir.path("a.cid")) == bounded.write(to: dir.path("b.cid")))
        #expect(try Data(contentsOf: dir.url.appendingPathComponent("a.cid")) == Data(contentsOf: dir.url.appendingPathComponent("b.cid")))
    }

    /// More runs than one merge reads at once are merged into one first (rows in order).
    @Test func manyRunsAreMergedInStages() throws {
        let dir = TempDir()
        let (records, _) = randomRecords(count: 30_000, seed: 9, duplicateRate: 0.3)
        var options = BuildOptions()
        var memory = DatabaseBuilder(options: options)
        options.memoryLimit = 12 * 1024
        var bounded = DatabaseBuilder(options: options, spillingNextTo: dir.path("b.cid"))
        for r in records {
            try memory.add(r.number, label: r.label, category: r.category)
            try bounded.add(r.number, label: r.label, category: r.category)
        }
        #expect(bounded.runsSpilled > SpilledRuns.maxRuns)
        // Merged in tiers of 16: a row is written again once per level it reaches (a level L
        // takes 16^L runs: two for these 344), not once per 64 runs spilled after it (2.8 times
        // each row here).
        let levels = Int((log(Double(bounded.runsSpilled)) / log(Double(SpilledRuns.fanIn))).rounded(.down))
        #expect(bounded.rowsMerged <= records.count * levels, "\(bounded.rowsMerged) rows merged for \(records.count) rows in \(bounded.runsSpilled) runs")
        #expect(try memory.write(to: dir.path("a.cid")) == bounded.write(to: dir.path("b.cid")))
        #expect(try Data(contentsOf: dir.url.appendingPathComponent("a.cid")) == Data(contentsOf: dir.url.appendingPathComponent("b.cid")))
    }

    /// Per-region outputs, separate block lists and shards: every database and the manifest.
    @Test(arguments: [11, 12] as [UInt64])
    func spilledPipelineWritesTheInMemoryOutputs(seed: UInt64) throws {
        let dir = TempDir()
        try Self.tsv(rows: 5_000, seed: seed, regions: true).write(toFile: dir.path("in.tsv"), atomically: false, encoding: .utf8)
        func build(_ output: String, memory: Int?) throws -> (PipelineSummary, runs: Int) {
            var options = PipelineOptions()
            options.split = .field
            options.regionField = .position(4)
            options.blockList = seed == 11 ? .separate : .combined
            options.maxEntries = 700
            options.buildTime = 1_700_000_000
            options.buildOptions.memoryLimit = memory
            let pipeline = try Pipeline(options: options)
            pipeline.prepare(output: dir.path(output))
            try pipeline.add(file: dir.path("in.tsv"))
            return (try pipeline.write(to: dir.path(output)), pipeline.spilled?.runs.count ?? 0)
        }
        let (a, _) = try build("a", memory: nil)
        let (b, runs) = try build("b", memory: Self.tinyMemory)
        #expect(runs > 3)
        #expect(a.files == b.files)
        #expect(a.files.count > 6)
        #expect((a.rowsRead, a.numbersAccepted, a.duplicatesMerged, a.distinctLabels, a.datasetVersion)
                == (b.rowsRead, b.numbersAccepted, b.duplicatesMerged, b.distinctLabels, b.datasetVersion))
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path("a")).sorted()
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("b")).sorted() == names)
        for name in names {
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("a/\(name)"))) == Data(contentsOf: URL(fileURLWithPath: dir.path("b/\(name)"))), "\(name)")
        }
        // The runs went with the build (the pipeline).
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["a", "b", "in.tsv"])
    }

    /// Through `lookup build`: the same rows refused, the same report, the same summary and file.
    @Test func boundedCLIBuildReportsWhatTheInMemoryBuildReports() throws {
        let lookup = try #require(BuiltProducts.lookup, Comment(rawValue: BuiltProducts.missing("lookup")))
        let dir = TempDir()
        try Self.tsv(rows: 8_000, seed: 21, bad: 30).write(toFile: dir.path("in.tsv"), atomically: false, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: dir.path("a"), withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: dir.path("b"), withIntermediateDirectories: false)
        for pipelineArgs in [[], ["--format", "tsv", "--header", "no"]] {
            let a = try runTool(lookup.path, ["build", "-o", dir.path("a/out.cid"), dir.path("in.tsv"), "--skip-bad-rows", "--json"] + pipelineArgs)
            let b = try runTool(lookup.path, ["build", "-o", dir.path("b/out.cid"), dir.path("in.tsv"), "--skip-bad-rows", "--json",
                                              "--memory", "16K"] + pipelineArgs)
            #expect(a.status == 0 && b.status == 0, "\(a.stderr) \(b.stderr)")
            #expect(a.stderr == b.stderr)
            func withoutTimes(_ s: String) -> String {
                s.replacingOccurrences(of: #""seconds":[0-9.]+"#, with: "", options: .regularExpression)
                    .replacingOccurrences(of: dir.path("a/"), with: "").replacingOccurrences(of: dir.path("b/"), with: "")
            }
            #expect(withoutTimes(a.stdout) == withoutTimes(b.stdout))
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("a/out.cid"))) == Data(contentsOf: URL(fileURLWithPath: dir.path("b/out.cid"))))
        }
        let bad = try runTool(lookup.path, ["build", "-o", dir.path("c.cid"), dir.path("in.tsv"), "--memory", "12"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--memory takes a size"))
    }

    /// Names beside `path` that a build of it may leave: `.NAME.tmp-…`.
    static func temporaries(beside path: String) throws -> [String] {
        let url = URL(fileURLWithPath: path)
        let name = url.lastPathComponent
        return try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
            .filter { $0.hasPrefix(".\(name).tmp-") }
    }

    /// kill -9 while runs are being spilled: the old output stays, the runs stay until the next
    /// build of the same output, which removes them.
    @Test func killedBuildLeavesTheOldOutputAndTheNextBuildRemovesItsRuns() throws {
        let lookup = try #require(BuiltProducts.lookup, Comment(rawValue: BuiltProducts.missing("lookup")))
        let dir = TempDir()
        try Self.tsv(rows: 200, seed: 31).write(toFile: dir.path("old.tsv"), atomically: false, encoding: .utf8)
        try Self.tsv(rows: 120_000, seed: 32).write(toFile: dir.path("in.tsv"), atomically: false, encoding: .utf8)
        let out = dir.path("out.cid")
        #expect(try runTool(lookup.path, ["build", "-o", out, dir.path("old.tsv")]).status == 0)
        let old = try Data(contentsOf: URL(fileURLWithPath: out))

        let process = Process()
        process.executableURL = lookup
        process.arguments = ["build", "-o", out, dir.path("in.tsv"), "--memory", "64K"]
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning, Date() < deadline, try Self.temporaries(beside: out).isEmpty { usleep(1000) }
        #expect(process.isRunning, "the build ended before its runs could be seen")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == old)
        #expect(try !Self.temporaries(beside: out).isEmpty)

        let next = try runTool(lookup.path, ["build", "-o", out, dir.path("old.tsv"), "--memory", "64K"])
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try Self.temporaries(beside: out).isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == old)
    }

    /// A killed build's runs go as soon as the next bounded build of the output spills, even
    /// when that build fails too (before, only a build that finished removed them).
    @Test func aBuildThatSpillsRemovesTheRunsOfKilledBuildsWhenItStarts() throws {
        let dir = TempDir()
        var rows = try Self.tsv(rows: 20_000, seed: 33)
        rows += "not a number\tBad\n"
        try rows.write(toFile: dir.path("in.tsv"), atomically: false, encoding: .utf8)
        let out = dir.path("out.cid")
        let stale = dir.path(".out.cid.tmp-killed")
        try FileManager.default.createDirectory(atPath: stale, withIntermediateDirectories: true)
        try Data(count: 4096).write(to: URL(fileURLWithPath: stale + "/run-1"))
        let failed = try lookup(["build", "-o", out, dir.path("in.tsv"), "--memory", "64K"])
        #expect(failed.status == 65, "\(failed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(try Self.temporaries(beside: out).isEmpty)
    }

    /// A build that fails while its last run is still being written on the other core leaves
    /// no spill folder once the pipeline is gone: the pipeline waits for the run (before, a
    /// tool that exited on the error left the folder behind, one time in seven under load).
    @Test(arguments: [false, true])
    func aFailedBuildLeavesNoSpillFolderOnceItIsGone(directory: Bool) throws {
        let dir = TempDir()
        try (Self.tsv(rows: 4_000, seed: 33, regions: directory) + "not a number\tBad\n")
            .write(toFile: dir.path("in.tsv"), atomically: false, encoding: .utf8)
        let out = dir.path(directory ? "out" : "out.cid")
        for _ in 0..<5 {
            do {
                var options = PipelineOptions()
                options.buildOptions.memoryLimit = Self.tinyMemory
                if directory {
                    options.split = .field
                    options.regionField = .position(4)
                }
                let pipeline = try Pipeline(options: options)
                pipeline.prepare(output: out)
                #expect(throws: PipelineError.self) { try pipeline.add(file: dir.path("in.tsv")) }
            }
            #expect(try Self.temporaries(beside: out).isEmpty)
        }
    }

    /// A disk that fills up while runs are spilled or while the output is written: exit 74,
    /// the message of the failed write, the old output as it was, no temporaries left.
    @Test func fullDiskFailsCleanlyWhereverItHappens() throws {
        let lookup = try #require(BuiltProducts.lookup, Comment(rawValue: BuiltProducts.missing("lookup")))
        let dir = TempDir()
        for directory in [false, true] {
            try Self.tsv(rows: 200, seed: 41, regions: directory).write(toFile: dir.path("old.tsv"), atomically: false, encoding: .utf8)
            try Self.tsv(rows: 1_500, seed: 42, regions: directory).write(toFile: dir.path("in.tsv"), atomically: false, encoding: .utf8)
            let inputBytes = try Data(contentsOf: URL(fileURLWithPath: dir.path("in.tsv"))).count
            let out = dir.path(directory ? "bundle" : "out.cid")
            let extra = directory ? ["--split-by", "field", "--region-field", "4", "--header", "no"] : []
            let first = try runTool(lookup.path, ["build", "-o", out, dir.path("old.tsv")] + extra)
            #expect(first.status == 0, "\(first.stderr)")
            func snapshot() throws -> [String: Data] {
                guard directory else { return ["": try Data(contentsOf: URL(fileURLWithPath: out))] }
                var files: [String: Data] = [:]
                for name in try FileManager.default.contentsOfDirectory(atPath: out) {
                    files[name] = try Data(contentsOf: URL(fileURLWithPath: "\(out)/\(name)"))
                }
                return files
            }
            var old = try snapshot()
            var failedSpilling = false, failedWriting = false
            func build(diskFullAfter limit: Int) throws -> Bool {
                let r = try runTool(lookup.path, ["build", "-o", out, dir.path("in.tsv"), "--memory", "16K"] + extra,
                                    environment: ["LOOKUP_TEST_DISK_FULL_AFTER": String(limit)])
                #expect(try Self.temporaries(beside: out).isEmpty, "limit \(limit)")
                if r.status == 0 {
                    old = try snapshot()
                    return true
                }
                #expect(r.status == 74, "limit \(limit): \(r.stderr)")
                #expect(r.stderr.contains("No space left on device"), "limit \(limit): \(r.stderr)")
                #expect(try snapshot() == old, "limit \(limit)")
                if ["/run-", "/list-", "/blocks-"].contains(where: r.stderr.contains) { failedSpilling = true } else { failedWriting = true }
                return false
            }
            // The least room the build needs: every smaller disk fails, in the runs first, in
            // the output last.
            var (low, high) = (0, inputBytes * 8)
            #expect(try build(diskFullAfter: high))
            #expect(try !build(diskFullAfter: low))
            while high - low > 64 {
                let mid = (low + high) / 2
                if try build(diskFullAfter: mid) { high = mid } else { low = mid }
            }
            let succeeded = high < inputBytes * 8
            #expect(failedSpilling && failedWriting && succeeded, "directory \(directory)")
        }
    }
}

/// `lookup join`: build directories built apart, one region each (what the Spark job's
/// executors write), under one manifest — the one a single build of all the rows writes.
@Suite struct BuildJoinTests {
    @Test func joinedPartsAreTheSingleBuild() throws {
        let lookup = try #require(BuiltProducts.lookup, Comment(rawValue: BuiltProducts.missing("lookup")))
        let dir = TempDir()
        let text = BoundedBuildTests.tsv(rows: 3_000, seed: 51, regions: true)
        try text.write(toFile: dir.path("in.tsv"), atomically: false, encoding: .utf8)
        let split = ["--format", "tsv", "--header", "no", "--split-by", "field", "--region-field", "4", "--max-entries", "300",
                     "--block-list", "separate"]
        let env = ["SOURCE_DATE_EPOCH": "1700000000"]
        #expect(try runTool(lookup.path, ["build", "-o", dir.path("single/"), dir.path("in.tsv")] + split, environment: env).status == 0)
        // One part per region, its rows in input order.
        var parts: [String] = []
        let lines = text.split(separator: "\n")
        for region in Set(lines.map { $0.split(separator: "\t").last! }).sorted() {
            let name = "part-\(parts.count)"
            try (lines.filter { $0.hasSuffix("\t" + region) }.joined(separator: "\n") + "\n")
                .write(toFile: dir.path("\(name).tsv"), atomically: false, encoding: .utf8)
            let r = try runTool(lookup.path, ["build", "-o", dir.path("\(name)/"), dir.path("\(name).tsv"), "--memory", "16K"] + split, environment: env)
            #expect(r.status == 0, "\(r.stderr)")
            parts.append(dir.path(name))
        }
        #expect(parts.count == 4)
        let joined = try runTool(lookup.path, ["join", "-o", dir.path("joined/")] + parts.reversed(), environment: env)
        #expect(joined.status == 0, "\(joined.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path("single")).sorted()
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("joined")).sorted() == names)
        for name in names {
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("single/\(name)"))) == Data(contentsOf: URL(fileURLWithPath: dir.path("joined/\(name)"))), "\(name)")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: dir.path("joined/manifest.json")))

        // A region twice, a part whose file is not its manifest's, a missing part: refused,
        // and the joined directory stays as it was.
        let twice = try runTool(lookup.path, ["join", "-o", dir.path("joined/"), parts[0], parts[0]])
        #expect(twice.status == 65)
        #expect(twice.stderr.contains("also in another part"))
        let damaged = try #require(try FileManager.default.contentsOfDirectory(atPath: parts[1]).first { $0.hasSuffix(".cid") })
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(parts[1])/\(damaged)"))
        try handle.seek(toOffset: 100)
        handle.write(Data([0xFF, 0xFF]))
        try handle.close()
        let bad = try runTool(lookup.path, ["join", "-o", dir.path("joined/")] + parts)
        #expect(bad.status == 65)
        #expect(bad.stderr.contains("is not the manifest's"))
        let missing = try runTool(lookup.path, ["join", "-o", dir.path("joined/"), dir.path("nowhere")])
        #expect(missing.status == 66)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("joined/manifest.json"))) == before)
        #expect(try BoundedBuildTests.temporaries(beside: dir.path("joined")).isEmpty)
    }
}

extension BoundedBuildTests {
    /// Before: the writer's second pass read its 12-byte entries in buffer-sized chunks and
    /// refused the first one cut by a refill ("a spilled entry is cut"): any bounded build of
    /// more than 87,381 entries (1 MiB of them) failed.
    @Test func streamedWriterReadsEntriesAcrossBufferRefills() throws {
        let dir = TempDir()
        var options = BuildOptions()
        var memory = DatabaseBuilder(options: options)
        options.memoryLimit = 1 << 20
        var bounded = DatabaseBuilder(options: options, spillingNextTo: dir.path("b.cid"))
        var rng = SeededGenerator(seed: 61)
        for i in 0..<100_000 {
            let number = plausibleNumbers.lowerBound + rng.next() % 900_000_000
            let label = "Shop \(i % 700)"
            try memory.add(number, label: label)
            try bounded.add(number, label: label)
        }
        #expect(bounded.runsSpilled > 1)
        #expect(try memory.write(to: dir.path("a.cid")) == bounded.write(to: dir.path("b.cid")))
        #expect(try Data(contentsOf: dir.url.appendingPathComponent("a.cid")) == Data(contentsOf: dir.url.appendingPathComponent("b.cid")))
    }
}
