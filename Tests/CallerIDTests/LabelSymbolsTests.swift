// Format 2.0 cold-label symbol table (Layout/LabelSymbolTable.swift): round trips of random bytes and
// generator-like labels, edge cases, the byte-exact table format, refusal of malformed tables
// and codes, the output capacity, truncated codes.
@testable import CallerID
import Testing

/// The suite's seeded SplitMix64 (TestSupport.swift) with bounded draws.
private struct SymbolRng {
    var generator: SeededGenerator
    init(seed: UInt64) { generator = SeededGenerator(seed: seed) }
    mutating func next() -> UInt64 { generator.next() }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
}

/// Labels like tools/gen_directory.py's: company names with branch numbers, Cyrillic
/// organisations and person initials, Korean names and shops, Latin person names.
private func generatorLikeLabels(count: Int, seed: UInt64) -> [[UInt8]] {
    var rng = SymbolRng(seed: seed)
    let en1 = ["Apex", "Blue", "Prime", "Green", "Metro", "City", "Global", "Star"]
    let en2 = ["Bank", "Pharmacy", "Design", "Market", "Taxi", "Dental", "Motors", "Pizza"]
    let en3 = ["", " LLC", " PLC", " Inc.", " Ltd"]
    let first = ["Mary", "James", "David", "Emma", "Olivia", "John"]
    let last = ["O'Brien", "Meyer", "Johnson", "Scott", "Smith", "García"]
    let ru1 = ["ООО «Ромашка»", "Окна \"Север\"", "Детский сад", "Аптека", "Сбербанк", "Такси"]
    let ruLast = ["Зайцев", "Попов", "Фролова", "Иванов", "Смирнова"]
    let ruLetters = Array("АБВГДЕЖЗИКЛМНОПРСТ")
    let ko1 = ["(주)건강", "(주)그린", "희망", "청솔", "스타"]
    let ko2 = ["그린", "나라", "다온", "믿음", "피자", "한의원", "소망"]
    let ko3 = ["", " 여의도점", " 강남점"]
    let koNames = ["임지훈", "박주원", "김민준", "이서연"]
    var labels: [[UInt8]] = []
    for _ in 0..<count {
        var s: String
        switch rng.below(6) {
        case 0:
            s = en1[rng.below(en1.count)] + " " + en2[rng.below(en2.count)] + en3[rng.below(en3.count)]
            if rng.below(2) == 0 { s += " #\(rng.below(100_000))" }
        case 1: s = first[rng.below(first.count)] + " " + last[rng.below(last.count)]
        case 2:
            s = ru1[rng.below(ru1.count)]
            if rng.below(2) == 0 { s += " №\(rng.below(1000))" }
        case 3:
            let a = ruLetters[rng.below(ruLetters.count)], b = ruLetters[rng.below(ruLetters.count)]
            s = "ИП " + ruLast[rng.below(ruLast.count)] + " \(a).\(b)."
        case 4: s = ko1[rng.below(ko1.count)] + ko2[rng.below(ko2.count)] + ko3[rng.below(ko3.count)]
        default: s = koNames[rng.below(koNames.count)]
        }
        labels.append(Array(s.utf8))
    }
    return labels
}

private func encoded(_ table: LabelSymbolTable, _ label: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    table.encode(label, into: &out)
    return out
}

private func decoder(_ table: LabelSymbolTable) -> LabelSymbolDecoder {
    let bytes = table.serialized
    return bytes.withUnsafeBytes { LabelSymbolDecoder($0) }!
}

private func makeDecoder(_ bytes: [UInt8]) -> LabelSymbolDecoder? {
    bytes.withUnsafeBytes { LabelSymbolDecoder($0) }
}

/// Decodes into a buffer of `capacity` bytes followed by 16 guard bytes; records whether a
/// guard byte changed (a write past `capacity`).
private func decode(_ d: LabelSymbolDecoder, _ codes: [UInt8], capacity: Int) -> (result: [UInt8]?, wroteOutside: Bool) {
    let guardBytes = 16
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity + guardBytes, alignment: 1)
    defer { buffer.deallocate() }
    buffer.initializeMemory(as: UInt8.self, repeating: 0xA5)
    let n = codes.withUnsafeBytes { d.decode($0, into: MutableByteView(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<capacity]))) }
    let wrote = buffer[capacity...].contains { $0 != 0xA5 }
    return (n.map { Array(buffer[0..<$0]) }, wrote)
}

