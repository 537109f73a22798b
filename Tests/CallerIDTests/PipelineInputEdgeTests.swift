import Testing
import Foundation
@testable import CallerID
@testable import CallerIDPipeline

// Pipeline input at its edges: readers, numbers and the messages they give. Inputs stay at a
// few MB at most; memory and time on /dev/zero are measured by hand (docs/HARDENING.md), not
// here.

/// Runs a lenient pipeline over one file holding `bytes`.
private func run(_ bytes: [UInt8], name: String, _ configure: (inout PipelineOptions) -> Void = { _ in }) throws
    -> (pipeline: Pipeline, rejected: [RejectedRow], summary: PipelineSummary?, dir: TempDir)
{
    let dir = TempDir()
    let path = dir.path(name)
    try write(bytes, path)
    var o = lenient()
    configure(&o)
    let r = try runPipeline([path], o, to: dir.path("out.cid"))
    return (r.pipeline, r.rejected, r.summary, dir)
}

private func run(_ text: String, name: String, _ configure: (inout PipelineOptions) -> Void = { _ in }) throws
    -> (pipeline: Pipeline, rejected: [RejectedRow], summary: PipelineSummary?, dir: TempDir)
{
    try run(Array(text.utf8), name: name, configure)
}

/// The error a pipeline run over `bytes` ends with (nil when it does not fail).
private func pipelineError(_ bytes: [UInt8], name: String, _ configure: (inout PipelineOptions) -> Void = { _ in }) -> PipelineError? {
    do {
        _ = try run(bytes, name: name, configure)
        return nil
    } catch let e as PipelineError {
        return e
    } catch {
        return PipelineError(.io, "unexpected \(error)")
    }
}

private func hasControlBytes(_ s: String) -> Bool {
    s.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
}

// MARK: - A nested JSON value is a rejected row

@Suite struct NestedJSONValueTests {
    /// `"category":["spam"]` must not become `identify`, `"name":{…}` must not become an empty
    /// label: each selected field holding an object or array rejects its row.
    @Test(arguments: ["jsonl", "json"])
    func nestedDefaultFieldsRejectTheRow(format: String) throws {
        let objects = [
            #"{"number":"+79131234567","name":"spam caller","category":["spam"]}"#,
            #"{"number":"+79131234568","name":"spam caller","category":{"name":"spam"}}"#,
            #"{"number":"+79131234569","name":{"first":"x"},"category":"spam"}"#,
            #"{"number":["+79131234570"],"name":"x"}"#,
            #"{"number":"+79131234571","name":"good","category":"spam","tags":["ignored", {"a": 1}]}"#,
        ]
        let text = format == "json" ? "[\n" + objects.joined(separator: ",\n") + "\n]\n" : objects.joined(separator: "\n") + "\n"
        let r = try run(text, name: "in.\(format)")
        #expect(r.rejected.map(\.line) == [2, 3, 4, 5].map { format == "json" ? $0 : $0 - 1 })
        #expect(r.rejected.allSatisfy { $0.reason == .missingField })
        for row in r.rejected { #expect(row.message.contains("nested"), "\(row.message)") }
        // Only the last object is stored, and it is blocked (an unselected nested field is fine).
        let db = try Database(path: r.dir.path("out.cid"))
        #expect(db.count == 1)
        #expect(try db.lookup(79131234571)?.category.name == "spam")
        #expect(try db.lookup(79131234567) == nil)
        #expect(try db.lookup(79131234569) == nil)
    }

    @Test func nestedExplicitFieldsRejectTheRow() throws {
        let text = """
            {"tel":"+79131234567","who":"a","w":{"n":5},"cc":"RU"}
            {"tel":"+79131234568","who":"b","w":"7","cc":["RU"]}
            {"tel":"+79131234569","who":"c","w":"7","cc":"RU"}

            """
        let r = try run(text, name: "in.jsonl") { o in
            o.numberField = .name("tel")
            o.labelField = .name("who")
            o.weightField = .name("w")
            o.countryField = .name("cc")
            o.top = 10
        }
        #expect(r.rejected.map(\.line) == [1, 2])
        #expect(r.rejected.allSatisfy { $0.reason == .missingField && $0.message.contains("nested") })
        #expect(r.pipeline.numbersAccepted == 1)
    }
}

// MARK: - Zone 5 calling codes

@Suite struct ZoneFiveNumberTests {
    let normalizer = NumberNormalizer()

