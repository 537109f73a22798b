import Foundation
import Testing
@testable import CallerID
@testable import CallerIDPipeline

/// `lookup reports` reads plain CSV lines on two threads and every other line with the general
/// reader: whatever a log holds, the two readings must give the same records, the same bad rows
/// at the same lines and so the same bytes. And the radix sort behind the score must order
/// records as `<` does, on one thread or two.
@Suite struct ReportReadingTests {
    /// One line of a messy log: mostly plain reports, with every kind of line the plain reading
    /// must leave to the general one.
    private func line(_ rng: inout SeededGenerator, regions: Bool, quotes: Bool) -> String {
        let numbers = ["+7913\(Int.random(in: 1_000_000...1_000_300, using: &rng))", "7913\(Int.random(in: 1_000_000...1_000_300, using: &rng))",
                       " +79131000007 ", "8 913 100-00-0\(Int.random(in: 0...9, using: &rng))", "+7913", "+0791310000", "n/a", "+1 650 253 0000",
                       "+79131000010", "", "+999123456789"]
        let reporters = ["u\(Int.random(in: 0..<40, using: &rng))", " u7 ", "+7 913 123-45-67", "", "пользователь-\(Int.random(in: 0..<3, using: &rng))",
                         "u\(Int.random(in: 0..<40, using: &rng))"]
        let times = ["\(1_796_428_800 - Int.random(in: 0..<400 * 86_400, using: &rng))", "2026-11-0\(Int.random(in: 1...9, using: &rng))T10:00:00Z",
                     "1796000000.5", "1796428800000", "", "yesterday", "2026-12-01T13:00:00+03:00", " 1796000000 ",
                     "\(1_796_428_800 - Int.random(in: 0..<30 * 86_400, using: &rng))"]
        let categories = ["spam", "scam", "collector", "safe", "SPAM", "Safe", " survey ", "pizza", "", "fraud", "spam", "спам"]
        let regionNames = ["ru-54", "ru-77", " ru-54 ", "", "регион-1"]
        let plain = Int.random(in: 0..<10, using: &rng) < 6
        var fields = [
            plain ? "+7913\(Int.random(in: 1_000_000...1_000_300, using: &rng))" : numbers.randomElement(using: &rng)!,
            plain ? "u\(Int.random(in: 0..<40, using: &rng))" : reporters.randomElement(using: &rng)!,
            plain ? "\(1_796_428_800 - Int.random(in: 0..<200 * 86_400, using: &rng))" : times.randomElement(using: &rng)!,
            plain ? ["spam", "scam", "collector", "safe"].randomElement(using: &rng)! : categories.randomElement(using: &rng)!,
        ]
        if regions { fields.append(plain ? ["ru-54", "ru-77"].randomElement(using: &rng)! : regionNames.randomElement(using: &rng)!) }
        fields.append(["", "x", "жалоба", "call at 9"].randomElement(using: &rng)!)
        switch Int.random(in: 0..<40, using: &rng) {
        case 0: return ""
        case 1: return ",,,"
        case 2: return fields.prefix(2).joined(separator: ",")
        case 3: return fields.joined(separator: ",") + ",extra,fields"
        case 4: return fields.joined(separator: ",") + "\r"
        case 5: return "\r"
        case 6 where quotes: return fields.map { "\"\($0)\"" }.joined(separator: ",")
        case 7 where quotes: return fields.dropLast().joined(separator: ",") + ",\"a comment\non two lines\""
        default: return fields.joined(separator: ",")
        }
    }

    private struct Reading: Equatable {
        var pack: Data
        var rejected: [String]
        var warnings: [String]
        var counts: [Int]
    }

    private func read(_ log: String, at dir: TempDir, plain: Bool, batchBytes: Int, country: String?, regions: Bool) throws -> Reading {
        let input = dir.path("log-\(UUID().uuidString).csv")
        try log.write(toFile: input, atomically: true, encoding: .utf8)
        var options = ReportOptions()
        options.input.numberRules = .builtInTable
        options.input.maxBadRows = .unlimited
        options.input.country = country
        if regions { options.input.regionField = .name("region") }
        options.now = 1_796_428_800
        options.minReporters = 1
        options.blockScore = 0.01
        let build = try ReportBuild(options: options)
        build.readsPlainLines = plain
        build.batchBytes = batchBytes
        var rejected: [String] = []
        var warnings: [String] = []
        build.onRejected = { rejected.append("\($0.line) \($0.reason.rawValue) \($0.message)") }
        build.onWarning = { warnings.append("\($0.line) \($0.message)") }
        let output = dir.path("pack-\(UUID().uuidString).cid")
        build.prepare(output: output)
        try build.add(file: input)
        let s = try build.write(to: output)
        return Reading(pack: try Data(contentsOf: URL(fileURLWithPath: output)), rejected: rejected, warnings: warnings,
                       counts: [s.rowsRead, s.rowsRejected, s.reportsTooOld, s.reportsInFuture, s.reportsSuperseded, s.numbersScored, s.blocked])
    }