private func decodedLength(_ d: LabelSymbolDecoder, _ codes: [UInt8]) -> Int? {
    codes.withUnsafeBytes { d.decodedLength($0) }
}

/// Encodes, decodes with exactly the decoded capacity and checks the bytes, the length and
/// that nothing was written outside.
private func expectRoundTrip(_ table: LabelSymbolTable, _ d: LabelSymbolDecoder, _ label: [UInt8],
                             sourceLocation: SourceLocation = #_sourceLocation) {
    let codes = encoded(table, label)
    #expect(codes.count == table.encodedLength(label), sourceLocation: sourceLocation)
    #expect(decodedLength(d, codes) == label.count, sourceLocation: sourceLocation)
    let (result, wrote) = decode(d, codes, capacity: label.count)
    #expect(result == label, sourceLocation: sourceLocation)
    #expect(!wrote, sourceLocation: sourceLocation)
}

/// A straightforward decoder from the symbol list: the reference for random codes.
private func referenceDecode(_ symbols: [[UInt8]], _ codes: [UInt8]) -> [UInt8]? {
    var out: [UInt8] = []
    var i = 0
    while i < codes.count {
        let c = Int(codes[i])
        if c == 255 {
            guard i + 1 < codes.count else { return nil }
            out.append(codes[i + 1])
            i += 2
        } else {
            guard c < symbols.count else { return nil }
            out += symbols[c]
            i += 1
        }
    }
    return out
}

