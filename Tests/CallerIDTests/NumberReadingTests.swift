import Foundation
import Testing
@testable import CallerIDPipeline

/// How numbers are read when a database is built and when it is queried: what no number of a
/// country looks like is refused (and what it probably was is said), `(0)` is the trunk
/// prefix, a query reads a number exactly as the build that stored it, and the tool says when
/// libphonenumber is not what reads numbers.
@Suite struct NumberReadingTests {
    func write(_ text: String, _ path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Before: `88005553535` (Russia's 8-800 written with its trunk prefix) was stored as +880
    /// 05553535 in Bangladesh, and the Korean seed's `8200000000` as +82 00000000: lengths were
    /// all `--validity possible` checked. Both build paths now refuse them and say what the first
    /// probably was.
    @Test(arguments: [["--skip-bad-rows"], ["--no-progress", "--max-bad-rows", "100%"]])
    func digitsNoNumberOfTheCountryLooksLikeAreRefusedWithWhatTheyProbablyWere(tolerant: [String]) throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try write("88005553535\tRussian 800\n8200000000\tKorean seed\n79131234567\tNovosibirsk\n", tsv)
        let pipeline = tolerant.contains("--no-progress") ? ["--no-progress"] : []
        #expect(try lookup(["build", "-o", dir.path("a.cid"), tsv] + pipeline).status == 65)
        let reported = try lookup(["build", "-o", dir.path("a.cid"), tsv] + tolerant)
        #expect(reported.status == 0)
        let lines = reported.errorLines.filter { $0.hasPrefix(tsv + ":") }
        #expect(lines.count == 2, "\(reported.stderr)")
        #expect(lines.first?.contains(":1: '88005553535': no number of +880 looks like 05553535") == true, "\(lines)")
        #expect(lines.first?.contains("national number written with the trunk prefix 8 in") == true && lines.first?.contains("RU") == true)
        #expect(lines.last?.contains(":2: '8200000000': no number of +82 looks like 00000000") == true, "\(lines)")

        let dump = try lookup(["dump", "--db", dir.path("a.cid")])
        #expect(dump.lines == ["79131234567\tNovosibirsk\tidentify"])
        // Given the country, the same row is the Russian number.
        let ru = try lookup(["build", "-o", dir.path("ru.cid"), tsv, "--country", "RU", "--max-bad-rows", "100%"])
        #expect(ru.status == 0)
        #expect(try lookup(["78005553535", "--db", dir.path("ru.cid")]).lines == ["78005553535\tRussian 800\tidentify"])
    }

    /// Before: `84951234567` (Moscow, 8 495…) was silently a Vietnamese number. It is one — a
    /// valid +84 number — so without a country it is still read as E.164; but when refused rows
    /// of the same input are national numbers of Russia (`88005553535`), a build with or without pipeline options warns
    /// that the accepted rows read as Russian numbers too, and count them. Without such evidence
    /// nothing is said: Korea's `8216660369` is also a Belarusian number with its trunk 8.
    @Test func rowsThatAreAlsoNationalNumbersOfTheRefusedRowsCountryAreWarnedOf() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try write("84951234567\tMoscow office\n88005553535\tHotline\n79131234567\tNovosibirsk\n", tsv)
        for (extra, lineNamed) in [(["--json", "--skip-bad-rows"], false), (["--json", "--no-progress", "--max-bad-rows", "100%"], true)] {
            let r = try lookup(["build", "-o", dir.path("a.cid"), tsv] + extra)
            #expect(r.status == 0, "\(extra): \(r.stderr)")
            let warning = r.errorLines.filter { $0.contains("warning") && $0.contains("'84951234567' is read as +84 951234567") }
            #expect(warning.count == 1, "\(extra): \(r.stderr)")
            #expect(warning.first?.contains("also a number of RU written with its trunk prefix 8") == true)
            #expect(warning.first?.contains("give --country RU") == true)
            if lineNamed { #expect(warning.first?.hasPrefix(tsv + ":1: warning: ") == true, "\(r.stderr)") }
            let summary = try #require(try jsonObjects(r.stdout).first)
            #expect((summary["warnings"] as? [String: Any])?["ambiguous-national-form"] as? Int == 1, "\(extra): \(r.stdout)")
        }
        // No refused row points to a country: digits that read both ways are taken silently.
        try write("84951234567\tHanoi\n8216660369\tSeoul\n79131234567\tNovosibirsk\n", tsv)
        for extra in [[String](), ["--no-progress"]] {
            let quiet = try lookup(["build", "-o", dir.path("b.cid"), tsv] + extra)
            #expect(quiet.status == 0 && !quiet.stderr.contains("warning"), "\(extra): \(quiet.stderr)")
        }
    }

    /// The normalizer's own verdicts, with and without the shape check.
    @Test func plausibleIsTheDefaultAndPossibleChecksLengthsOnly() throws {
        let plausible = try NumberNormalizer(rules: .libphonenumber)
        #expect(plausible.validity == .plausible)
        #expect(throws: NumberProblem.self) { try plausible.normalize(e164: 88005553535) }
        do {
            _ = try plausible.normalize(e164: 88005553535)
        } catch {
            #expect(error.reason == .notPlausible)
        }
        #expect(try plausible.normalize(e164: 78005553535) == 78005553535)
        let possible = try NumberNormalizer(validity: .possible, rules: .libphonenumber)
        #expect(try possible.normalize(e164: 88005553535) == 88005553535)
        #expect(try plausible.normalize("8 800 555-35-35", country: "RU").numbers == [78005553535])
    }

    /// Before: `+82 (0)2 866 0791` was stored as 82028660791 (the length is possible with the 0).
    @Test(arguments: [("+82 (0)2 866 0791", "KR", UInt64(8228660791)), ("+44 (0)20 7946 0958", "GB", 442079460958),
                      ("0044 (0)20 7946 0958", "GB", 442079460958), ("+7 (0)913 123-45-67", "RU", 79131234567)])
    func aZeroInParenthesesAfterTheCallingCodeIsTheTrunkPrefix(text: String, country: String, expected: UInt64) throws {
        for validity in [NumberValidity.plausible, .possible, .any] {
            let normalizer = try NumberNormalizer(validity: validity, rules: .libphonenumber)
            #expect(try normalizer.normalize(text, country: country).numbers == [expected], "\(validity)")
            if text.hasPrefix("+") {
                #expect(try normalizer.normalize(text, country: nil).numbers == [expected], "\(validity), no country")
            }
        }
        #expect(try NumberNormalizer(plan: .builtIn).normalize(text, country: country).numbers == [expected], "built-in table")
    }

    /// Before: `00 82 2 866 0791 --country KR` answered 228660791, `4314-3386 --country AR` a
    /// number the build refuses as local-only, `010-12 --country KR` was accepted (a query used
    /// `--validity any`). Now a query reads each sample of eight countries (typed as people type
    /// them, impossible lengths among them) as the build does: every row the build stored is
    /// found, every row it refused is refused by the query.
    @Test func aQueryReadsANumberExactlyAsTheBuildStoredIt() throws {
        let dir = TempDir()
        let regions = ["KR", "AR", "CZ", "GB", "BR", "JP", "US", "BD"]
        let samples = PhoneNumberAgreementTests.samples.filter { regions.contains($0.region) }
        #expect(samples.count > 300)
        var extra = [("KR", "00 82 2 866 0791"), ("AR", "4314-3386"), ("KR", "010-1234"), ("KR", "02-866-0791")]
        extra += samples.map { ($0.region, $0.text) }
        let rows = extra.enumerated().map { "\($0.element.1)\tL\($0.offset)\t\($0.element.0)" }
        let tsv = dir.path("in.tsv"), db = dir.path("all.cid"), errors = dir.path("errors.tsv")
        try write(rows.joined(separator: "\n") + "\n", tsv)
        let build = try lookup(["build", "-o", db, tsv, "--number-field", "1", "--label-field", "2", "--country-field", "3",
                                "--header", "no", "--max-bad-rows", "100%", "--errors", errors])
        #expect(build.status == 0, "\(build.stderr)")
        let rejectedLines = Set(try String(contentsOfFile: errors, encoding: .utf8).split(separator: "\n").dropFirst()
            .compactMap { Int($0.split(separator: "\t")[1]) })
        #expect(rejectedLines.contains(2), "the local-only row")
        // `010-1234` in KR: a possible length, no shape of the metadata's; kept with a warning, as
        // the country is given (the metadata may predate a number), and found by the query alike.
        #expect(!rejectedLines.contains(3))
        #expect(!rejectedLines.contains(1) && !rejectedLines.contains(4))
        for region in regions {
            let mine = extra.enumerated().filter { $0.element.0 == region }
            let query = try lookup(["-", "--country", region, "--db", db],
                                   stdin: Data((mine.map(\.element.1).joined(separator: "\n") + "\n").utf8))
            #expect(query.lines.count == mine.count)
            for (answer, row) in zip(query.lines, mine) {
                let found = !answer.hasSuffix("\t-")
                let stored = !rejectedLines.contains(row.offset + 1)
                #expect(found == stored, "\(region) '\(row.element.1)': build \(stored ? "stored" : "refused") it, query answered '\(answer)'")
            }
        }
        let kr = try lookup(["00 82 2 866 0791", "--country", "KR", "--db", db])
        #expect(kr.status == 0 && kr.lines.first?.hasPrefix("8228660791\t") == true)
        #expect(try lookup(["4314-3386", "--country", "AR", "--db", db]).status == 65)
        #expect(try lookup(["010-1234", "--country", "KR", "--db", db]).status == 0)
        #expect(try lookup(["010-12", "--country", "KR", "--db", db]).status == 65)
    }

    /// The library path a program can ask for (the benchmark harness labels its builds with
    /// it) is the one the normalizer reads numbers with: the tests run beside the library.
    @Test func theLibphonenumberPathIsTheOneTheNormalizerUses() throws {
        let path = try #require(NumberNormalizer.libphonenumberPath)
        #expect(path.hasSuffix("libcallerid-phonenumber.so") && FileManager.default.fileExists(atPath: path))
        let normalizer = try NumberNormalizer(rules: .automatic)
        #expect(normalizer.fallbackReason == nil && normalizer.rulesDescription == "libphonenumber")
        #expect(try NumberNormalizer(rules: .libphonenumber).normalize("+7 913 123-45-67").numbers == [79_131_234_567])
    }

    /// Before: a `lookup` whose libcallerid-phonenumber.so was not found read numbers with the
    /// built-in table without a word (8.2 % of valid numbers of 25 countries refused). Now it
    /// says so once per run, and `--version` names the rules.
    @Test func aToolWithoutLibphonenumberSaysItReadsNumbersWithTheTable() throws {
        let dir = TempDir()
        let alone = try toolWithoutLibrary(in: dir)
        let version = try lookup(["--version"], executable: alone)
        #expect(version.status == 0 && version.lines.last?.hasPrefix("number rules: built-in table (libphonenumber is not available") == true)
        let tsv = dir.path("in.tsv")
        try write("79131234567\tA\n79131234568\tB\n", tsv)
        let note = "note: numbers are read with the built-in table, not libphonenumber"
        for args in [["build", "-o", dir.path("a.cid"), tsv], ["build", "-o", dir.path("b.cid"), tsv, "--no-progress"],
                     ["+7 913 123-45-67", "--country", "RU", "--db", dir.path("a.cid")]] {
            let r = try lookup(args, executable: alone)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            #expect(r.errorLines.filter { $0.hasPrefix(note) }.count == 1, "\(args): \(r.stderr)")
        }
        // Beside its library: no note, and --version names it.
        let withLibrary = try lookup(["build", "-o", dir.path("c.cid"), tsv])
        #expect(withLibrary.status == 0 && !withLibrary.stderr.contains(note))
    }

    /// The `lookup` tool away from its libcallerid-phonenumber.so: it reads numbers with the
    /// built-in table.
    func toolWithoutLibrary(in dir: TempDir) throws -> URL {
        let alone = dir.url.appendingPathComponent("lookup")
        // A hard link where it can be made: a copy's write handle can leak into a child that
        // another test starts at that moment, and running the copy then fails with "Text file
        // busy". A copy only across file systems.
        let built = try #require(BuiltProducts.lookup)
        do { try FileManager.default.linkItem(at: built, to: alone) } catch { try FileManager.default.copyItem(at: built, to: alone) }
        return alone
    }

    /// Before: `8 (913) 123-45-6` in RU, a digit short, was stored as +7 891 312-34-56 — the
    /// trunk prefix 8 read again as the number's first digit, by libphonenumber and by the
    /// built-in table alike. A trunk prefix written before an area code in parentheses makes the
    /// number a national one: the rest is too short and the row is refused as such; the whole
    /// number, and a foreign number after Russia's international prefix 8~10, still read.
    @Test(arguments: [NumberRules.libphonenumber, .builtInTable])
    func aTrunkPrefixBeforeAnAreaCodeInParenthesesIsNeverReadAsPartOfTheNumber(rules: NumberRules) throws {
        let normalizer = try NumberNormalizer(rules: rules)
        do {
            let read = try normalizer.normalize("8 (913) 123-45-6", country: "RU")
            Issue.record("\(rules): read as \(read.numbers)")
        } catch {
            #expect(error.reason == .tooShort, "\(rules): \(error.message)")
            #expect(error.message.contains("8 before the area code in parentheses is the trunk prefix"), "\(error.message)")
        }
        #expect(try normalizer.normalize("8 (913) 123-45-67", country: "RU").numbers == [79_131_234_567])
        #expect(try normalizer.normalize("8 (812) 123-45-67", country: "RU").numbers == [78_121_234_567])
        // Belarus's trunk prefix 80 goes on inside the parentheses.
        #expect(try normalizer.normalize("8 (017) 123-45-67", country: "BY").numbers == [375_171_234_567])
        #expect(try normalizer.normalize("8 (10) 49 30 1234567", country: "RU").numbers == [49_301_234_567])
        #expect(try normalizer.normalize("1 (800) 555-1234", country: "US").numbers == [18_005_551_234])
        #expect(throws: NumberProblem.self) { try normalizer.normalize("1 (800) 555-123", country: "US") }
    }

    /// The same in `lookup build` and in `lookup NUMBER --country RU`, which share the
    /// normalizer, with libphonenumber and with the built-in table (a tool away from its library).
    @Test func aNumberADigitShortAfterAVisibleTrunkPrefixIsRefusedByBuildsAndQueries() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try write("8 (913) 123-45-6\tShort\n8 (913) 123-45-67\tWhole\n", tsv)
        for tool in [nil, try toolWithoutLibrary(in: dir)] {
            let db = dir.path(tool == nil ? "lib.cid" : "table.cid")
            let build = try lookup(["build", "-o", db, tsv, "--country", "RU", "--skip-bad-rows"], executable: tool)
            #expect(build.status == 0, "\(build.stderr)")
            #expect(build.errorLines.contains { $0.hasPrefix(tsv + ":1: '8 (913) 123-45-6' is too short") }, "\(build.stderr)")
            #expect(try lookup(["dump", "--db", db], executable: tool).lines == ["79131234567\tWhole\tidentify"])
            let query = try lookup(["8 (913) 123-45-6", "--country", "RU", "--db", db], executable: tool)
            #expect(query.status == 65 && query.stderr.contains("too short"), "\(query.stdout) \(query.stderr)")
            #expect(try lookup(["8 (913) 123-45-67", "--country", "RU", "--db", db], executable: tool).lines == ["79131234567\tWhole\tidentify"])
        }
    }

