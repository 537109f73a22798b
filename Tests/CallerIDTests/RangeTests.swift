import Foundation
import Testing
@testable import CallerID

// The optional ranges section (format 2.0, kind 12; docs/FORMAT.md 5.12): round trips, the
// overlap rule, entries over ranges, and hostile range sections.

private let rangeLabels = ["МТС, Новосибирская область", "Билайн, Москва", "", "Ростелеком, Республика Бурятия",
                           "Pizza Hut", String(repeating: "Длинное название оператора ", count: 8)]

/// `count` sorted, non-overlapping random ranges: gaps of 0 (adjacent) … large, widths 1 … 10^7,
/// decimal-looking sizes mixed with arbitrary ones; optionally one starting at 0 and one ending
/// at the largest number.
private func randomRanges(count: Int, seed: UInt64, atEdges: Bool) -> [LabeledRange] {
    var g = SeededGenerator(seed: seed)
    var out: [LabeledRange] = []
    var next: UInt64 = atEdges ? 0 : 1 + UInt64.random(in: 0..<1_000_000, using: &g)
    func size() -> UInt64 {
        switch Int.random(in: 0..<6, using: &g) {
        case 0: return 1
        case 1: return [10, 100, 1_000, 10_000, 100_000, 1_000_000].randomElement(using: &g)!
        case 2: return UInt64.random(in: 1...9, using: &g) * [1, 10, 10_000].randomElement(using: &g)!
        default: return UInt64.random(in: 1...10_000_000, using: &g)
        }
    }
    for i in 0..<count {
        let first = next
        var last = first + size() - 1
        if atEdges && i == count - 1 { last = Format.maxNumber }
        guard last <= Format.maxNumber else { break }
        let label = rangeLabels.randomElement(using: &g)!
        let category = [Category.identify, .block, try! Category("operator", action: .identify)].randomElement(using: &g)!
        out.append(LabeledRange(first: first, last: last, label: label, category: category))
        let gap: UInt64 = Bool.random(using: &g) ? 0 : [1, 7, 100, 90_000, UInt64.random(in: 1...1_000_000_000, using: &g)].randomElement(using: &g)!
        guard last < Format.maxNumber - gap - 20_000_000 else { break }
        next = last + 1 + gap
    }
    return out
}

private func build(ranges: [LabeledRange], entries: [Entry] = [], rangeBlockSize: Int = 32, at path: String) throws -> BuildSummary {
    var o = BuildOptions()
    o.rangeBlockSize = rangeBlockSize
    var b = DatabaseBuilder(options: o)
    for e in entries { try b.add(e.number, label: e.label, category: e.category) }
    for r in ranges { try b.addRange(r.first, r.last, label: r.label, category: r.category) }
    return try b.write(to: path)
}

