import Foundation
import Testing
@testable import CallerID
@testable import CallerIDPipeline

/// Hostile input rows through the build's one row loop (`Pipeline`, what `lookup build` runs):
/// each bad row gets a short, clear `file:line: reason` (never the whole 10 MB field, never a
/// raw control byte) and a reason code, and the good rows around it still count. Memory for
/// these is measured by tools/hostile-input.sh (max RSS with /usr/bin/time -v), not here.
@Suite struct BadInputTests {
    /// Builds `bytes` as a plain TSV file, taking every good row; returns the numbers taken
    /// and the rows rejected.
    static func build(_ bytes: [UInt8]) throws -> (added: Int, rejected: [RejectedRow]) {
        let dir = TempDir()
        let path = dir.path("in.tsv")
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        var options = PipelineOptions()
        options.maxBadRows = .unlimited
        let pipeline = try Pipeline(options: options)
        var rejected: [RejectedRow] = []
        pipeline.onRejected = { rejected.append($0) }
        let summary = try pipeline.build([path], to: dir.path("out.cid"))
        #expect(try Database(path: dir.path("out.cid"), verify: true).count == summary.entries)
        #expect(pipeline.rowsRejected == rejected.count)
        return (pipeline.numbersAccepted, rejected)
    }

    static let good = Array("79131234567\tGood row\n".utf8)
    static let good2 = Array("79131234500\tAnother good row\n".utf8)

    @Test(arguments: [
        ("invalid UTF-8 label", Array("79131234567\t".utf8) + [0xFF, 0xFE, 0x41], RejectReason.invalidEncoding, "label field is not valid utf-8"),
        ("overlong UTF-8 label", Array("79131234567\t".utf8) + [0xC0, 0xAF], .invalidEncoding, "label field is not valid utf-8"),
        ("surrogate in label", Array("79131234567\t".utf8) + [0xED, 0xA0, 0x80], .invalidEncoding, "label field is not valid utf-8"),
        ("truncated UTF-8 at the end", Array("79131234567\tab".utf8) + [0xE2, 0x82], .invalidEncoding, "label field is not valid utf-8"),
        ("NUL in the number", Array("7913".utf8) + [0] + Array("1234567\tx".utf8), .invalidCharacter, "'7913\\u{0}1234567'"),
        ("NUL in the label", Array("79131234567\tab".utf8) + [0, 0x63], .badLabel, "control character"),
        ("NUL in the category", Array("79131234567\tab\tsp".utf8) + [0] + Array("am".utf8), .badCategory, "invalid category name"),
        ("invalid UTF-8 in the number", [0xFF] + Array("79131234567\tx".utf8), .invalidEncoding, "number field is not valid utf-8"),
        ("escape sequence in the number", Array("\u{1B}[31m7913\tx".utf8), .invalidCharacter, "\\u{1B}"),
        ("only a TAB", Array("\t".utf8), .noNumber, "no"),
        ("four columns", Array("79131234567\ta\tspam\textra".utf8), .extraFields, "more than 3 columns"),
    ] as [(String, [UInt8], RejectReason, String)])
    func badRowIsReportedAndSkipped(name: String, row: [UInt8], reason: RejectReason, message: String) throws {
        let (added, rejected) = try Self.build(Self.good + row + [0x0A] + Self.good2)
        #expect(added == 2, "\(name)")
        #expect(rejected.count == 1, "\(name)")
        let e = try #require(rejected.first)
        #expect(e.line == 2)
        #expect(e.reason == reason, "\(name): \(e.reason) \(e.message)")
        #expect(e.message.lowercased().contains(message.lowercased()), "\(name): \(e.message)")
        // No raw control byte reaches the report (a terminal would interpret it).
        #expect(!e.description.unicodeScalars.contains { $0.value < 0x20 }, "\(name): \(e.description.debugDescription)")
        #expect(!e.errorsFileLine.dropLast().unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" }, "\(name)")
    }