@Suite struct LabelSymbolsTests {
    @Test func serializedFormatIsByteExact() throws {
        let table = LabelSymbolTable(symbols: [Array("ab".utf8), Array("c".utf8), Array("12345678".utf8)])
        #expect(table.symbolCount == 3)
        #expect(table.serialized == [3, 2, 1, 8] + Array("abc12345678".utf8))
        let d = try #require(makeDecoder(table.serialized))
        #expect(d.symbolCount == 3)
        // 0 = "ab", 1 = "c", 2 = "12345678", 255 x = literal x.
        #expect(decode(d, [0, 1, 255, 0x41, 2, 255, 0xFF], capacity: 20).result
            == Array("abcA12345678".utf8) + [0xFF])
        #expect(LabelSymbolTable(symbols: []).serialized == [0])
    }

    @Test func encodeTakesTheLongestMatchAndEscapesTheRest() {
        let table = LabelSymbolTable(symbols: [Array("a".utf8), Array("ab".utf8), Array("abc".utf8), Array("bc".utf8)])
        #expect(encoded(table, Array("abcab".utf8)) == [2, 1])
        #expect(encoded(table, Array("abx".utf8)) == [1, 255, UInt8(ascii: "x")])
        #expect(encoded(table, Array("bcb".utf8)) == [3, 255, UInt8(ascii: "b")])
        #expect(encoded(table, []) == [])
        // A symbol longer than what is left does not match past the end.
        #expect(encoded(table, Array("ab".utf8)) == [1])
    }

    @Test func roundTripOfGeneratorLikeLabels() {
        let labels = generatorLikeLabels(count: 5000, seed: 1)
        let table = LabelSymbolTable.train(labels)
        #expect(table.symbolCount > 50)
        #expect(table.symbols.allSatisfy { (1...8).contains($0.count) })
        let d = decoder(table)
        #expect(d.symbolCount == table.symbolCount)
        var raw = 0, coded = 0
        for label in labels {
            expectRoundTrip(table, d, label)
            raw += label.count
            coded += encoded(table, label).count
        }
        // Such text must compress well below its size (0.5-0.6 on the study profile).
        #expect(Double(coded) < 0.8 * Double(raw))
    }

    @Test func roundTripOfRandomBytes() {
        var rng = SymbolRng(seed: 2)
        let tables = [
            LabelSymbolTable.train(generatorLikeLabels(count: 2000, seed: 3)),
            LabelSymbolTable.train((0..<500).map { _ in rng.bytes(rng.below(301)) }),
            LabelSymbolTable.train([[UInt8]]()),
        ]
        for table in tables {
            let d = decoder(table)
            for _ in 0..<400 {
                expectRoundTrip(table, d, rng.bytes(rng.below(301)))
            }
            expectRoundTrip(table, d, (0...255).map { UInt8($0) })
            expectRoundTrip(table, d, (0...255).reversed().map { UInt8($0) })
        }
    }

    @Test func emptyAndOneByteLabels() {
        let table = LabelSymbolTable.train(generatorLikeLabels(count: 1000, seed: 4))
        let d = decoder(table)
        expectRoundTrip(table, d, [])
        #expect(encoded(table, []).isEmpty)
        #expect(decode(d, [], capacity: 0).result == [])
        for b in 0...255 { expectRoundTrip(table, d, [UInt8(b)]) }
    }

    @Test func labelsOf65535Bytes() {
        let table = LabelSymbolTable.train(generatorLikeLabels(count: 1000, seed: 5))
        let d = decoder(table)
        var rng = SymbolRng(seed: 6)
        expectRoundTrip(table, d, rng.bytes(65_535))
        expectRoundTrip(table, d, [UInt8](repeating: UInt8(ascii: "a"), count: 65_535))
        var text: [UInt8] = []
        for label in generatorLikeLabels(count: 10_000, seed: 7) where text.count < 65_535 { text += label }
        expectRoundTrip(table, d, Array(text.prefix(65_535)))
    }

    @Test func tableTrainedOnOneSetCodesAnother() {
        let table = LabelSymbolTable.train(generatorLikeLabels(count: 3000, seed: 8))
        let d = decoder(table)
        for label in generatorLikeLabels(count: 3000, seed: 9) { expectRoundTrip(table, d, label) }
        for s in ["Ünïcödé ✓", "日本語のラベル", "emoji 📞📞", "Pizza Hut", "Сбербанк"] {
            expectRoundTrip(table, d, Array(s.utf8))
        }
    }

    @Test func emptyTrainingSetGivesNoSymbols() throws {
        for table in [LabelSymbolTable.train([[UInt8]]()), LabelSymbolTable.train([[], []] as [[UInt8]])] {
            #expect(table.symbolCount == 0)
            #expect(table.serialized == [0])
            let d = try #require(makeDecoder(table.serialized))
            #expect(d.symbolCount == 0)
            let label = Array("Blue Bank".utf8)
            // Everything escaped: two code bytes per byte.
            #expect(encoded(table, label).count == 2 * label.count)
            expectRoundTrip(table, d, label)
            #expect(decode(d, [0], capacity: 8).result == nil)
        }
    }

    @Test func trainingIsDeterministicAndSamplesLargeInputs() {
        let labels = generatorLikeLabels(count: 4000, seed: 10)
        let a = LabelSymbolTable.train(labels)
        let b = LabelSymbolTable.train(labels)
        #expect(a.serialized == b.serialized)
        #expect(LabelSymbolTable.train(labels[...]).serialized == a.serialized)
        // More than the 1 MiB sample budget: still deterministic, still a full table.
        var big: [[UInt8]] = []
        var rng = SymbolRng(seed: 11)
        var bytes = 0
        for label in generatorLikeLabels(count: 40_000, seed: 12) {
            let l = label + Array(" \(rng.below(1_000_000))".utf8) + [UInt8](repeating: 0x20, count: 20)
            big.append(l)
            bytes += l.count
        }
        #expect(bytes > LabelSymbolTable.sampleBudget)
        let c = LabelSymbolTable.train(big)
        #expect(c.serialized == LabelSymbolTable.train(big).serialized)
        #expect(c.symbolCount > 100)
        let d = decoder(c)
        for label in big.prefix(500) { expectRoundTrip(c, d, label) }
    }

    @Test func decoderRefusesMalformedTables() {
        // Valid ones for contrast.
        #expect(makeDecoder([0]) != nil)
        #expect(makeDecoder([1, 8] + [UInt8](repeating: 7, count: 8)) != nil)
        #expect(makeDecoder([255] + [UInt8](repeating: 1, count: 255) + (0..<255).map { UInt8($0) })?.symbolCount == 255)
        let valid: [UInt8] = [2, 1, 3, 0x61, 0x62, 0x63, 0x64]
        #expect(makeDecoder(valid) != nil)

        #expect(makeDecoder([]) == nil)  // no count byte
        #expect(makeDecoder([1, 0]) == nil)  // length 0
        #expect(makeDecoder([1, 9] + [UInt8](repeating: 7, count: 9)) == nil)  // length 9
        #expect(makeDecoder([2, 1, 0, 0x61]) == nil)  // second length 0
        #expect(makeDecoder([1]) == nil)  // lengths missing
        #expect(makeDecoder([3, 1, 1]) == nil)  // lengths short
        #expect(makeDecoder(Array(valid.dropLast())) == nil)  // symbol bytes short
        #expect(makeDecoder(valid + [0]) == nil)  // trailing byte
        #expect(makeDecoder([0, 0]) == nil)  // trailing byte after an empty table
        #expect(makeDecoder([255] + [UInt8](repeating: 1, count: 255) + [UInt8](repeating: 0x61, count: 254)) == nil)
        // Every truncation and one-byte extension of a trained table is refused.
        let trained = LabelSymbolTable.train(generatorLikeLabels(count: 1000, seed: 13)).serialized
        #expect(makeDecoder(trained) != nil)
        for k in 0..<trained.count { #expect(makeDecoder(Array(trained.prefix(k))) == nil) }
        #expect(makeDecoder(trained + [1]) == nil)
    }

    @Test func decodeRefusesInvalidCodesAndATrailingEscape() throws {
        let table = LabelSymbolTable(symbols: [Array("ab".utf8), Array("c".utf8)])
        let d = try #require(makeDecoder(table.serialized))
        #expect(decode(d, [0, 1], capacity: 16).result == Array("abc".utf8))
        for code in 2...254 {
            #expect(decode(d, [UInt8(code)], capacity: 16).result == nil)
            #expect(decode(d, [0, UInt8(code), 1], capacity: 16).result == nil)
            #expect(decodedLength(d, [0, UInt8(code)]) == nil)
        }
        #expect(decode(d, [255], capacity: 16).result == nil)
        #expect(decode(d, [0, 1, 255], capacity: 16).result == nil)
        #expect(decodedLength(d, [0, 255]) == nil)
        #expect(decode(d, [255, 255], capacity: 16).result == [255])
        #expect(decodedLength(d, [255, 255, 255, 0]) == 2)
        // With 255 symbols every code but 255 is valid.
        let full = LabelSymbolTable(symbols: (0..<255).map { [UInt8($0)] })
        let fd = decoder(full)
        #expect(decode(fd, (0..<255).map { UInt8($0) }, capacity: 255).result == (0..<255).map { UInt8($0) })
        #expect(decode(fd, [254, 255], capacity: 255).result == nil)
    }

    @Test func decodeRespectsCapacityExactly() {
        let labels = generatorLikeLabels(count: 300, seed: 14)
        let table = LabelSymbolTable.train(labels)
        let d = decoder(table)
        var rng = SymbolRng(seed: 15)
        let extra = [Array("12345678abcdefgh".utf8), rng.bytes(40), [UInt8](repeating: 0, count: 9)]
        for label in labels + extra {
            let codes = encoded(table, label)
            let exact = decode(d, codes, capacity: label.count)
            #expect(exact.result == label)
            #expect(!exact.wroteOutside)
            // Any smaller capacity: nil, and no byte written at or past it.
            for capacity in Set([0, label.count / 2, max(0, label.count - 8), max(0, label.count - 1)])
            where capacity < label.count {
                let short = decode(d, codes, capacity: capacity)
                #expect(short.result == nil)
                #expect(!short.wroteOutside)
            }
            let roomy = decode(d, codes, capacity: label.count + 100)
            #expect(roomy.result == label)
        }
    }

    @Test func everyTruncationDecodesToAPrefixOrNil() {
        let labels = generatorLikeLabels(count: 200, seed: 16)
        let table = LabelSymbolTable.train(labels)
        let d = decoder(table)
        var rng = SymbolRng(seed: 17)
        for label in labels + [rng.bytes(100)] {
            let codes = encoded(table, label)
            for k in 0...codes.count {
                let cut = Array(codes.prefix(k))
                let (result, wrote) = decode(d, cut, capacity: label.count)
                #expect(!wrote)
                #expect(decodedLength(d, cut) == result?.count)
                if let result {
                    #expect(Array(label.prefix(result.count)) == result)
                } else {
                    // Only a cut right after an escape is invalid.
                    #expect(k > 0 && cut.last == 255)
                }
            }
        }
    }

    @Test func randomCodesMatchTheReferenceDecoder() {
        var rng = SymbolRng(seed: 18)
        let tables = [
            LabelSymbolTable.train(generatorLikeLabels(count: 1000, seed: 19)),
            LabelSymbolTable(symbols: [Array("xy".utf8), [0]]),
            LabelSymbolTable.train([[UInt8]]()),
        ]
        for table in tables {
            let d = decoder(table)
            let symbols = table.symbols
            for _ in 0..<2000 {
                // Mostly valid codes, sometimes invalid ones and escapes.
                let codes: [UInt8] = (0..<rng.below(40)).map { _ in
                    switch rng.below(10) {
                    case 0: return 255
                    case 1: return UInt8(truncatingIfNeeded: rng.next())
                    default: return table.symbolCount == 0 ? 255 : UInt8(rng.below(table.symbolCount))
                    }
                }
                let expected = referenceDecode(symbols, codes)
                #expect(decodedLength(d, codes) == expected?.count)
                let capacity = rng.below(3) == 0 ? rng.below(100) : (expected?.count ?? 50)
                let (result, wrote) = decode(d, codes, capacity: capacity)
                #expect(!wrote)
                if let expected, expected.count <= capacity {
                    #expect(result == expected)
                } else {
                    #expect(result == nil)
                }
            }
        }
    }

    /// The rule's automaton over codes passes exactly the coded labels that decode, are at
    /// most 65,535 bytes and hold text the rule allows without a joiner: symbol tables that
    /// cut characters in two (symbols of single bytes of a character, a lead byte at a
    /// symbol's end), codes valid and not, escapes (one at the end too), labels over 8,191
    /// codes (left to the decode).
    @Test func ruleAutomatonPassesExactlyTheCodedLabelsTheRuleAllows() {
        let pieces: [[UInt8]] = ["a", "Bank ", "ж", "Сбер", "스타", "👩", "\u{200D}", "\u{202E}", "\u{FEFF}", "\u{85}", "\u{A0}",
                                 "\u{061C}", "\u{2060}", "\u{2065}", "€", "\u{1B}"].map { Array($0.utf8) }
        var rng = SymbolRng(seed: 27)
        let cut: [[UInt8]] = [[0xD0], [0xB6], [0xE2], [0x80], [0x8D, 0x20], [0xEF, 0xBB], [0xBF], [0x41, 0xC2], [0x85], [0xF0, 0x9F], [0xC3, 0xA9]]
        let tables = [
            LabelSymbolTable.train(generatorLikeLabels(count: 1000, seed: 28)),
            LabelSymbolTable(symbols: pieces.filter { $0.count <= 8 } + cut),
            LabelSymbolTable(symbols: cut),
            LabelSymbolTable(symbols: []),
        ]
        var passed = 0, left = 0
        for table in tables {
            let d = decoder(table)
            let rule = LabelSymbolAutomaton(d)
            let symbols = table.symbols
            for _ in 0..<4000 {
                let codes: [UInt8]
                if rng.below(2) == 0 {
                    var label: [UInt8] = []
                    for _ in 0..<rng.below(6) { label += pieces[rng.below(pieces.count)] }
                    codes = encoded(table, label)
                } else {
                    codes = (0..<rng.below(12)).map { _ in
                        switch rng.below(8) {
                        case 0: return 255
                        case 1: return UInt8(truncatingIfNeeded: rng.next())
                        default: return table.symbolCount == 0 ? 0x41 : UInt8(rng.below(table.symbolCount))
                        }
                    }
                }
                let expected = referenceDecode(symbols, codes).map(ruleAllowsWithoutJoiner) ?? false
                let passes = codes.withUnsafeBytes { rule.passes($0) }
                #expect(passes == expected, "\(codes) of \(symbols)")
                if passes { passed += 1 } else { left += 1 }
            }
        }
        #expect(passed > 2000 && left > 2000, "\(passed) passed, \(left) left to the decode")
        // 8,191 codes pass (at most 65,528 bytes whatever their symbols); 8,192 are left to
        // the decode, which alone knows whether the label stays within 65,535 bytes.
        let table = LabelSymbolTable(symbols: [Array("a".utf8)])
        let rule = LabelSymbolAutomaton(decoder(table))
        #expect([UInt8](repeating: 0, count: 8191).withUnsafeBytes { rule.passes($0) })
        #expect(![UInt8](repeating: 0, count: 8192).withUnsafeBytes { rule.passes($0) })
    }
}