    /// Before: `lookup '8 (843) 277-19-98' --db S` (no `--country`) printed `88432771998 -` and
    /// nothing else: the number was read as E.164 digits, as queries without a country read them.
    /// The answer is the same, and stderr now says the number looks like a national one — an area
    /// code in parentheses, or digits the build refuses as E.164 that are a national number with
    /// a trunk prefix — with or without libphonenumber. E.164 numbers get no such note.
    @Test func aQueryWithoutACountryOfANationalLookingNumberSaysToGiveTheCountry() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv"), db = dir.path("a.cid")
        try write("+7 913 123-45-67\tNovosibirsk\n", tsv)
        #expect(try lookup(["build", "-o", db, tsv]).status == 0)
        let note = "looks like a national number: give --country"
        for tool in [nil, try toolWithoutLibrary(in: dir)] {
            for (text, shown) in [("8 (843) 277-19-98", "88432771998"), ("88432771998", "88432771998"), ("(843) 277-19-98", "8432771998")] {
                let r = try lookup([text, "--db", db], executable: tool)
                #expect(r.status == 1 && r.lines == ["\(shown)\t-"], "\(text): \(r.stdout)")
                #expect(r.errorLines.filter { $0.contains(note) }.count == 1, "\(text) (\(tool == nil ? "libphonenumber" : "table")): \(r.stderr)")
            }
            #expect(try lookup(["88432771998", "--db", db], executable: tool).stderr.contains("national number of RU"))
            for text in ["79131234568", "+7 913 123-45-68", "79131234567"] {
                let r = try lookup([text, "--db", db], executable: tool)
                #expect(!r.stderr.contains(note), "\(text): \(r.stderr)")
            }
        }
        // A calling code before the parentheses is an international number without its `+`.
        let international = try lookup(["7 (913) 123-45-68", "--db", db])
        #expect(international.status == 1 && !international.stderr.contains(note), "\(international.stderr)")
        // Found as E.164 digits, an area code in parentheses still says it was meant nationally:
        // Moscow's (495) 123-45-67 is found as the German +49 5123 4567.
        let german = dir.path("de.cid")
        try write("+49 5123 4567\tGerman office\n", tsv)
        #expect(try lookup(["build", "-o", german, tsv]).status == 0)
        let found = try lookup(["(495) 123-45-67", "--db", german])
        #expect(found.status == 0 && found.lines == ["4951234567\tGerman office\tidentify"], "\(found.stdout)")
        #expect(found.errorLines.filter { $0.contains(note) }.count == 1, "\(found.stderr)")
        // With the country the number is read as it is written; no note.
        let national = try lookup(["8 (843) 277-19-98", "--country", "RU", "--db", db])
        #expect(national.lines == ["78432771998\t-"] && !national.stderr.contains(note), "\(national.stderr)")
    }

    /// A server reads every country's numbers from its start: the patterns that were compiled
    /// when a country was first met (the first `?country=` request cost 17–110 ms) are compiled
    /// by ``NumberNormalizer/prepareEveryCountry()``.
    @Test func preparingEveryCountryLeavesNoPatternToCompileLater() throws {
        let normalizer = try NumberNormalizer(rules: .libphonenumber)
        let territories = try #require(normalizer.territories)
        normalizer.prepareEveryCountry()
        #expect(territories.patternsNotCompiled == 0)
    }
}