    /// "+5" is not a calling code: the three examples of the issue are rejected, each with a reason.
    @Test(arguments: [
        ("+52 1234", nil, RejectReason.tooShort),
        ("+502 23", nil, RejectReason.tooShort),
        ("00551-68136069", "CN", RejectReason.tooShort),   // Starbucks row 3733: +55 with a 9-digit NSN
    ] as [(String, String?, RejectReason)])
    func malformedZoneFiveNumbersAreRejected(text: String, country: String?, reason: RejectReason) {
        #expect(throws: NumberProblem.self, "\(text)") { try normalizer.normalize(text, country: country) }
        do {
            _ = try normalizer.normalize(text, country: country)
        } catch {
            #expect(error.reason == reason, "\(text): \(error.message)")
        }
    }

    /// Well-formed numbers of the zone-5 countries, international and national.
    @Test(arguments: [
        ("+52 55 1234 5678", nil, 525512345678 as UInt64),   // Mexico, 10 digits
        ("55 1234 5678", "MX", 525512345678),
        ("+502 2345 6789", nil, 50223456789),                // Guatemala, 8
        ("+55 11 91234-5678", nil, 5511912345678),           // Brazil mobile, 11
        ("+55 11 3123-4567", nil, 551131234567),             // Brazil fixed, 10
        ("(11) 3123-4567", "BR", 551131234567),
        ("+54 11 4123-4567", nil, 541141234567),             // Argentina, 10
        ("+54 9 11 4123-4567", nil, 5491141234567),          // Argentina mobile, 11
        ("+56 2 2123 4567", nil, 56221234567),               // Chile, 9
        ("+57 601 234 5678", nil, 576012345678),             // Colombia, 10
        ("+57 310 234 5678", nil, 573102345678),
        ("+58 212 123 4567", nil, 582121234567),             // Venezuela, 10
        ("0212 123 4567", "VE", 582121234567),
        ("+51 1 234 5678", nil, 5112345678),                 // Peru, 8
        ("+51 912 345 678", nil, 51912345678),               // Peru mobile, 9
        ("+53 5 123 4567", nil, 5351234567),                 // Cuba mobile, 8
        ("+53 7 123 4567", nil, 5371234567),                 // Havana, 8
        ("+500 31234", nil, 50031234),                       // Falklands, 5
        ("+501 222 1234", nil, 5012221234),                  // Belize, 7
        ("+503 2123 4567", nil, 50321234567),                // El Salvador, 8
        ("+504 2234 5678", nil, 50422345678),                // Honduras, 8
        ("+505 2234 5678", nil, 50522345678),                // Nicaragua, 8
        ("+506 2234 5678", nil, 50622345678),                // Costa Rica, 8
        ("+507 234 5678", nil, 5072345678),                  // Panama, 7
        ("+508 41 23 45", nil, 508412345),                   // Saint Pierre and Miquelon, 6
        ("+509 2234 5678", nil, 50922345678),                // Haiti, 8
        ("+590 590 12 34 56", nil, 590590123456),            // Guadeloupe, 9
        ("+591 2 212 3456", nil, 59122123456),               // Bolivia, 8
        ("+592 223 4567", nil, 5922234567),                  // Guyana, 7
        ("+593 2 212 3456", nil, 59322123456),               // Ecuador, 8
        ("+593 99 123 4567", nil, 593991234567),             // Ecuador mobile, 9
        ("+594 594 12 34 56", nil, 594594123456),            // French Guiana, 9
        ("+595 21 123 456", nil, 59521123456),               // Paraguay, 8
        ("+595 981 123 456", nil, 595981123456),             // Paraguay mobile, 9
        ("+596 596 12 34 56", nil, 596596123456),            // Martinique, 9
        ("+597 421 234", nil, 597421234),                    // Suriname, 6
        ("+597 812 3456", nil, 5978123456),                  // Suriname mobile, 7
        ("+598 2 123 4567", nil, 59821234567),               // Uruguay, 8
        ("+598 94 123 456", nil, 59894123456),
        ("+599 9 123 4567", nil, 59991234567),               // Curaçao, 8
    ] as [(String, String?, UInt64)])
    func wellFormedZoneFiveNumbersAreAccepted(text: String, country: String?, expected: UInt64) throws {
        let n = try normalizer.normalize(text, country: country)
        #expect(n.numbers == [expected], "\(text)")
    }

