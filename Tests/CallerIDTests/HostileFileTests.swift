import Foundation
import Testing
@testable import CallerID

// Crafted hostile database files. CorruptionTests damages bytes at random; most of that damage
// is caught by a checksum before anything else looks at it. Here every edit is *sealed*: the
// section, table and header checksums are recomputed afterwards, as an attacker would, so each
// file reaches the structural check it targets, and that check must refuse it with a clear
// message (at open, or for data-dependent damage at access and at verify).

/// A database image with accessors for its fields, editable and re-sealable.
struct ImageEditor {
    var bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func u8(_ o: Int) -> UInt8 { bytes[o] }
    func u16(_ o: Int) -> UInt16 { bytes.withUnsafeBytes { UInt16(littleEndian: $0.loadUnaligned(fromByteOffset: o, as: UInt16.self)) } }
    func u32(_ o: Int) -> UInt32 { bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: o, as: UInt32.self)) } }
    func u64(_ o: Int) -> UInt64 { bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: o, as: UInt64.self)) } }
    mutating func set8(_ o: Int, _ v: UInt8) { bytes[o] = v }
    mutating func set16(_ o: Int, _ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes.replaceSubrange(o..<(o + 2), with: $0) } }
    mutating func set32(_ o: Int, _ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.replaceSubrange(o..<(o + 4), with: $0) } }
    mutating func set64(_ o: Int, _ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.replaceSubrange(o..<(o + 8), with: $0) } }

    var footer: Int { bytes.count - Format.footerSize }
    var tableOffset: Int { Int(u64(40)) }
    var sectionCount: Int { Int(u32(48)) }
    var entryCount: Int { Int(u64(24)) }
    var blockSize: Int { Int(u32(32)) }

    /// Offset of the section table entry of `kind`.
    func entry(_ kind: Format.Section) -> Int {
        (0..<sectionCount).map { tableOffset + $0 * Format.sectionEntrySize }.first { u32($0) == kind.rawValue }!
    }
    func start(_ kind: Format.Section) -> Int { Int(u64(entry(kind) + 8)) }
    func length(_ kind: Format.Section) -> Int { Int(u64(entry(kind) + 16)) }
    mutating func setOffset(_ kind: Format.Section, _ v: UInt64) { set64(entry(kind) + 8, v) }
    mutating func setLength(_ kind: Format.Section, _ v: UInt64) { set64(entry(kind) + 16, v) }

    /// Absolute offset of block `b`'s descriptor and of chunk `c`'s table entry.
    func descriptor(_ b: Int) -> Int { start(.blockDescriptors) + b * Format.descriptorSize }
    func chunk(_ c: Int) -> Int { start(.labelChunks) + c * Format.chunkEntrySize }
    var blockCount: Int { length(.blockDescriptors) / Format.descriptorSize }
    var chunkCount: Int { length(.labelChunks) / Format.chunkEntrySize }
    func blocks(mode: Format.ValueMode) -> [Int] { (0..<blockCount).filter { u8(descriptor($0) + 30) == mode.rawValue } }
    func chunks(compressed: Bool) -> [Int] { (0..<chunkCount).filter { (u32(chunk($0) + 12) != 0) == compressed } }

    /// Sets the entry count in the header and the footer.
    mutating func setEntryCount(_ n: UInt64) {
        set64(24, n)
        set64(footer + 16, n)
    }

    /// Recomputes every checksum: the sections the table describes (when they lie inside the
    /// file), the table's (footer) and the header's.
    mutating func seal() {
        // Fields may hold anything here: compare as u64 before converting.
        let count = sectionCount
        if count * Format.sectionEntrySize <= footer, u64(40) <= UInt64(footer - count * Format.sectionEntrySize) {
            let table = tableOffset
            for i in 0..<count {
                let e = table + i * Format.sectionEntrySize
                let offset = u64(e + 8), length = u64(e + 16)
                if offset <= UInt64(bytes.count), length <= UInt64(bytes.count) - offset {
                    set64(e + 24, Codec.xxh3(Array(bytes[Int(offset)..<Int(offset + length)])))
                }
            }
            set64(footer + 8, Codec.xxh3(Array(bytes[table..<(table + count * Format.sectionEntrySize)])))
        }
        set64(56, Codec.xxh3(Array(bytes[0..<56])))
    }

    /// Appends a section of `kind` at the end of the data area (the table and footer move).
    mutating func appendSection(kind: UInt32, _ data: [UInt8]) {
        let table = tableOffset, count = sectionCount
        let entries = Array(bytes[table..<(table + count * Format.sectionEntrySize)])
        let footerBytes = Array(bytes[footer...])
        var area = Array(bytes[0..<table])
        let at = area.count
        area += data
        area.padZero(toMultipleOf: 8)
        var newEntry: [UInt8] = []
        newEntry.appendLE(kind)
        newEntry.appendLE(UInt32(0))
        newEntry.appendLE(UInt64(at))
        newEntry.appendLE(UInt64(data.count))
        newEntry.appendLE(UInt64(0))
        bytes = area + entries + newEntry + footerBytes
        set64(40, UInt64(area.count))
        set32(48, UInt32(count + 1))
        set64(16, UInt64(bytes.count))
        set64(footer, UInt64(bytes.count))
    }
}

