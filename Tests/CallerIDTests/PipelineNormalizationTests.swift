import Testing
import Foundation
import CallerID
@testable import CallerIDPipeline

/// Number normalization, label cleaning and configuration files.
@Suite struct PipelineNormalizationTests {
    let normalizer = NumberNormalizer()

    /// (input, country, expected E.164 number).
    static let accepted: [(String, String?, UInt64)] = [
        // Formatting: spaces, dashes, dots, parentheses, NBSP, '+'.
        ("+7 913 123-45-67", nil, 79131234567),
        ("+7 (913) 123.45.67", nil, 79131234567),
        ("+7\u{A0}913\u{A0}123-45-67", nil, 79131234567),
        ("79131234567", nil, 79131234567),
        ("  +79131234567 ", nil, 79131234567),
        // Russia: trunk 8, international 810 and 00, calling code without '+'.
        ("8 (913) 123-45-67", "RU", 79131234567),
        ("8-812-456-78-90", "RU", 78124567890),
        ("812 456 78 90", "RU", 78124567890),        // national number without trunk
        ("7(495)9677853", "RU", 74959677853),        // calling code, no '+'
        ("810 44 20 7946 0958", "RU", 442079460958),
        ("00 44 20 7946 0958", "RU", 442079460958),
        ("8 727 250 00 00", "KZ", 77272500000),
        // NANP: trunk 1, 011, numbers without any prefix.
        ("403-945-3444", "US", 14039453444),
        ("(403) 945-8107", "CA", 14039458107),
        ("1 (800) 555-0199", "US", 18005550199),
        ("973/364-9555", "US", 19733649555),         // '/' between area code and number
        ("011 44 20 7946 0958", "US", 442079460958),
        // Trunk 0 countries.
        ("02-758-8163", "KR", 8227588163),
        ("010-1234-5678", "KR", 821012345678),
        ("001 1 212 555 0100", "KR", 12125550100),
        ("01454 201777", "GB", 441454201777),
        ("1619296924", "GB", 441619296924),
        ("+44 (0)20 7946 0958", nil, 442079460958),
        ("030 1234567", "DE", 49301234567),
        ("+49 30/1234567", nil, 49301234567),
        ("01 49 12 90 64", "FR", 33149129064),
        ("010-51626616", "CN", 861051626616),
        ("022-711-1351", "JP", 81227111351),
        ("81-3-3818-1102", "JP", 81338181102),
        ("011 2345 6789", "IN", 911123456789),
        ("886 02 2633 1620", "TW", 886226331620),     // calling code + trunk 0
        ("0031206 223461", "NL", 31206223461),
        ("06 1 234 5678", "HU", 3612345678),
        // Arabic-Indic and full-width digits.
        ("+٩٧١ ٢ ٦٦٧ ٠٠٥٢", nil, 97126670052),
        ("０３-５２７５-１１５８", "JP", 81352751158),
        // A country without detailed rules: its calling code is still known.
        ("0 21 123 4567", "PK", 92211234567),
    ]

    @Test(arguments: accepted)
    func normalizes(_ input: String, _ country: String?, _ expected: UInt64) throws {
        let result = try normalizer.normalize(input, country: country)
        #expect(result.numbers == [expected], "\(input) in \(country ?? "-")")
    }

    /// (input, country, reason).
    static let rejected: [(String, String?, RejectReason)] = [
        ("", nil, .noNumber),
        ("   ", "US", .noNumber),
        ("n/a", "US", .letters),
        ("Noelle DeMarr", "US", .letters),
        ("+7 913 CALL-ME", nil, .letters),
        ("+7 913 123*45", nil, .invalidCharacter),
        ("4.93E+12", "DE", .scientificNotation),
        ("9.94E+11", nil, .scientificNotation),
        ("4,2E11", "CZ", .scientificNotation),
        ("736 2665", "SG", .tooShort),
        ("4204-3785", "AR", .tooShort),
        ("+7 913 123", nil, .tooShort),
        ("1234567890123456", nil, .tooLong),                 // 16 digits: over E.164's 15
        ("+7 913 123 45 67 8", nil, .tooLong),
        ("866-2-8771-0612", "TW", .tooLong),
        ("+999 1234 5678", nil, .unknownCountryCode),
        ("+0 1234 5678", nil, .unknownCountryCode),
        ("8 913 123 45 67", nil, .unknownCountryCode),         // read as +89…: no such code
        ("8 (913) 123-45-67", "ZZ", .unknownCountry),
        ("02-758-8163", nil, .nationalWithoutCountry),
        ("02-758-8163", "XX", .unknownCountry),
        ("000-000-0000", "US", .invalidLeadingDigit),
        ("045 / 12", "DE", .tooShort),
    ]