@Suite struct RangeRoundTripTests {
    @Test(arguments: [(UInt64(1), 1, false), (2, 3, true), (3, 32, false), (4, 32, true), (5, 1_024, true), (6, 7, false)])
    func randomRangesRoundTrip(seed: UInt64, blockSize: Int, atEdges: Bool) throws {
        let dir = TempDir()
        let ranges = randomRanges(count: 700, seed: seed, atEdges: atEdges)
        let path = dir.path("r.cid")
        let summary = try build(ranges: ranges, rangeBlockSize: blockSize, at: path)
        #expect(summary.ranges == ranges.count)
        #expect(summary.entries == 0)
        let db = try Database(path: path, verify: true)
        #expect(db.rangeCount == ranges.count)
        #expect(db.info.ranges == ranges.count)
        var cursor = db.rangeCursor()
        #expect(try cursor.collect() == ranges)

        var g = SeededGenerator(seed: seed &* 31)
        for _ in 0..<2_000 {
            let r = ranges.randomElement(using: &g)!
            let x = UInt64.random(in: r.first...r.last, using: &g)
            let a = try #require(try db.answer(x))
            #expect(a.label == r.label && a.category == r.category && a.number == x)
            #expect(a.match == .range(first: r.first, last: r.last))
            #expect(try db.lookup(x) == nil)  // entries only: unchanged
        }
        // Every boundary: the ends answer, the numbers just outside answer only if adjacent.
        for (i, r) in ranges.enumerated() {
            #expect(try db.answer(r.first)?.match == .range(first: r.first, last: r.last))
            #expect(try db.answer(r.last)?.match == .range(first: r.first, last: r.last))
            if i + 1 < ranges.count, ranges[i + 1].first > r.last + 1 {
                #expect(try db.answer(r.last + 1) == nil)
                #expect(try db.answer(ranges[i + 1].first - 1) == nil)
            }
        }
        if ranges[0].first > 0 { #expect(try db.answer(ranges[0].first - 1) == nil) }
        #expect(try db.answer(Format.maxNumber + 1) == nil)
        #expect(try db.answer(.max) == nil)
        // A cursor from the middle starts at the range holding `from`.
        let mid = ranges[ranges.count / 2]
        var from = db.rangeCursor(from: mid.first + (mid.last - mid.first) / 2)
        #expect(try from.next() == mid)
    }

    @Test func emptySetWritesNoSection() throws {
        let dir = TempDir()
        let path = dir.path("e.cid")
        _ = try build(ranges: [], entries: [Entry(number: 5, label: "x")], at: path)
        let db = try Database(path: path, verify: true)
        #expect(db.rangeCount == 0)
        #expect(!db.info.sections.contains { $0.name == "ranges" })
        #expect(db.info.sections.count == 11)
        #expect(try db.answer(6) == nil)
        #expect(try db.answer(5)?.match == .entry)
        var c = db.rangeCursor()
        #expect(try c.next() == nil)
    }

    @Test func singleAndExtremeRanges() throws {
        let dir = TempDir()
        for ranges in [[LabeledRange(first: 42, last: 42, label: "one")],
                       [LabeledRange(first: 0, last: Format.maxNumber, label: "everything", category: .block)],
                       [LabeledRange(first: 0, last: 0, label: "zero"), LabeledRange(first: 1, last: 1, label: "one"),
                        LabeledRange(first: Format.maxNumber, last: Format.maxNumber, label: "top")]] {
            let path = dir.path("s.cid")
            _ = try build(ranges: ranges, at: path)
            let db = try Database(path: path, verify: true)
            var c = db.rangeCursor()
            #expect(try c.collect() == ranges)
            for r in ranges {
                #expect(try db.answer(r.first)?.label == r.label)
                #expect(try db.answer(r.last)?.match == .range(first: r.first, last: r.last))
            }
        }
        let db = try Database(path: dir.path("s.cid"))
        #expect(try db.answer(2) == nil)
        #expect(try db.answer(Format.maxNumber - 1) == nil)
    }

    @Test func entriesWinOverRanges() throws {
        let dir = TempDir()
        let path = dir.path("m.cid")
        let ranges = [LabeledRange(first: 74_950_000_000, last: 74_959_999_999, label: "МТС, Москва"),
                      LabeledRange(first: 74_960_000_000, last: 74_960_000_099, label: "spam range", category: .block)]
        let entries = [Entry(number: 74_950_000_123, label: "Pizza Hut"), Entry(number: 74_960_000_050, label: "friend"),
                       Entry(number: 74_970_000_000, label: "outside")]
        _ = try build(ranges: ranges, entries: entries, at: path)
        let db = try Database(path: path, verify: true)
        for e in entries {
            let a = try #require(try db.answer(e.number))
            #expect(a == e)
            #expect(try db.lookup(e.number) == e)
        }
        #expect(try db.answer(74_950_000_122)?.label == "МТС, Москва")
        #expect(try db.answer(74_960_000_051)?.category == .block)
        #expect(try db.answer(74_970_000_001) == nil)
        // Entry cursors yield entries only.
        #expect(Array(db.entries()).map(\.number) == entries.map(\.number))
        #expect(db.count == 3)
        // withAnswer's view says which answered.
        #expect(try db.withAnswer(74_950_000_124) { $0.match } == .range(first: 74_950_000_000, last: 74_959_999_999))
        #expect(try db.withAnswer(74_950_000_123) { $0.match } == .entry)
    }

    /// The overlap rule against a brute-force model over a small number space: at every number
    /// the narrowest range holding it wins, then the later one; the reported range is the
    /// stretch the winner wins without interruption.
    @Test(arguments: [UInt64(11), 12, 13, 14, 15, 16])
    func overlapsResolveNarrowestThenLatest(seed: UInt64) throws {
        var g = SeededGenerator(seed: seed)
        let space: UInt64 = 300
        var added: [(first: UInt64, last: UInt64, label: String)] = []
        for i in 0..<40 {
            let a = UInt64.random(in: 0..<space, using: &g)
            let w = [0, 1, 5, 20, 60, 150].randomElement(using: &g)! as UInt64
            let last = min(space - 1, a + UInt64.random(in: 0...w, using: &g))
            added.append((a, last, "r\(i)"))
        }
        if seed == 11 { added.append((10, 20, "dup-a")); added.append((10, 20, "dup-b")) }  // equal: later wins
        var b = DatabaseBuilder()
        for r in added { try b.addRange(r.first, r.last, label: r.label) }
        let dir = TempDir()
        let path = dir.path("o.cid")
        let summary = try b.write(to: path)
        let db = try Database(path: path, verify: true)
        #expect(summary.ranges == db.rangeCount)

        var winner = [Int?](repeating: nil, count: Int(space))
        for x in 0..<Int(space) {
            for (i, r) in added.enumerated() where r.first <= UInt64(x) && UInt64(x) <= r.last {
                if let w = winner[x] {
                    let ww = added[w].last - added[w].first, wi = r.last - r.first
                    if wi < ww || (wi == ww && i > w) { winner[x] = i }
                } else {
                    winner[x] = i
                }
            }
        }
        var pieces = 0
        for x in 0..<Int(space) {
            let answer = try db.answer(UInt64(x))
            guard let w = winner[x] else { #expect(answer == nil, "number \(x)"); continue }
            var lo = x, hi = x
            while lo > 0 && winner[lo - 1] == w { lo -= 1 }
            while hi + 1 < Int(space) && winner[hi + 1] == w { hi += 1 }
            if lo == x { pieces += 1 }
            #expect(answer?.label == added[w].label, "number \(x)")
            #expect(answer?.match == .range(first: UInt64(lo), last: UInt64(hi)), "number \(x)")
        }
        #expect(pieces == db.rangeCount)
    }

    @Test func builderRefusesBadRanges() {
        var b = DatabaseBuilder()
        #expect(throws: CallerIDError.self) { try b.addRange(10, 9, label: "x") }
        #expect(throws: CallerIDError.self) { try b.addRange(1, Format.maxNumber + 1, label: "x") }
        #expect(throws: CallerIDError.self) { try b.addRange(1, 2, label: "bad\u{1}") }
        #expect(b.rangeCount == 0)
        var o = BuildOptions()
        o.rangeBlockSize = 0
        var c = DatabaseBuilder(options: o)
        try? c.addRange(1, 2, label: "x")
        let dir = TempDir()
        #expect(throws: CallerIDError.self) { try c.write(to: dir.path("x.cid")) }
    }

    /// The index's block entries hold each block's first number as a distance from its group's
    /// first number: 4 bytes when every distance fits, 8 otherwise; both read back every range.
    @Test(arguments: [(UInt64(1_000), 4), (1_000_000_000, 8)])
    func keyWidthIsTheNarrowest(spacing: UInt64, width: Int) throws {
        let dir = TempDir()
        let ranges = (0..<40).map { LabeledRange(first: 5 + UInt64($0) * spacing, last: 5 + UInt64($0) * spacing + 9, label: "r\($0 % 3)") }
        let path = dir.path("w.cid")
        _ = try build(ranges: ranges, rangeBlockSize: 1, at: path)
        let e = ImageEditor(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(e.rangeKeyBytes == width)
        let db = try Database(path: path, verify: true)
        for r in ranges {
            #expect(try db.answer(r.last)?.match == .range(first: r.first, last: r.last))
            #expect(try db.answer(r.last + 1) == nil)
        }
    }

    /// A numbering plan's shapes: ranges one number apart (the single number between them an
    /// entry), adjacent ranges, spans that repeat, labels "operator, region"; the most frequent
    /// span is the span table's first entry, labels share their parts, and every number
    /// answers as before.
    @Test func gapsOfOneAndTheSpanTable() throws {
        let dir = TempDir()
        var ranges: [LabeledRange] = []
        var entries: [Entry] = []
        var next: UInt64 = 73_012_100_000
        var g = SeededGenerator(seed: 42)
        for i in 0..<300 {
            let span: UInt64 = [20_000, 20_000, 20_000, 10_000, 500, 7][Int.random(in: 0..<6, using: &g)]
            ranges.append(LabeledRange(first: next, last: next + span - 1, label: ["МТС, Москва", "Билайн, Тверь", "Ростелеком"][i % 3]))
            next += span
            if Bool.random(using: &g) {
                entries.append(Entry(number: next, label: "single"))
                next += 1
            }
        }
        let path = dir.path("p.cid")
        _ = try build(ranges: ranges, entries: entries, rangeBlockSize: 10, at: path)
        let e = ImageEditor(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        #expect(UInt64(e.u16(e.rangesStart + 56)) == RangeWriter.decimalCode(20_000))
        // Labels are stored as two parts, split after the last ", ": "МТС, " + "Москва",
        // "Билайн, " + "Тверь", "Ростелеком" + "" — six parts for three values.
        #expect(e.u32(e.rangesStart + 4) == 3 && e.u32(e.rangesStart + 52) == 6)
        let db = try Database(path: path, verify: true)
        for r in ranges {
            for x in [r.first, r.last, r.first + (r.last - r.first) / 2] {
                let a = try db.answer(x)
                #expect(a?.match == .range(first: r.first, last: r.last) && a?.label == r.label)
            }
        }
        for s in entries { #expect(try db.answer(s.number)?.match == .entry) }
        var c = db.rangeCursor(from: ranges[150].first + 1)
        #expect(try c.collect() == Array(ranges[150...]).map { LabeledRange(first: $0.first, last: $0.last, label: $0.label) })
    }

    @Test func decimalCodes() {
        for (v, m, e) in [(UInt64(1), UInt64(1), UInt64(0)), (10_000, 1, 4), (20_000, 2, 4), (12_345, 12_345, 0),
                          (1_000_000_000_000_000, 1, 15), (Format.maxNumber + 1, 1, 15), (990, 99, 1), (10_000_000_000_000_000, 10, 15)] {
            #expect(RangeWriter.decimalCode(v) == (m - 1) << 4 | e)
        }
    }
}

// MARK: - Hostile range sections

/// A small file with entries and ranges in several blocks; the ranges section's offset.
private func rangeSample() throws -> (image: [UInt8], ranges: [LabeledRange]) {
    let ranges = randomRanges(count: 60, seed: 77, atEdges: false)
    let dir = TempDir()
    let path = dir.path("h.cid")
    _ = try build(ranges: ranges, entries: [Entry(number: ranges[3].first + 1, label: "entry")], rangeBlockSize: 8, at: path)
    return (Array(try Data(contentsOf: URL(fileURLWithPath: path))), ranges)
}

extension ImageEditor {
    var rangesEntry: Int { (0..<sectionCount).map { tableOffset + $0 * Format.sectionEntrySize }.first { u32($0) == Format.rangesKind }! }
    var rangesStart: Int { Int(u64(rangesEntry + 8)) }
    var rangesLength: Int { Int(u64(rangesEntry + 16)) }
    /// Absolute offset of part `i` of the ranges section.
    func rangePart(_ i: Int) -> Int { rangesStart + Format.rangesHeaderSize + (0..<i).reduce(0) { $0 + Int(u32(rangesStart + 16 + 4 * $1)) } }
    /// Bytes of a block entry's first-number delta (4 or 8).
    var rangeKeyBytes: Int { Int(u16(rangesStart + 14)) }
    /// Absolute offset of block `b`'s index entry (first-number delta, then u16 record length),
    /// for a sample of one group (60 ranges of 8 per block).
    func rangeBlockEntry(_ b: Int) -> Int { rangePart(0) + 2 * Format.rangeGroupEntrySize + (rangeKeyBytes + 2) * b }
    /// Sets block `b`'s first-number delta.
    mutating func setRangeDelta(_ b: Int, _ v: UInt64) {
        if rangeKeyBytes == 4 { set32(rangeBlockEntry(b), UInt32(truncatingIfNeeded: v)) } else { set64(rangeBlockEntry(b), v) }
    }
}

/// Opens, looks up, enumerates and verifies `bytes`; returns the first error's message (nil
/// when all of it succeeded). Must never trap.
private func exercise(_ bytes: [UInt8], probes: [UInt64], dir: TempDir) -> String? {
    let path = dir.path("x.cid")
    Access.write(bytes, path)   // not FileManager.createFile: its atomic write syncs every file to disk
    do {
        let db = try Database(path: path)
        var firstError: String? = nil
        for x in probes {
            do { _ = try db.answer(x) } catch { firstError = firstError ?? error.message }
        }
        var c = db.rangeCursor()
        do { while try c.next() != nil {} } catch { firstError = firstError ?? error.message }
        do { try db.verify() } catch { firstError = firstError ?? error.message }
        return firstError
    } catch {
        return error.message
    }
}

@Suite struct RangeHostileTests {
    @Test func craftedHeadersAreRefusedAtOpen() throws {
        let (image, _) = try rangeSample()
        let dir = TempDir()
        let cases: [(String, String, (inout ImageEditor) -> Void)] = [
            ("short section", "shorter than its", { e in e.set64(e.rangesEntry + 16, 20) }),
            ("key width", "key width 5", { e in e.set16(e.rangesStart + 14, 5) }),
            ("span table entry", "span table entry 3", { e in e.set16(e.rangesStart + 56 + 2 * 3, 0xFFFF) }),
            ("block size 0", "block size 0", { e in e.set16(e.rangesStart + 12, 0) }),
            ("block size 2000", "block size 2000", { e in e.set16(e.rangesStart + 12, 2000) }),
            ("block size 9: index size", "index is", { e in e.set16(e.rangesStart + 12, 9) }),
            ("range count huge", "cannot fit", { e in e.set32(e.rangesStart, .max) }),
            ("more values than ranges", "label parts (", { e in e.set32(e.rangesStart + 4, 61) }),
            ("more hot than parts", "label parts (", { e in e.set32(e.rangesStart + 8, e.u32(e.rangesStart + 52) + 1) }),
            ("no values for ranges", "label parts (", { e in e.set32(e.rangesStart + 4, 0); e.set32(e.rangesStart + 8, 0) }),
            ("no parts for values", "label parts (", { e in e.set32(e.rangesStart + 52, 0); e.set32(e.rangesStart + 8, 0) }),
            ("value parts size", "value parts is", { e in
                e.set32(e.rangesStart + 16 + 4 * 8, e.u32(e.rangesStart + 16 + 4 * 8) - 4)
                e.set32(e.rangesStart + 16 + 4 * 7, e.u32(e.rangesStart + 16 + 4 * 7) + 4)
            }),
            ("part past the section", "runs past", { e in e.set32(e.rangesStart + 16, .max) }),
            ("parts short of the section", "parts end at", { e in e.set32(e.rangesStart + 16 + 4 * 4, e.u32(e.rangesStart + 16 + 4 * 4) - 1) }),
            ("index sentinel", "the index does not", { e in e.set32(e.rangePart(0) + 12 * 1 + 8, 1) }),
            ("index start", "the index does not", { e in e.set32(e.rangePart(0) + 8, 1) }),
            ("hot offsets", "hot label offsets do not span", { e in e.set32(e.rangePart(3), 1) }),
            ("cold index", "cold label index does not span", { e in e.set32(e.rangePart(6), 1) }),
            ("symbol table", "symbol table is malformed", { e in e.set8(e.rangePart(5), 255) }),
            ("twice", "appears twice", { e in e.set32(e.entry(.hotLabels), Format.rangesKind) }),
        ]
        for (name, words, edit) in cases {
            var e = ImageEditor(image)
            edit(&e)
            e.seal()
            let message = exercise(e.bytes, probes: [], dir: dir)
            #expect(message?.contains(words) == true, "\(name): \(message ?? "accepted")")
        }
    }

    @Test func damagedRecordsAreRefusedAtUse() throws {
        let (image, ranges) = try rangeSample()
        let dir = TempDir()
        let probes = ranges.map(\.first)
        let cases: [(String, (inout ImageEditor) -> Void)] = [
            ("block 0 record length past the records", { e in e.set16(e.rangeBlockEntry(0) + e.rangeKeyBytes, 0xFFFF) }),
            ("block 0 record length 0", { e in e.set16(e.rangeBlockEntry(0) + e.rangeKeyBytes, 0) }),
            ("group first number past the largest", { e in e.set64(e.rangePart(0), Format.maxNumber + 1) }),
            ("block 2 first number past the largest", { e in e.setRangeDelta(2, UInt64(UInt32.max)); e.set64(e.rangePart(0), Format.maxNumber - 1000) }),
            ("a value id past the values", { e in
                // Block 0, range 0: head varint, then the value varint: make it 0x7F (127 > values).
                var at = e.rangePart(1)
                while e.u8(at) & 0x80 != 0 { at += 1 }
                at += 1
                e.set8(at, 0x7F)
            }),
            ("a gap on a block's first range", { e in e.set8(e.rangePart(1), e.u8(e.rangePart(1)) | 3) }),
            ("a coded gap on a block's first range", { e in e.set8(e.rangePart(1), e.u8(e.rangePart(1)) | 6) }),
            ("a category code past the categories", { e in e.set8(e.rangePart(2), 200) }),
            ("a label part past the parts", { e in e.set16(e.rangePart(8) + 2, 0xFFFF) }),
            ("block 1 starts before block 0 ends", { e in e.setRangeDelta(1, 0) }),
        ]
        for (name, edit) in cases {
            var e = ImageEditor(image)
            edit(&e)
            e.seal()
            let message = exercise(e.bytes, probes: probes, dir: dir)
            #expect(message?.contains("ranges") == true || message?.contains("range value") == true, "\(name): \(message ?? "accepted")")
        }
    }

    /// A lookup's decoding loop (`RangeTable.find`) and the block decoder the cursor and verify
    /// use (`BlockDecoder.next`) are separate code: with every record byte changed, both answer
    /// every probe the same way (the same range, not found, or damaged).
    @Test func lookupLoopAgreesWithTheBlockDecoder() throws {
        let (image, ranges) = try rangeSample()
        let dir = TempDir()
        let e0 = ImageEditor(image)
        var probes = ranges.flatMap { [$0.first + ($0.last - $0.first) / 2, $0.last + 1] }
        probes += [0, Format.maxNumber]
        func reference(_ t: RangeTable, _ x: UInt64) -> RawRange?? {
            guard x <= Format.maxNumber else { return .some(nil) }
            let g = t.groupFor(x)
            guard g >= 0 else { return .some(nil) }
            let (b, start) = t.blockFor(x, inGroup: g)
            guard var d = try? t.decoder(b, start: start) else { return nil }
            while d.remaining > 0 {
                guard let r = d.next() else { return nil }
                if x < r.first { return .some(nil) }
                if x <= r.last { return .some(r) }
            }
            return .some(nil)
        }
        var compared = 0
        for offset in e0.rangePart(1)..<e0.rangePart(2) {
            // A low bit (kinds, values), the continuation bit, or a head's gap kind.
            for delta: UInt8 in offset & 1 == 0 ? [0x01, 0x06] : [0x80] {
                var e = e0
                e.set8(offset, e.u8(offset) ^ delta)
                e.seal()
                let path = dir.path("d.cid")
                Access.write(e.bytes, path)
                guard let db = try? Database(path: path), let t = db.ranges else { continue }
                for x in probes {
                    // Not `try?`: it would flatten "damaged" (nil) and "not found" (.some(nil)).
                    let found: RawRange??
                    do { found = .some(try t.find(x)) } catch { found = nil }
                    let expected = reference(t, x)
                    #expect(found == expected, "byte \(offset - e0.rangePart(1)) ^ \(delta), number \(x): \(String(describing: found)) vs \(String(describing: expected))")
                    compared += 1
                }
            }
        }
        #expect(compared > 1_000)
    }

    /// Every byte of the ranges section changed (checksums recomputed): open, lookups, the
    /// range cursor and verify answer or throw, never trap.
    @Test func everyByteChangedNeverTraps() throws {
        let (image, ranges) = try rangeSample()
        let dir = TempDir()
        let e0 = ImageEditor(image)
        var probes = ranges.prefix(20).map { $0.first + ($0.last - $0.first) / 2 }
        probes += [0, 1, Format.maxNumber, ranges.last!.last + 1]
        var refused = 0
        for offset in e0.rangesStart..<(e0.rangesStart + e0.rangesLength) {
            // Each byte once (alternating a low and a high bit), the header and index twice more.
            let deltas: [UInt8] = offset < e0.rangePart(1) ? [0x01, 0x80, 0xFF] : [offset & 1 == 0 ? 0x01 : 0x80]
            for delta in deltas {
                var e = e0
                e.set8(offset, e.u8(offset) ^ delta)
                e.seal()
                if exercise(e.bytes, probes: probes, dir: dir) != nil { refused += 1 }
            }
        }
        // Not every change is detectable without the checksum (a label byte changed to another
        // valid one), but most must be.
        #expect(refused > e0.rangesLength / 2)
    }
}

/// The "entries inside" bit of a range block (FORMAT.md 5.12): a file of more ranges than
/// entries answers a range without the entry lookup when no entry lies inside the block's
/// ranges; the bit is set exactly where one does, and verify recomputes it.
@Suite struct RangeEntriesInsideTests {
    /// 60 ranges (blocks of 8), entries in gaps and inside some ranges; the model's answers.
    func sample(seed: UInt64) throws -> (db: Database, ranges: [LabeledRange], entries: [Entry], dir: TempDir, path: String) {
        var rng = SeededGenerator(seed: seed)
        let ranges = randomRanges(count: 60, seed: seed, atEdges: false)
        var entries: [Entry] = []
        for (i, r) in ranges.enumerated() where i % 17 == 3 && r.last > r.first {   // blocks 0, 2, 4, 6
            entries.append(Entry(number: UInt64.random(in: r.first...r.last, using: &rng), label: "inside \(i)", category: .block))
        }
        for (a, b) in zip(ranges, ranges.dropFirst()) where b.first > a.last + 1 {
            entries.append(Entry(number: a.last + 1, label: "gap"))
        }
        entries = Array(entries.prefix(ranges.count - 1))   // fewer entries than ranges: range first
        let dir = TempDir()
        let path = dir.path("p.cid")
        _ = try build(ranges: ranges, entries: entries, rangeBlockSize: 8, at: path)
        return (try Database(path: path), ranges, entries, dir, path)
    }

    @Test(arguments: [5 as UInt64, 6, 7])
    func answersFollowTheModelAndTheBitsAreExact(seed: UInt64) throws {
        let (db, ranges, entries, _, _) = try sample(seed: seed)
        #expect(db.rangeCount > db.count)
        let byNumber = Dictionary(entries.map { ($0.number, $0) }, uniquingKeysWith: { _, b in b })
        func model(_ x: UInt64) -> String? {
            if let e = byNumber[x] { return "e \(e.label)" }
            return ranges.first { $0.first <= x && x <= $0.last }.map { "r \($0.label)" }
        }
        var rng = SeededGenerator(seed: seed &* 3)
        var probes = entries.map(\.number) + ranges.flatMap { [$0.first, $0.last, $0.last &+ 1] }
        for r in ranges { probes.append(UInt64.random(in: r.first...r.last, using: &rng)) }
        for x in probes {
            let got = try db.answer(x).map { ($0.match == .entry ? "e " : "r ") + $0.label }
            #expect(got == model(x), "\(x)")
        }
        let table = try #require(db.ranges)
        for b in 0..<table.blockCount {
            let mine = ranges[(b * 8)..<min(b * 8 + 8, ranges.count)]
            let expected = entries.contains { e in mine.contains { $0.first <= e.number && e.number <= $0.last } }
            #expect(table.blockHasEntries(b) == expected, "block \(b)")
        }
        let bits = (0..<table.blockCount).map { table.blockHasEntries($0) }
        #expect(bits.contains(true) && bits.contains(false), "both kinds of block: \(bits)")
        try db.verify()
    }

    @Test func aWrongBitIsFoundByVerify() throws {
        let (db, _, _, dir, path) = try sample(seed: 5)
        let table = try #require(db.ranges)
        let image = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        for b in [0, table.blockCount - 1] {
            var e = ImageEditor(image)
            let at = e.rangeBlockEntry(b) + e.rangeKeyBytes
            e.set16(at, e.u16(at) ^ 0x8000)
            e.seal()
            let damaged = dir.path("d\(b).cid")
            FileManager.default.createFile(atPath: damaged, contents: Data(e.bytes))
            let d = try Database(path: damaged)
            #expect {
                try d.verify()
            } throws: { error in
                (error as? CallerIDError)?.message.contains("entries-inside bit") == true
            }
        }
    }
}