/// One crafted file: an edit of the sample (sealed afterwards) and the words its error must contain.
struct HostileCase: Sendable, CustomTestStringConvertible {
    let name: String
    let expect: String
    let edit: @Sendable (inout ImageEditor) -> Void
    var testDescription: String { name }
    init(_ name: String, _ expect: String, _ edit: @escaping @Sendable (inout ImageEditor) -> Void) {
        self.name = name
        self.expect = expect
        self.edit = edit
    }
}

enum HostileSample {
    /// A small file built so that it has every structure a hostile edit can target: a constant,
    /// a palette and frame-of-reference blocks; a dictionary chunk, compressed chunks; several
    /// categories. See `checkSampleShape`.
    static let image: [UInt8] = {
        var options = BuildOptions()
        options.blockSize = 8
        options.labelsPerChunk = 4
        options.labelDictionaryBytes = 200
        var b = DatabaseBuilder(options: options)
        let spam = try! Category("spam", action: .block), taxi = try! Category("taxi", action: .identify)
        var labels: [(String, Category)] = Array(repeating: ("Hot", .identify), count: 8)           // block 0: constant
        let rare = ("Rare label of the palette block", Category.identify)
        labels += [("Hot", .identify), rare, ("Hot", .identify), rare]
        labels += Array(repeating: ("Hot", .identify), count: 4)                                   // block 1: palette
        for k in 0..<40 {                                                                        // ids 1…40, 3 uses each
            let c = k % 3 == 0 ? spam : k % 3 == 1 ? taxi : .identify
            labels += Array(repeating: ("Mid label \(k) of the city directory", c), count: 3)
        }
        for k in 0..<20 { labels.append(("Cold label number \(k) of the city directory", .identify)) }
        labels += Array(repeating: ("Hot", .identify), count: 8)
        for (i, (label, category)) in labels.enumerated() {
            try! b.add(79_000_000_000 + UInt64(i) * 7 + UInt64(i % 3), label: label, category: category)
        }
        return try! b.encode().0
    }()

    /// Every number of the sample.
    static let numbers: [UInt64] = (0..<count).map { 79_000_000_000 + UInt64($0) * 7 + UInt64($0 % 3) }
    static let count = 164
}

@Suite struct HostileFileTests {
    static func write(_ bytes: [UInt8], _ path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    }

    @Test func sampleHasEveryStructure() throws {
        let e = ImageEditor(HostileSample.image)
        #expect(e.blocks(mode: .constant).contains(0))
        #expect(e.blocks(mode: .palette).contains(1))
        #expect(!e.blocks(mode: .frameOfReference).isEmpty)
        #expect(e.u32(52) >= 1, "a dictionary chunk")
        #expect(!e.chunks(compressed: true).isEmpty)
        #expect(e.entryCount == HostileSample.count)
        let dir = TempDir()
        Self.write(e.bytes, dir.path("s.cid"))
        let db = try Database(path: dir.path("s.cid"), verify: true)
        #expect(db.categories.map(\.name) == ["identify", "block", "spam", "taxi"])
        #expect(try db.lookup(HostileSample.numbers[9])?.label == "Rare label of the palette block")
    }