    @Test(arguments: rejected)
    func rejects(_ input: String, _ country: String?, _ reason: RejectReason) {
        #expect(throws: NumberProblem.self) { try normalizer.normalize(input, country: country) }
        do {
            _ = try normalizer.normalize(input, country: country)
        } catch {
            #expect(error.reason == reason, "\(input): \(error.message)")
            #expect(!error.message.isEmpty)
        }
    }

    @Test(arguments: [
        ("+1 212 555 0100 ext. 12", "ext. 12"),
        ("+1 212 555 0100 x12", "x12"),
        ("+1 212 555 0100;ext=12", ";ext=12"),
        ("+7 495 123-45-67 доб. 305", "доб. 305"),
        ("+1 212 555 0100 #4", "#4"),
    ])
    func extensionsAreCutWithAWarning(_ input: String, _ ext: String) throws {
        let r = try normalizer.normalize(input)
        #expect(r.numbers.count == 1)
        #expect(r.warnings.map(\.kind) == [.extensionCut])
        #expect(r.warnings[0].message.contains(ext), "\(r.warnings[0].message)")
    }

    @Test func severalNumbersInOneCell() throws {
        let r = try normalizer.normalize("045 2030367 / 6345-985-0418", country: "PH")
        #expect(r.numbers == [63452030367, 63459850418])
        let us = try normalizer.normalize("212-555-0100, 212-555-0101 or (212) 555-0102", country: "US")
        #expect(us.numbers == [12125550100, 12125550101, 12125550102])
        // One bad part: the others are kept, the bad one is a warning.
        let mixed = try normalizer.normalize("212-555-0100; 12", country: "US")
        #expect(mixed.numbers == [12125550100])
        #expect(mixed.warnings.map(\.kind) == [.numberPartIgnored])
        // All bad: rejected with the first reason.
        #expect(throws: NumberProblem.self) { try normalizer.normalize("12 / 34", country: "US") }
    }

    /// Every country in the built-in plan resolves its own calling code and has sane rules.
    @Test func builtInPlanIsConsistent() {
        let plan = NumberingPlan.builtIn
        for iso in ["RU", "KZ", "KR", "US", "CA", "GB", "DE", "FR", "CN", "JP", "IN"] {
            #expect(plan.rule(country: iso) != nil, "no rule for \(iso)")
        }
        for iso in plan.countriesWithRules {
            let r = plan.rule(country: iso)!
            #expect(plan.callingCode(country: iso) == r.callingCode)
            #expect(r.lengths != 0 && r.firstDigits != 0, "\(iso)")
            #expect(r.callingCode.count + (31 - r.lengths.leadingZeroBitCount) <= 15, "\(iso): longest number over 15 digits")
        }
    }

    @Test func numberingPlanFileExtendsAndOverrides() throws {
        let dir = TempDir()
        let path = dir.path("plan.json")
        try Data("""
            {"countries": [
              {"iso": "PK", "code": "92", "trunk": ["0"], "lengths": "9-10"},
              {"iso": "GB", "code": "44", "trunk": ["0"], "lengths": "10", "first": "1-3,7"}
            ]}
            """.utf8).write(to: URL(fileURLWithPath: path))
        let plan = try NumberingPlan.builtIn.adding(contentsOf: path)
        let n = NumberNormalizer(plan: plan)
        #expect(try n.normalize("021 123 4567", country: "PK").numbers == [92211234567])
        #expect(throws: NumberProblem.self) { try n.normalize("021 12", country: "PK") }
        #expect(throws: NumberProblem.self) { try n.normalize("0800 123 4567", country: "GB") }   // 8 no longer allowed first
        let bad = dir.path("bad.json")
        for text in [#"{"countries": [{"iso": "ZZ", "code": "4", "lengths": "9"}]}"#,   // overlaps +44 etc.
                     #"{"countries": [{"iso": "QQ", "code": "999", "lengths": "9-x"}]}"#,
                     #"{"countries": [{"iso": "QQQ", "code": "999", "lengths": "9"}]}"#, "[1,2]", "not json"] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: bad))
            #expect(throws: PipelineError.self, "\(text)") { try NumberingPlan.builtIn.adding(contentsOf: bad) }
        }
    }

