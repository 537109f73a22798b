import Foundation
import Testing
@testable import CallerID

/// Cold labels in LZ4 groups (format 3.1, docs/FORMAT.md 5.13–5.14): every coding answers the
/// same, every group shape reads back, the writer keeps the smaller coding, and damaged groups
/// are refused at open, at access and by verify, never trapping.
@Suite struct LZ4LabelTests {
    /// Entries built with `coding`, a small hot budget so that most labels are cold.
    static func image(_ entries: [Entry], coding: LabelCoding, hotLabelBytes: Int = 60, blockSize: Int = 16) throws -> [UInt8] {
        var options = BuildOptions()
        options.blockSize = blockSize
        options.hotLabelBytes = hotLabelBytes
        options.labelCoding = coding
        var builder = DatabaseBuilder(options: options)
        for e in entries { try builder.add(e.number, label: e.label, category: e.category) }
        return try builder.encode().0
    }

    /// Everything a reader can be asked of `path`, in one comparable value: every entry by the
    /// cursor, by batches of 7, and a lookup of each number and its neighbours.
    static func answers(_ path: String, numbers: [UInt64]) throws -> (entries: [Entry], batched: [Entry], lookups: [Entry?]) {
        let db = try Database(path: path, verify: true)
        var batch = EntryBatch(capacity: 7)
        var cursor = db.cursor()
        var batched: [Entry] = []
        while try cursor.nextBatch(&batch) > 0 { for i in 0..<batch.count { batched.append(batch[i].entry) } }
        let lookups = try numbers.flatMap { [$0 - 1, $0, $0 + 1] }.map { n throws(CallerIDError) in try db.lookup(n) }
        return (Array(db.entries()), batched, lookups)
    }

    @Test(.enabled(if: Codec.compressesLZ4, "this build cannot write LZ4"), arguments: [UInt64(1), 2, 3, 4])
    func everyCodingAnswersTheSame(seed: UInt64) throws {
        let (records, expected) = randomRecords(count: 600, seed: seed, duplicateRate: 0.03)
        let sorted = expected.values.sorted { $0.number < $1.number }
        let dir = TempDir()
        var sizes: [LabelCoding: Int] = [:]
        var versions: [LabelCoding: String] = [:]
        var all: [LabelCoding: [UInt8]] = [:]
        for coding in LabelCoding.allCases {
            let bytes = try Self.image(records, coding: coding)
            let path = dir.path("\(coding).cid")
            Access.write(bytes, path)
            let answers = try Self.answers(path, numbers: sorted.map(\.number))
            #expect(answers.entries == sorted, "\(coding)")
            #expect(answers.batched == sorted, "\(coding)")
            #expect(answers.lookups == sorted.flatMap { e in [expected[e.number - 1], e, expected[e.number + 1]] }, "\(coding)")
            sizes[coding] = bytes.count
            versions[coding] = try Database(path: path).info.formatVersion
            all[coding] = bytes
        }
        #expect(versions[.lz4] == "3.1")
        #expect(versions[.symbols]?.hasSuffix(".0") == true)
        // auto keeps the smaller of the two codings, byte for byte.
        #expect(all[.auto] == (sizes[.lz4]! < sizes[.symbols]! ? all[.lz4] : all[.symbols]))
    }