    // MARK: Refused at open

    static let openCases: [HostileCase] = [
        // Header fields behind a valid checksum.
        HostileCase("header size 65", "header size field") { $0.set32(12, 65) },
        HostileCase("block size 0", "block size 0") { $0.set32(32, 0) },
        HostileCase("block size 4097", "block size 4097") { $0.set32(32, 4097) },
        HostileCase("labels-per-chunk shift 13", "shift 13") { $0.set32(36, 13) },
        HostileCase("entry count larger than the file", "impossible") { $0.setEntryCount(1 << 40) },
        HostileCase("footer entry count differs", "footer disagrees") { $0.set64($0.footer + 16, UInt64(HostileSample.count + 1)) },
        HostileCase("no sections", "section count 0") { $0.set32(48, 0) },
        HostileCase("65 sections", "section count 65") { $0.set32(48, 65) },
        HostileCase("table offset one entry early", "does not end at the footer") { $0.set64(40, UInt64($0.tableOffset - 32)) },

        // Section table entries lying about where sections are.
        HostileCase("section offset past the table", "outside the data area") { $0.setOffset(.keyData, UInt64($0.tableOffset + 8)) },
        HostileCase("section length past the table", "outside the data area") { e in
            e.setLength(.labelData, UInt64(e.tableOffset - e.start(.labelData) + 1))
        },
        HostileCase("section length near 2^64", "outside the data area") { $0.setLength(.valueData, .max - 7) },
        HostileCase("section offset near 2^64", "outside the data area") { $0.setOffset(.valueData, .max - 7) },
        HostileCase("section inside the header", "outside the data area") { $0.setOffset(.categories, 8) },
        HostileCase("sections overlap", "overlap") { e in e.setOffset(.valueCategories, UInt64(e.start(.valueData) + 1)) },
        HostileCase("zero-length section inside another", "overlap") { e in
            e.setLength(.valueCategories, 0)
            e.setOffset(.valueCategories, UInt64(e.start(.keyData) + 1))
        },
        HostileCase("a kind twice", "appears twice") { e in e.set32(e.entry(.valueData), Format.Section.keyData.rawValue) },
        HostileCase("a kind missing", "'label data' is missing") { e in e.set32(e.entry(.labelData), 99) },

        // Section sizes lying about counts.
        HostileCase("one more block than the index holds", "block index is") { e in e.setEntryCount(UInt64(e.entryCount + e.blockSize)) },
        HostileCase("block descriptors one short", "block descriptors are") { e in e.setLength(.blockDescriptors, UInt64(e.length(.blockDescriptors) - 32)) },
        HostileCase("key data without its padding", "shorter than its padding") { $0.setLength(.keyData, 7) },
        HostileCase("value data without its padding", "shorter than its padding") { $0.setLength(.valueData, 0) },
        HostileCase("entries but no values", "without any label value") { $0.setLength(.valueCategories, 0) },
        HostileCase("chunk table one entry short", "label chunk table is") { e in e.setLength(.labelChunks, UInt64(e.length(.labelChunks) - 16)) },

        // Categories.
        HostileCase("no categories", "count outside 1...256") { e in e.set32(e.start(.categories), 0) },
        HostileCase("257 categories", "count outside 1...256") { e in e.set32(e.start(.categories), 257) },
        HostileCase("category name runs past the section", "malformed") { e in e.set8(e.start(.categories) + 5, 200) },
        HostileCase("category action 2", "malformed") { e in e.set8(e.start(.categories) + 4, 2) },
        HostileCase("category name with a capital", "invalid or repeated name") { e in e.set8(e.start(.categories) + 6, UInt8(ascii: "I")) },
        HostileCase("category name twice", "invalid or repeated name") { e in
            // "spam" (code 2) renamed "taxi" (code 3).
            let s = e.start(.categories) + 4 + (2 + 8) + (2 + 5) + 2
            for (i, c) in "taxi".utf8.enumerated() { e.set8(s + i, c) }
        },
        HostileCase("category bytes after the last record", "trailing bytes") { e in e.set32(e.start(.categories), 3) },

        // Block index: must ascend strictly from 1 and stay ≤ 999,999,999,999,999.
        HostileCase("first key 0", "first key 0") { e in e.set64(e.start(.blockKeys), 0) },
        HostileCase("block keys swapped", "not ascending") { e in
            let a = e.u64(e.start(.blockKeys) + 8), b = e.u64(e.start(.blockKeys) + 16)
            e.set64(e.start(.blockKeys) + 8, b)
            e.set64(e.start(.blockKeys) + 16, a)
        },
        HostileCase("two equal block keys", "not ascending") { e in e.set64(e.start(.blockKeys) + 16, e.u64(e.start(.blockKeys) + 8)) },
        HostileCase("block key above the largest number", "out of range") { e in
            e.set64(e.start(.blockKeys) + (e.blockCount - 1) * 8, PhoneNumber.maximum + 1)
        },

        // Block descriptors.
        HostileCase("key width 58", "key width 58") { e in e.set8(e.descriptor(2) + 28, 58) },
        HostileCase("fraction 17", "fraction 17") { e in e.set8(e.descriptor(2) + 29, 17) },
        HostileCase("key offset past the key data", "key data at") { e in
            e.set8(e.descriptor(2) + 28, 9)
            e.set32(e.descriptor(2) + 16, .max)
        },
        HostileCase("key data bound off by one", "key data at") { e in
            // The last residual's 8-byte load would end one byte past the section.
            let d = e.descriptor(e.blockCount - 1), n = e.entryCount - (e.blockCount - 1) * e.blockSize
            let width = Int(e.u8(d + 28)) == 0 ? 8 : Int(e.u8(d + 28))
            e.set8(d + 28, UInt8(width))
            e.set32(d + 16, UInt32(e.length(.keyData) - 8 - ((n - 1) * width) / 8 + 1))
        },
        HostileCase("value mode 3", "value mode 3") { e in e.set8(e.descriptor(2) + 30, 3) },
        HostileCase("value width 33", "width 33") { e in e.set8(e.descriptor(2) + 31, 33) },
        HostileCase("frame-of-reference data past the section", "value data at") { e in
            let b = e.blocks(mode: .frameOfReference)[0]
            e.set32(e.descriptor(b) + 20, UInt32(e.length(.valueData) - 7))
        },
        HostileCase("palette size 0", "palette size invalid") { e in e.set16(e.start(.valueData) + Int(e.u32(e.descriptor(1) + 20)), 0) },
        HostileCase("palette size 1", "palette size invalid") { e in e.set16(e.start(.valueData) + Int(e.u32(e.descriptor(1) + 20)), 1) },
        HostileCase("palette larger than the block", "palette size invalid") { e in e.set16(e.start(.valueData) + Int(e.u32(e.descriptor(1) + 20)), 9) },
        HostileCase("palette size 65535", "palette size invalid") { e in e.set16(e.start(.valueData) + Int(e.u32(e.descriptor(1) + 20)), .max) },
        HostileCase("palette size past the section", "palette size invalid") { e in e.set32(e.descriptor(1) + 20, UInt32(e.length(.valueData) - 1)) },
        HostileCase("palette indexes past the section", "palette at") { e in
            // P = 2 readable and the palette fits (the largest such offset), but its index bits
            // would end past the section.
            let o = e.length(.valueData) - 10 - Int(e.u8(e.descriptor(1) + 31)) / 8
            e.set16(e.start(.valueData) + o, 2)
            e.set32(e.descriptor(1) + 20, UInt32(o))
        },

        // Label chunk table.
        HostileCase("chunk offset past the label data", "inconsistent") { e in e.set32(e.chunk(1), UInt32(e.length(.labelData))) },
        HostileCase("chunk stored length past the label data", "inconsistent") { e in e.set32(e.chunk(1) + 4, UInt32(e.length(.labelData))) },
        HostileCase("chunk offset near 2^32", "inconsistent") { e in e.set32(e.chunk(1), .max) },
        HostileCase("raw chunk of 64 MiB + 1", "inconsistent") { e in
            let c = e.chunks(compressed: true)[0]
            e.set32(e.chunk(c) + 8, UInt32(Format.maxRawChunkBytes + 1))
        },
        HostileCase("raw chunk smaller than its label offsets", "inconsistent") { e in e.set32(e.chunk(e.chunks(compressed: true)[0]) + 8, 15) },
        HostileCase("chunk flags 1", "inconsistent") { e in e.set32(e.chunk(1) + 12, 1) },
        HostileCase("uncompressed chunk with stored ≠ raw", "inconsistent") { e in e.set32(e.chunk(e.chunks(compressed: true)[0]) + 12, 0) },
        HostileCase("compressed chunk of 0 bytes", "inconsistent") { e in e.set32(e.chunk(e.chunks(compressed: true)[0]) + 4, 0) },
        // Decompression bombs: LZ4 cannot expand more than 255×.
        HostileCase("compressed chunk claiming 255× + 1", "cannot decode to") { e in
            let c = e.chunks(compressed: true)[0]
            e.set32(e.chunk(c) + 8, e.u32(e.chunk(c) + 4) * 255 + 1)
        },
        HostileCase("compressed chunks sharing their bytes", "chunks overlap") { e in
            // Each one alone is plausible; together they would decode to far more than the file.
            let all = e.length(.labelData)
            for c in e.chunks(compressed: true) {
                e.set32(e.chunk(c), 0)
                e.set32(e.chunk(c) + 4, UInt32(all))
                e.set32(e.chunk(c) + 8, UInt32(all * 255))
            }
        },

        // The label dictionary.
        HostileCase("more dictionary chunks than chunks", "dictionary chunks but only") { e in e.set32(52, UInt32(e.chunkCount + 1)) },
        HostileCase("a compressed dictionary chunk", "not raw and contiguous") { e in e.set32(52, UInt32(e.chunks(compressed: true)[0] + 1)) },
        HostileCase("dictionary not from offset 0", "not raw and contiguous") { e in e.set32(e.chunk(0), 1) },
        HostileCase("dictionary over 64 KiB", "exceeds 64 KiB") { e in
            e.set32(e.chunk(0) + 4, 70_000)
            e.set32(e.chunk(0) + 8, 70_000)
        },
    ]

