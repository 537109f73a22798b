import Foundation
import Testing
@testable import CallerID

/// Hostile input rows through `DatabaseBuilder.addTSV` and `lookup build`: each bad row gets a
/// short, clear `file:line: reason` (never the whole 10 MB field, never a raw control byte),
/// and the good rows around it still count. Memory for these is measured by
/// tools/hostile-input.sh (max RSS with /usr/bin/time -v), not here.
@Suite struct BadInputTests {
    /// Adds `bytes` as a TSV file; returns the rows added and the errors.
    static func addTSV(_ bytes: [UInt8]) throws -> (added: Int, errors: [RowError]) {
        let dir = TempDir()
        let path = dir.path("in.tsv")
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        var b = DatabaseBuilder()
        var errors: [RowError] = []
        let added = try b.addTSV(path: path) { errors.append($0) }
        _ = try b.write(to: dir.path("out.cid"))
        #expect(try Database(path: dir.path("out.cid"), verify: true).count == added)
        return (added, errors)
    }

    static let good = Array("79131234567\tGood row\n".utf8)
    static let good2 = Array("79131234500\tAnother good row\n".utf8)

    @Test(arguments: [
        ("invalid UTF-8 label", Array("79131234567\t".utf8) + [0xFF, 0xFE, 0x41], "label is not valid UTF-8"),
        ("overlong UTF-8 label", Array("79131234567\t".utf8) + [0xC0, 0xAF], "label is not valid UTF-8"),
        ("surrogate in label", Array("79131234567\t".utf8) + [0xED, 0xA0, 0x80], "label is not valid UTF-8"),
        ("truncated UTF-8 at the end", Array("79131234567\tab".utf8) + [0xE2, 0x82], "label is not valid UTF-8"),
        ("NUL in the number", Array("7913".utf8) + [0] + Array("1234567\tx".utf8), "byte 0x0 at position 5"),
        ("NUL in the label", Array("79131234567\tab".utf8) + [0, 0x63], "control character U+0000 at byte 3"),
        ("NUL in the category", Array("79131234567\tab\tsp".utf8) + [0] + Array("am".utf8), "invalid category name"),
        ("invalid UTF-8 in the number", [0xFF] + Array("79131234567\tx".utf8), "byte 0xff at position 1"),
        ("escape sequence in the number", Array("\u{1B}[31m7913\tx".utf8), "byte 0x1b at position 1"),
        ("only a TAB", Array("\t".utf8), "no digits"),
        ("four columns", Array("79131234567\ta\tspam\textra".utf8), "more than 3 columns"),
    ] as [(String, [UInt8], String)])
    func badRowIsReportedAndSkipped(name: String, row: [UInt8], reason: String) throws {
        let (added, errors) = try Self.addTSV(Self.good + row + [0x0A] + Self.good2)
        #expect(added == 2, "\(name)")
        #expect(errors.count == 1, "\(name)")
        let e = try #require(errors.first)
        #expect(e.line == 2)
        #expect(e.reason.contains(reason), "\(name): \(e.reason)")
        // No raw control byte reaches the report (a terminal would interpret it).
        #expect(!e.description.unicodeScalars.contains { $0.value < 0x20 }, "\(name): \(e.description.debugDescription)")
    }

    /// 10 MB lines: skipped unread as longer than the 1 MiB line limit, with a
    /// message of bounded length, whatever column is huge; 512 KiB fields (under the limit)
    /// in the other columns are refused by the row checks, also briefly.
    @Test func tenMegabyteLines() throws {
        let big = 10 << 20, mb = 1 << 19
        var input = Self.good
        input += [UInt8](repeating: UInt8(ascii: "1"), count: big) + Array("\tlabel\n".utf8)          // line 2: number
        input += Array("79131234568\t".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: big) + [0x0A]  // line 3: label
        input += Array("79131234569\tx\t".utf8) + [UInt8](repeating: UInt8(ascii: "b"), count: mb) + [0x0A]  // line 4: category
        input += [UInt8](repeating: UInt8(ascii: "c"), count: mb) + [0x0A]                         // line 5: no TAB
        input += [UInt8](repeating: 0, count: mb) + [0x09, 0x78, 0x0A]                             // line 6: NULs
        input += Self.good2
        let (added, errors) = try Self.addTSV(input)
        #expect(added == 2)
        #expect(errors.map(\.line) == [2, 3, 4, 5, 6])
        for e in errors { #expect(e.reason.utf8.count < 200, "line \(e.line): \(e.reason.prefix(300))") }
        #expect(errors[0].reason.contains("line of \(big + 6) bytes is longer than the limit of 1048576"), "\(errors[0].reason)")
        #expect(errors[1].reason.contains("line of \(big + 12) bytes is longer than the limit of 1048576"), "\(errors[1].reason)")
        #expect(errors[2].reason.contains("invalid category name"))
        #expect(errors[3].reason.contains("no TAB"))
        #expect(errors[4].reason.contains("\\u{0}"))
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
        #expect(lines.contains("(99000 more bad rows not shown)"))
        #expect(lines.contains("100000 bad rows of 100002"))
        #expect(r.stderrData.count < 200_000, "stderr is \(r.stderrData.count) bytes")
        let db = try Database(path: out, verify: true)
        #expect(db.count == 2)
        #expect(try db.lookup(79131234568)?.label == "Last good")
    }
}