    /// 10 MB lines: skipped unread as longer than the 1 MiB line limit, with a
    /// message of bounded length, whatever column is huge; 512 KiB fields (under the line
    /// limit, over the 64 KiB field limit) in the other columns are refused as too long, also
    /// briefly.
    @Test func tenMegabyteLines() throws {
        let big = 10 << 20, mb = 1 << 19
        var input = Self.good
        input += [UInt8](repeating: UInt8(ascii: "1"), count: big) + Array("\tlabel\n".utf8)          // line 2: number
        input += Array("79131234568\t".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: big) + [0x0A]  // line 3: label
        input += Array("79131234569\tx\t".utf8) + [UInt8](repeating: UInt8(ascii: "b"), count: mb) + [0x0A]  // line 4: category
        input += [UInt8](repeating: UInt8(ascii: "c"), count: mb) + [0x0A]                         // line 5: no TAB
        input += [UInt8](repeating: 0, count: mb) + [0x09, 0x78, 0x0A]                             // line 6: NULs
        input += Self.good2
        let (added, rejected) = try Self.build(input)
        #expect(added == 2)
        #expect(rejected.map(\.line) == [2, 3, 4, 5, 6])
        for e in rejected { #expect(e.message.utf8.count < 200 && e.raw.utf8.count < 200, "line \(e.line): \(e.message.prefix(300))") }
        #expect(rejected.map(\.reason) == [.recordTooLong, .recordTooLong, .fieldTooLong, .fieldTooLong, .fieldTooLong])
        #expect(rejected[0].message.contains("line of \(big + 6) bytes is longer than the limit of 1048576"), "\(rejected[0].message)")
        #expect(rejected[1].message.contains("line of \(big + 12) bytes is longer than the limit of 1048576"), "\(rejected[1].message)")
        #expect(rejected[2].message.contains("field 3 is \(mb) bytes"), "\(rejected[2].message)")
        #expect(rejected[4].raw.contains("\\u{0}"), "\(rejected[4].raw)")
    }

    @Test func quotedInputIsShortAndEscaped() {
        #expect(quotedInput(Array("79131234567".utf8)) == "'79131234567'")
        #expect(quotedInput(Array("a\u{1B}[2Jb".utf8)) == "'a\\u{1B}[2Jb'")
        #expect(quotedInput([0x41, 0xFF, 0x42]) == "'A\u{FFFD}B'")
        #expect(quotedInput(Array(String(repeating: "x", count: 40).utf8)) == "'" + String(repeating: "x", count: 40) + "'")
        #expect(quotedInput(Array(String(repeating: "x", count: 41).utf8)) == "'" + String(repeating: "x", count: 40) + "… (41 bytes)'")
        #expect(quotedInput(Array(String(repeating: "я", count: 100).utf8)) == "'" + String(repeating: "я", count: 40) + "… (200 bytes)'")
    }

    /// 100,000 bad rows in a row with `--skip-bad-rows`: the good rows are built, the first
    /// 1,000 errors are shown with their line, the rest are counted, and a summary by reason.
    @Test func hundredThousandBadRowsThroughTheCLI() throws {
        let dir = TempDir()
        let input = dir.path("bad.tsv")
        var text = "79131234567\tFirst good\n"
        for i in 0..<100_000 { text += i % 2 == 0 ? "12a4\tletters\n" : "+\(i)x\tx\n" }
        text += "79131234568\tLast good\n"
        try text.write(toFile: input, atomically: false, encoding: .utf8)
        let out = dir.path("out.cid")

        let r = try lookup(["build", "--skip-bad-rows", "-o", out, input])
        #expect(r.status == 0, "\(r.stderr.suffix(500))")
        let lines = r.errorLines
        #expect(lines.filter { $0.hasPrefix("\(input):") }.count == 1000)
        #expect(lines.contains { $0.hasPrefix("\(input):2: ") && $0.contains("'12a4'") && $0.contains("letters") })
        #expect(lines.contains("(99000 more rejected rows not shown; --errors FILE lists them all)"))
        #expect(lines.contains("100000 bad rows of 100002"))
        #expect(r.stderrData.count < 200_000, "stderr is \(r.stderrData.count) bytes")
        let db = try Database(path: out, verify: true)
        #expect(db.count == 2)
        #expect(try db.lookup(79131234568)?.label == "Last good")
    }
}