    /// Too long for their country: the national lengths are checked, not just "4+ digits".
    @Test(arguments: ["+52 55 1234 56789", "+502 2345 67890", "+58 212 123 45678", "+57 601 234 56789", "+56 2 2123 45678", "+53 5 123 45678"])
    func overlongZoneFiveNumbersAreRejected(text: String) {
        #expect(throws: NumberProblem.self, "\(text)") { try normalizer.normalize(text) }
    }

    /// Calling codes are prefix-free and the only 1-digit ones are 1 and 7, so no code can
    /// swallow the digits that follow it.
    @Test func callingCodesArePrefixFree() {
        let codes = NumberingPlan.builtIn.codes
        #expect(codes.filter { $0.count == 1 }.sorted() == ["1", "7"])
        for a in codes { for b in codes where a != b { #expect(!b.hasPrefix(a), "\(a) is a prefix of \(b)") } }
        for c in codes { #expect(c.allSatisfy(\.isNumber) && c.first != "0" && (1...3).contains(c.count), "\(c)") }
        // Every zone-5 code of ITU-T E.164 is assigned to a country.
        let zone5 = ["500", "501", "502", "503", "504", "505", "506", "507", "508", "509", "51", "52", "53", "54",
                     "55", "56", "57", "58", "590", "591", "592", "593", "594", "595", "596", "597", "598", "599"]
        for c in zone5 { #expect(codes.contains(c), "+\(c)") }
    }
}

// MARK: - Line, record and field caps in every reader

@Suite struct RecordLengthCapTests {
    static let mib = 1 << 20

    /// A line over the 1 MiB cap is a rejected row naming its line; the reader goes on with
    /// the next line (line numbers stay right).
    @Test(arguments: ["tsv", "csv", "jsonl"])
    func overlongLineIsRejectedAndSkipped(format: String) throws {
        var bytes: [UInt8]
        let huge = [UInt8](repeating: UInt8(ascii: "a"), count: Self.mib + 10)
        switch format {
        case "tsv":
            bytes = Array("79131234567\tfirst\n79131234568\t".utf8) + huge + Array("\n79131234569\tlast\n".utf8)
        case "csv":
            bytes = Array("number,label\n79131234567,first\n79131234568,\"".utf8) + huge + Array("\"\n79131234569,last\n".utf8)
        default:
            bytes = Array("{\"number\":\"79131234567\",\"label\":\"first\"}\n{\"number\":\"79131234568\",\"label\":\"".utf8) + huge
                + Array("\"}\n{\"number\":\"79131234569\",\"label\":\"last\"}\n".utf8)
        }
        let r = try run(bytes, name: "in.\(format)")
        let row = try #require(r.rejected.first)
        #expect(r.rejected.count == 1)
        #expect(row.reason.rawValue == "record-too-long", "\(row.reason): \(row.message.prefix(200))")
        #expect(row.line == (format == "csv" ? 3 : 2))
        #expect(row.message.contains("1048576"), "\(row.message)")
        #expect(row.raw.utf8.count < 200)
        #expect(r.pipeline.numbersAccepted == 2)
        #expect(try entries(r.dir.path("out.cid")).map(\.label) == ["first", "last"])
    }

    /// A field over 64 KiB in a record under 1 MiB is a rejected row naming the field.
    @Test(arguments: ["tsv", "csv", "jsonl", "json"])
    func overlongFieldIsRejected(format: String) throws {
        let long = String(repeating: "b", count: 70_000)
        let text: String
        switch format {
        case "tsv": text = "79131234567\tfirst\n79131234568\t\(long)\n79131234569\tlast\n"
        case "csv": text = "number,label\n79131234567,first\n79131234568,\(long)\n79131234569,last\n"
        case "jsonl": text = "{\"number\":\"79131234567\",\"label\":\"first\"}\n{\"number\":\"79131234568\",\"label\":\"\(long)\"}\n{\"number\":\"79131234569\",\"label\":\"last\"}\n"
        default: text = "[{\"number\":\"79131234567\",\"label\":\"first\"},\n{\"number\":\"79131234568\",\"label\":\"\(long)\"},\n{\"number\":\"79131234569\",\"label\":\"last\"}]\n"
        }
        let r = try run(text, name: "in.\(format)")
        let row = try #require(r.rejected.first)
        #expect(r.rejected.count == 1)
        #expect(row.reason.rawValue == "field-too-long", "\(row.reason): \(row.message.prefix(200))")
        #expect(row.line == (format == "csv" ? 3 : 2))
        #expect(row.message.contains("65536"), "\(row.message)")
        #expect(row.raw.utf8.count < 200)
        #expect(try entries(r.dir.path("out.cid")).map(\.label) == ["first", "last"])
    }

    /// A JSON array object over 1 MiB is skipped as a rejected row when its syntax lets the
    /// reader find its end.
    @Test func overlongJSONArrayObjectIsSkipped() throws {
        var text = "[{\"number\":\"79131234567\",\"label\":\"first\"},\n{\"number\":\"79131234568\""
        for i in 0..<20 { text += ",\"f\(i)\":\"\(String(repeating: "c", count: 60_000))\"" }
        text += "},\n{\"number\":\"79131234569\",\"label\":\"last\"}]"
        let r = try run(text, name: "in.json")
        #expect(r.rejected.map(\.reason.rawValue) == ["record-too-long"])
        #expect(r.rejected.first?.line == 2)
        #expect(r.pipeline.numbersAccepted == 2)
    }

    /// Binary input (NUL bytes, like /dev/zero) ends with a clear error at once, in every format.
    @Test(arguments: ["tsv", "csv", "json", "jsonl"])
    func nulBytesAreNotText(format: String) throws {
        let zeros = [UInt8](repeating: 0, count: 3 * Self.mib)
        let e = try #require(pipelineError(zeros, name: "zero.\(format)"))
        #expect(e.code == .invalidInput)
        #expect(e.message.contains("zero.\(format)") && e.message.contains("NUL"), "\(e.message)")
        #expect(e.message.count < 300 && !hasControlBytes(e.message))
        // Declared UTF-16, NULs are still not text (U+0000 would make one endless line).
        let e16 = try #require(pipelineError(zeros, name: "zero.\(format)") { $0.encoding = .utf16LE })
        #expect(e16.message.contains("NUL"), "\(e16.message)")
    }

    /// The NUL test has no false alarm on text: a stray NUL in UTF-8, UTF-16 with emoji.
    @Test func nonTextDetection() {
        func detect(_ bytes: [UInt8]) -> NonTextInput? { bytes.withUnsafeBytes { NonTextInput.detect($0) } }
        let text = String(repeating: "79131234567\tСбербанк 😀\n", count: 50)
        #expect(detect(Array(text.utf8)) == nil)
        #expect(detect(Array(text.utf8) + [0] + Array(text.utf8)) == nil)
        #expect(detect([UInt8](text.data(using: .utf16LittleEndian)!)) == .utf16(bigEndian: false, byteOrderMark: false))
        #expect(detect([UInt8](text.data(using: .utf16BigEndian)!)) == .utf16(bigEndian: true, byteOrderMark: false))
        #expect(detect([0xFF, 0xFE] + [UInt8]("x".data(using: .utf16LittleEndian)!)) == .utf16(bigEndian: false, byteOrderMark: true))
        #expect(detect([UInt8](repeating: 0, count: 4096)) == .binary(nulBytes: 4096, of: 4096))
        #expect(detect([]) == nil)
    }

    /// The CLI on a NUL-filled file: exit 65 with one clear line, with and without pipeline options.
    @Test func cliRefusesNULFiles() throws {
        let dir = TempDir()
        let zero = dir.path("zero")
        try write([UInt8](repeating: 0, count: 3 * Self.mib), zero)
        for extra in [[], ["--format", "tsv"], ["--format", "csv"]] {
            let r = try lookup(["build", "-o", dir.path("x.cid")] + extra + [zero])
            #expect(r.status == 65, "\(extra): \(r.stderr.prefix(300))")
            #expect(r.stderr.contains("NUL") && r.stderr.utf8.count < 400, "\(extra): \(r.stderr.prefix(300))")
            #expect(!r.stderr.utf8.contains(0))
        }
    }
}

// MARK: - Bounded, escaped messages on every path

@Suite struct ErrorMessageBoundTests {
    /// A 60 KB bad number (under the field cap): message and raw stay short.
    @Test func longBadNumberGivesAShortMessage() throws {
        let number = String(repeating: "12345", count: 12_000) + "x"
        for (name, text) in [("in.tsv", "\(number)\tlabel\n"), ("in.csv", "number,label\n\(number),label\n"),
                             ("in.jsonl", "{\"number\":\"\(number)\",\"label\":\"x\"}\n")] {
            let r = try run(text, name: name)
            let row = try #require(r.rejected.first, "\(name)")
            #expect(row.message.count < 200, "\(name): \(row.message.count) characters")
            #expect(row.raw.count < 100, "\(name): raw of \(row.raw.count) characters")
            #expect(row.message.contains("60001 bytes"), "\(name): \(row.message)")
        }
    }

    /// Control bytes in the input never reach a message or the raw column.
    @Test func controlBytesAreEscaped() throws {
        let text = "number\tlabel\tcategory\tweight\n"
            + "\u{1B}[2J7913\tx\n"                 // number with an escape sequence
            + "7913\u{0}1234567\tx\n"              // NUL in the number
            + "+7 913 CALL\u{7}\tx\n"              // letters and BEL
            + "79131234567\tx\tsp\u{1B}am\n"       // bad category
            + "79131234568\tx\tspam\t1\u{1B}\n"    // bad weight
        let r = try run(text, name: "in.tsv") { $0.weightField = .name("weight"); $0.top = 5 }
        #expect(r.rejected.count == 5)
        for row in r.rejected {
            #expect(!hasControlBytes(row.message), "\(row.line): \(row.message.debugDescription)")
            #expect(!hasControlBytes(row.raw), "\(row.line): \(row.raw.debugDescription)")
            #expect(!hasControlBytes(row.description))
        }
        #expect(r.rejected[0].message.contains("\\u{1B}"), "\(r.rejected[0].message)")
    }

    /// 300 KB of TABs as a header (under the line cap): the "no number column" error is short.
    @Test func hugeHeaderGivesAShortFileError() throws {
        let header = String(repeating: "\t", count: 300_000) + "\n79131234567\n"
        let e = try #require(pipelineError(Array(header.utf8), name: "tabs.tsv") { $0.header = .present })
        #expect(e.message.contains("no number column"))
        #expect(e.message.count < 400, "\(e.message.count) characters")
        let e2 = try #require(pipelineError(Array(("a\u{1B}b," + String(repeating: "x", count: 100_000) + ",c\n1,2,3\n").utf8), name: "h.csv") {
            $0.numberField = .name("phone")
        })
        #expect(e2.message.contains("no column"))
        #expect(e2.message.count < 600 && !hasControlBytes(e2.message), "\(e2.message.prefix(600))")
    }

    /// The --errors file holds no raw ESC or NUL and no huge cell.
    @Test func errorsFileIsEscapedAndBounded() throws {
        let dir = TempDir()
        let input = dir.path("in.tsv"), errors = dir.path("errors.tsv")
        var text = "79131234567\tgood\n\u{1B}]0;pwned\u{7}7913\tx\n7913\u{0}\tx\n"
        text += String(repeating: "9", count: 50_000) + "\tlong\n"
        try write(text, input)
        let r = try lookup(["build", "-o", dir.path("x.cid"), input, "--format", "tsv", "--skip-bad-rows", "--errors", errors])
        #expect(r.status == 0, "\(r.stderr.prefix(500))")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: errors)))
        #expect(!bytes.contains(0x1B) && !bytes.contains(0) && !bytes.contains(0x07))
        #expect(bytes.count < 2_000, "\(bytes.count) bytes")
        #expect(!r.stderr.utf8.contains(0x1B) && !r.stderr.utf8.contains(0))
        #expect(r.stderr.utf8.count < 2_000)
    }
}

// MARK: - Configuration and encoding errors say where and what

@Suite struct InputDiagnosticsTests {
    @Test func numberingPlanErrorsNameFileCountryAndField() throws {
        let dir = TempDir()
        let plan = dir.path("plan.json")
        try write(#"{"countries": [{"iso": "PK", "code": "92", "lengths": "nine"}]}"#, plan)
        #expect {
            _ = try NumberingPlan.builtIn.adding(contentsOf: plan)
        } throws: { error in
            let m = (error as? PipelineError)?.message ?? ""
            return m.contains(plan) && m.contains("PK") && m.contains("lengths") && m.contains("nine")
        }
        try write(#"{"countries": [{"iso": "PK", "code": "92", "lengths": "9", "first": "2-x"}]}"#, plan)
        #expect {
            _ = try NumberingPlan.builtIn.adding(contentsOf: plan)
        } throws: { error in
            let m = (error as? PipelineError)?.message ?? ""
            return m.contains(plan) && m.contains("PK") && m.contains("first")
        }
    }

    /// A field of the wrong JSON type is named with the rule it breaks, not the decoder's words.
    @Test func aPlanFieldOfTheWrongTypeIsNamedWithItsRule() throws {
        let dir = TempDir()
        let plan = dir.path("plan.json")
        for (text, expected) in [
            (#"{"countries": [{"iso": "PK", "code": 92, "lengths": "9"}]}"#, #"countries[0]: "code" must be a calling code of 1-3 digits"#),
            (#"{"countries": [{"iso": "PK", "code": "92", "lengths": "9"}, {"iso": "QA", "code": "974", "lengths": "8", "first": 5}]}"#,
             #"countries[1]: "first" must be a string of digits"#),
            (#"{"countries": [{"iso": "PK", "code": "92", "lengths": "9", "trunk": "0"}]}"#, #"countries[0]: "trunk" must be a list of digit strings"#),
            (#"{"countries": [{"iso": "PK", "code": "92", "lengths": "9", "international": ["00", ""]}]}"#, #""international" must be a list of digit strings"#),
            (#"{"places": []}"#, #"expected {"countries": ["#),
            ("[1,2]", #"expected {"countries": ["#),
        ] {
            try write(text, plan)
            var message = ""
            do { _ = try NumberingPlan.builtIn.adding(contentsOf: plan) } catch { message = error.message }
            #expect(message.hasPrefix(plan) && message.contains(expected), "\(text): \(message)")
            #expect(!message.contains("DecodingError") && !message.contains("The data"), "\(message)")
        }
    }

    @Test func badPlanJSONNamesLineAndExpectation() throws {
        let dir = TempDir()
        let plan = dir.path("plan.json")
        try write("{\"countries\": [\n  {\"iso\": \"PK\",\n   \"code\": \"92\" \"lengths\": \"9\"}\n]}\n", plan)
        var message = ""
        do { _ = try NumberingPlan.builtIn.adding(contentsOf: plan) } catch { message = error.message }
        #expect(message.contains("\(plan):3"), "\(message)")
        #expect(message.contains("expected"), "\(message)")
        #expect(!message.contains("The data is not in the correct format"))
    }

    @Test(arguments: [("utf-16le", String.Encoding.utf16LittleEndian), ("utf-16be", String.Encoding.utf16BigEndian)])
    func utf16WithoutBOMSaysSo(name: String, encoding: String.Encoding) throws {
        let text = "number\tlabel\n79131234567\tfirst\n79131234568\tsecond\n"
        let bytes = [UInt8](text.data(using: encoding)!)
        let e = try #require(pipelineError(bytes, name: "u.tsv"))
        #expect(e.message.contains("UTF-16") && e.message.contains("--encoding \(name)"), "\(e.message)")
        #expect(!hasControlBytes(e.message))
        // Declared, it reads.
        let r = try run(bytes, name: "u.tsv") { $0.encoding = TextEncoding(rawValue: name) }
        #expect(r.rejected.isEmpty)
        #expect(r.pipeline.numbersAccepted == 2)
    }
}

// MARK: - An unpaired high surrogate at the end of a JSON string

@Suite struct JSONSurrogateTests {
    @Test(arguments: ["json", "jsonl"])
    func unpairedHighSurrogateIsOneInvalidEncodingRow(format: String) throws {
        let objects = [
            #"{"number":"+79131234567","label":"a\ud800"}"#,
            #"{"number":"+79131234568","label":"b\ud800\n"}"#,
            #"{"number":"+79131234569","label":"c\ud800\ud800\udc00"}"#,
            #"{"number":"+79131234570","label":"d\ud83d\ude00"}"#,
            #"{"number":"+79131234571","label":"last"}"#,
        ]
        let text = format == "json" ? "[" + objects.joined(separator: ",\n") + "]\n" : objects.joined(separator: "\n") + "\n"
        let r = try run(text, name: "in.\(format)")
        #expect(r.rejected.map(\.reason) == [.invalidEncoding, .invalidEncoding, .invalidEncoding], "\(r.rejected.map(\.message))")
        #expect(r.rejected.map(\.line) == [1, 2, 3])
        #expect(try entries(r.dir.path("out.cid")).map(\.label) == ["d😀", "last"])
    }
}
