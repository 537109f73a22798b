import Foundation
import Testing
@testable import CallerIDPipeline

/// The pipeline's numbers against libphonenumber's own verdicts: a sample of
/// Fixtures/phone-samples.tsv, made by tools/gen_phone_samples.py (seed 13, 60 regions, every
/// type, typed as people type them, impossible lengths mixed in) with the `phonenumbers`
/// package pinned to the metadata of Debian's libphonenumber8. The large run is
/// tools/bench_numbers.sh.
@Suite struct PhoneNumberAgreementTests {
    struct Sample {
        var region: String, form: String, text: String, expected: String
        var refused: Bool { expected.hasPrefix("-") }
    }

    static func read(_ url: URL) -> [Sample] {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return f.count == 4 ? Sample(region: f[0], form: f[1], text: f[2], expected: f[3]) : nil
        }
    }

    static let samples = read(URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/phone-samples.tsv"))

    /// The large run's file (tools/bench_numbers.sh sets it); the test skips without it.
    static let largeSamples = ProcessInfo.processInfo.environment["CALLERID_PHONE_SAMPLES"]

    /// What the pipeline makes of a sample: E.164 digits or "-reason".
    func outcome(_ s: Sample, _ normalizer: NumberNormalizer) -> String {
        do {
            let n = try normalizer.normalize(s.text, country: s.region)
            return String(n.numbers[0])
        } catch {
            return "-" + error.reason.rawValue
        }
    }

    @Test func theSampleCoversWhatTheIssueAsks() {
        let s = PhoneNumberAgreementTests.samples
        #expect(s.count > 2_000)
        #expect(Set(s.map(\.region)).count >= 40)
        #expect(Set(s.map { $0.form.hasPrefix("dialled-from-") ? "dialled-from" : $0.form }).count >= 8)
        #expect(s.filter { $0.form.hasPrefix("impossible") }.count > 200)
    }

    /// Agreement on E.164 output where libphonenumber calls the number possible (≥ 99.5 %), and
    /// refusal of impossible lengths (≥ 99 %), each refused number with a reason.
    /// With the default validity (`plausible`: the country's number pattern too) as with
    /// `possible` (lengths only): the samples are typed from libphonenumber's valid example
    /// numbers, so the pattern check must refuse none of them.
    func checkAgreement(_ samples: [Sample], validity: NumberValidity) throws {
        let normalizer = try NumberNormalizer(validity: validity, rules: .libphonenumber)
        var disagreements: [String] = []
        let possible = samples.filter { !$0.refused }
        var agreed = 0
        for s in possible {
            let got = outcome(s, normalizer)
            if got == s.expected { agreed += 1 } else { disagreements.append("\(s.region) \(s.form) '\(s.text)': \(got), libphonenumber \(s.expected)") }
        }
        let agreement = Double(agreed) / Double(possible.count)
        #expect(agreement >= 0.995, "\(agreed) of \(possible.count) agree; first differences:\n\(disagreements.prefix(15).joined(separator: "\n"))")

        let impossible = samples.filter { $0.refused && $0.expected != "-local-only" }
        var refused = 0
        var accepted: [String] = []
        for s in impossible {
            let got = outcome(s, normalizer)
            if got.hasPrefix("-") { refused += 1 } else { accepted.append("\(s.region) \(s.form) '\(s.text)': stored as \(got), libphonenumber \(s.expected)") }
        }
        let refusal = Double(refused) / Double(impossible.count)
        #expect(refusal >= 0.99, "\(refused) of \(impossible.count) refused; first accepted:\n\(accepted.prefix(15).joined(separator: "\n"))")
        print("phone samples (\(validity)): \(samples.count) rows, \(Set(samples.map(\.region)).count) regions; "
              + "E.164 agreement \(agreed)/\(possible.count) (\(String(format: "%.2f", 100 * agreement)) %), "
              + "impossible refused \(refused)/\(impossible.count) (\(String(format: "%.2f", 100 * refusal)) %)")
    }

    @Test(arguments: [NumberValidity.plausible, .possible])
    func agreesWithLibphonenumber(validity: NumberValidity) throws {
        try checkAgreement(PhoneNumberAgreementTests.samples, validity: validity)
    }

    /// The large run (tools/bench_numbers.sh: every region, three numbers per type).
    @Test(.enabled(if: largeSamples != nil, "set CALLERID_PHONE_SAMPLES (tools/bench_numbers.sh does)"))
    func agreesWithLibphonenumberOnTheLargeSample() throws {
        let samples = PhoneNumberAgreementTests.read(URL(fileURLWithPath: PhoneNumberAgreementTests.largeSamples!))
        try #require(samples.count > 10_000)
        try checkAgreement(samples, validity: .plausible)
        try checkAgreement(samples, validity: .possible)
    }

    /// The built-in table alone, for comparison (what the pipeline did before it used libphonenumber): it must
    /// be measurably worse, or the library would not be worth its weight.
    @Test func theBuiltInTableAloneDoesWorse() throws {
        let table = try NumberNormalizer(validity: .possible, rules: .builtInTable)
        let library = try NumberNormalizer(validity: .possible, rules: .libphonenumber)
        let samples = PhoneNumberAgreementTests.samples
        let byTable = samples.filter { outcome($0, table) == $0.expected || ($0.refused && outcome($0, table).hasPrefix("-")) }.count
        let byLibrary = samples.filter { outcome($0, library) == $0.expected || ($0.refused && outcome($0, library).hasPrefix("-")) }.count
        #expect(byLibrary > byTable)
    }

    /// Valid fixed-line and mobile numbers of today's libphonenumber (Fixtures/current-numbers.tsv,
    /// tools/gen_current_numbers.py with phonenumbers 9.0.43: 8 per region and 400 Nigerian ones),
    /// typed in national format and read in their country.
    static let currentNumbers: [(region: String, text: String, e164: String)] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/current-numbers.tsv")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.dropFirst().compactMap { line in
            let f = line.split(separator: "\t").map(String.init)
            return f.count == 3 ? (f[0], f[1], f[2]) : nil
        }
    }()

    /// Before: the default validity checked a number's shape against Debian's metadata of 2022,
    /// and refused numbers it predates: Nigeria's 10-digit fixed lines (`0202 975 5047`), which
    /// today's libphonenumber accepts — 205 of the hold-out's 2,352 rows. A number read in the
    /// row's own country with a possible length is now kept, with a warning naming the metadata
    /// and its date: at least 99.9 % of the hold-out is kept, every Nigerian number as itself.
    /// Digits without a country are still refused when no number has their shape (`88005553535`
    /// is no +880 number: Russia's 8 800 with its trunk prefix).
    @Test func currentNumbersOfTheRowsCountryAreKeptWhenTheMetadataPredatesThem() throws {
        let rows = PhoneNumberAgreementTests.currentNumbers
        #expect(rows.count > 2_000 && rows.filter { $0.region == "NG" }.count > 400)
        let normalizer = try NumberNormalizer(rules: .libphonenumber)
        var kept = 0, warned = 0
        var lost: [String] = []
        for row in rows {
            do {
                let read = try normalizer.normalize(row.text, country: row.region)
                kept += 1
                if let w = read.warnings.first(where: { $0.kind.rawValue == "not-plausible-kept" }) {
                    warned += 1
                    #expect(w.message.contains("the number may be newer than the metadata (libphonenumber"), "\(w.message)")
                }
                if row.region == "NG" { #expect(read.numbers.map(String.init) == [row.e164], "\(row.text)") }
            } catch {
                lost.append("\(row.region) '\(row.text)': \(error.message)")
            }
        }
        #expect(Double(kept) >= 0.999 * Double(rows.count), "\(lost.count) lost: \(lost.prefix(10))")
        #expect(warned > 100, "the metadata judges the hold-out: some numbers are newer than it")
        #expect(lost.filter { $0.hasPrefix("NG ") }.isEmpty, "\(lost)")
        // Without a country, digits of no country's shape are refused as before.
        #expect(throws: NumberProblem.self) { try normalizer.normalize("88005553535") }
        #expect(throws: NumberProblem.self) { try normalizer.normalize(e164: 88005553535) }
        // `--validity valid` asks for allocated ranges: the metadata's word is final there.
        let strict = try NumberNormalizer(validity: .valid, rules: .libphonenumber)
        #expect(throws: NumberProblem.self) { try strict.normalize("0202 975 5047", country: "NG") }
    }

    /// The same through the tool: a build keeps the row and counts the warning, and a query
    /// with the country finds it.
    @Test func aBuildKeepsANumberNewerThanTheMetadataAndSaysSo() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv"), db = dir.path("ng.cid")
        try Data("0202 975 5047\tLagos office\n".utf8).write(to: URL(fileURLWithPath: tsv))
        let build = try lookup(["build", "-o", db, tsv, "--country", "NG", "--json"])
        #expect(build.status == 0, "\(build.stderr)")
        #expect(build.stderr.contains("'0202 975 5047': no number of NG (+234) looks like 2029755047"), "\(build.stderr)")
        let summary = try #require(try jsonObjects(build.stdout).first)
        #expect((summary["warnings"] as? [String: Any])?["not-plausible-kept"] as? Int == 1, "\(build.stdout)")
        #expect(try lookup(["0202 975 5047", "--country", "NG", "--db", db]).lines == ["2342029755047\tLagos office\tidentify"])
    }
}
