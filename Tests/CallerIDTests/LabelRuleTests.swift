import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory
@testable import CallerIDPipeline

// The one rule of what a label may hold (LabelText): no control character (C0, DEL, C1), no
// hidden character (bidirectional controls, invisible characters, joiners where no script
// needs them). The builder, the pipeline, verify and every output apply the same function.

/// Labels a file may hold (as written), each with what the rule says of it.
private let ruleCases: [(label: String, problem: LabelText.Problem.Kind?)] = [
    ("Pizza Hut", nil),
    ("Сбербанк", nil),
    ("스타벅스 강남점", nil),
    ("👨\u{200D}👩\u{200D}👧 family", nil),                     // emoji ZWJ sequence
    ("🏳\u{FE0F}\u{200D}🌈", nil),                               // after U+FE0F
    ("👩🏽\u{200D}💻", nil),                                      // after a skin tone modifier
    ("क्\u{200D}ष", nil),                                          // Devanagari: ZWJ after the virama
    ("क्\u{200C}ष", nil),                                          // ZWNJ after the virama
    ("می\u{200C}خواهم", nil),                                     // Persian: ZWNJ between joining letters
    ("بِ\u{200C}ب", nil),                                          // a combining mark before the ZWNJ is skipped
    ("Pay\u{202E}dsu\u{202C} Bank", .hidden),                    // right-to-left override
    ("\u{2067}Bank\u{2069}", .hidden),                           // isolates
    ("x\u{061C}y", .hidden), ("x\u{200E}y", .hidden), ("x\u{200F}y", .hidden),
    ("Pay\u{200B}Pal", .hidden), ("Pay\u{2060}Pal", .hidden), ("\u{FEFF}Bank", .hidden), ("a\u{2063}b", .hidden),
    ("A\u{200D}B", .hidden),                                     // ZWJ between Latin letters
    ("A\u{200C}B", .hidden),
    ("\u{200D}👩", .hidden),                                      // nothing before
    ("👩\u{200D}", .hidden),                                      // nothing after
    ("👩\u{200D}\u{200D}💻", .hidden),                            // doubled
    ("1\u{200D}2", .hidden),                                     // digits are Emoji (keycaps) but no picture
    ("م\u{200C}A", .hidden),                                     // ZWNJ before a letter that does not join
    // Default_Ignorable_Code_Point and the interlinear annotation characters.
    ("soft\u{AD}hyphen", .hidden), ("a\u{34F}b", .hidden), ("\u{115F}\u{1160}", .hidden), ("\u{3164}", .hidden),
    ("\u{FFA0}", .hidden), ("a\u{17B4}", .hidden), ("a\u{17B5}", .hidden), ("a\u{180E}b", .hidden), ("a\u{206A}b", .hidden),
    ("a\u{206F}", .hidden), ("a\u{2065}", .hidden), ("a\u{FFF9}b\u{FFFA}c\u{FFFB}", .hidden), ("a\u{FFF0}", .hidden),
    ("a\u{1BCA0}", .hidden), ("a\u{1D173}", .hidden), ("a\u{1D17A}", .hidden), ("Bank\u{E0001}", .hidden),
    ("Bank\u{E0041}\u{E0042}", .hidden),                         // tag characters: text nobody sees
    ("🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}", .hidden),
    ("a\u{E0FFF}", .hidden),
    // Variation selectors: one, right after a character that is seen.
    ("❤\u{FE0F}", nil), ("1\u{FE0F}\u{20E3}", nil), ("葛\u{E0100}", nil), ("ᠠ\u{180B}", nil), ("ᠠ\u{180F}", nil),
    ("\u{FE0F}x", .hidden), ("a \u{FE0F}", .hidden), ("a\u{FE0F}\u{FE0F}", .hidden), ("😀\u{E0100}\u{E0101}", .hidden),
    ("\u{E0100}", .hidden), ("a\u{200B}\u{FE0F}", .hidden),
    // Their neighbours, allowed.
    ("\u{AC}\u{AE}\u{34E}\u{350}\u{17B6}\u{180A}\u{1161}\u{3165}\u{FF9F}\u{FFA1}\u{FFFC}\u{FFFD}", nil),
    ("\u{1BC9F}\u{1BCA4}\u{1D172}\u{1D17B}\u{E1000}\u{DFFFF}\u{205A}", nil),
    ("a\u{1B}[31m", .control), ("a\nb", .control), ("a\u{7F}", .control),
    ("a\u{85}b", .control), ("a\u{9B}31m", .control), ("\u{80}", .control),   // C1 (U+009B: CSI)
]