    // MARK: Labels

    @Test func labelCleaning() throws {
        var c = LabelCleaner()
        #expect(try c.clean("  Pizza \t Hut\n ").label == "Pizza Hut")
        #expect(try c.clean("Pizza\u{A0}\u{A0}Hut").label == "Pizza Hut")
        #expect(try c.clean("Cafe\u{301}").label == "Café")                     // NFC
        #expect(try c.clean("Cafe\u{301}").label.unicodeScalars.count == 4)
        #expect(try c.clean("ООО «Ромашка»").label == "ООО «Ромашка»")
        #expect(throws: LabelText.Problem(kind: .control, scalar: 1)) { try c.clean("bad\u{01}label") }
        c.replacements = [LabelCleaner.parseReplacement("_= ")!]
        #expect(try c.clean("Type_1__x").label == "Type 1 x")
        #expect(LabelCleaner.parseReplacement("a\\=b=c")! == ("a=b", "c"))
        #expect(LabelCleaner.parseReplacement("novalue") == nil)
        c.maxBytes = 7
        let cut = try c.clean("Сбербанк")                                       // 2 bytes per letter
        #expect(cut.label == "Сбе" && cut.truncated)
        #expect(try c.clean("ab 😀😀").label == "ab 😀")                         // never splits a character
        #expect(try c.clean("short") == LabelCleaner.CleanedLabel(label: "short", truncated: false, hiddenRemoved: []))
        c.maxBytes = 7
        #expect(try c.clean("می\u{200C}خواهم").label == "می", "a cut leaves no joiner without the letter after it")
        c.maxBytes = nil
        let hidden = try c.clean("Pay\u{202E}dsu\u{202C} Bank")
        #expect(hidden.label == "Paydsu Bank" && hidden.hiddenRemoved == ["\u{202E}", "\u{202C}"])
        c.hiddenCharacters = .refuse
        #expect(throws: LabelText.Problem(kind: .hidden, scalar: 0x202E)) { try c.clean("Pay\u{202E}dsu") }
        #expect(LabelCleaner.isQuickNFC("스타벅스 강남점 Москва"))
        #expect(!LabelCleaner.isQuickNFC("e\u{301}"))
    }

    // MARK: Category map

    @Test func categoryMapFile() throws {
        let dir = TempDir()
        let path = dir.path("categories.txt")
        try Data("""
            # value = [name] action
            spam = block
            Коллектор = collector block
            VIP = vip identify
            Опрос населения = survey

            """.utf8).write(to: URL(fileURLWithPath: path))
        let map = try CategoryMap(contentsOf: path)
        #expect(try map.category(for: "SPAM") == Category("spam", action: .block))
        #expect(try map.category(for: "коллектор") == Category("collector", action: .block))
        #expect(try map.category(for: "vip") == Category("vip", action: .identify))
        #expect(try map.category(for: "Опрос населения") == Category("survey", action: .block))
        #expect(try map.category(for: "") == .identify)
        #expect(try map.category(for: "taxi") == Category("taxi", action: .identify))
        #expect(throws: CallerIDError.self) { try map.category(for: "Not A Name!") }
        for bad in ["no equals sign", "x = a b c", "x = spam frobnicate"] {
            try Data(bad.utf8).write(to: URL(fileURLWithPath: path))
            #expect(throws: PipelineError.self) { try CategoryMap(contentsOf: path) }
        }
    }

    @Test func regionMapFile() throws {
        let dir = TempDir()
        let path = dir.path("regions.tsv")
        try Data("# prefix\tregion\n7495\tmoscow\n7499\tmoscow\n7\trussia\n*\tworld\nСанкт - Петербург\tspb\n".utf8)
            .write(to: URL(fileURLWithPath: path))
        let map = try RegionMap(contentsOf: path)
        #expect(map.region(forNumber: 74951234567) == "moscow")
        #expect(map.region(forNumber: 79131234567) == "russia")
        #expect(map.region(forNumber: 12125550100) == "world")
        #expect(map.region(forValue: "санкт  -  петербург") == "spb")
        #expect(map.region(forValue: "Kazan") == "Kazan")
    }
}