    @Test(arguments: 0..<8)
    func plainLinesGiveTheGeneralReadersRecordsBadRowsAndBytes(seed: UInt64) throws {
        var rng = SeededGenerator(seed: 100 + seed)
        let regions = seed % 2 == 1
        let quotes = seed % 4 >= 2
        let country: String? = seed % 3 == 0 ? "RU" : nil
        let header = regions ? "number,reporter,time,category,region,comment" : "number,reporter,time,category,comment"
        var lines = [header]
        let count = Int.random(in: 200...1_500, using: &rng)
        for i in 0..<count {
            // The quoted lines come in the second half, so the plain reading runs before they start.
            lines.append(line(&rng, regions: regions, quotes: quotes && i > count / 2))
        }
        let log = lines.joined(separator: "\n") + (seed % 2 == 0 ? "\n" : "")
        let dir = TempDir()
        let general = try read(log, at: dir, plain: false, batchBytes: 1 << 22, country: country, regions: regions)
        #expect(general.counts[0] >= count / 2, "the log is read")
        #expect(!general.rejected.isEmpty, "the log holds bad rows")
        #expect(general.counts[6] > 0, "the log blocks numbers")
        for batchBytes in [1, 64, 700, 1 << 22] {
            let plain = try read(log, at: dir, plain: true, batchBytes: batchBytes, country: country, regions: regions)
            #expect(plain.rejected == general.rejected, "batch \(batchBytes)")
            #expect(plain.warnings == general.warnings, "batch \(batchBytes)")
            #expect(plain.counts == general.counts, "batch \(batchBytes)")
            #expect(plain.pack == general.pack, "batch \(batchBytes)")
        }
    }

    /// A log whose first line already holds a quote, one without a header, one with a line
    /// longer than a batch, and an empty one: the same as the general reading.
    @Test func edgesOfThePlainReading() throws {
        let dir = TempDir()
        let plainLine = "+79131000001,u1,1796000000,spam,x"
        let logs = [
            "number,reporter,time,category,comment\n\"+79131000001\",u1,1796000000,spam,x\n" + plainLine + "\n",
            Array(repeating: plainLine, count: 50).joined(separator: "\n"),
            "number,reporter,time,category,comment\n" + plainLine + "\n+79131000002,u2,1796000000,spam," + String(repeating: "y", count: 3_000) + "\n" + plainLine,
            "",
            "number,reporter,time,category,comment\n",
            "\n\n\r\nnumber,reporter,time,category,comment\r\n" + plainLine + "\r\n",
        ]
        for (i, log) in logs.enumerated() {
            let general = try read(log, at: dir, plain: false, batchBytes: 1 << 22, country: nil, regions: false)
            for batchBytes in [1, 40, 1_000, 1 << 22] {
                #expect(try read(log, at: dir, plain: true, batchBytes: batchBytes, country: nil, regions: false) == general, "log \(i), batch \(batchBytes)")
            }
        }
    }

    @Test func theRadixSortOrdersAsTheComparisonDoes() {
        var rng = SeededGenerator(seed: 9)
        let sizes = [0, 1, 2, 31, 32, 33, 1_000, Triple.parallelThreshold - 1, Triple.parallelThreshold, 200_000]
        for n in sizes {
            for shape in 0..<5 {
                var records = (0..<n).map { _ -> Triple in
                    switch shape {
                    case 0: Triple(a: rng.next(), b: rng.next(), c: rng.next())
                    // Few distinct first words: the order is decided by the second and third.
                    case 1: Triple(a: UInt64.random(in: 0..<3, using: &rng), b: UInt64.random(in: 0..<1_000, using: &rng), c: rng.next())
                    // Every record the same.
                    case 2: Triple(a: 7, b: 7, c: 7)
                    // Skewed: nine in ten records in one first-level bucket, the largest values.
                    case 3: Triple(a: UInt64.random(in: 0..<10, using: &rng) == 0 ? rng.next() : UInt64.max - UInt64.random(in: 0..<50, using: &rng),
                                   b: UInt64.max, c: UInt64.random(in: 0..<4, using: &rng))
                    // Phone numbers, reporters and packed times, as the score sorts them.
                    default: Triple(a: 79_130_000_000 + UInt64.random(in: 0..<5_000, using: &rng), b: rng.next() >> 40,
                                    c: ReportKey.pack(time: Int64.random(in: 0..<1_800_000_000, using: &rng), verdict: UInt8.random(in: 0..<10, using: &rng), region: 0))
                    }
                }
                let expected = records.sorted()
                Triple.sort(&records)
                #expect(records == expected, "\(n) records, shape \(shape)")
            }
        }
    }

    /// Spilled records come back in order through any number of runs (beyond the fan-in the
    /// first runs are merged into one before the rest are merged as they are read), and two
    /// cursors over the same runs read them independently, as the score's cursors ahead and
    /// behind do.
    @Test(arguments: [0, 1, 1_023, 1_024, 5_000, 40_000])
    func spilledRunsComeBackInOrderToEveryCursor(count: Int) throws {
        let dir = TempDir()
        var rng = SeededGenerator(seed: UInt64(count) + 1)
        // Few distinct values, so equal records meet across runs.
        let records = (0..<count).map { _ in
            Triple(a: UInt64.random(in: 0..<50, using: &rng), b: rng.next() >> 60, c: UInt64.random(in: 0..<4, using: &rng) == 0 ? UInt64.max : 1)
        }
        // 1,024 records a run: 40,000 records are 40 runs, more than the fan-in.
        let sorter = TripleSorter(memoryLimit: 1_024 * Triple.bytes * 2, spillTarget: dir.path("out.cid"))
        for r in records { try sorter.append(r) }
        let sorted = try sorter.sorted()
        #expect(sorted.count == count)
        var ahead = try sorted.open(), behind = try sorted.open(bufferBytes: 1)
        var first: [Triple] = [], second: [Triple] = []
        while let t = try ahead.next() {
            first.append(t)
            if first.count % 3 == 0, let u = try behind.next() { second.append(u) }
        }
        while let u = try behind.next() { second.append(u) }
        let expected = records.sorted()
        #expect(first == expected)
        #expect(second == expected)
        #expect(try ahead.next() == nil)
    }
}