    /// Group shapes the writer does not choose but the format allows: labels kept alone, groups
    /// of 1 and 64, cold counts on and around a group boundary, empty labels and a long one.
    @Test(.enabled(if: Codec.compressesLZ4, "this build cannot write LZ4"),
          arguments: [(0, 3), (5, 3), (1_000, 3), (0, 0), (3, 6), (0, 6), (2, 1)])
    func everyGroupShapeReadsBack(singles: Int, shift: Int) throws {
        let dir = TempDir()
        var rng = SeededGenerator(seed: UInt64(singles * 10 + shift))
        for coldCount in [0, 1, 7, 8, 9, 16, 17, 130] {
            var labels: [[UInt8]] = (0..<coldCount).map { k in
                let length = k == 3 ? 0 : (k == 5 ? 3_000 : Int.random(in: 1...40, using: &rng))
                return (0..<length).map { _ in UInt8.random(in: 0x61...0x7A, using: &rng) }
            }
            labels.insert(Array("Hot label".utf8), at: 0)  // one hot value (its bytes are the dictionary)
            let keys = (0..<UInt64(labels.count * 3)).map { 79_000_000_000 + $0 * 5 }
            let values = keys.indices.map { UInt32($0 % labels.count) }
            var layout = LayoutOptions()
            layout.blockSize = 8
            layout.hotLabelBytes = 9
            layout.labelCoding = .lz4
            layout.lz4Singles = singles
            layout.lz4GroupShift = shift
            let written = try FileWriter.encode(keys: keys, values: values, labelCount: labels.count, label: { labels[$0][...] },
                                                valueCategory: { _ in 0 }, categories: [.identify], options: layout)
            #expect(written.version.major == 3)
            #expect(written.version.minor == 1)
            let path = dir.path("shape-\(coldCount).cid")
            Access.write(written.image, path)
            let db = try Database(path: path, verify: true)
            #expect(db.info.labelCoding == .lz4 && db.info.lz4GroupLabels == 1 << shift, "\(coldCount) cold")
            #expect(db.info.lz4SingleLabels == min(singles, coldCount), "\(coldCount) cold")
            let read = Array(db.entries())
            #expect(read.map(\.number) == keys)
            #expect(read.map { Array($0.label.utf8) } == values.map { labels[Int($0)] }, "\(coldCount) cold")
            for (k, key) in keys.enumerated() where k % 7 == 0 {
                #expect(try db.lookup(key).map { Array($0.label.utf8) } == labels[Int(values[k])])
            }
        }
    }