@Suite struct LabelRuleTests {
    // MARK: The rule itself

    @Test func checkFindsWhatTheRuleRefuses() {
        for (label, kind) in ruleCases {
            #expect(LabelText.check(label)?.kind == kind, "\(label.unicodeScalars.map { String($0.value, radix: 16) })")
        }
        #expect(LabelText.check("Pay\u{202E}dsu") == LabelText.Problem(kind: .hidden, scalar: 0x202E, byteOffset: 3))
        #expect(LabelText.check("Pay\u{202E}dsu")!.description == "label has hidden character U+202E RIGHT-TO-LEFT OVERRIDE at byte 4")
        #expect(LabelText.check("a\u{9B}")!.description == "label has control character U+009B at byte 2; labels are one line of text")
        let invalid: [UInt8] = [0x41, 0xC2]
        #expect(invalid.withUnsafeBytes { LabelText.check($0) }?.kind == .invalidUTF8)
    }

    /// The fast check (eight bytes at a time, lead bytes only) agrees with a scalar-by-scalar
    /// reading of the rule on random byte strings: valid and invalid UTF-8, every refused
    /// character, joiners in and out of context, at every alignment.
    @Test func fastCheckAgreesWithTheRuleScalarByScalar() {
        let pieces: [[UInt8]] = ["a", "Z", " ", "ж", "ب", "ِ", "क", "्", "👩", "💻", "\u{FE0F}", "1", "\u{200D}", "\u{200C}",
                                 "\u{202E}", "\u{2066}", "\u{061C}", "\u{200B}", "\u{FEFF}", "\u{2060}", "\u{200E}", "\u{85}", "\u{9B}",
                                 "\u{1B}", "\n", "\u{7F}", "\u{A0}", "€", "\u{2028}", "\u{2070}"].map { Array($0.utf8) }
            + ["Ж", "ß", "\u{7FF}", "\u{600}", "\u{63F}", "\u{AD}", "\u{34F}", "\u{370}", "\u{3164}", "\u{FE0F}", "\u{E0100}",
               "\u{E0041}", "\u{1D173}", "\u{1BCA0}", "\u{FFF9}", "\u{115F}", "\u{17B4}", "\u{180B}", "\u{180E}", "\u{206F}", "\u{FFA0}",
               "\u{1EA0}", "ア", "😀"].map { Array($0.utf8) }
            + [[0xFF], [0xC2], [0xD0], [0xDF], [0x80], [0xBF], [0xE2, 0x80], [0xED, 0xA0, 0x80], [0xC0, 0x80], [0xC1, 0xBF],
               [0xF4, 0x90, 0x80, 0x80]]
        var rng = SeededGenerator(seed: 39)
        for _ in 0..<4000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0...12, using: &rng) { bytes += pieces.randomElement(using: &rng)! }
            let fast = bytes.withUnsafeBytes { LabelText.check($0) }
            if bytes.withUnsafeBytes({ isValidUTF8($0) }) {
                // The reference: each scalar in its context; the first problem.
                var reference: LabelText.Problem.Kind? = nil
                LabelText.forEachScalar(bytes) { _, problem in if reference == nil { reference = problem } }
                #expect(fast?.kind == reference, "\(bytes)")
            } else {
                #expect(fast != nil, "invalid UTF-8 passed: \(bytes)")   // the first problem, whatever it is
            }
        }
    }

    /// The eight-byte step takes a word only when a byte-by-byte reading of it finds printable
    /// ASCII and two-byte characters the rule allows (lead C3 … DF but those of the table's
    /// refused characters, CD and D8), and says 7 when the last byte is such a lead; on random
    /// words mixing those with every other kind of byte.
    @Test func wordStepTakesOnlyPrintableASCIIAndAllowedTwoByteCharacters() {
        func reference(_ b: [UInt8]) -> Int {
            var i = 0
            while i < 8 {
                let x = b[i]
                if x >= 0x20 && x < 0x7F { i += 1; continue }
                guard x >= 0xC3 && x <= 0xDF && !LabelText.mayBeginRefused(x) else { return 0 }
                if i == 7 { return 7 }
                guard b[i + 1] & 0xC0 == 0x80 else { return 0 }
                i += 2
            }
            return 8
        }
        let kinds: [ClosedRange<UInt8>] = [0x20...0x7E, 0x20...0x7E, 0xC3...0xDF, 0x80...0xBF, 0x00...0x1F, 0x7F...0x7F,
                                           0xC0...0xC2, 0xD8...0xD8, 0xCD...0xCD, 0xE0...0xFF]
        var rng = SeededGenerator(seed: 8)
        var taken = [0, 0, 0]
        for _ in 0..<200_000 {
            var b: [UInt8] = []
            while b.count < 8 {
                let kind = kinds[Int.random(in: 0..<(Int.random(in: 0..<10, using: &rng) == 0 ? kinds.count : 4), using: &rng)]
                b.append(UInt8.random(in: kind, using: &rng))
                if kind == kinds[2], b.count < 8, Int.random(in: 0..<8, using: &rng) > 0 { b.append(UInt8.random(in: 0x80...0xBF, using: &rng)) }
            }
            let w = b.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }.littleEndian
            let step = LabelText.wordStep(w)
            #expect(step == reference(b), "\(b.map { String($0, radix: 16) })")
            taken[step == 0 ? 0 : step - 6] += 1
        }
        #expect(taken.allSatisfy { $0 > 1000 }, "\(taken)")   // every answer was met often
    }

    /// The rule's byte automaton ends between characters exactly for the labels ``check``
    /// allows that hold no joiner: on every string of one and two bytes, every three-byte
    /// string of the bytes where a state's answer changes, and random strings of allowed,
    /// refused, cut and invalid characters; its undecided state keeps itself on every byte.
    @Test func ruleAutomatonEndsBetweenCharactersExactlyForAllowedLabelsWithoutJoiners() {
        func run(_ bytes: [UInt8]) -> UInt8 { bytes.reduce(LabelText.ruleStart) { LabelText.ruleStep($0, $1) } }
        var checked = 0
        func expectAgreement(_ bytes: [UInt8]) {
            #expect((run(bytes) == LabelText.ruleStart) == ruleAllowsWithoutJoiner(bytes), "\(bytes.map { String($0, radix: 16) })")
            checked += 1
        }
        for a in 0...255 {
            expectAgreement([UInt8(a)])
            for b in 0...255 { expectAgreement([UInt8(a), UInt8(b)]) }
        }
        let edges: [UInt8] = [0x00, 0x1F, 0x20, 0x7E, 0x7F, 0x80, 0x81, 0x84, 0x85, 0x86, 0x8A, 0x8B, 0x8C, 0x8D, 0x8F, 0x90,
                              0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA3, 0xA4, 0xA5, 0xA6, 0xA9, 0xAA, 0xAD, 0xAE, 0xAF,
                              0xB0, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB8, 0xBA, 0xBB, 0xBC, 0xBE, 0xBF, 0xC0, 0xC2, 0xC3, 0xCD,
                              0xD8, 0xDF, 0xE0, 0xE1, 0xE2, 0xE3, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF3, 0xF4, 0xF5, 0xFF]
        for a in edges where a >= 0xE0 {
            for b in edges { for c in edges { expectAgreement([a, b, c]) } }
        }
        let pieces: [[UInt8]] = ["a", " ", "~", "ж", "ب", "क", "्", "👩", "💻", "스", "\u{FE0F}", "\u{200D}", "\u{200C}",
                                 "\u{202E}", "\u{2066}", "\u{2065}", "\u{061C}", "\u{061B}", "\u{200B}", "\u{200A}", "\u{2010}",
                                 "\u{2064}", "\u{2070}", "\u{FEFF}", "\u{FEFE}", "\u{FFFD}", "\u{85}", "\u{A0}", "\u{D7FF}",
                                 "\u{E000}", "\u{10000}", "\u{10FFFF}", "\u{1B}", "\u{7F}", "\u{AD}", "\u{AC}", "\u{34F}", "\u{34E}",
                                 "\u{3164}", "\u{3163}", "\u{FFA0}", "\u{FFF9}", "\u{FFFC}", "\u{E0100}", "\u{E0041}", "\u{E1000}",
                                 "\u{1D173}", "\u{1D172}", "\u{1BCA0}", "\u{1BCA4}", "\u{180E}", "\u{1820}", "\u{17B4}", "\u{1160}",
                                 "\u{1161}", "😀"].map { Array($0.utf8) }
            + [[0xFF], [0xC2], [0xE2, 0x80], [0xF0, 0x9F], [0x80], [0xED, 0xA0, 0x80], [0xE0, 0x9F, 0x80], [0xF4, 0x90, 0x80, 0x80],
               [0xF3, 0xA0], [0xF0, 0x9D, 0x85], [0xE1, 0x85], [0xCD]]
        var rng = SeededGenerator(seed: 16)
        for _ in 0..<20_000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0...8, using: &rng) { bytes += pieces.randomElement(using: &rng)! }
            expectAgreement(bytes)
        }
        for byte in 0...255 { #expect(LabelText.ruleStep(LabelText.ruleUndecided, UInt8(byte)) == LabelText.ruleUndecided) }
        #expect(checked > 100_000)
    }

    /// Before: the hidden characters were a hand list, and U+00AD, U+034F, U+17B4, U+180E,
    /// U+206A–206F, U+FFF9, U+1BCA0, U+1D173, the Hangul fillers and the tag characters passed
    /// as visible text. Now the rule refuses exactly Unicode's Default_Ignorable_Code_Point and
    /// U+FFF9–FFFB (the generated table, LabelHiddenRanges.swift), judging the variation
    /// selectors and the joiners by their neighbours: every scalar, against the standard
    /// library's own copy of the Unicode properties.
    @Test func hiddenCharactersAreTheDefaultIgnorableCodePointsAndTheAnnotationCharacters() {
        var differing: [String] = []
        for v in UInt32(0)...0x10FFFF {
            guard let u = Unicode.Scalar(v) else { continue }
            let kind = LabelText.classify(v)
            let refusedAlone = kind == .hidden || kind == .selector || kind == .joiner
            let expected = u.properties.isDefaultIgnorableCodePoint || (0xFFF9...0xFFFB).contains(v)
            if refusedAlone != expected || (kind == .selector) != u.properties.isVariationSelector {
                differing.append(LabelText.scalarName(v))
            }
            // Every character that is not allowed wherever it stands begins with a lead byte the
            // fast check looks at.
            if kind != .allowed, v >= 0x80 { #expect(LabelText.mayBeginRefused(Array(String(u).utf8)[0]), "\(LabelText.scalarName(v))") }
        }
        #expect(differing.isEmpty, "Unicode \(LabelText.hiddenRangesUnicodeVersion) table against the standard library: \(differing.prefix(20))")
        #expect(LabelText.check("\u{3164}")?.description == "label has hidden character U+3164 HANGUL FILLER at byte 1")
    }

    /// The automaton and the fast check agree with the rule scalar by scalar on every character
    /// at and around each range of the generated tables, alone and between other characters.
    @Test func ruleAgreesAroundEveryRangeOfTheGeneratedTables() {
        var edges: Set<UInt32> = []
        for table in [LabelText.hiddenRanges, LabelText.selectorRanges] {
            for v in table { edges.formUnion([v &- 1, v, v + 1]) }
        }
        let contexts: [(String, String)] = [("", ""), ("a", ""), ("a", "b"), (" ", "ж"), ("😀", "a"), ("葛", "")]
        var checked = 0
        for v in edges.sorted() {
            guard let u = Unicode.Scalar(v) else { continue }
            for (before, after) in contexts {
                let bytes = Array((before + String(u) + after).utf8)
                var reference: LabelText.Problem.Kind? = nil
                LabelText.forEachScalar(bytes) { _, problem in if reference == nil { reference = problem } }
                #expect(bytes.withUnsafeBytes { LabelText.check($0) }?.kind == reference, "\(LabelText.scalarName(v)) after '\(before)'")
                let state = bytes.reduce(LabelText.ruleStart) { LabelText.ruleStep($0, $1) }
                #expect((state == LabelText.ruleStart) == ruleAllowsWithoutJoiner(bytes), "\(LabelText.scalarName(v)) after '\(before)'")
                checked += 1
            }
        }
        #expect(checked > 300)
    }

    /// Removal leaves text the rule allows, is idempotent and only removes.
    @Test func removingHiddenCharactersIsIdempotentAndOnlyRemoves() {
        #expect(LabelText.removingHiddenCharacters("Pay\u{202E}dsu\u{202C} Bank").text == "Paydsu Bank")
        #expect(LabelText.removingHiddenCharacters("Pay\u{202E}dsu\u{202C} Bank").removed == ["\u{202E}", "\u{202C}"])
        #expect(LabelText.removingHiddenCharacters("👩\u{200D}\u{200D}💻").text == "👩💻")
        #expect(LabelText.removingHiddenCharacters("क्\u{200D}\u{200D}ष").text == "क्\u{200D}ष")
        let alphabet: [String] = ["a", "ж", "ب", "ِ", "क", "्", "👩", "💻", "\u{FE0F}", "\u{200D}", "\u{200C}", "\u{202E}", "\u{2069}",
                                  "\u{200B}", "\u{FEFF}", " ", "1", "\u{FE0F}", "\u{E0100}", "\u{E0041}", "\u{AD}", "\u{3164}",
                                  "\u{180B}", "ᠠ"]
        var rng = SeededGenerator(seed: 11)
        for _ in 0..<3000 {
            let text = (0..<Int.random(in: 0...10, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }.joined()
            let (clean, removed) = LabelText.removingHiddenCharacters(text)
            #expect(LabelText.check(clean) == nil, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
            #expect(LabelText.removingHiddenCharacters(clean).text == clean)
            #expect(clean.unicodeScalars.count + removed.count == text.unicodeScalars.count)
            // A subsequence of the input.
            var rest = Substring.UnicodeScalarView(text.unicodeScalars)
            for u in clean.unicodeScalars {
                guard let at = rest.firstIndex(of: u) else { Issue.record("not a subsequence: \(text)"); break }
                rest = rest[rest.index(after: at)...]
            }
        }
    }

    // MARK: The builder

    /// Before: `builder.add` stored U+202E and U+200B as they were (and C1 controls), and
    /// every output showed them raw: `Pay‮usd‬ Bank` on a call screen.
    @Test func builderRemovesHiddenCharactersAndCountsThem() throws {
        let dir = TempDir()
        var builder = DatabaseBuilder()
        try builder.add(79_130_000_001, label: "Pay\u{202E}dsu\u{202C} Bank")
        try builder.add(79_130_000_002, label: "Pay\u{200B}Pal")
        try builder.add(79_130_000_003, label: "👩\u{200D}💻 Dev")
        try builder.addRange(79_140_000_000, 79_140_000_099, label: "Range\u{2066} X")
        let summary = try builder.write(to: dir.path("a.cid"))
        #expect(summary.hiddenCharactersRemoved == 3)
        let db = try Database(path: dir.path("a.cid"), verify: true)
        #expect(try db.lookup(79_130_000_001)?.label == "Paydsu Bank")
        #expect(try db.lookup(79_130_000_002)?.label == "PayPal")
        #expect(try db.lookup(79_130_000_003)?.label == "👩\u{200D}💻 Dev")
        #expect(try db.withAnswer(79_140_000_050) { $0.label } == "Range X")

        var refusing = BuildOptions()
        refusing.hiddenCharacters = .refuse
        var strict = DatabaseBuilder(options: refusing)
        #expect { try strict.add(79_130_000_001, label: "Pay\u{202E}dsu") } throws: {
            ($0 as? CallerIDError)?.message == "label has hidden character U+202E RIGHT-TO-LEFT OVERRIDE at byte 4"
        }
        try strict.add(79_130_000_003, label: "👩\u{200D}💻")
    }

    /// Before: the builder refused C0 and DEL but stored U+0080–U+009F (U+009B is a terminal's
    /// CSI), while the tool escaped them as controls.
    @Test func builderRefusesC1ControlsAsItRefusesC0() throws {
        var builder = DatabaseBuilder()
        for label in ["a\u{9B}31m", "a\u{85}b", "\u{80}", "a\u{1B}b", "a\u{7F}"] {
            #expect { try builder.add(79_130_000_001, label: label) } throws: {
                ($0 as? CallerIDError)?.message.contains("control character U+00") == true
            }
        }
        #expect(builder.count == 0)
    }

    // MARK: The pipeline and the plain TSV path

    /// Before: both build paths kept U+202E and U+2066 in labels and stored C1 controls.
    /// Now they remove hidden characters with a warning per row and a count by kind, refuse C1
    /// like C0, and write the same bytes.
    @Test func bothBuildPathsRemoveHiddenCharactersAndRefuseC1() throws {
        let dir = TempDir()
        let input = dir.path("in.tsv")
        let text = "79130000001\tPay\u{202E}dsu\u{202C} Bank\n"      // removed, warned
            + "79130000002\t\u{2067}Bank \u{2069} X\n"                // isolates; the spaces they leave collapse
            + "79130000003\t👩\u{200D}💻\n"                            // kept
            + "79130000004\tمی\u{200C}خواهم\n"                          // kept
            + "79130000005\tC1 \u{9B}31m\n"                           // refused
            + "79130000006\tNEL\u{85}is whitespace\n"                 // U+0085 collapses to a space, as a line break
        try text.write(toFile: input, atomically: false, encoding: .utf8)
        let plain = try lookup(["build", "-o", dir.path("plain.cid"), input, "--skip-bad-rows", "--json"])
        let pipeline = try lookup(["build", "-o", dir.path("pipe.cid"), input, "--skip-bad-rows", "--no-progress", "--json"])
        for r in [plain, pipeline] {
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.contains("in.tsv:1: warning: removed hidden characters U+202E RIGHT-TO-LEFT OVERRIDE, U+202C POP DIRECTIONAL FORMATTING from the label"), "\(r.stderr)")
            #expect(r.stderr.contains("in.tsv:2: warning: removed hidden characters"))
            #expect(r.stderr.contains("in.tsv:5:") && r.stderr.contains("control character U+009B"), "\(r.stderr)")
            #expect(!r.stderr.contains("in.tsv:3:") && !r.stderr.contains("in.tsv:4:"))
            #expect(r.stderr.contains("2 hidden-characters-removed"), "\(r.stderr)")
            #expect(r.stdout.contains("\"hidden-characters-removed\":2"), "\(r.stdout)")
        }
        let a = try #require(FileManager.default.contents(atPath: dir.path("plain.cid")))
        #expect(FileManager.default.contents(atPath: dir.path("pipe.cid")) == a, "the two paths wrote different bytes")
        let labels = try Database(path: dir.path("plain.cid"), verify: true).entries().map(\.label)
        #expect(labels == ["Paydsu Bank", "Bank X", "👩\u{200D}💻", "می\u{200C}خواهم", "NEL is whitespace"])

        // --hidden-characters refuse: the rows are bad instead.
        for extra in [[], ["--no-progress"]] {
            let r = try lookup(["build", "-o", dir.path("strict.cid"), input, "--hidden-characters", "refuse"] + extra)
            #expect(r.status == 65)
            #expect(r.stderr.contains("in.tsv:1:") && r.stderr.contains("hidden character U+202E"), "\(r.stderr)")
        }
        #expect(try lookup(["build", "-o", dir.path("x.cid"), input, "--hidden-characters", "keep"]).status == 64)
    }

    /// Before: the cleaner took U+200B ZERO WIDTH SPACE for white space, so `Pay\u{200B}Pal`
    /// became `Pay Pal` with no warning (and `--hidden-characters refuse` kept the row), while
    /// PIPELINE.md lists it among the hidden characters removed with a warning. Now it is
    /// removed and warned of on both build paths like U+2060, and refused with `refuse`.
    @Test func bothBuildPathsRemoveTheZeroWidthSpaceWithAWarning() throws {
        let cleaner = LabelCleaner()
        #expect(try cleaner.clean("Pay\u{200B}Pal") == LabelCleaner.CleanedLabel(label: "PayPal", truncated: false, hiddenRemoved: ["\u{200B}"]))
        #expect(try cleaner.clean("a \u{200B} b\u{200B}").label == "a b")
        #expect(throws: LabelText.Problem(kind: .hidden, scalar: 0x200B)) { try LabelCleaner(hiddenCharacters: .refuse).clean("Pay\u{200B}Pal") }
        let dir = TempDir()
        let input = dir.path("in.tsv")
        try "79130000001\tPay\u{200B}Pal\n79130000002\tWord\u{2060}Joiner\n".write(toFile: input, atomically: false, encoding: .utf8)
        let plain = try lookup(["build", "-o", dir.path("plain.cid"), input, "--json"])
        let pipeline = try lookup(["build", "-o", dir.path("pipe.cid"), input, "--no-progress", "--json"])
        for r in [plain, pipeline] {
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.contains("in.tsv:1: warning: removed hidden character U+200B ZERO WIDTH SPACE from the label"), "\(r.stderr)")
            #expect(r.stdout.contains("\"hidden-characters-removed\":2"), "\(r.stdout)")
        }
        let a = try #require(FileManager.default.contents(atPath: dir.path("plain.cid")))
        #expect(FileManager.default.contents(atPath: dir.path("pipe.cid")) == a, "the two paths wrote different bytes")
        #expect(try Database(path: dir.path("plain.cid"), verify: true).entries().map(\.label) == ["PayPal", "WordJoiner"])
        #expect(try lookup(["build", "-o", dir.path("strict.cid"), input, "--hidden-characters", "refuse"]).status == 65)
    }

    /// Before: a soft hyphen, a label of Hangul fillers (blank on the screen), tag characters
    /// carrying hidden text and a run of variation selectors were built into the file as they
    /// were. Now both build paths remove them with the hidden-characters warning, keep a
    /// selector that follows a character, and write the same bytes.
    @Test func bothBuildPathsRemoveEveryDefaultIgnorableCharacter() throws {
        let dir = TempDir()
        let input = dir.path("in.tsv")
        let text = "79130000001\tSoft\u{AD}ware\n"
            + "79130000002\t\u{3164}\u{3164}\n"                                  // Hangul fillers only: blank
            + "79130000003\tBank\u{E0049}\u{E0047}\u{E004E}\u{E004F}\u{E0052}\u{E0045}\n"   // tags: 'IGNORE', unseen
            + "79130000004\tPizza 😀\u{E0100}\u{E0101}\u{E0102}\n"             // one selector is kept
            + "79130000005\t❤\u{FE0F} Love\n"                                    // kept as it is
            + "79130000006\tA\u{180E}B\u{1D173}C\u{FFF9}D\n"
        try text.write(toFile: input, atomically: false, encoding: .utf8)
        let plain = try lookup(["build", "-o", dir.path("plain.cid"), input, "--json"])
        let pipeline = try lookup(["build", "-o", dir.path("pipe.cid"), input, "--no-progress", "--json"])
        for r in [plain, pipeline] {
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.contains("in.tsv:1: warning: removed hidden character U+00AD SOFT HYPHEN from the label"), "\(r.stderr)")
            #expect(r.stderr.contains("in.tsv:3: warning: removed hidden characters U+E0049 TAG LATIN CAPITAL LETTER I"), "\(r.stderr)")
            #expect(!r.stderr.contains("in.tsv:5:"), "\(r.stderr)")
            #expect(r.stdout.contains("\"hidden-characters-removed\":5"), "\(r.stdout)")
        }
        let a = try #require(FileManager.default.contents(atPath: dir.path("plain.cid")))
        #expect(FileManager.default.contents(atPath: dir.path("pipe.cid")) == a, "the two paths wrote different bytes")
        let labels = try Database(path: dir.path("plain.cid"), verify: true).entries().map(\.label)
        #expect(labels == ["Software", "", "Bank", "Pizza 😀\u{E0100}", "❤\u{FE0F} Love", "ABCD"])
        var builder = DatabaseBuilder()
        try builder.add(79_130_000_001, label: "Soft\u{AD}ware \u{FE0F}x")
        #expect(try builder.write(to: dir.path("b.cid")).hiddenCharactersRemoved == 1)
        #expect(try Database(path: dir.path("b.cid"), verify: true).lookup(79_130_000_001)?.label == "Software x")
    }

    // MARK: verify and the outputs, on a file written before the rule

    /// Before: `verify` passed a file whose labels held U+202E or U+009B, and `lookup`, `dump`
    /// and `--json` printed them raw (the README said only files that fail verify are escaped:
    /// false for C1). Now verify refuses them, saying how to mend the file, and every output
    /// escapes exactly the labels verify refuses.
    @Test(arguments: [false, true])
    func verifyRefusesExactlyWhatTheOutputsEscape(hot: Bool) throws {
        let dir = TempDir()
        var paths: [String] = []
        for (k, (label, _)) in ruleCases.enumerated() {
            let path = dir.path("case\(k).cid")
            try Data(try HostileFileTests.imageWithLabels([Array("Fine".utf8), Array(label.utf8)], hot: hot)).write(to: URL(fileURLWithPath: path))
            paths.append(path)
        }
        // One verify of every file: one JSON object per file, in order.
        let verify = try jsonObjects(try lookup(["verify", "--json"] + paths).stdout)
        #expect(verify.count == ruleCases.count)
        for (k, (label, kind)) in ruleCases.enumerated() {
            let shown = "\(label.unicodeScalars.map { String($0.value, radix: 16) })"
            let result = try #require(verify.first { $0["file"] as? String == paths[k] }, "\(shown)")
            let error = result["error"] as? String ?? ""
            #expect((result["ok"] as? Bool == true) == (kind == nil), "\(shown): \(error)")
            if kind == .hidden { #expect(error.contains("hidden character") && error.contains("lookup build"), "\(error)") }
            if kind == .control { #expect(error.contains("control character U+00"), "\(error)") }
            let tsv = try lookup(["2", "--db", paths[k]])
            let json = try lookup(["2", "--db", paths[k], "--json"])
            if kind == nil {
                #expect(tsv.stdoutData == Data("2\t\(label)\tidentify\n".utf8))
                #expect(try jsonObjects(json.stdout).first?["label"] as? String == label)
            } else {
                // Escaped: the TSV label field and the JSON text pass the rule themselves, so no
                // refused character reaches the terminal.
                let field = try #require(tsv.lines.first?.split(separator: "\t", omittingEmptySubsequences: false).dropFirst().first)
                #expect(LabelText.check(String(field)) == nil && field.contains("\\"), "\(field)")
                #expect(json.lines.count == 1)
                for line in json.lines { #expect(LabelText.check(line) == nil, "\(line)") }
            }
        }
    }

    /// The text a Call Directory feed hands CallKit (`MergedStream.labelString`) for a label of
    /// a store installed before the rule: without the characters the rule refuses.
    @Test func screenTextOfARefusedLabelLosesTheRefusedCharacters() throws {
        let bytes = Array("Pay\u{202E}dsu\u{202C} Bank \u{1B}[2J".utf8)
        let shown = bytes.withUnsafeBytes { LabelText.shownString($0) }
        #expect(shown == "Paydsu Bank [2J")
        let fine = Array("👩\u{200D}💻 Dev".utf8)
        #expect(fine.withUnsafeBytes { LabelText.shownString($0) } == "👩\u{200D}💻 Dev")
    }

    // MARK: Messages

    /// Input quoted in messages escapes what labels may not hold: C1 and hidden characters too.
    @Test func messagesEscapeHiddenCharactersAndC1() {
        #expect(quotedInput(Array("Pay\u{202E}x".utf8)) == "'Pay\\u{202E}x'")
        #expect(quotedInput(Array("a\u{9B}b".utf8)) == "'a\\u{9B}b'")
        #expect(InputQuote.safeMessage("file \u{2066}x\u{2069}") == "file \\u{2066}x\\u{2069}")
        #expect(jsonQuote("a\u{202E}b\u{9B}\u{1B}") == "\"a\\u202eb\\u009b\\u001b\"")
        #expect(jsonQuote("👩\u{200D}💻") == "\"👩\u{200D}💻\"")
    }

    /// Quoting takes a short cut for text the rule finds nothing in; whatever the text, it
    /// gives what quoting scalar by scalar gives (random texts of printable ASCII, controls,
    /// hidden characters, joiners, Cyrillic and invalid UTF-8, around the length limits).
    @Test(arguments: [UInt64(1), 2, 3])
    func quotingShortCutGivesWhatTheGeneralPathGives(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let pieces: [[UInt8]] = [Array("a".utf8), Array("Z9 ".utf8), Array("~".utf8), [0x1B], [0x7F], [0x0A],
                                 Array("\u{9B}".utf8), Array("\u{202E}".utf8), Array("\u{200D}".utf8), Array("д".utf8),
                                 Array("👩".utf8), [0xFF], [0xC3], [0xE2, 0x80]]
        for _ in 0..<2_000 {
            var bytes: [UInt8] = []
            let length = Int.random(in: 0...60, using: &rng)
            let plain = Bool.random(using: &rng)
            while bytes.count < length {
                bytes += plain ? [UInt8.random(in: 0x20...0x7E, using: &rng)] : pieces.randomElement(using: &rng)!
            }
            #expect(quotedInput(bytes) == quotedInputScalarByScalar(bytes), "\(bytes)")
            #expect(quotedInput(bytes[...]) == quotedInputScalarByScalar(bytes), "\(bytes)")
            let text = String(decoding: bytes, as: UTF8.self)
            for limit in [0, 1, 39, 40, 41, bytes.count - 1, bytes.count, .max] where limit >= 0 {
                #expect(escapedForDisplay(text, limit: limit) == escapedForDisplayScalarByScalar(text, limit: limit), "\(bytes) limit \(limit)")
            }
        }
    }
}
