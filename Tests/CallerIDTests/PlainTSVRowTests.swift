import Foundation
import Testing
@testable import CallerID
@testable import CallerIDPipeline

/// Plain TSV through the build's row loop: its fast route (``PlainRowRoute``) takes a row only
/// as the general reading would, so options that only change what is shown or reported, a
/// named format, and the general reading itself all take the same rows, refuse the same ones
/// with the same reasons, and write the same bytes.
@Suite struct PlainTSVRowTests {
    /// A file of everything a TSV directory holds: numbers of several countries as E.164 digits,
    /// with `+`, formatted, in Arabic-Indic digits, with an extension, two in a cell; labels with
    /// double, leading, trailing and non-breaking spaces; categories; repeated numbers; and bad
    /// rows (unassigned calling code, a national form, letters, too long, a control character in
    /// a label, four columns, no TAB).
    static func mixedFile(rows: Int, seed: UInt64) -> String {
        var rng = SeededGenerator(seed: seed)
        // National numbers of each country's shape: its first digits, then random digits.
        let countries: [(cc: String, lead: String, length: Int)] = [
            ("7", "9", 10), ("1", "2125", 10), ("44", "7", 10), ("49", "30", 10), ("82", "31", 9), ("33", "1", 9)]
        let labels = ["Pizza Hut", "Pizza  Hut", " Сбербанк", "ООО «Ромашка» ", "스타벅스\u{00A0}강남점", "Taxi\t24", "A",
                      "Cafe\u{0301}", "Аптека №1", "Debt  collector  "]
        let categories = ["", "spam", "taxi", "identify", "survey"]
        var numbers: [String] = []
        var text = "# a comment line\n"
        for i in 0..<rows {
            let c = countries.randomElement(using: &rng)!
            var national = c.lead
            while national.count < c.length { national += String(Int.random(in: 0...9, using: &rng)) }
            var number = c.cc + national
            if !numbers.isEmpty && Int.random(in: 0..<10, using: &rng) == 0 { number = numbers.randomElement(using: &rng)! }
            numbers.append(number)
            let written: String
            switch Int.random(in: 0..<8, using: &rng) {
            case 0: written = "+" + number
            case 1: written = "+\(c.cc) \(national.prefix(3)) \(national.dropFirst(3).prefix(3))-\(national.dropFirst(6))"
            case 2: written = "+" + String(number.map { Character(Unicode.Scalar(0x660 + UInt32(String($0))!)!) })
            case 3: written = "+\(number) ext. \(i % 90 + 10)"
            default: written = number
            }
            let label = labels.randomElement(using: &rng)!.replacingOccurrences(of: "\t", with: " ")
            let category = categories.randomElement(using: &rng)!
            text += category.isEmpty ? "\(written)\t\(label)\n" : "\(written)\t\(label)\t\(category)\n"
        }
        text += "+79131234567 / +79131234568\tTwo in one cell\n"
        text += "99912345678\tUnassigned code\n0791234567\tNational form\n7913CALLME\tLetters\n"
        text += "7913123456789012\tToo long\n79131234599\tControl\u{01}char\n79131234598\tFour\tspam\textra\n"
        text += "79131234597 no tab\n\n"
        return text
    }

    func build(_ args: [String], _ input: String, _ out: String) throws -> CLIResult {
        try lookup(["build", "-o", out, input] + args)
    }

    @Test(arguments: [1 as UInt64, 2, 3])
    func everyReportingOptionWritesTheSameBytes(seed: UInt64) throws {
        let dir = TempDir()
        let input = dir.path("mixed.tsv")
        try Self.mixedFile(rows: 600, seed: seed).write(toFile: input, atomically: false, encoding: .utf8)
        let plain = try build(["--skip-bad-rows"], input, dir.path("plain.cid"))
        #expect(plain.status == 0, "\(plain.stderr)")
        let reference = try #require(FileManager.default.contents(atPath: dir.path("plain.cid")))
        #expect(try Database(path: dir.path("plain.cid"), verify: true).count > 400)
        // Each option that only reports or says how to read what is read anyway must take the
        // same rows and write the same bytes.
        // (`--max-bad-rows 100%` says what `--skip-bad-rows` says; the two together are a usage error.)
        let reporting: [[String]] = [["--skip-bad-rows", "--no-progress"], ["--skip-bad-rows", "--progress"],
                                     ["--skip-bad-rows", "--errors", dir.path("errors.tsv")], ["--max-bad-rows", "100%"],
                                     ["--skip-bad-rows", "--json"], ["--max-bad-rows", "100%", "--no-progress", "--json"]]
        for (k, options) in reporting.enumerated() {
            let out = dir.path("p\(k).cid")
            let r = try build(options, input, out)
            #expect(r.status == 0, "\(options): \(r.stderr)")
            #expect(FileManager.default.contents(atPath: out) == reference, "\(options) changed the database")
        }
        // The same file with its format named.
        let formatted = try build(["--skip-bad-rows", "--format", "tsv"], input, dir.path("f.cid"))
        #expect(formatted.status == 0)
        #expect(FileManager.default.contents(atPath: dir.path("f.cid")) == reference)
    }

