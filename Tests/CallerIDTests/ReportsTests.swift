import Foundation
import Testing
@testable import CallerID
@testable import CallerIDPipeline

/// One report of a generated log.
private struct Report {
    var number: UInt64
    var reporter: String
    var time: Int64
    var verdict: String
}

private let day: Int64 = 86_400
/// 2026-12-05T00:00:00Z.
private let today: Int64 = 1_796_428_800

private func jsonl(_ reports: [Report]) -> String {
    reports.map { "{\"number\":\"+\($0.number)\",\"reporter\":\"\($0.reporter)\",\"time\":\($0.time),\"category\":\"\($0.verdict)\",\"comment\":\"x\"}\n" }.joined()
}

/// The score of docs/REPORTS.md computed the plain way (dictionaries, no sorting passes): the
/// model the three sorted passes must agree with.
private func referenceVerdicts(_ reports: [Report], now: Int64, halfLife: Double = 90, maxAge: Int64 = 365, cap: Int64 = 5,
                               safeWeight: Double = 1, blockScore: Double = 3, minReporters: Int = 3) -> [UInt64: (category: String, reporters: Int)] {
    // 1. Each reporter's latest report of a number at or before now (ties: the higher verdict,
    //    categories ordered by name after `safe`).
    func rank(_ v: String) -> Int { v == "safe" ? 0 : 1 + Category.blockingNames.sorted().firstIndex(of: v)! }
    var latest: [String: Report] = [:]
    for r in reports where r.time <= now {
        let key = "\(r.number)|\(r.reporter)"
        if let old = latest[key], (old.time, rank(old.verdict)) >= (r.time, rank(r.verdict)) { continue }
        latest[key] = r
    }
    let kept = latest.values.filter { now - $0.time < maxAge * day }
    // 2. The daily cap.
    var perDay: [String: Int64] = [:]
    for r in kept { perDay["\(r.reporter)|\(r.time / day)", default: 0] += 1 }
    // 3. Per number.
    var complaints: [UInt64: [String: Int64]] = [:]
    var against: [UInt64: Int64] = [:]
    var reporters: [UInt64: Int] = [:]
    for r in kept {
        let age = (now - r.time) / day
        let decay = Int64((65_536 * pow(0.5, Double(age) / halfLife)).rounded())
        let n = perDay["\(r.reporter)|\(r.time / day)"]!
        let w = decay * min(n, cap) / n
        if r.verdict == "safe" {
            against[r.number, default: 0] += w
        } else {
            complaints[r.number, default: [:]][r.verdict, default: 0] += w
            reporters[r.number, default: 0] += 1
        }
    }
    var out: [UInt64: (String, Int)] = [:]
    for (number, byCategory) in complaints {
        let total = byCategory.values.reduce(0, +)
        let score = total - (against[number] ?? 0) * Int64((safeWeight * 65_536).rounded()) / 65_536
        let best = byCategory.max { a, b in a.value != b.value ? a.value < b.value : a.key > b.key }!.key
        if reporters[number]! >= minReporters && score >= Int64((blockScore * 65_536).rounded()) { out[number] = (best, reporters[number]!) }
    }
    return out
}

/// What the score counts for a log, by the same plain reading of docs/REPORTS.md: reports after
/// `now`, reports a later one of the same reporter and number replaced, latest verdicts too old,
/// reporter-days over the cap and the reporters with such a day, numbers with a verdict kept.
private func referenceCounts(_ reports: [Report], now: Int64, maxAge: Int64 = 365, cap: Int64 = 5) -> [String: Int] {
    let present = reports.filter { $0.time <= now }
    var latest: [String: Report] = [:]
    for r in present {
        let key = "\(r.number)|\(r.reporter)"
        if let old = latest[key], old.time >= r.time { continue }
        latest[key] = r
    }
    let kept = latest.values.filter { now - $0.time < maxAge * day }
    var perDay: [String: Int64] = [:]
    for r in kept { perDay["\(r.reporter)|\(r.time / day)", default: 0] += 1 }
    let cappedDays = perDay.filter { $0.value > cap }.keys
    return ["inFuture": reports.count - present.count, "superseded": present.count - latest.count,
            "tooOld": latest.count - kept.count, "cappedDays": cappedDays.count,
            "cappedReporters": Set(cappedDays.map { $0.split(separator: "|")[0] }).count,
            "scored": Set(kept.map(\.number)).count]
}