    @Test(arguments: openCases)
    func refusedAtOpen(_ hostile: HostileCase) throws {
        var e = ImageEditor(HostileSample.image)
        hostile.edit(&e)
        e.seal()
        let dir = TempDir()
        let path = dir.path("hostile.cid")
        Self.write(e.bytes, path)
        for verify in [false, true] {
            do {
                _ = try Database(path: path, verify: verify)
                Issue.record("\(hostile.name): accepted (verify: \(verify))")
            } catch {
                #expect(error.code == .corrupt)
                #expect(error.message.contains(path) && error.message.contains(hostile.expect),
                        "\(hostile.name): message was: \(error.message)")
            }
        }
    }

    // MARK: Opened, then refused at access and at verify

    static let accessCases: [HostileCase] = [
        HostileCase("palette index beyond the palette", "palette index 3 out of range") { e in
            // P = 3 (2-bit indexes); every index set to 3.
            let o = e.start(.valueData) + Int(e.u32(e.descriptor(1) + 20))
            e.set16(o, 3)
            let indexes = o + 2 + (3 * Int(e.u8(e.descriptor(1) + 31)) + 7) / 8
            e.set8(indexes, 0xFF)
            e.set8(indexes + 1, 0xFF)
        },
        HostileCase("value id beyond the values", "beyond the") { e in e.set32(e.descriptor(0) + 24, UInt32(e.length(.valueCategories))) },
        HostileCase("value id that wraps around u32", "beyond the") { e in e.set32(e.descriptor(0) + 24, .max) },
        HostileCase("unknown category code", "unknown category code 200") { e in e.set8(e.start(.valueCategories), 200) },
        HostileCase("compressed chunk that does not decode", "does not decompress") { e in
            for c in e.chunks(compressed: true) {
                let s = e.start(.labelData) + Int(e.u32(e.chunk(c)))
                for i in 0..<Int(e.u32(e.chunk(c) + 4)) { e.set8(s + i, 0xF0) }
            }
        },
        HostileCase("compressed chunk one byte short of its raw size", "does not decompress") { e in
            for c in e.chunks(compressed: true) { e.set32(e.chunk(c) + 8, e.u32(e.chunk(c) + 8) + 1) }
        },
        HostileCase("label end offset past its chunk", "outside") { e in e.set32(e.start(.labelData), 0xFFFF) },
        HostileCase("label offsets descending", "outside") { e in e.set32(e.start(.labelData) + 4, 0) },
        HostileCase("keys not ascending inside a block", "out of order") { e in
            // Block 2's slope set to 0 and its residuals zeroed: all its keys are equal.
            let d = e.descriptor(2)
            e.set64(d + 8, 0)
            e.set8(d + 28, 0)
        },
        HostileCase("a block's first key differs from the index", "does not match the block index") { e in
            e.set64(e.descriptor(3), e.u64(e.descriptor(3)) &+ 1)
        },
        HostileCase("keys above the largest number", "out of order") { e in
            let d = e.descriptor(e.blockCount - 1)
            e.set64(d, PhoneNumber.maximum - 1)
            e.set64(e.start(.blockKeys) + (e.blockCount - 1) * 8, PhoneNumber.maximum - 1)
        },
    ]

    @Test(arguments: accessCases)
    func refusedAtAccess(_ hostile: HostileCase) throws {
        var e = ImageEditor(HostileSample.image)
        hostile.edit(&e)
        e.seal()
        let dir = TempDir()
        let path = dir.path("hostile.cid")
        Self.write(e.bytes, path)
        let db = try Database(path: path)

        // Lookups of every number (and neighbours) terminate; answers are numbers asked for.
        var lookupErrors: [CallerIDError] = []
        for n in HostileSample.numbers.flatMap({ [$0 - 1, $0, $0 + 1] }) {
            do {
                if let found = try db.lookup(n) { #expect(found.number == n) }
            } catch {
                lookupErrors.append(error)
            }
        }
        // Enumeration stops with the error, strictly ascending before it.
        var cursor = db.cursor()
        var previous: UInt64 = 0, steps = 0
        var enumerationError: CallerIDError?
        do {
            while let entry = try cursor.next() {
                #expect(entry.number > previous)
                previous = entry.number
                steps += 1
                if steps > db.count { Issue.record("enumeration does not end"); break }
            }
        } catch {
            enumerationError = error
        }
        let errors = lookupErrors + (enumerationError.map { [$0] } ?? [])
        #expect(errors.contains { $0.message.contains(hostile.expect) }, "\(hostile.name): errors were \(errors.map(\.message).prefix(3))")
        #expect(errors.allSatisfy { $0.code == .corrupt && $0.message.contains(path) })

        #expect { try db.verify() } throws: { ($0 as? CallerIDError)?.code == .corrupt }
        #expect { try Database(path: path, verify: true) } throws: { ($0 as? CallerIDError)?.code == .corrupt }
    }

    // MARK: Accepted: what the format allows

    @Test func unknownSectionKindsAreSkippedButChecked() throws {
        let dir = TempDir()
        let path = dir.path("extra.cid")
        var e = ImageEditor(HostileSample.image)
        e.appendSection(kind: 42, Array("a section from format 1.1".utf8))
        e.seal()
        Self.write(e.bytes, path)
        #expect(try Database(path: path, verify: true).count == HostileSample.count)

        // Its checksum is verified like any other.
        var damaged = e
        damaged.set8(damaged.tableOffset - 8, UInt8(ascii: "X"))
        damaged.set64(56, Codec.xxh3(Array(damaged.bytes[0..<56])))
        Self.write(damaged.bytes, path)
        #expect(try Database(path: path).count == HostileSample.count)
        #expect { try Database(path: path, verify: true) } throws: {
            ($0 as? CallerIDError)?.message.contains("kind 42") == true
        }

        // An unknown section may not overlap a known one.
        var overlapping = e
        overlapping.set64(overlapping.tableOffset + 8 * 32 + 8, UInt64(overlapping.start(.labelData)))
        overlapping.seal()
        Self.write(overlapping.bytes, path)
        #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.message.contains("overlap") == true }
    }

    @Test func minorVersionAndReservedFieldsAreIgnored() throws {
        let dir = TempDir()
        var e = ImageEditor(HostileSample.image)
        e.set16(10, 7)
        e.set32(e.entry(.keyData) + 4, 0xDEAD_BEEF)
        e.seal()
        Self.write(e.bytes, dir.path("m.cid"))
        #expect(try Database(path: dir.path("m.cid"), verify: true).info.formatVersion == "1.7")
    }

    /// The 255× rule refuses no real file: a 65,535-byte label of one letter compresses ~245×.
    @Test func highlyCompressibleLabelsStillOpen() throws {
        let dir = TempDir()
        var options = BuildOptions()
        options.labelsPerChunk = 1
        options.labelDictionaryBytes = 0
        var b = DatabaseBuilder(options: options)
        try b.add(1, label: String(repeating: "A", count: 65_535))
        try b.add(2, label: String(repeating: "B", count: 65_535))
        _ = try b.write(to: dir.path("z.cid"))
        let db = try Database(path: dir.path("z.cid"), verify: true)
        #expect(db.info.compressedLabelChunks == 2)
        #expect(db.info.labelBytesRaw > 200 * db.labelData.count)
        #expect(try db.lookup(2)?.label.count == 65_535)
    }

    /// Every header, table and section byte changed (one of three values) and then *sealed*: the checksums no longer
    /// catch anything, so the structural checks and the access checks must. Open and verify
    /// may accept (a changed label byte can make another valid file); whatever they accept
    /// must read without crashing, and a file that passes verify must be self-consistent.
    @Test func everySealedByteChangeIsRefusedOrConsistent() throws {
        let original = ImageEditor(HostileSample.image)
        let dir = TempDir()
        let path = dir.path("sealed.cid")
        // Checksum fields are rewritten by seal(): skip them.
        var skip = Set(56..<64).union((original.footer + 8)..<(original.footer + 16))
        for i in 0..<original.sectionCount { skip.formUnion((original.tableOffset + i * 32 + 24)..<(original.tableOffset + i * 32 + 32)) }
        var refusedAtOpen = 0, refusedAtVerify = 0, accepted = 0
        for offset in 0..<original.bytes.count where !skip.contains(offset) {
            // One change per byte, rotating (CorruptionTests does three per byte, unsealed).
            for change in [[UInt8(0x01), 0x80, 0xFF][offset % 3]] {
                var e = original
                e.bytes[offset] ^= change
                e.seal()
                Self.write(e.bytes, path)
                guard let db = try? Database(path: path) else { refusedAtOpen += 1; continue }
                for n in HostileSample.numbers.prefix(24) { _ = try? db.lookup(n) }
                var entries: [Entry] = []
                var cursor = db.cursor()
                while let entry = try? cursor.next() {
                    if let last = entries.last { #expect(entry.number > last.number) }
                    entries.append(entry)
                    if entries.count > db.count { Issue.record("byte \(offset): enumeration does not end"); break }
                }
                guard (try? db.verify()) != nil else { refusedAtVerify += 1; continue }
                accepted += 1
                #expect(entries.count == db.count, "byte \(offset) ^ \(change)")
                for entry in entries.prefix(24) { #expect(try db.lookup(entry.number) == entry, "byte \(offset) ^ \(change)") }
            }
        }
        print("sealed byte changes of a \(original.bytes.count)-byte file: \(refusedAtOpen + refusedAtVerify + accepted) tried, refused at open \(refusedAtOpen), at verify \(refusedAtVerify), accepted as another valid file \(accepted)")
        #expect(refusedAtOpen > 0 && refusedAtVerify > 0 && accepted > 0)
    }
}