    /// What the pipeline made of a file: the database's bytes, the rows it refused (line,
    /// reason, message) and its warnings (line, kind, message).
    struct Outcome: Equatable {
        var bytes: Data
        var rejected: [String]
        var warnings: [String]
        var rowsRead: Int
        var numbersAccepted: Int
    }

    func outcome(_ input: String, _ output: String, fast: Bool, prepared: Bool, configure: (inout PipelineOptions) -> Void = { _ in }) throws -> Outcome {
        var options = PipelineOptions()
        options.maxBadRows = .unlimited
        configure(&options)
        let pipeline = try Pipeline(options: options)
        pipeline.takesPlainRowsFast = fast
        var rejected: [String] = [], warnings: [String] = []
        pipeline.onRejected = { rejected.append("\($0.line) \($0.reason) \($0.raw) \($0.message)") }
        pipeline.onWarning = { warnings.append("\($0.line) \($0.kind) \($0.message)") }
        if prepared {
            try pipeline.build([input], to: output)
        } else {
            try pipeline.add(file: input)
            try pipeline.write(to: output)
        }
        return Outcome(bytes: try Data(contentsOf: URL(fileURLWithPath: output)), rejected: rejected, warnings: warnings,
                       rowsRead: pipeline.rowsRead, numbersAccepted: pipeline.numbersAccepted)
    }

    /// The fast route and the general reading agree row by row, whether the rows go straight to
    /// the core's builder (a build prepared for one file) or are grouped at write time, with
    /// hidden characters removed or refused, with labels replaced or cut; and rows whose label
    /// some earlier row stored (which the builder takes without checking the label again).
    @Test(arguments: [4 as UInt64, 5])
    func theFastRouteTakesTheRowsTheGeneralReadingTakes(seed: UInt64) throws {
        let dir = TempDir()
        let input = dir.path("mixed.tsv")
        var text = Self.mixedFile(rows: 400, seed: seed)
        text += "79131234590\tHidden\u{202E}mark\n79131234591\tspam\tSPAM\n79131234592\tsame\tidentify\n+\tplus\n"
        // Labels written as another row's label was stored: with a replacement that grows its
        // own text, the stored "Pizza Hut Hut" is not what this row's "Pizza Hut Hut" becomes.
        text += "79131234593\tPizza Hut Hut\n79131234594\tPizza Hut\n79131234595\tPizza Hut Hut\n"
        try text.write(toFile: input, atomically: false, encoding: .utf8)
        let variants: [(String, (inout PipelineOptions) -> Void)] = [
            ("defaults", { _ in }), ("refuse hidden", { $0.labels.hiddenCharacters = .refuse }),
            ("replace", { $0.labels.replacements = [("a", "b")] }), ("fixed category", { $0.fixedCategory = .block }),
            ("replace, growing", { $0.labels.replacements = [("Hut", "Hut Hut")] }), ("length limit", { $0.labels.maxBytes = 9 }),
        ]
        for (name, configure) in variants {
            for prepared in [true, false] {
                let general = try outcome(input, dir.path("general.cid"), fast: false, prepared: prepared, configure: configure)
                let fast = try outcome(input, dir.path("fast.cid"), fast: true, prepared: prepared, configure: configure)
                #expect(fast == general, "\(name), prepared: \(prepared)")
                #expect(general.rejected.count >= 7 && general.numbersAccepted > 350, "\(name): \(general.rejected)")
            }
        }
    }

