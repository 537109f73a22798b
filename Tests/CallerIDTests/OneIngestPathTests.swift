import Foundation
import Testing
@testable import CallerID
@testable import CallerIDPipeline

/// One ingest path: a plain `lookup build` reads rows with the pipeline's rules (its
/// normalizer, its label cleaning, its plain layout), so options that only change what is shown
/// or reported never change what is valid, and a build with and without them writes the same
/// bytes.
@Suite struct OneIngestPathTests {
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
        // Each option of the pipeline that only reports: it switches to the pipeline path, which
        // must take the same rows and write the same bytes.
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
        // The same file read by the pipeline because its format is named.
        let formatted = try build(["--skip-bad-rows", "--format", "tsv"], input, dir.path("f.cid"))
        #expect(formatted.status == 0)
        #expect(FileManager.default.contents(atPath: dir.path("f.cid")) == reference)
    }

    /// Both paths refuse the same rows: the bad-row count and the lines agree.
    @Test func bothPathsRefuseTheSameRows() throws {
        let dir = TempDir()
        let input = dir.path("mixed.tsv")
        try Self.mixedFile(rows: 50, seed: 9).write(toFile: input, atomically: false, encoding: .utf8)
        #expect(try build([], input, dir.path("a.cid")).status == 65, "bad rows fail a plain build")
        #expect(try build(["--no-progress"], input, dir.path("a.cid")).status == 65, "and a pipeline build")
        let plain = try build(["--skip-bad-rows"], input, dir.path("a.cid"))
        let pipeline = try build(["--max-bad-rows", "100%", "--errors", dir.path("e.tsv")], input, dir.path("b.cid"))
        #expect(plain.status == 0 && pipeline.status == 0)
        let plainLines = Set(plain.stderr.split(separator: "\n").compactMap { line -> Int? in
            guard line.hasPrefix(input + ":") else { return nil }
            return Int(line.dropFirst(input.count + 1).prefix { $0.isNumber })
        })
        let errors = try String(contentsOfFile: dir.path("e.tsv"), encoding: .utf8)
        let pipelineLines = Set(errors.split(separator: "\n").dropFirst().compactMap { Int($0.split(separator: "\t")[1]) })
        #expect(plainLines.count == 7)
        #expect(plainLines == pipelineLines)
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

    /// The plain path's fast number reading agrees with the normalizer's full reading: the same
    /// number or refusal, and the same numbers noted as also national numbers of another country
    /// (random digits starting with 8 often are).
    @Test(arguments: [NumberValidity.plausible, .possible])
    func theFastNumberPathAgreesWithTheNormalizer(validity: NumberValidity) throws {
        let normalizer = try NumberNormalizer(validity: validity, rules: .automatic)
        let rules = normalizer.tsvRowRules()
        var rng = SeededGenerator(seed: 5)
        var doubtful = 0
        for _ in 0..<5_000 {
            let digits = Int.random(in: 1...16, using: &rng)
            var text = Bool.random(using: &rng) ? "+" : ""
            for k in 0..<digits { text += String(Int.random(in: k == 0 ? 1...9 : 0...9, using: &rng)) }
            let fast: String
            switch Array(text.utf8).withUnsafeBytes({ rules.readNumber($0) }) {
            case .one(let n): fast = String(n)
            case .several(let list): fast = list.map(String.init).joined(separator: ",")
            case .refused: fast = "-"
            }
            let full: String
            do {
                let found = try normalizer.normalize(text, country: nil)
                full = found.numbers.map(String.init).joined(separator: ",")
                if !text.hasPrefix("+") { doubtful += found.numbers.filter { normalizer.otherNationalReading(of: $0) != nil }.count }
            } catch {
                full = "-"
            }
            #expect(fast == full, "\(text)")
        }
        #expect(rules.doubtful.evidence.acceptedRows == doubtful)
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