/// The entries of a pack (a file or a build directory), by number.
private func packEntries(_ path: String) throws -> [UInt64: Entry] {
    var out: [UInt64: Entry] = [:]
    var isDirectory: ObjCBool = false
    FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
    let files = isDirectory.boolValue
        ? try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".cid") }.map { path + "/" + $0 }
        : [path]
    for f in files {
        for e in try Database(path: f).entries() { out[e.number] = Entry(number: e.number, label: e.label, category: e.category) }
    }
    return out
}

/// A log with known truth: spammers many people report, one reporter's flood against a
/// business, a protected bank line, a number whose reports are two years old, a number that
/// `safe` verdicts outweigh.
private struct KnownLog {
    var reports: [Report] = []
    var spammers: [UInt64: String] = [:]
    let business: UInt64 = 79_210_000_001
    let bank: UInt64 = 78_005_550_000
    let old: UInt64 = 79_210_000_002
    let disputed: UInt64 = 79_210_000_003

    init(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let categories = ["collector", "survey", "scam", "telemarketing"]
        for i in 0..<40 {
            let number = 79_130_000_000 + UInt64(i) * 7919
            let category = categories[i % categories.count]
            spammers[number] = category
            let people = Int.random(in: 4...30, using: &rng)
            for p in 0..<people {
                // Mostly the spammer's category, sometimes another: the majority decides.
                let verdict = p % 5 == 4 ? categories[(i + 1) % categories.count] : category
                reports.append(Report(number: number, reporter: "user-\(i)-\(p)", time: today - Int64.random(in: 0...60, using: &rng) * day - Int64.random(in: 0..<day, using: &rng), verdict: verdict))
            }
        }
        // One angry reporter with a script: 3,000 reports against the business in one day.
        for k in 0..<3_000 { reports.append(Report(number: business, reporter: "angry", time: today - 3 * day + Int64(k), verdict: "scam")) }
        // The same script reporter spreads another 3,000 over random numbers.
        for k in 0..<3_000 { reports.append(Report(number: 79_500_000_000 + UInt64(k), reporter: "angry", time: today - 2 * day + Int64(k), verdict: "spam")) }
        // Five people complain about the bank's collections line.
        for p in 0..<5 { reports.append(Report(number: bank, reporter: "client-\(p)", time: today - Int64(p) * day, verdict: "collector")) }
        // Twelve complaints, two years ago.
        for p in 0..<12 { reports.append(Report(number: old, reporter: "past-\(p)", time: today - 730 * day + Int64(p), verdict: "fraud")) }
        // Three complaints, six people say the caller is fine.
        for p in 0..<3 { reports.append(Report(number: disputed, reporter: "c-\(p)", time: today - day, verdict: "spam")) }
        for p in 0..<6 { reports.append(Report(number: disputed, reporter: "s-\(p)", time: today - day, verdict: "safe")) }
        reports.shuffle(using: &rng)
    }
}

@Suite struct ReportsTests {
    /// Builds `reports` with the library and returns the summary.
    private func build(_ log: String, at dir: TempDir, output: String, _ configure: (inout ReportOptions) -> Void = { _ in }) throws -> ReportSummary {
        let input = dir.path("reports-\(UUID().uuidString).jsonl")
        try log.write(toFile: input, atomically: true, encoding: .utf8)
        var options = ReportOptions()
        options.input.numberRules = .builtInTable
        configure(&options)
        let build = try ReportBuild(options: options)
        build.prepare(output: output)
        try build.add(file: input)
        return try build.write(to: output)
    }