    /// A file of several 1 MiB chunks, whose lines are split and read ahead on a second
    /// thread: the same rows taken, the same bytes, the same reports in the file's order, with
    /// mixed rows (bad ones among them) in the first chunk, the middle and the last; and a
    /// build stopped by a bad row deep in the file stops at that row. Held in memory, spilled in
    /// runs, or grouped at write time alike.
    @Test func rowsReadAheadAreTakenInTheFilesOrder() throws {
        let dir = TempDir()
        let input = dir.path("large.tsv")
        var text = Self.mixedFile(rows: 200, seed: 6)
        // Long labels: fewer rows fill the chunks.
        let labels = ["Pizza Hut", "Taxi", "Сбербанк", "Bank of Somewhere", "A"].map { $0 + " " + String(repeating: "branch office ", count: 5) + "No 1" }
        var rng = SeededGenerator(seed: 7)
        for part in 0..<3 {
            var rows: [String] = []
            for _ in 0..<14_000 {
                let number = 79_000_000_000 + UInt64.random(in: 0..<1_000_000_000, using: &rng)
                rows.append("\(number)\t\(labels.randomElement(using: &rng)!)\(part == 1 ? "\tspam" : "")")
            }
            text += rows.joined(separator: "\n") + "\n" + Self.mixedFile(rows: 200, seed: 10 + UInt64(part))
        }
        // A +84 (Vietnam) number that is also a Moscow number written with the trunk 8, its
        // label one rows above stored, and a refused Russian national number: warned of at its line.
        let moscow = text.utf8.filter { $0 == 0x0A }.count + 1
        text += "84951234560\t\(labels[0])\n88005553535\tHotline\n"
        try text.write(toFile: input, atomically: false, encoding: .utf8)
        #expect(text.utf8.count > 3 * ByteSource.chunkSize, "at least four chunks")
        let general = try outcome(input, dir.path("general.cid"), fast: false, prepared: true)
        let fast = try outcome(input, dir.path("fast.cid"), fast: true, prepared: true)
        #expect(fast == general)
        // Spilled in runs (the builder's labels start over after each; its category codes stay).
        let spilled = try outcome(input, dir.path("spilled.cid"), fast: true, prepared: true) { $0.buildOptions.memoryLimit = 256 << 10 }
        #expect(spilled == general, "spilled in runs")
        // Rows kept by the pipeline and grouped at write time, not handed to a builder.
        let grouped = try outcome(input, dir.path("grouped.cid"), fast: true, prepared: false)
        #expect(grouped == general, "grouped at write time")
        let rejectedLines = fast.rejected.compactMap { Int($0.prefix { $0.isNumber }) }
        #expect(rejectedLines == rejectedLines.sorted() && rejectedLines.count >= 28, "\(fast.rejected.prefix(40))")
        #expect(rejectedLines.contains { $0 > 42_000 }, "bad rows in the last chunk are reported")
        #expect(fast.warnings.contains { $0.hasPrefix("\(moscow) ambiguous-national-form") }, "\(fast.warnings.suffix(5))")

        // No bad row allowed: the first one fails the build, wherever it is.
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let stop = rejectedLines.first! - 1
        lines.removeSubrange(0..<stop)   // the first bad row is now line 1 of a file,
        let moved = lines.joined(separator: "\n")
        let good = String(repeating: "79131230000\tGood\(String(repeating: " branch office", count: 12))\n", count: 20_000)
        // ...pushed to line 120,001 (the fourth chunk), after a chunk of 100,000 comment lines
        // that is handed over in parts.
        try (good + String(repeating: "#\n", count: 100_000) + moved).write(toFile: input, atomically: false, encoding: .utf8)
        for fastRoute in [true, false] {
            var options = PipelineOptions()
            options.maxBadRows = .count(0)
            let pipeline = try Pipeline(options: options)
            pipeline.takesPlainRowsFast = fastRoute
            var rejected: [Int] = []
            pipeline.onRejected = { rejected.append($0.line) }
            #expect(throws: PipelineError.self) { try pipeline.build([input], to: dir.path("stopped.cid")) }
            #expect(rejected == [120_001], "fast route: \(fastRoute)")
            #expect(!FileManager.default.fileExists(atPath: dir.path("stopped.cid")))
        }
    }

    /// Without pipeline options a plain build lists every bad row and then fails, as `lookup
    /// build` always has; with --skip-bad-rows it builds from the good rows.
    @Test func aPlainBuildListsEveryBadRow() throws {
        let dir = TempDir()
        let input = dir.path("mixed.tsv")
        try Self.mixedFile(rows: 50, seed: 9).write(toFile: input, atomically: false, encoding: .utf8)
        let failed = try build([], input, dir.path("a.cid"))
        #expect(failed.status == 65)
        #expect(failed.stderr.contains("7 bad rows; nothing written (use --skip-bad-rows to build from the good rows)"), "\(failed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("a.cid")))
        let skipped = try build(["--skip-bad-rows"], input, dir.path("a.cid"))
        #expect(skipped.status == 0)
        for r in [failed, skipped] {
            let lines = Set(r.stderr.split(separator: "\n").compactMap { line -> Int? in
                guard line.hasPrefix(input + ":"), !line.contains(": warning: ") else { return nil }
                return Int(line.dropFirst(input.count + 1).prefix { $0.isNumber })
            })
            #expect(lines.count == 7, "\(r.stderr)")
        }
        // The pipeline's default stops at the first bad row.
        #expect(try build(["--no-progress"], input, dir.path("a.cid")).status == 65)
    }