    /// An LZ4 group decodes to at most 64 KiB: a label of 65,535 bytes fits alone, not with
    /// others in its group. `lz4` then fails with a clear error; `auto` codes the symbols.
    @Test(.enabled(if: Codec.compressesLZ4, "this build cannot write LZ4"))
    func aGroupTooLongForLZ4FallsBackToTheSymbolTable() throws {
        let longest = String(repeating: "ж", count: 32_767) + "a"  // 65,535 bytes
        #expect(longest.utf8.count == Format.maxLabelBytes)
        let dir = TempDir()
        let alone = [Entry(number: 79_000_000_001, label: longest, category: .identify)]
        Access.write(try Self.image(alone, coding: .lz4, hotLabelBytes: 0), dir.path("alone.cid"))
        #expect(try Database(path: dir.path("alone.cid"), verify: true).lookup(79_000_000_001)?.label == longest)
        let two = alone + [Entry(number: 79_000_000_002, label: "Short", category: .identify)]
        #expect { try Self.image(two, coding: .lz4, hotLabelBytes: 0) } throws: {
            ($0 as? CallerIDError)?.code == .limitExceeded && ($0 as? CallerIDError)?.message.contains("LZ4 group") == true
        }
        Access.write(try Self.image(two, coding: .auto, hotLabelBytes: 0), dir.path("two.cid"))
        let db = try Database(path: dir.path("two.cid"), verify: true)
        #expect(db.info.labelCoding == .symbols)
        #expect(Array(db.entries()).map(\.label) == [longest, "Short"])
    }

    /// An empty database and one entry, LZ4-coded: version 3.1, and they read back.
    @Test(.enabled(if: Codec.compressesLZ4, "this build cannot write LZ4"))
    func emptyAndOneEntryFilesWithLZ4Labels() throws {
        let dir = TempDir()
        for entries in [[], [Entry(number: PhoneNumber.maximum, label: "Last", category: .block)]] {
            let path = dir.path("n\(entries.count).cid")
            Access.write(try Self.image(entries, coding: .lz4, hotLabelBytes: 0), path)
            let db = try Database(path: path, verify: true)
            #expect(db.info.formatVersion == "3.1")
            #expect(Array(db.entries()) == entries)
        }
    }

    /// The bounded-memory build writes the same bytes as the in-memory one, whichever coding.
    @Test(.enabled(if: Codec.compressesLZ4, "this build cannot write LZ4"), arguments: [LabelCoding.lz4, .auto])
    func theSpilledBuildWritesTheSameLZ4Bytes(_ coding: LabelCoding) throws {
        let (records, _) = randomRecords(count: 3_000, seed: 99, duplicateRate: 0.02)
        let dir = TempDir()
        var options = BuildOptions()
        options.labelCoding = coding
        options.hotLabelBytes = 200
        options.memoryLimit = 64 << 10
        var spilled = DatabaseBuilder(options: options, spillingNextTo: dir.path("spilled.cid"))
        for r in records { try spilled.add(r.number, label: r.label, category: r.category) }
        _ = try spilled.write(to: dir.path("spilled.cid"))
        let inMemory = try Self.image(records, coding: coding, hotLabelBytes: 200, blockSize: options.blockSize)
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.path("spilled.cid")))) == inMemory)
        if coding == .lz4 { #expect(inMemory[10] == 1, "a 3.1 file") }
    }

    // MARK: The decoder

    /// A block of literals only (the simplest valid LZ4 block, made without liblz4).
    static func literalBlock(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        if bytes.count < 15 {
            out.append(UInt8(bytes.count << 4))
        } else {
            out.append(0xF0)
            var rest = bytes.count - 15
            while rest >= 255 { out.append(255); rest -= 255 }
            out.append(UInt8(rest))
        }
        return out + bytes
    }

    static func decode(_ block: [UInt8], dictionary: [UInt8], capacity: Int,
                       with decoder: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, MutableByteView) -> Int? = Codec.lz4Decode)
        -> (result: [UInt8]?, canaryIntact: Bool) {
        var out = [UInt8](repeating: 0xA5, count: capacity + 32)
        let n = block.withUnsafeBytes { b in
            dictionary.withUnsafeBytes { d in out.withUnsafeMutableBytes { o in decoder(b, d, MutableByteView(start: o.baseAddress!, count: capacity)) } }
        }
        return (n.map { Array(out[0..<$0]) }, out[capacity...].allSatisfy { $0 == 0xA5 })
    }

    @Test func literalBlocksAndHandMadeMatchesDecode() throws {
        for length in [1, 14, 15, 16, 269, 270, 271, 1_000] {
            let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let block = Self.literalBlock(data)
            #expect(Self.decode(block, dictionary: [], capacity: length).result == data)
            #expect(Self.decode(block, dictionary: [], capacity: length - 1).result == nil, "one byte short")
            for cut in [1, block.count / 2, block.count - 1] {
                #expect(Self.decode(Array(block.prefix(cut)), dictionary: [], capacity: length + 10).result == nil, "cut at \(cut)")
            }
        }
        // "ab" then a match of 6 at offset 2 (overlapping: the pattern repeats), then literals
        // "xyz": one sequence with a match, the last with literals only.
        let block: [UInt8] = [0x22, 0x61, 0x62, 0x02, 0x00, 0x30, 0x78, 0x79, 0x7A]
        #expect(Self.decode(block, dictionary: [], capacity: 64).result == Array("abababab".utf8) + Array("xyz".utf8))
        // A match that reaches into the dictionary ("Hello" ends it): offset 5 from position 0.
        let fromDictionary: [UInt8] = [0x01, 0x05, 0x00, 0x10, 0x21]
        #expect(Self.decode(fromDictionary, dictionary: Array("Say Hello".utf8), capacity: 64).result == Array("Hello!".utf8))
        // The same block without the dictionary, and an offset of 0: malformed.
        #expect(Self.decode(fromDictionary, dictionary: Array("Hi".utf8), capacity: 64).result == nil)
        #expect(Self.decode([0x01, 0x00, 0x00, 0x10, 0x21], dictionary: Array("Say Hello".utf8), capacity: 64).result == nil)
        #expect(Self.decode([], dictionary: [], capacity: 8).result == nil)
    }

    #if SystemCodecs && os(Linux)
    /// The package's decoder against liblz4's: the same bytes on every block LZ4HC writes
    /// (random text, runs, dictionaries of 0 to 70,000 bytes), and on damaged blocks that both
    /// accept; never a byte written past the capacity.
    @Test(arguments: [UInt64(1), 2, 3])
    func theOwnDecoderAgreesWithLiblz4(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let words = (0..<40).map { _ in (0..<Int.random(in: 2...9, using: &rng)).map { _ in UInt8.random(in: 0x61...0x7A, using: &rng) } }
        var agreedOnDamage = 0
        for round in 0..<300 {
            let dictionary = (0..<[0, 100, 4_000, 70_000][round % 4]).map { _ in words[Int.random(in: 0..<words.count, using: &rng)].first! }
            var data: [UInt8] = []
            let size = Int.random(in: 1...(round % 10 == 0 ? 20_000 : 400), using: &rng)
            while data.count < size {
                if Bool.random(using: &rng), dictionary.count > 8 {
                    let at = Int.random(in: 0..<(dictionary.count - 8), using: &rng)
                    data += dictionary[at..<(at + 8)]
                } else {
                    data += words[Int.random(in: 0..<words.count, using: &rng)] + [0x20]
                }
            }
            let encoder = try #require(LZ4BlockEncoder(dictionary: dictionary, level: Format.lz4Level))
            var block: [UInt8] = []
            #expect(encoder.compress(data, appendingTo: &block))
            let own = Self.decode(block, dictionary: dictionary, capacity: data.count)
            let system = Self.decode(block, dictionary: dictionary, capacity: data.count, with: Codec.liblz4Decode)
            #expect(own.result == data && system.result == data, "round \(round)")
            for _ in 0..<20 {
                var damaged = block
                damaged[Int.random(in: 0..<damaged.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
                let a = Self.decode(damaged, dictionary: dictionary, capacity: data.count)
                let b = Self.decode(damaged, dictionary: dictionary, capacity: data.count, with: Codec.liblz4Decode)
                #expect(a.canaryIntact, "round \(round)")
                if let x = a.result, let y = b.result {
                    #expect(x == y, "round \(round): the decoders disagree on a damaged block")
                    agreedOnDamage += 1
                }
            }
        }
        #expect(agreedOnDamage > 100)
    }
    #endif

    /// Random bytes as a block never make the decoder write past its capacity or trap.
    @Test func randomBytesNeverWritePastTheCapacity() throws {
        var rng = SeededGenerator(seed: 5)
        let dictionary = (0..<5_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        for _ in 0..<20_000 {
            let block = (0..<Int.random(in: 1...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let r = Self.decode(block, dictionary: dictionary, capacity: Int.random(in: 0...300, using: &rng))
            #expect(r.canaryIntact)
        }
    }
}

// MARK: Damaged LZ4 sections

/// The LZ4 sample's sections 13 and 14, edited.
extension ImageEditor {
    /// Index entry `g` of section 13.
    func lz4Index(_ g: Int) -> Int { start(.lz4ColdIndex) + Format.lz4IndexHeaderSize + 4 * g }
    /// Group `g`'s offset in the file.
    func lz4Group(_ g: Int) -> Int { start(.lz4ColdLabels) + Int(u32(lz4Index(g))) }

    /// Section 14 with group 0's bytes replaced by `group` (a decoded-length varint and a
    /// block), the index moved to match.
    mutating func replaceFirstLZ4Group(_ group: [UInt8]) {
        let groups = section(.lz4ColdLabels), index = section(.lz4ColdIndex)
        let end = Int(u32(lz4Index(1)))
        let delta = group.count - end
        var newIndex = Array(index[0..<(Format.lz4IndexHeaderSize + 4)])
        var at = Format.lz4IndexHeaderSize + 4
        while at < index.count {
            let v = Int(index[at]) | Int(index[at + 1]) << 8 | Int(index[at + 2]) << 16 | Int(index[at + 3]) << 24
            newIndex.appendLE(UInt32(v + delta))
            at += 4
        }
        let newGroups = group + groups[end...]
        relayout(sections.map {
            $0.kind == Format.Section.lz4ColdIndex.rawValue ? ($0.kind, newIndex)
                : $0.kind == Format.Section.lz4ColdLabels.rawValue ? ($0.kind, newGroups) : $0
        })
    }

    /// Group 0 made of `labels` exactly as given (lengths in front of all but the last), as a
    /// block of literals.
    mutating func craftFirstLZ4Group(_ decoded: [UInt8]) {
        var group: [UInt8] = []
        group.appendVarint(decoded.count)
        replaceFirstLZ4Group(group + (decoded.isEmpty ? [] : LZ4LabelTests.literalBlock(decoded)))
    }
}

extension HostileFileTests {
    /// `hostile`'s edit of `image`, sealed and written to a new folder (kept while `dir` lives).
    static func written(_ hostile: HostileCase, of image: ImageEditor) -> (dir: TempDir, path: String, image: ImageEditor) {
        var e = image
        hostile.edit(&e)
        e.seal()
        let dir = TempDir()
        let path = dir.path("hostile.cid")
        Access.write(e.bytes, path)
        return (dir, path, e)
    }

    static func lz4Editor() -> ImageEditor {
        let e = ImageEditor(CorruptionTests.lz4Sample.image)
        precondition(e.u16(10) == 1 && e.u32(e.start(.lz4ColdIndex)) == 0 && e.u8(e.start(.lz4ColdIndex) + 4) == 3, "a 3.1 sample in groups of 8")
        return e
    }

    static let lz4OpenCases: [HostileCase] = [
        HostileCase("LZ4 index shorter than its header", "shorter than its header") { e in e.replaceSection(.lz4ColdIndex, e.section(.lz4ColdIndex).prefix(5)) },
        HostileCase("LZ4 index reserved byte", "nonzero reserved") { e in e.set8(e.start(.lz4ColdIndex) + 6, 1) },
        HostileCase("LZ4 group shift 7", "groups of 2^7") { e in e.set8(e.start(.lz4ColdIndex) + 4, 7) },
        HostileCase("LZ4 singles beyond the cold values", "single labels") { e in e.set32(e.start(.lz4ColdIndex), UInt32(e.valueCount)) },
        HostileCase("LZ4 group shift 4 (index length)", "section 'LZ4 cold label index' is") { e in e.set8(e.start(.lz4ColdIndex) + 4, 4) },
        HostileCase("LZ4 index one short", "section 'LZ4 cold label index' is") { e in e.replaceSection(.lz4ColdIndex, e.section(.lz4ColdIndex).dropLast(4)) },
        HostileCase("LZ4 index not from 0", "does not span") { e in e.set32(e.lz4Index(0), 1) },
        HostileCase("LZ4 index end short of section 14", "does not span") { e in
            e.set32(e.start(.lz4ColdIndex) + e.length(.lz4ColdIndex) - 4, UInt32(e.length(.lz4ColdLabels) - 1))
        },
        HostileCase("LZ4 index missing", "section 'LZ4 cold label index' is missing") { e in
            e.relayout(e.sections.filter { $0.kind != Format.Section.lz4ColdIndex.rawValue })
        },
        HostileCase("LZ4 groups missing", "section 'LZ4 cold labels' is missing") { e in
            e.relayout(e.sections.filter { $0.kind != Format.Section.lz4ColdLabels.rawValue })
        },
    ]

    @Test(arguments: lz4OpenCases)
    func lz4DamageRefusedAtOpen(_ hostile: HostileCase) throws {
        let (dir, path, _) = Self.written(hostile, of: Self.lz4Editor())
        defer { withExtendedLifetime(dir) {} }
        for verify in [false, true] {
            #expect { try Database(path: path, verify: verify) } throws: {
                ($0 as? CallerIDError)?.code == .corrupt && ($0 as? CallerIDError)?.message.contains(hostile.expect) == true
            }
        }
    }

    /// A 3.0 file's symbol-coded sections under a header that says 3.1: the LZ4 sections are missing.
    @Test func a3_1HeaderOverSymbolCodedLabelsIsDamaged() throws {
        var e = ImageEditor(CorruptionTests.sample.image)
        e.set16(10, 1)
        e.seal()
        let dir = TempDir()
        Access.write(e.bytes, dir.path("x.cid"))
        #expect { try Database(path: dir.path("x.cid")) } throws: {
            ($0 as? CallerIDError)?.message.contains("section 'LZ4 cold label index' is missing") == true
        }
    }

    static let lz4AccessCases: [HostileCase] = [
        HostileCase("LZ4 group past section 14", "LZ4 cold label index of value") { e in e.set32(e.lz4Index(1), .max) },
        HostileCase("LZ4 groups out of order", "LZ4 cold label index of value") { e in e.set32(e.lz4Index(1), e.u32(e.lz4Index(2)) + 1) },
        HostileCase("LZ4 group one byte short", "does not decode to its") { e in e.set32(e.lz4Index(1), e.u32(e.lz4Index(1)) - 1) },
        HostileCase("LZ4 decoded length one more", "does not decode to its") { e in
            precondition(e.u8(e.lz4Group(0)) < 0x7F)
            e.set8(e.lz4Group(0), e.u8(e.lz4Group(0)) + 1)
        },
        HostileCase("LZ4 decoded length past 64 KiB", "declares a bad length") { e in
            for i in 0..<3 { e.set8(e.lz4Group(0) + i, i < 2 ? 0xFF : 0x7F) }
        },
        HostileCase("LZ4 decoded length not minimal", "declares a bad length") { e in e.replaceFirstLZ4Group([0x80, 0x00]) },
        HostileCase("LZ4 empty group with bytes after it", "bytes after an empty group") { e in e.replaceFirstLZ4Group([0x00, 0x10, 0x41]) },
        HostileCase("LZ4 group decoding past its length", "does not decode to its") { e in
            e.replaceFirstLZ4Group([0x02] + LZ4LabelTests.literalBlock(Array("abc".utf8)))
        },
        HostileCase("LZ4 label length past its group", "runs past its group") { e in e.craftFirstLZ4Group([0x50] + Array("abc".utf8)) },
        HostileCase("LZ4 label length varint too long", "LZ4 cold label length of value") { e in e.craftFirstLZ4Group([0x80, 0x80, 0x80, 0x01]) },
        HostileCase("LZ4 group of one label short", "LZ4 cold label length of value") { e in e.craftFirstLZ4Group([0x01, 0x41]) },
        HostileCase("LZ4 block with a zero offset", "does not decode to its") { e in
            e.replaceFirstLZ4Group([0x08, 0x12, 0x41, 0x00, 0x00, 0x10, 0x42])
        },
        HostileCase("LZ4 block reaching before the dictionary", "does not decode to its") { e in
            e.replaceFirstLZ4Group([0x08, 0x12, 0x41, 0xFF, 0xFF, 0x10, 0x42])
        },
    ]

    @Test(arguments: lz4AccessCases)
    func lz4DamageRefusedAtAccess(_ hostile: HostileCase) throws {
        let (dir, path, e) = Self.written(hostile, of: Self.lz4Editor())
        defer { withExtendedLifetime(dir) {} }
        let db = try Database(path: path)
        let report = Access.exercise(db, numbers: CorruptionTests.lz4Sample.entries.map(\.number), image: e, path: path, hostile.name)
        let errors = report.errors + (report.verifyError.map { [$0] } ?? [])
        #expect(errors.contains { $0.message.contains(hostile.expect) }, "\(hostile.name): errors were \(errors.map(\.message).prefix(3))")
        #expect(report.verifyError != nil, "\(hostile.name): verify accepted it")
    }

    /// A label the label rule refuses, inside an LZ4 group: it reads back (readers do not check
    /// labels), verify names it.
    @Test func aControlCharacterInAnLZ4LabelFailsVerify() throws {
        var e = Self.lz4Editor()
        var decoded: [UInt8] = []
        for k in 0..<8 {
            let label = Array("Label \(k)".utf8) + (k == 2 ? [0x07] : [])
            if k < 7 { decoded.appendVarint(label.count) }
            decoded += label
        }
        e.craftFirstLZ4Group(decoded)
        e.seal()
        let dir = TempDir()
        Access.write(e.bytes, dir.path("bell.cid"))
        let db = try Database(path: dir.path("bell.cid"))
        #expect { try db.verify() } throws: { ($0 as? CallerIDError)?.message.contains("label of value \(e.hotCount + 2)") == true }
    }
}