    /// A long score is not silent: after reading, one sorting phase names the reports being
    /// scored, before the pack is written (the pack's own sort of the blocked numbers is not
    /// reported as a second one).
    @Test func progressNamesTheScoreBetweenReadingAndWriting() throws {
        let dir = TempDir()
        let input = dir.path("reports.jsonl")
        let log = KnownLog(seed: 5)
        try jsonl(log.reports).write(toFile: input, atomically: true, encoding: .utf8)
        var options = ReportOptions()
        options.input.numberRules = .builtInTable
        let build = try ReportBuild(options: options)
        var phases: [(PipelineProgress.Phase, Int)] = []
        build.onProgress = { p in
            if phases.last?.0 != p.phase { phases.append((p.phase, p.count)) }
        }
        let out = dir.path("toxic.cid")
        build.prepare(output: out)
        try build.add(file: input)
        _ = try build.write(to: out)
        #expect(phases.map(\.0) == [.reading, .sorting, .writing])
        #expect(phases.first { $0.0 == .sorting }?.1 == log.reports.count)
    }

    @Test func knownLogBlocksTheSpammersAndNothingElse() throws {
        let dir = TempDir()
        let log = KnownLog(seed: 7)
        let protect = dir.path("protect.tsv")
        try "number\tname\n+\(log.bank)\tBank X collections\n".write(toFile: protect, atomically: true, encoding: .utf8)
        let out = dir.path("toxic.cid")
        let summary = try build(jsonl(log.reports), at: dir, output: out) { $0.protect = [protect] }
        let entries = try packEntries(out)
        let expected = referenceVerdicts(log.reports, now: summary.now)
        // Every spammer reported by six people or more (each report at most 60 days old weighs
        // 0.63 or more) is blocked with its majority category.
        for (number, category) in log.spammers {
            let people = Set(log.reports.filter { $0.number == number }.map(\.reporter)).count
            if people >= 6 {
                #expect(entries[number]?.category.name == category, "spammer \(number)")
                #expect(entries[number]?.category.action == .block)
            }
        }
        #expect(entries[log.business] == nil, "one reporter's flood blocked a business")
        #expect(!entries.keys.contains { $0 >= 79_500_000_000 && $0 < 79_500_003_000 }, "one reporter's spread blocked numbers")
        #expect(entries[log.old] == nil, "two-year-old reports still block")
        #expect(entries[log.disputed] == nil, "safe verdicts did not outweigh three complaints")
        let bank = try #require(entries[log.bank])
        #expect(bank.category == .identify)
        #expect(bank.label == "Bank X collections · 5+ reports")
        #expect(summary.protectedPassed == 1)
        #expect(summary.cappedReporters == 1)
        // The passes agree with the plain model, number by number (the bank aside: protected).
        let blocked = entries.filter { $0.value.category.action == .block }
        #expect(Set(blocked.keys) == Set(expected.keys).subtracting([log.bank]))
        for (number, e) in blocked { #expect(e.category.name == expected[number]?.category) }
        #expect(summary.blocked == blocked.count)
    }

    @Test func randomLogsAgreeWithThePlainModel() throws {
        for seed in UInt64(1)...6 {
            var rng = SeededGenerator(seed: seed)
            var reports: [Report] = []
            let numbers = (0..<60).map { _ in 79_000_000_000 + UInt64.random(in: 0..<900_000_000, using: &rng) }
            let reporters = (0..<Int.random(in: 5...40, using: &rng)).map { "r\($0)" }
            let verdicts = ["safe", "spam", "collector", "survey", "scam", "fraud"]
            for _ in 0..<Int.random(in: 50...2_000, using: &rng) {
                reports.append(Report(number: numbers.randomElement(using: &rng)!, reporter: reporters.randomElement(using: &rng)!,
                                      time: today - Int64.random(in: -2 * day...500 * day, using: &rng), verdict: verdicts.randomElement(using: &rng)!))
            }
            let halfLife = [1.0, 30, 90, 365].randomElement(using: &rng)!
            let cap = Int.random(in: 1...8, using: &rng)
            let minReporters = Int.random(in: 1...4, using: &rng)
            let blockScore = [0.5, 1, 2, 3].randomElement(using: &rng)!
            let dir = TempDir()
            let out = dir.path("p.cid")
            let summary = try build(jsonl(reports), at: dir, output: out) {
                $0.halfLifeDays = halfLife
                $0.reporterDailyCap = cap
                $0.minReporters = minReporters
                $0.blockScore = blockScore
                $0.now = today
            }
            #expect(summary.now == today)
            #expect(["inFuture": summary.reportsInFuture, "superseded": summary.reportsSuperseded, "tooOld": summary.reportsTooOld,
                     "cappedDays": summary.cappedReporterDays, "cappedReporters": summary.cappedReporters, "scored": summary.numbersScored]
                    == referenceCounts(reports, now: today, cap: Int64(cap)), "seed \(seed)")
            let expected = referenceVerdicts(reports, now: today, halfLife: halfLife, cap: Int64(cap), blockScore: blockScore, minReporters: minReporters)
            let entries = try packEntries(out)
            #expect(Set(entries.keys) == Set(expected.keys), "seed \(seed)")
            for (number, e) in entries {
                #expect(e.category.name == expected[number]?.category, "seed \(seed) number \(number)")
                #expect(e.label == ReportLabels.render("{category} · {reporters}", category: expected[number]!.category,
                                                       reporters: expected[number]!.reporters, name: "", language: .en))
            }
        }
    }

    @Test func theSameLogGivesTheSameBytesInMemoryAndSpilled() throws {
        let dir = TempDir()
        let log = jsonl(KnownLog(seed: 11).reports)
        let a = dir.path("a") + "/", b = dir.path("b") + "/", c = dir.path("c") + "/"
        let inMemory = try build(log, at: dir, output: a) { $0.input.buildTime = 0 }
        _ = try build(log, at: dir, output: b) { $0.input.buildTime = 0 }
        // 64 KiB: about a thousand records a run, so the 7,000 reports pass through spilled runs.
        let spilled = try build(log, at: dir, output: c) {
            $0.input.buildTime = 0
            $0.input.buildOptions.memoryLimit = 64 << 10
        }
        for name in ["all.cid", "manifest.json"] {
            let x = try Data(contentsOf: URL(fileURLWithPath: a + name))
            #expect(x == (try Data(contentsOf: URL(fileURLWithPath: b + name))), "\(name) differs between two builds of one log")
            #expect(x == (try Data(contentsOf: URL(fileURLWithPath: c + name))), "\(name) differs when the records spill")
        }
        func counts(_ s: ReportSummary) -> [Int] {
            [s.rowsRead, s.reportsTooOld, s.reportsInFuture, s.reportsSuperseded, s.cappedReporterDays, s.cappedReporters, s.numbersScored, s.blocked]
        }
        #expect(counts(inMemory) == counts(spilled))
        #expect(inMemory.cappedReporterDays > 0 && inMemory.reportsSuperseded > 0, "the log exercises the cap and superseded reports")
    }

    @Test func oneMoreDayChangesOnlyTheNumbersWhoseVerdictChanged() throws {
        let dir = TempDir()
        let log = KnownLog(seed: 3)
        let first = dir.path("day1") + "/"
        let summary1 = try build(jsonl(log.reports), at: dir, output: first) { $0.now = today }
        // The next day: one more report on a spammer that already has 10-19 reporters (its label
        // stays "10+"), and a new spammer reported by four people.
        var next = log.reports
        let busy = try #require(log.spammers.keys.sorted().first { n in (10...18).contains(Set(log.reports.filter { $0.number == n }.map(\.reporter)).count) })
        next.append(Report(number: busy, reporter: "late", time: today + day / 2, verdict: log.spammers[busy]!))
        let fresh: UInt64 = 79_998_887_766
        for p in 0..<4 { next.append(Report(number: fresh, reporter: "new-\(p)", time: today + day / 2, verdict: "robocall")) }
        let input = dir.path("day2.jsonl")
        try jsonl(next).write(toFile: input, atomically: true, encoding: .utf8)
        var options = ReportOptions()
        options.input.numberRules = .builtInTable
        options.now = today + day
        let build = try ReportBuild(options: options)
        build.prepare(output: dir.path("day2") + "/")
        try build.add(file: input)
        let summary2 = try build.write(to: dir.path("day2") + "/", previous: first)
        let changes = try #require(summary2.previous)
        #expect(changes.added == ["robocall": 1])
        #expect(changes.removed.isEmpty)
        #expect(changes.relabelled.isEmpty)
        #expect(changes.unchanged == summary1.blocked + summary1.protectedPassed)
    }

    @Test func reportsAreRefusedWithFileLineAndReason() throws {
        let dir = TempDir()
        let input = dir.path("bad.csv")
        try """
        number,reporter,time,category
        +79130000001,u1,2026-12-01T10:00:00Z,collector
        +79130000001,+7 913 123-45-67,2026-12-01T10:00:00Z,spam
        +79130000001,u2,2026-02-30T10:00:00Z,spam
        +79130000001,u3,1796428800000,spam
        +79130000001,u4,2026-12-01T10:00:00,spam
        +79130000001,u5,2026-12-01T10:00:00Z,pizza
        +79130000001,,2026-12-01T10:00:00Z,spam
        n/a,u6,2026-12-01T10:00:00Z,spam
        +79130000001,u7,2026-12-01T13:00:00+03:00,safe

        """.write(toFile: input, atomically: true, encoding: .utf8)
        var options = ReportOptions()
        options.input.numberRules = .builtInTable
        options.input.maxBadRows = .unlimited
        let build = try ReportBuild(options: options)
        var rejected: [RejectedRow] = []
        build.onRejected = { rejected.append($0) }
        build.prepare(output: dir.path("p.cid"))
        try build.add(file: input)
        let summary = try build.write(to: dir.path("p.cid"))
        #expect(rejected.map(\.line) == [3, 4, 5, 6, 7, 8, 9])
        #expect(rejected.map(\.reason) == [.badReporter, .badTime, .badTime, .badTime, .badCategory, .badReporter, .letters])
        #expect(rejected.allSatisfy { $0.file == input })
        #expect(rejected[2].message.contains("milliseconds"))
        #expect(rejected[3].message.contains("offset"))
        #expect(summary.rowsRead == 9 && summary.rowsRejected == 7)
        // The default limit (no bad rows) writes nothing and keeps a good output.
        var strict = ReportOptions()
        strict.input.numberRules = .builtInTable
        let good = dir.path("good.cid")
        try Data("kept".utf8).write(to: URL(fileURLWithPath: good))
        let failing = try ReportBuild(options: strict)
        failing.prepare(output: good)
        #expect(throws: PipelineError.self) { try failing.add(file: input) }
        #expect(try String(contentsOfFile: good, encoding: .utf8) == "kept")
    }

    @Test func timesReadAsRFC3339OrUnixSeconds() throws {
        let cases: [(String, Int64?)] = [
            ("2026-12-05T00:00:00Z", today), ("2026-12-05t00:00:00z", today), ("2026-12-05 03:00:00+03:00", today),
            ("2026-12-04T19:00:00.999-05:00", today), ("1796428800", today), ("1796428800.75", today), (" 1796428800 ", today),
            ("1970-01-01T00:00:00Z", 0), ("2024-02-29T12:00:00Z", 1_709_208_000), ("2000-03-01T00:00:00Z", 951_868_800),
            ("2023-02-29T00:00:00Z", nil), ("2026-13-01T00:00:00Z", nil), ("2026-12-05T24:00:00Z", nil), ("2026-12-05T00:00:00", nil),
            ("2026-12-05", nil), ("1969-12-31T23:59:59Z", nil), ("1796428800000", nil), ("", nil), ("1.2.3", nil), ("2026-12-05T00:00:00Z ", today),
        ]
        for (text, expected) in cases {
            #expect(ReportBuild.parseTime(text) == expected, "\(text)")
        }
        var rng = SeededGenerator(seed: 5)
        for _ in 0..<2_000 {
            let t = Int64.random(in: 0..<4_102_444_800, using: &rng)
            #expect(ReportBuild.parseTime(ReportBuild.formatTime(t)) == t)
        }
    }

    @Test func labelsRoundCountsAndSpeakTheLanguage() {
        let rounded = [1: "1", 2: "2", 4: "4", 5: "5+", 9: "5+", 10: "10+", 19: "10+", 20: "20+", 49: "20+", 50: "50+", 99: "50+",
                       100: "100+", 199: "100+", 200: "200+", 500: "500+", 999: "500+", 1_000: "1000+", 2_500: "2000+", 5_000: "5000+"]
        for (n, shown) in rounded { #expect(ReportLabels.rounded(n) == shown, "\(n)") }
        #expect(ReportLabels.render("{category} · {reporters}", category: "collector", reporters: 37, name: "", language: .ru) == "Коллекторы · 20+ жалоб")
        #expect(ReportLabels.render("{category} · {reporters}", category: "collector", reporters: 3, name: "", language: .ru) == "Коллекторы · 3 жалобы")
        #expect(ReportLabels.render("{category} · {reporters}", category: "survey", reporters: 1, name: "", language: .ru) == "Опросы · 1 жалоба")
        #expect(ReportLabels.render("{category} · {reporters}", category: "scam", reporters: 12, name: "", language: .en) == "Scam · 10+ reports")
        #expect(ReportLabels.render("{name}: {count}", category: "scam", reporters: 214, name: "Bank X", language: .en) == "Bank X: 200+")
        // 37 → 38 complaints: the same label.
        #expect(ReportLabels.reporters(37, language: .en) == ReportLabels.reporters(38, language: .en))
        #expect(ReportLabels.unknownField(in: "{category} {oops}") == "oops")
        #expect(ReportLabels.unknownField(in: "{category} · {reporters} {count} {name}") == nil)
    }

    @Test func thePackInstallsAsASourceAndTheFeedBlocksExactlyTheBlockedNumbers() throws {
        let dir = TempDir()
        let log = KnownLog(seed: 21)
        let input = dir.path("reports.jsonl")
        try jsonl(log.reports).write(toFile: input, atomically: true, encoding: .utf8)
        let city = dir.path("city.tsv")
        // The city directory identifies two spammers and an ordinary shop.
        let names = log.spammers.keys.sorted().prefix(2)
        try (names.map { "\($0)\tShop \($0 % 100)\n" }.joined() + "79991112233\tBakery\n").write(toFile: city, atomically: true, encoding: .utf8)
        #expect(try lookup(["build", "-o", dir.path("city") + "/", city]).status == 0)
        let r = try lookup(["reports", "-o", dir.path("toxic") + "/", input, "--number-rules", "table", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let blocked = try #require(json["blocked"] as? Int)
        let store = dir.path("store")
        #expect(try lookup(["install", "--store", store, dir.path("city"), "--source", "city"]).status == 0)
        #expect(try lookup(["install", "--store", store, dir.path("toxic"), "--source", "toxic"]).status == 0)
        let dump = try lookup(["dump", "--db", store, "--action", "block"])
        #expect(dump.status == 0, "\(dump.stderr)")
        let fed = Set(dump.stdout.split(separator: "\n").compactMap { UInt64($0.split(separator: "\t")[0]) })
        let pack = try packEntries(dir.path("toxic")).filter { $0.value.category.action == .block }
        #expect(fed == Set(pack.keys))
        #expect(fed.count == blocked)
        // A spammer the city directory names is blocked and still shown with the city's name.
        let n = try #require(names.first { pack[$0] != nil })
        let answer = try lookup(["\(n)", "--db", store, "--json"])
        #expect(answer.stdout.contains("\"action\":\"block\"") && answer.stdout.contains("Shop"))
    }

    /// `--records` writes each report as the score would read it (the Spark job's executors run
    /// it on their parts of a log): numbers normalized, reporters hashed, times in Unix seconds,
    /// bad rows reported at their file and line and left out.
    @Test func recordsAreTheReportsAsTheScoreReadsThem() throws {
        let dir = TempDir()
        let input = dir.path("log.csv")
        try """
        number,reporter,time,category,region
        8 913 000-00-01,u1,2026-12-01T10:00:00Z,collector,ru-54
        +79130000002,u2,1796428800,safe,ru-54
        +79130000001,u3,2026-12-01T13:00:00+03:00,pizza,ru-54
        +79130000003,u4,2026-12-04T23:59:59Z,SPAM,ru-77

        """.write(toFile: input, atomically: true, encoding: .utf8)
        let out = dir.path("records.tsv")
        let r = try lookup(["reports", "--records", out, input, "--country", "RU", "--number-rules", "table",
                            "--region-field", "region", "--skip-bad-rows"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("\(input):4") && r.stderr.contains("pizza"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(json["reports"] as? Int == 4 && json["bad_rows"] as? Int == 1)
        func hash(_ s: String) -> UInt64 { Array(s.utf8).withUnsafeBytes { Checksum.xxh3(bytes: $0) } }
        let rows = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows == [
            ["2", "79130000001", "\(hash("u1"))", "\(today - 4 * day + 36_000)", "collector", "ru-54"],
            ["3", "79130000002", "\(hash("u2"))", "\(today)", "safe", "ru-54"],
            ["5", "79130000003", "\(hash("u4"))", "\(today - 1)", "spam", "ru-77"],
        ])
        // Without --skip-bad-rows the bad row stops the run and no records are written.
        let strict = try lookup(["reports", "--records", dir.path("strict.tsv"), input, "--country", "RU", "--number-rules", "table"])
        #expect(strict.status == 65)
        #expect(!FileManager.default.fileExists(atPath: dir.path("strict.tsv")))
    }

    @Test func helpAndUsageErrors() throws {
        let help = try lookup(["reports", "--help"])
        #expect(help.status == 0)
        for word in ["--half-life", "--reporter-daily-cap", "--min-reporters", "--block-score", "--protect", "--label-language", "--previous", "--memory", "safe"] {
            #expect(help.stdout.contains(word), "reports --help lacks \(word)")
        }
        #expect(try lookup(["--help"]).stdout.contains("lookup reports"))
        let dir = TempDir()
        let input = dir.path("r.jsonl")
        try "{}\n".write(toFile: input, atomically: true, encoding: .utf8)
        #expect(try lookup(["reports", input]).status == 64)
        #expect(try lookup(["reports", "-o", dir.path("o.cid")]).status == 64)
        #expect(try lookup(["reports", "-o", dir.path("o.cid"), input, "--half-life", "soon"]).status == 64)
        #expect(try lookup(["reports", "-o", dir.path("o.cid"), input, "--label", "{oops}"]).status == 64)
        #expect(try lookup(["reports", "-o", dir.path("o.cid"), input, "--category", "pizza"]).status == 64)
        #expect(try lookup(["reports", "-o", dir.path("o.cid"), dir.path("missing.jsonl")]).status == 66)
        // A build directory asked for where a file stands: refused before a report is read.
        try "keep".write(toFile: dir.path("file"), atomically: true, encoding: .utf8)
        let refused = try lookup(["reports", "-o", dir.path("file"), "--max-entries", "10", dir.path("missing.jsonl")])
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(try String(contentsOfFile: dir.path("file"), encoding: .utf8) == "keep")
    }
}