    // Before: the TSV import compared each row's category with every distinct name seen so far,
    // so 100,000 rows of 100,000 categories took 114 s (one category: 0.24 s); the time is
    // guarded by `callerid-bench categories`. Here: what such a file builds, names found in
    // place by the fast route (the first few) and by its dictionary (the rest) alike, and the
    // rows past the 256th category refused with their reason.
    @Test func tsvWithThousandsOfCategoriesKeepsTheFirst256() throws {
        let dir = TempDir()
        var text = ""
        // 20 names, then 'spam' and 'Collector' (found in the dictionary when they come back),
        // then 2,980 more names, then every name again.
        func row(_ prefix: String, _ i: Int) -> String { "\(prefix)\(String(1_000_000 + i))\tName \(i)\tc\(i)\n" }
        for i in 0..<20 { text += row("7913", i) }
        text += "79330000001\tSpam\tspam\n79330000002\tCollector\tCollector\n79330000003\tSpam again\tspam\n"
        for i in 20..<3_000 { text += row("7913", i) }
        for i in 0..<3_000 { text += row("7923", i) }
        try text.write(toFile: dir.path("in.tsv"), atomically: false, encoding: .utf8)
        var options = PipelineOptions()
        options.maxBadRows = .unlimited
        let pipeline = try Pipeline(options: options)
        var refused: [RejectedRow] = []
        pipeline.onRejected = { refused.append($0) }
        try pipeline.build([dir.path("in.tsv")], to: dir.path("out.cid"))
        let added = pipeline.numbersAccepted
        // identify and block, then 254 names: c0...c19, spam, collector, c20...c251. The next new
        // name and every later one are refused, the first time and when they come back.
        #expect(added == 2 * 252 + 3)
        #expect(refused.count == 2 * (3_000 - 252))
        #expect(refused.allSatisfy { $0.reason == .badCategory && $0.message == "more than 256 categories" })
        #expect(refused.first?.line == 256)
        let db = try Database(path: dir.path("out.cid"), verify: true)
        #expect(db.categories.count == 256)
        #expect(try db.lookup(79_131_000_251) == Entry(number: 79_131_000_251, label: "Name 251", category: try Category.named("c251")))
        #expect(try db.lookup(79_231_000_251)?.category.name == "c251")
        #expect(try db.lookup(79_131_000_252) == nil)
        #expect(try db.lookup(79_330_000_001)?.category.action == .block)
        #expect(try db.lookup(79_330_000_002)?.category.name == "collector")
        #expect(try db.lookup(79_330_000_003)?.category.name == "spam")
    }

    /// The word-at-a-time TAB search finds what a byte loop finds, from every start, in lines
    /// of every length around the word size, among bytes next to TAB's value.
    @Test func theTabSearchFindsTheFirstTab() {
        var rng = SeededGenerator(seed: 31)
        let alphabet: [UInt8] = [0x09, 0x08, 0x0A, 0x89, 0x49, 0x00, 0xFF, 0x30]
        var mismatches: [String] = []
        for length in 0..<40 {
            for _ in 0..<60 {
                let line = (0..<length).map { _ in alphabet.randomElement(using: &rng)! }
                line.withUnsafeBytes { bytes in
                    for start in 0...length {
                        let expected = line[start...].firstIndex(of: 0x09) ?? length
                        let got = PlainRowRoute.nextTab(bytes, from: start)
                        if got != expected { mismatches.append("\(line) from \(start): \(got), not \(expected)") }
                    }
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(3))")
    }

    /// `isClean` never lets through a label the cleaner would change.
    @Test func aCleanLabelIsOneTheCleanerKeeps() {
        var rng = SeededGenerator(seed: 12)
        let pieces = ["a", "Z", " ", "  ", "\u{00A0}", "\t", "\u{0301}", "é", "Ж", "ж", "강", "\u{2003}", "\u{200B}", "№",
                      "«", "»", "\u{01}", "\u{7F}", "\u{85}", "😀", "ǅ", "\u{3000}", "x1", "-", ".", "Ω", "\u{0483}",
                      "\u{9B}", "\u{202E}", "\u{2066}", "\u{200D}", "\u{200C}", "\u{FEFF}", "\u{2060}", "\u{200E}"]
        let cleaner = LabelCleaner()
        var clean = 0
        for _ in 0..<20_000 {
            let label = (0..<Int.random(in: 0...12, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
            var bytes = Array(label.utf8)
            let quick = bytes.withUnsafeMutableBytes { cleaner.isClean(utf8: UnsafeRawBufferPointer($0)) }
            if quick {
                clean += 1
                #expect((try? cleaner.clean(label))?.label == label, "isClean passed \(label.unicodeScalars.map { String($0.value, radix: 16) })")
            }
            bytes.removeAll()
        }
        #expect(clean > 1_000, "the quick check accepts plain labels")
        for plain in ["Pizza Hut", "Сбербанк", "스타벅스 강남점", "ООО «Ромашка»", "Taxi 24/7", "12345678"] {
            let ok = Array(plain.utf8).withUnsafeBytes { cleaner.isClean(utf8: $0) }
            #expect(ok, "\(plain)")
        }
    }

    /// The fast route reads a number as the normalizer does: the same number when it takes the
    /// row, the row left to the general reading when the normalizer refuses it, and the same
    /// numbers noted as also national numbers of another country (random digits starting with 8
    /// often are).
    @Test(arguments: [NumberValidity.plausible, .possible])
    func theFastRouteReadsNumbersAsTheNormalizer(validity: NumberValidity) throws {
        var options = PipelineOptions()
        options.validity = validity
        options.header = .absent
        let normalizer = try NumberNormalizer(validity: validity, rules: .automatic)
        var record = Record()
        record.values = [0..<0, 0..<0, 0..<0]
        let (slots, _) = try FieldSlots.delimited(first: record, format: .tsv, options: options, file: "x")
        var route = try #require(PlainRowRoute(options: options, format: .tsv, slots: slots, normalizer: normalizer))
        var rng = SeededGenerator(seed: 5)
        var doubtful = 0, noted = 0
        for _ in 0..<5_000 {
            let digits = Int.random(in: 1...16, using: &rng)
            var text = Bool.random(using: &rng) ? "+" : ""
            for k in 0..<digits { text += String(Int.random(in: k == 0 ? 1...9 : 0...9, using: &rng)) }
            let fast = Array((text + "\tlabel").utf8).withUnsafeBytes { line in route.fields(line).map { ($0.number, $0.reading != nil) } }
            if let fast, fast.1 { noted += 1 }
            do {
                let found = try normalizer.normalize(text, country: nil)
                #expect(fast?.0 == found.numbers[0] && found.numbers.count == 1, "\(text)")
                if !text.hasPrefix("+") { doubtful += found.numbers.filter { normalizer.otherNationalReading(of: $0) != nil }.count }
            } catch {
                #expect(fast == nil, "\(text) is refused: the general reading says why")
            }
        }
        #expect(noted == doubtful)
        #expect(doubtful > 0)
    }
}

/// `lookup NUMBER --country XX` reads national forms with the pipeline's normalizer;
/// without it the query keeps its digits-only reading.
@Suite struct QueryCountryTests {
    @Test func nationalFormsAreReadInTheirCountry() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv"), db = dir.path("q.cid")
        try "79131234567\tIvan\n14039453444\tCalgary\n".write(toFile: tsv, atomically: false, encoding: .utf8)
        #expect(try lookup(["build", "-o", db, tsv]).status == 0)
        let ru = try lookup(["8 (913) 123-45-67", "--country", "RU", "--db", db])
        #expect(ru.status == 0 && ru.lines == ["79131234567\tIvan\tidentify"])
        let ca = try lookup(["(403) 945-3444", "--country", "ca", "--db", db, "--json"])
        #expect(ca.status == 0)
        #expect(try jsonObjects(ca.stdout).first?["number"] as? Int == 14039453444)
        // Without --country the same text is digits: 89131234567, not in the database.
        let plain = try lookup(["8 (913) 123-45-67", "--db", db])
        #expect(plain.status == 1 && plain.lines == ["89131234567\t-"])
        // Batch: each line read in the country; a line that is no number is answered RAW<TAB>-.
        let batch = try lookup(["-", "--country", "RU", "--db", db], stdin: Data("8 913 123 45 67\n+1 403 945 3444\nabc\n".utf8))
        #expect(batch.lines == ["79131234567\tIvan\tidentify", "14039453444\tCalgary\tidentify", "abc\t-"])
        #expect(try lookup(["1", "--country", "XX", "--db", db]).status == 64)
    }
}
