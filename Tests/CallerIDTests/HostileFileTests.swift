import Foundation
import Testing
@testable import CallerID

// Crafted hostile database files (format 2.0). CorruptionTests damages bytes at random; most of
// that damage is caught by a checksum before anything else looks at it. Here every edit is
// *sealed*: the section, table and header checksums are recomputed afterwards, as an attacker
// would, so each file reaches the structural check it targets. That check must refuse it with
// a message naming the damaged part — at open, or, for damage inside a block record or a
// label, when that part is read and at verify. Nothing may crash.

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

    // Header (docs/FORMAT.md): magic 0, major 8, minor 10, header size 12, file size 16,
    // entries 24, blocks 32, values 36, hot values 40, sync shift 44, summary shift 45,
    // block size 46, table offset 48, XXH3 of bytes 0-55 at 56.
    var footer: Int { bytes.count - Format.footerSize }
    var entryCount: Int { Int(u64(24)) }
    var blockCount: Int { Int(u32(32)) }
    var valueCount: Int { Int(u32(36)) }
    var hotCount: Int { Int(u32(40)) }
    var syncShift: Int { Int(u8(44)) }
    var summaryShift: Int { Int(u8(45)) }
    var blockSize: Int { Int(u16(46)) }
    var tableOffset: Int { Int(u64(48)) }
    var sectionCount: Int { (footer - tableOffset) / Format.sectionEntrySize }

    /// Offset of the (first) section table entry of `kind`.
    func entry(_ kind: Format.Section) -> Int {
        (0..<sectionCount).map { tableOffset + $0 * Format.sectionEntrySize }.first { u32($0) == kind.rawValue }!
    }
    func start(_ kind: Format.Section) -> Int { Int(u64(entry(kind) + 8)) }
    func length(_ kind: Format.Section) -> Int { Int(u64(entry(kind) + 16)) }
    func section(_ kind: Format.Section) -> [UInt8] { Array(bytes[start(kind)..<(start(kind) + length(kind))]) }
    mutating func setOffset(_ kind: Format.Section, _ v: UInt64) { set64(entry(kind) + 8, v) }
    mutating func setLength(_ kind: Format.Section, _ v: UInt64) { set64(entry(kind) + 16, v) }

    /// Sets the entry count in the header and the footer.
    mutating func setEntryCount(_ n: UInt64) {
        set64(24, n)
        set64(footer + 16, n)
    }

    // Block index and block records.
    func indexEntry(_ b: Int) -> Int { start(.blockIndex) + Format.indexEntrySize * b }
    func firstKey(_ b: Int) -> UInt64 { u64(indexEntry(b)) }
    /// Absolute offsets of block `b`'s record and of its end.
    func record(_ b: Int) -> Int { start(.blocks) + Int(u32(indexEntry(b) + 8)) }
    func recordEnd(_ b: Int) -> Int { start(.blocks) + Int(u32(indexEntry(b) + 20)) }
    func n(_ b: Int) -> Int { Int(u16(record(b))) }
    func l(_ b: Int) -> Int { Int(u8(record(b) + 2)) }
    func codec(_ b: Int) -> UInt8 { u8(record(b) + 3) }
    func upperWords(_ b: Int) -> Int { Int(u16(record(b) + 4)) }
    func lowerBytes(_ b: Int) -> Int { Int(u16(record(b) + 6)) }
    func syncCount(_ b: Int) -> Int { (n(b) - 1) >> syncShift }
    /// u64 words of the gap-1 bitmap (key codec 2 only).
    func bitmapWords(_ b: Int) -> Int { codec(b) == Format.keyCodecRunBitmap ? (n(b) + 62) / 64 : 0 }
    func bitmapStart(_ b: Int) -> Int { record(b) + Format.recordHeaderSize + 2 * syncCount(b) }
    func upperStart(_ b: Int) -> Int { bitmapStart(b) + 8 * bitmapWords(b) }
    func lowerStart(_ b: Int) -> Int { upperStart(b) + 8 * upperWords(b) }
    func valueStart(_ b: Int) -> Int { lowerStart(b) + lowerBytes(b) }
    func blocks(codec: UInt8) -> [Int] { (0..<blockCount).filter { self.codec($0) == codec } }
    /// Elias–Fano blocks with lower bits and at least one sync point.
    var richBlocks: [Int] { blocks(codec: Format.keyCodecEliasFano).filter { l($0) > 0 && syncCount($0) > 0 } }

    /// Makes Elias–Fano block `b`'s keys all equal to its first key (every element in bucket 0,
    /// lower bits 0): keys out of order, sizes unchanged.
    mutating func makeKeysEqual(block b: Int) {
        for w in 0..<upperWords(b) { set64(upperStart(b) + 8 * w, w == 0 ? (1 << UInt64(n(b) - 1)) - 1 : 0) }
        for i in 0..<lowerBytes(b) { set8(lowerStart(b) + i, 0) }
    }

    /// Code length counts (u32 × 27).
    func codeCount(_ len: Int) -> Int { Int(u32(start(.codeLengths) + 4 * len)) }
    mutating func setCodeCount(_ len: Int, _ v: UInt32) { set32(start(.codeLengths) + 4 * len, v) }

    /// Recomputes every checksum: the sections the table describes (when they lie inside the
    /// file), the table's (footer) and the header's. Fields may hold anything here.
    mutating func seal() {
        let t = u64(48)
        if bytes.count >= Format.headerSize + Format.footerSize, t >= UInt64(Format.headerSize), t <= UInt64(footer),
           (UInt64(footer) - t) % UInt64(Format.sectionEntrySize) == 0 {
            let table = Int(t)
            for i in 0..<sectionCount {
                let e = table + i * Format.sectionEntrySize
                let offset = u64(e + 8), length = u64(e + 16)
                if offset <= UInt64(bytes.count), length <= UInt64(bytes.count) - offset {
                    set64(e + 24, Codec.xxh3(Array(bytes[Int(offset)..<Int(offset + length)])))
                }
            }
            set64(footer + 8, Codec.xxh3(Array(bytes[table..<footer])))
        }
        set64(56, Codec.xxh3(Array(bytes[0..<56])))
    }

    /// The sections in table order.
    var sections: [(kind: UInt32, bytes: [UInt8])] {
        (0..<sectionCount).map { i in
            let e = tableOffset + i * Format.sectionEntrySize
            let o = Int(u64(e + 8)), len = Int(u64(e + 16))
            return (u32(e), Array(bytes[o..<(o + len)]))
        }
    }

    /// Lays the file out again with `sections` (8-aligned, in this order), keeping the header's
    /// other fields and the entry count; sealed.
    mutating func relayout(_ sections: [(kind: UInt32, bytes: [UInt8])]) {
        var file = Array(bytes[0..<Format.headerSize])
        var table: [UInt8] = []
        for (kind, data) in sections {
            file.padZero(toMultipleOf: Format.sectionAlignment)
            table.appendLE(kind)
            table.appendLE(UInt32(0))
            table.appendLE(UInt64(file.count))
            table.appendLE(UInt64(data.count))
            table.appendLE(UInt64(0))
            file += data
        }
        file.padZero(toMultipleOf: 8)
        let tableAt = file.count
        file += table
        let size = file.count + Format.footerSize
        file.appendLE(UInt64(size))
        file.appendLE(UInt64(0))
        file.appendLE(UInt64(entryCount))
        file += Format.footerMagic
        bytes = file
        set64(16, UInt64(size))
        set64(48, UInt64(tableAt))
        seal()
    }

    mutating func replaceSection(_ kind: Format.Section, _ data: some Collection<UInt8>) {
        relayout(sections.map { $0.kind == kind.rawValue ? ($0.kind, Array(data)) : $0 })
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
    static let taxi = try! Category("taxi", action: .identify)
    static let spam = try! Category("spam", action: .block)

    /// A small file (blocks of 4 entries, a sync point every 2) with every structure a hostile
    /// edit can target: a run block (consecutive numbers), Elias–Fano blocks with lower bits,
    /// blocks near the largest number, a summary of 2 keys, hot labels and 3 groups of cold
    /// labels, 4 categories. See `sampleHasEveryStructure`.
    static let entries: [Entry] = {
        var out: [Entry] = []
        for i in 0..<4 {  // block 0: consecutive numbers
            out.append(Entry(number: 79_000_000_000 + UInt64(i), label: i == 2 ? "Taxi" : "Hot", category: i == 2 ? taxi : .identify))
        }
        var labels: [(String, Category)] = []
        for k in 0..<12 {
            let c = [Category.identify, .block, spam, taxi][k % 4]
            labels += Array(repeating: ("Mid label \(k)", c), count: 3)
        }
        for k in 0..<20 { labels.append(("Cold label number \(k) of the city directory", .identify)) }
        labels += Array(repeating: ("Hot", .identify), count: 8) + Array(repeating: ("Taxi", taxi), count: 2)
        for (i, (label, category)) in labels.enumerated() {
            out.append(Entry(number: 79_000_001_000 + UInt64(i) * 7 + UInt64(i % 3), label: label, category: category))
        }
        // The last block holds one number, the one before it two near the largest number.
        for (k, n) in [PhoneNumber.maximum - 5, PhoneNumber.maximum - 3, PhoneNumber.maximum].enumerated() {
            out.append(Entry(number: n, label: "Last \(k)", category: .block))
        }
        return out
    }()

    static let options: BuildOptions = {
        var o = BuildOptions()
        o.blockSize = 4
        o.syncShift = 1
        o.hotLabelBytes = 8
        o.labelCoding = .symbols  // the symbol-coded sections; LZ4LabelTests holds the LZ4 ones
        return o
    }()

    static let image: [UInt8] = {
        var b = DatabaseBuilder(options: options)
        for e in entries { try! b.add(e.number, label: e.label, category: e.category) }
        return try! b.encode().0
    }()

    static var numbers: [UInt64] { entries.map(\.number) }
}

/// What every access of a (possibly damaged) database gave.
struct AccessReport {
    var errors: [CallerIDError] = []
    var verifyError: CallerIDError?
    /// The full cursor's entries, when it ran to the end.
    var entries: [Entry]?
}

enum Access {
    /// Writes a new file at `path` (a new inode: a database still open on the old one keeps it).
    static func write(_ bytes: [UInt8], _ path: String) {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        precondition(fd >= 0, "cannot create \(path)")
        let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        precondition(written == bytes.count)
        close(fd)
    }

    /// Every access the reader offers: lookups of `numbers`, their neighbours and every first
    /// key of the block index, a full cursor, a batch cursor, verify. Records an issue for any
    /// inconsistent answer (a lookup answering another number, a scan not strictly ascending
    /// or not ending, batch and cursor disagreeing, verify accepting a file whose reads
    /// disagree) and for any error other than `.corrupt` naming the file.
    static func exercise(_ db: Database, numbers: [UInt64], image: ImageEditor, path: String, _ what: String) -> AccessReport {
        var report = AccessReport()
        var asked = numbers.flatMap { [$0 &- 1, $0, $0 &+ 1] }
        let indexStart = image.start(.blockIndex), indexLength = image.length(.blockIndex)
        for b in 0..<image.blockCount where indexStart + 12 * b + 8 <= indexStart + indexLength { asked.append(image.firstKey(b)) }
        for n in asked {
            do {
                if let found = try db.lookup(n) { #expect(found.number == n, "\(what): lookup(\(n))") }
                _ = try db.contains(n)
            } catch {
                report.errors.append(error)
            }
        }
        // The most entries the blocks can hold: a scan that yields more does not end.
        let bound = db.blockCount * db.blockSize
        var cursor = db.cursor()
        var entries: [Entry] = []
        do {
            while let e = try cursor.next() {
                if let last = entries.last { #expect(e.number > last.number, "\(what): cursor order") }
                entries.append(e)
                if entries.count > bound { Issue.record("\(what): the cursor does not end"); break }
            }
            report.entries = entries
        } catch {
            report.errors.append(error)
        }
        var batch = EntryBatch(capacity: 5)
        var batchCursor = db.cursor()
        var batched: [Entry] = []
        do {
            while try batchCursor.nextBatch(&batch) > 0 {
                for i in 0..<batch.count {
                    let e = batch[i].entry
                    if let last = batched.last { #expect(e.number > last.number, "\(what): batch order") }
                    batched.append(e)
                }
                if batched.count > bound { Issue.record("\(what): the batch cursor does not end"); break }
            }
            if let all = report.entries { #expect(batched == all, "\(what): batch and cursor disagree") }
        } catch {
            report.errors.append(error)
        }
        do {
            try db.verify()
            // Accepted: everything must read back the same way.
            #expect(report.errors.isEmpty, "\(what): verify accepted a file whose reads failed: \(report.errors.prefix(2))")
            #expect(report.entries?.count == db.count, "\(what): verify accepted a file whose scan disagrees with its count")
            for e in (report.entries ?? []).prefix(40) { #expect(try db.lookup(e.number) == e, "\(what)") }
        } catch {
            report.verifyError = error
        }
        // Verify checks large files in two parts at once (the blocks from a split on in a
        // second thread): every split must give the one-thread answer, the same first damage.
        let last = db.blockCount - 1
        for split in Set([1, 2, last / 2, last - 1, last]) where split >= 1 && split <= last {
            var message: String? = nil
            do { try db.verifyAll(split: split) } catch { message = error.message }
            #expect(message == report.verifyError?.message, "\(what): verify split at block \(split)")
        }
        for error in report.errors + (report.verifyError.map { [$0] } ?? []) {
            #expect(error.code == .corrupt && error.message.contains(path), "\(what): \(error.code) \(error.message)")
        }
        return report
    }
}

@Suite struct HostileFileTests {
    @Test func sampleHasEveryStructure() throws {
        let e = ImageEditor(HostileSample.image)
        #expect(e.blocks(codec: Format.keyCodecRun) == [0])
        #expect(e.richBlocks.count >= 10)
        #expect(e.n(e.blockCount - 1) == 1 && e.firstKey(e.blockCount - 1) == PhoneNumber.maximum)
        #expect(e.n(e.blockCount - 2) == 4 && e.richBlocks.contains(e.blockCount - 2))
        #expect(e.blockCount > 16, "the summary holds 2 keys")
        #expect(e.length(.summary) == 16)
        #expect(e.hotCount >= 2 && e.valueCount - e.hotCount > 16, "hot labels and 3 cold groups")
        #expect(e.entryCount == HostileSample.entries.count)
        let dir = TempDir()
        Access.write(e.bytes, dir.path("s.cid"))
        let db = try Database(path: dir.path("s.cid"), verify: true)
        #expect(db.categories.map(\.name) == ["identify", "block", "spam", "taxi"])
        for entry in HostileSample.entries { #expect(try db.lookup(entry.number) == entry) }
        let report = Access.exercise(db, numbers: HostileSample.numbers, image: e, path: dir.path("s.cid"), "sample")
        #expect(report.errors.isEmpty && report.verifyError == nil)
        #expect(report.entries == HostileSample.entries)
    }

    // MARK: Refused at open

    static let openCases: [HostileCase] = [
        // Header fields behind a valid checksum.
        HostileCase("header size 65", "header size field") { $0.set32(12, 65) },
        HostileCase("file size field one more", "the header says") { $0.set64(16, $0.u64(16) + 1) },
        HostileCase("block size 0", "block size 0 outside") { $0.set16(46, 0) },
        HostileCase("block size 1025", "block size 1025 outside") { $0.set16(46, 1025) },
        HostileCase("block size too small for the entries", "impossible") { $0.set16(46, 1) },
        HostileCase("sync shift 11", "sync shift 11") { $0.set8(44, 11) },
        HostileCase("summary shift 17", "summary shift 17") { $0.set8(45, 17) },
        HostileCase("summary shift 3", "section 'block summary' is") { $0.set8(45, 3) },
        HostileCase("entry count larger than the blocks hold", "impossible") { $0.setEntryCount(1 << 40) },
        HostileCase("block count larger than the file allows", "impossible") { $0.set32(32, .max) },
        HostileCase("block count 0 with entries", "impossible") { $0.set32(32, 0) },
        HostileCase("one block more than the index holds", "section 'block index' is") { $0.set32(32, UInt32($0.blockCount + 1)) },
        HostileCase("more values than entries", "values (") { $0.set32(36, UInt32($0.entryCount + 1)) },
        HostileCase("more hot values than values", "values (") { $0.set32(40, UInt32($0.valueCount + 1)) },
        HostileCase("one value more than the categories hold", "section 'value categories' is") { $0.set32(36, UInt32($0.valueCount + 1)) },
        HostileCase("one hot value more", "section 'hot label offsets' is") { $0.set32(40, UInt32($0.hotCount + 1)) },
        HostileCase("footer entry count differs", "footer disagrees") { $0.set64($0.footer + 16, UInt64($0.entryCount + 1)) },
        HostileCase("footer file size differs", "footer disagrees") { $0.set64($0.footer, $0.u64($0.footer) - 1) },
        HostileCase("footer magic", "footer magic missing") { $0.set8($0.footer + 31, UInt8(ascii: "d")) },
        HostileCase("table offset not on an entry", "does not end at the footer") { $0.set64(48, UInt64($0.tableOffset + 1)) },
        HostileCase("table offset 0", "does not end at the footer") { $0.set64(48, 0) },
        HostileCase("table offset near 2^64", "does not end at the footer") { $0.set64(48, .max - 31) },
        HostileCase("table offset past the footer", "does not end at the footer") { $0.set64(48, UInt64($0.footer + 32)) },
        HostileCase("no sections", "section count 0") { $0.set64(48, UInt64($0.footer)) },
        HostileCase("65 sections", "section count 65") { e in
            e.relayout(e.sections + (0..<(65 - e.sectionCount)).map { (UInt32(100 + $0), [UInt8]()) })
        },

        // Section table entries lying about where sections are.
        HostileCase("reserved field of an entry", "outside the data area") { $0.set32($0.entry(.blocks) + 4, 1) },
        HostileCase("section offset past the table", "outside the data area") { $0.setOffset(.coldLabels, UInt64($0.tableOffset + 8)) },
        HostileCase("section length past the table", "outside the data area") { e in
            e.setLength(.coldLabels, UInt64(e.tableOffset - e.start(.coldLabels) + 1))
        },
        HostileCase("section length near 2^64", "outside the data area") { $0.setLength(.blocks, .max - 7) },
        HostileCase("section offset near 2^64", "outside the data area") { $0.setOffset(.blocks, .max - 7) },
        HostileCase("section inside the header", "outside the data area") { $0.setOffset(.categories, 8) },
        HostileCase("sections overlap", "overlap") { e in e.setOffset(.valueCategories, UInt64(e.start(.codeLengths) + 8)) },
        HostileCase("zero-length section inside another", "overlap") { e in
            e.setLength(.hotLabels, 0)
            e.setOffset(.hotLabels, UInt64(e.start(.blocks) + 1))
        },
        HostileCase("a kind twice", "appears twice") { e in e.set32(e.entry(.hotLabels), Format.Section.coldLabels.rawValue) },
        HostileCase("a kind missing", "'block records' is missing") { e in e.set32(e.entry(.blocks), 99) },
        HostileCase("kind 0", "'categories' is missing") { e in e.set32(e.entry(.categories), 0) },

        // Section sizes.
        HostileCase("summary one key short", "section 'block summary' is") { e in e.replaceSection(.summary, e.section(.summary).dropLast(8)) },
        HostileCase("block index one entry short", "section 'block index' is") { e in e.replaceSection(.blockIndex, e.section(.blockIndex).dropLast(12)) },
        HostileCase("block index without its sentinel byte", "section 'block index' is") { e in e.replaceSection(.blockIndex, e.section(.blockIndex).dropLast(1)) },
        HostileCase("value categories one short", "section 'value categories' is") { e in e.replaceSection(.valueCategories, e.section(.valueCategories).dropLast(1)) },
        HostileCase("hot offsets one short", "section 'hot label offsets' is") { e in e.replaceSection(.hotOffsets, e.section(.hotOffsets).dropLast(4)) },
        HostileCase("cold index one short", "section 'cold label index' is") { e in e.replaceSection(.coldIndex, e.section(.coldIndex).dropLast(4)) },
        HostileCase("code lengths one short", "section 'value code lengths' is") { e in e.replaceSection(.codeLengths, e.section(.codeLengths).dropLast(4)) },
        HostileCase("block records shorter than their padding", "block records do not end") { e in e.replaceSection(.blocks, Array(e.section(.blocks).prefix(7))) },
        HostileCase("block records padding not zero", "block records do not end") { e in e.set8(e.start(.blocks) + e.length(.blocks) - 1, 1) },
        HostileCase("block records one byte longer", "block records do not end") { e in
            // Room is there: the section is followed by alignment padding or the sections after it move.
            var s = e.sections
            let i = s.firstIndex { $0.kind == Format.Section.blocks.rawValue }!
            s[i].bytes.append(0)
            e.relayout(s)
        },
        HostileCase("index sentinel one byte short", "block records do not end") { e in
            e.set32(e.indexEntry(e.blockCount) + 8, e.u32(e.indexEntry(e.blockCount) + 8) - 1)
        },
        HostileCase("index sentinel past the records", "block records do not end") { e in e.set32(e.indexEntry(e.blockCount) + 8, .max) },
        HostileCase("first record not at 0", "block records do not end") { e in e.set32(e.indexEntry(0) + 8, 8) },
        HostileCase("hot offsets not from 0", "hot label offsets do not span") { e in e.set32(e.start(.hotOffsets), 1) },
        HostileCase("hot offsets end short", "hot label offsets do not span") { e in
            e.set32(e.start(.hotOffsets) + 4 * e.hotCount, UInt32(e.length(.hotLabels) - 1))
        },
        HostileCase("hot offsets end past the labels", "hot label offsets do not span") { e in e.set32(e.start(.hotOffsets) + 4 * e.hotCount, .max) },
        HostileCase("cold index not from 0", "cold label index does not span") { e in e.set32(e.start(.coldIndex), 1) },
        HostileCase("cold index end short", "cold label index does not span") { e in
            e.set32(e.start(.coldIndex) + e.length(.coldIndex) - 4, UInt32(e.length(.coldLabels) - 1))
        },

        // The value code.
        HostileCase("code lengths over-full (Kraft sum > 1)", "not a prefix code") { e in e.setCodeCount(1, 3) },
        HostileCase("a code of length 0", "not a prefix code") { e in e.setCodeCount(0, 1) },
        HostileCase("codes for one value more (ids beyond the values)", "not a prefix code") { e in
            e.setCodeCount(26, UInt32(e.codeCount(26) + 1))
        },
        HostileCase("codes for one value fewer", "not a prefix code") { e in
            let len = (1...26).last { e.codeCount($0) > 0 }!
            e.setCodeCount(len, UInt32(e.codeCount(len) - 1))
        },
        HostileCase("code count 2^32 - 1", "not a prefix code") { e in e.setCodeCount(26, .max) },

        // The label symbol table: whatever the codec, trailing bytes and no bytes are refused.
        HostileCase("symbol table with a trailing byte", "symbol table is malformed") { e in e.replaceSection(.symbolTable, e.section(.symbolTable) + [0]) },
        HostileCase("symbol table empty", "symbol table is malformed") { e in e.replaceSection(.symbolTable, []) },
        HostileCase("symbol table missing its last byte", "symbol table is malformed") { e in
            e.replaceSection(.symbolTable, e.section(.symbolTable).dropLast())
        },

        // Categories.
        HostileCase("no categories", "count outside 1...256") { e in e.set32(e.start(.categories), 0) },
        HostileCase("257 categories", "count outside 1...256") { e in e.set32(e.start(.categories), 257) },
        HostileCase("category name runs past the section", "malformed") { e in e.set8(e.start(.categories) + 5, 200) },
        HostileCase("category action 2", "malformed") { e in e.set8(e.start(.categories) + 4, 2) },
        HostileCase("category name with a capital", "invalid or repeated name") { e in e.set8(e.start(.categories) + 6, UInt8(ascii: "I")) },
        HostileCase("category name twice", "invalid or repeated name") { e in
            // "taxi" (code 3) renamed "spam" (code 2; categories are in name order after the two built-ins).
            let s = e.start(.categories) + 4 + (2 + 8) + (2 + 5) + (2 + 4) + 2
            for (i, c) in "spam".utf8.enumerated() { e.set8(s + i, c) }
        },
        HostileCase("category bytes after the last record", "trailing bytes") { e in e.set32(e.start(.categories), 3) },
    ]

    @Test(arguments: openCases)
    func refusedAtOpen(_ hostile: HostileCase) throws {
        let (dir, path, _) = Self.written(hostile, of: ImageEditor(HostileSample.image))
        defer { withExtendedLifetime(dir) {} }
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
        // Block record headers.
        HostileCase("record n = 0", "record at") { e in e.set16(e.record(e.richBlocks[0]), 0) },
        HostileCase("record n > block size", "record at") { e in e.set16(e.record(e.richBlocks[0]), UInt16(e.blockSize + 1)) },
        HostileCase("record n = 65535", "record at") { e in e.set16(e.record(e.richBlocks[0]), .max) },
        HostileCase("run record n > block size", "record at") { e in e.set16(e.record(0), UInt16(e.blockSize + 1)) },
        HostileCase("lower width 57", "record at") { e in e.set8(e.record(e.richBlocks[0]) + 2, 57) },
        HostileCase("lower width 255", "record at") { e in e.set8(e.record(e.richBlocks[0]) + 2, 255) },
        HostileCase("key codec 2", "record at") { e in e.set8(e.record(e.richBlocks[0]) + 3, 2) },
        HostileCase("key codec 255", "record at") { e in e.set8(e.record(0) + 3, 255) },
        HostileCase("run record with lower bits", "record at") { e in e.set8(e.record(0) + 2, 1) },
        HostileCase("run record with upper words", "record at") { e in e.set16(e.record(0) + 4, 1) },
        HostileCase("upper words too few for n", "record at") { e in e.set16(e.record(e.richBlocks[0]) + 4, 0) },
        HostileCase("lower bytes too few for n × l", "record at") { e in e.set16(e.record(e.richBlocks[0]) + 6, 0) },
        HostileCase("upper words past the record", "record at") { e in
            let b = e.richBlocks[0]
            e.set16(e.record(b) + 4, UInt16((e.recordEnd(b) - e.upperStart(b)) / 8 + 1))
        },
        HostileCase("lower bytes past the record", "record at") { e in
            let b = e.richBlocks[0]
            e.set16(e.record(b) + 6, UInt16(e.recordEnd(b) - e.lowerStart(b) + 1))
        },
        HostileCase("lower bytes 65535", "record at") { e in e.set16(e.record(e.richBlocks[0]) + 6, .max) },
        // Sync points.
        HostileCase("sync offset past the value stream", "value code") { e in
            for b in e.richBlocks { e.set16(e.record(b) + 8, .max) }
        },
        HostileCase("sync offset one bit off", "value code") { e in
            for b in e.richBlocks { e.set16(e.record(b) + 8, e.u16(e.record(b) + 8) + 1) }
        },
        // Keys.
        HostileCase("upper bits with no ones", "keys out of order") { e in
            for b in e.richBlocks { for w in 0..<e.upperWords(b) { e.set64(e.upperStart(b) + 8 * w, 0) } }
        },
        HostileCase("upper bits with one more one", "has unused bits") { e in
            for b in e.richBlocks {
                let last = e.upperStart(b) + 8 * (e.upperWords(b) - 1)
                e.set64(last, e.u64(last) | 1 << 63)
            }
        },
        HostileCase("keys not ascending inside a block", "keys out of order") { e in
            // Every element in bucket 0 with lower bits 0: all keys equal the first.
            for b in e.richBlocks { e.makeKeysEqual(block: b) }
        },
        HostileCase("keys above the largest number", "beyond the largest number") { e in
            let b = e.blockCount - 2
            e.set64(e.indexEntry(b), e.firstKey(b) + 4)
        },
        HostileCase("a block of one number above the largest number", "beyond the largest number") { e in
            let b = e.blockCount - 1
            e.set64(e.indexEntry(b), PhoneNumber.maximum + 1)
        },
        HostileCase("run keys above the largest number", "beyond the largest number") { e in
            e.set64(e.indexEntry(0), PhoneNumber.maximum - 1)
            e.set64(e.start(.summary), PhoneNumber.maximum - 1)
        },
        // Block index and summary.
        HostileCase("first key 0", "block 0") { e in
            e.set64(e.indexEntry(0), 0)
            e.set64(e.start(.summary), 0)
        },
        HostileCase("block index keys swapped", "block index keys not ascending") { e in
            let a = e.firstKey(2), b = e.firstKey(3)
            e.set64(e.indexEntry(2), b)
            e.set64(e.indexEntry(3), a)
        },
        HostileCase("block index keys equal", "block index keys not ascending") { e in e.set64(e.indexEntry(3), e.firstKey(2)) },
        HostileCase("record offsets descending", "record at") { e in
            let a = e.u32(e.indexEntry(2) + 8), b = e.u32(e.indexEntry(3) + 8)
            e.set32(e.indexEntry(2) + 8, b)
            e.set32(e.indexEntry(3) + 8, a)
        },
        HostileCase("record offset past the records", "record at") { e in e.set32(e.indexEntry(2) + 8, .max) },
        HostileCase("record offset inside the padding", "record at") { e in e.set32(e.indexEntry(2) + 8, UInt32(e.length(.blocks) - 4)) },
        HostileCase("summary key off by one", "block summary disagrees") { e in e.set64(e.start(.summary) + 8, e.u64(e.start(.summary) + 8) + 1) },
        HostileCase("summary key 0", "block summary disagrees") { e in e.set64(e.start(.summary) + 8, 0) },
        HostileCase("summary key above everything", "block summary disagrees") { e in e.set64(e.start(.summary), .max) },
        HostileCase("one entry more than the blocks hold", "the header says") { e in e.setEntryCount(UInt64(e.entryCount + 1)) },
        // Value codes.
        HostileCase("value code the code does not define", "value code") { e in
            // An incomplete code (one code moved one level deeper) and value streams of all ones.
            let len = (1...25).last { e.codeCount($0) > 0 }!
            e.setCodeCount(len, UInt32(e.codeCount(len) - 1))
            e.setCodeCount(len + 1, UInt32(e.codeCount(len + 1) + 1))
            for b in 0..<e.blockCount { for i in e.valueStart(b)..<e.recordEnd(b) { e.set8(i, 0xFF) } }
        },
        HostileCase("value stream cut short", "value code") { e in
            // The last record loses its value bytes: the index says it ends where its keys end.
            let b = e.blockCount - 1
            let end = e.valueStart(b) - e.start(.blocks)
            let cut = e.recordEnd(b) - e.valueStart(b)
            var s = e.sections
            let i = s.firstIndex { $0.kind == Format.Section.blocks.rawValue }!
            s[i].bytes.removeSubrange(end..<(end + cut))
            let j = s.firstIndex { $0.kind == Format.Section.blockIndex.rawValue }!
            withUnsafeBytes(of: UInt32(end).littleEndian) { s[j].bytes.replaceSubrange((12 * e.blockCount + 8)..<(12 * e.blockCount + 12), with: $0) }
            e.relayout(s)
        },
        HostileCase("bytes after the last value code", "has unused bits") { e in
            let b = e.blockCount - 1
            let end = e.recordEnd(b) - e.start(.blocks)
            var s = e.sections
            let i = s.firstIndex { $0.kind == Format.Section.blocks.rawValue }!
            s[i].bytes.insert(0, at: end)
            let j = s.firstIndex { $0.kind == Format.Section.blockIndex.rawValue }!
            withUnsafeBytes(of: UInt32(end + 1).littleEndian) { s[j].bytes.replaceSubrange((12 * e.blockCount + 8)..<(12 * e.blockCount + 12), with: $0) }
            e.relayout(s)
        },
        // Categories of values.
        HostileCase("unknown category code", "unknown category code 200") { e in
            for v in 0..<e.valueCount { e.set8(e.start(.valueCategories) + v, 200) }
        },
        HostileCase("category code one past the last", "unknown category code 4") { e in e.set8(e.start(.valueCategories) + e.valueCount - 1, 4) },
        // Hot labels.
        HostileCase("hot offsets descending", "hot label offsets of value 1") { e in
            e.set32(e.start(.hotOffsets) + 4, e.u32(e.start(.hotOffsets) + 8) + 1)
        },
        HostileCase("hot offset beyond the hot labels", "hot label offsets of value 0") { e in e.set32(e.start(.hotOffsets) + 4, 0xFFFF) },
        HostileCase("hot offset near 2^32", "hot label offsets of value 0") { e in e.set32(e.start(.hotOffsets) + 4, .max) },
        // Cold labels.
        HostileCase("cold index beyond the cold labels", "cold label index of value") { e in e.set32(e.start(.coldIndex) + 4, .max) },
        HostileCase("cold index descending", "cold label index of value") { e in
            e.set32(e.start(.coldIndex) + 4, e.u32(e.start(.coldIndex) + 8) + 1)
        },
        HostileCase("cold index group shifted", "cold label") { e in e.set32(e.start(.coldIndex) + 4, e.u32(e.start(.coldIndex) + 4) - 1) },
        HostileCase("cold length runs past its group", "runs past its group") { e in
            let groupLength = Int(e.u32(e.start(.coldIndex) + 4))
            var varint: [UInt8] = []
            var v = groupLength
            while v >= 0x80 { varint.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
            varint.append(UInt8(v))
            for (i, byte) in varint.enumerated() { e.set8(e.start(.coldLabels) + i, byte) }
        },
        HostileCase("cold length varint that does not end", "cold label length") { e in
            for i in 0..<4 { e.set8(e.start(.coldLabels) + i, 0x80) }
        },
        HostileCase("cold length varint that ends past its group", "cold label length") { e in
            let groupLength = Int(e.u32(e.start(.coldIndex) + 4))
            for i in 0..<groupLength { e.set8(e.start(.coldLabels) + i, 0x80) }
        },
        HostileCase("cold label codes the symbol table does not define", "does not decode") { e in
            // Codes ≥ the table's symbol count (its first byte, for every codec) other than the
            // escape 255 are invalid; the sample's table has far fewer than 254 symbols.
            precondition(e.u8(e.start(.symbolTable)) < 254)
            let len = Int(e.u8(e.start(.coldLabels)))
            precondition(len > 0 && len < 0x80, "a one-byte length")
            for i in 1...len { e.set8(e.start(.coldLabels) + i, 254) }
        },
    ]

    @Test(arguments: accessCases)
    func refusedAtAccess(_ hostile: HostileCase) throws {
        let (dir, path, e) = Self.written(hostile, of: ImageEditor(HostileSample.image))
        defer { withExtendedLifetime(dir) {} }
        let db = try Database(path: path)
        let report = Access.exercise(db, numbers: HostileSample.numbers, image: e, path: path, hostile.name)
        let errors = report.errors + (report.verifyError.map { [$0] } ?? [])
        #expect(errors.contains { $0.message.contains(hostile.expect) }, "\(hostile.name): errors were \(errors.map(\.message).prefix(3))")
        #expect(report.verifyError != nil, "\(hostile.name): verify accepted it")
        #expect { try Database(path: path, verify: true) } throws: { ($0 as? CallerIDError)?.code == .corrupt }
    }

    // MARK: Header fields in range

    /// Every sync shift (the layout of every record's sync table changes) and other block
    /// sizes (the bound on n changes): refused by open or verify, or read consistently.
    @Test(arguments: (0...Format.maxSyncShift).map { ("sync shift", 44, $0) } + [1, 2, 3, 5, 1024].map { ("block size", 46, $0) })
    func headerFieldsInRangeAreRefusedOrConsistent(field: String, offset: Int, value: Int) throws {
        var e = ImageEditor(HostileSample.image)
        if offset == 44 { e.set8(44, UInt8(value)) } else { e.set16(46, UInt16(value)) }
        e.seal()
        let dir = TempDir()
        let path = dir.path("h.cid")
        Access.write(e.bytes, path)
        let original = ImageEditor(HostileSample.image)
        do {
            let db = try Database(path: path)
            let report = Access.exercise(db, numbers: HostileSample.numbers, image: e, path: path, "\(field) \(value)")
            let unchanged = offset == 44 ? value == original.syncShift : value >= original.blockSize
            // The same file, or one that fails somewhere: never a crash.
            #expect((report.verifyError == nil) == unchanged, "\(field) \(value): \(String(describing: report.verifyError))")
            if unchanged { #expect(report.entries == HostileSample.entries) }
        } catch {
            #expect(error.code == .corrupt && value < original.blockSize && offset == 46, "\(field) \(value): \(error.message)")
        }
    }

    // MARK: Labels a writer never stores

    /// A file written with `labels` (one value each, numbers 1, 2, …), all hot or all cold.
    static func imageWithLabels(_ labels: [[UInt8]], hot: Bool) throws -> [UInt8] {
        var options = LayoutOptions()
        options.hotLabelBytes = hot ? Int.max : 0
        return try FileWriter.encode(keys: (1...UInt64(labels.count)).map { $0 }, values: (0..<UInt32(labels.count)).map { $0 },
                                     labelCount: labels.count, label: { labels[$0][...] }, valueCategory: { _ in 0 },
                                     categories: [.identify], options: options).image
    }

    static let badLabels: [(String, [UInt8])] = [
        ("invalid UTF-8", [0x41, 0xFF, 0x42]),
        ("a lone continuation byte", [0x80]),
        ("an overlong encoding", [0xC0, 0x80]),
        ("a surrogate", [0xED, 0xA0, 0x80]),
        ("a truncated sequence", [0x41, 0xE2, 0x82]),
        ("a control byte", [0x41, 0x01, 0x42]),
        ("a newline", Array("A\nB".utf8)),
        ("DEL", [0x7F]),
    ]

    @Test(arguments: [false, true])
    func labelsThatAreNotTextAreRefusedByVerify(hot: Bool) throws {
        let dir = TempDir()
        for (what, bad) in Self.badLabels {
            let labels: [[UInt8]] = [Array("Fine".utf8), bad, Array("Also fine".utf8)]
            let path = dir.path("bad.cid")
            let e = ImageEditor(try Self.imageWithLabels(labels, hot: hot))
            #expect(e.hotCount == (hot ? 3 : 0))
            Access.write(e.bytes, path)
            let db = try Database(path: path)
            // Reads return the bytes (the label is valid for the reader's bounds), verify refuses.
            #expect(try db.lookup(1)?.label == "Fine")
            #expect(try db.withEntry(2) { Array($0.labelBytes) } == bad, "\(what)")
            let report = Access.exercise(db, numbers: [1, 2, 3], image: e, path: path, what)
            #expect(report.verifyError?.message.contains("label of value") == true, "\(what): \(String(describing: report.verifyError))")
            #expect(report.entries?.count == 3)
        }
    }

    @Test(arguments: [false, true])
    func labelsOverTheLimitAreRefused(hot: Bool) throws {
        let dir = TempDir()
        let path = dir.path("long.cid")
        let long = [UInt8](repeating: UInt8(ascii: "A"), count: Format.maxLabelBytes + 1)
        let e = ImageEditor(try Self.imageWithLabels([Array("Short".utf8), long], hot: hot))
        Access.write(e.bytes, path)
        let db = try Database(path: path)
        #expect(try db.lookup(1)?.label == "Short")
        #expect { try db.lookup(2) } throws: {
            let message = ($0 as? CallerIDError)?.message ?? ""
            return message.contains(hot ? "hot label offsets of value" : "does not decode to at most 65535 bytes")
        }
        let report = Access.exercise(db, numbers: [1, 2], image: e, path: path, "long label")
        #expect(report.verifyError != nil)
        #expect(report.entries == nil, "the scan stops at the long label")

        // The longest label allowed reads back.
        let longest = [UInt8](repeating: UInt8(ascii: "B"), count: Format.maxLabelBytes)
        Access.write(try Self.imageWithLabels([longest, Array("x".utf8)], hot: hot), path)
        let ok = try Database(path: path, verify: true)
        #expect(try ok.withEntry(1) { $0.labelBytes.count } == Format.maxLabelBytes)
    }

    // MARK: Accepted: what the format allows

    @Test func unknownSectionKindsAreSkippedButChecksummed() throws {
        let dir = TempDir()
        let path = dir.path("extra.cid")
        var e = ImageEditor(HostileSample.image)
        e.relayout(e.sections + [(42, Array("a section from format 2.1".utf8))])
        Access.write(e.bytes, path)
        let db = try Database(path: path, verify: true)
        #expect(db.count == HostileSample.entries.count)
        #expect(db.info.sections.last?.name == "kind 42")
        #expect(try db.lookup(HostileSample.numbers[5]) == HostileSample.entries[5])

        // Its checksum is verified like any other (the table still holds the old one).
        var damaged = e
        let at = Int(damaged.u64(damaged.tableOffset + 11 * 32 + 8))
        damaged.set8(at, UInt8(ascii: "X"))
        Access.write(damaged.bytes, path)
        #expect(try Database(path: path).count == HostileSample.entries.count)
        #expect { try Database(path: path, verify: true) } throws: {
            ($0 as? CallerIDError)?.message.contains("'kind 42'") == true
        }

        // An unknown section may not overlap a known one, nor another unknown one.
        var overlapping = e
        overlapping.set64(overlapping.tableOffset + 11 * 32 + 8, UInt64(overlapping.start(.coldLabels)))
        overlapping.seal()
        Access.write(overlapping.bytes, path)
        #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.message.contains("overlap") == true }

        // Two unknown sections of one kind are fine (only known kinds must be unique); a known
        // kind twice is not, even when the copy is identical.
        var twice = ImageEditor(HostileSample.image)
        twice.relayout(twice.sections + [(42, [1, 2, 3]), (42, [4, 5])])
        Access.write(twice.bytes, path)
        #expect(try Database(path: path, verify: true).count == HostileSample.entries.count)
        var known = ImageEditor(HostileSample.image)
        known.relayout(known.sections + [(Format.Section.categories.rawValue, known.section(.categories))])
        Access.write(known.bytes, path)
        #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.message.contains("'categories' appears twice") == true }
    }

    /// The order of sections is free; the minor version is not (FORMAT.md §9): the same
    /// reversed file marked 2.7 is refused as a version this reader does not know.
    @Test func sectionOrderIsFreeAndAnUnknownMinorVersionIsRefused() throws {
        let dir = TempDir()
        let path = dir.path("m.cid")
        var e = ImageEditor(HostileSample.image)
        e.relayout(e.sections.reversed())
        e.seal()
        Access.write(e.bytes, path)
        let db = try Database(path: path, verify: true)
        #expect(db.info.formatVersion == "2.0")
        #expect(Array(db.entries()) == HostileSample.entries)
        e.set16(10, 7)
        e.seal()
        Access.write(e.bytes, path)
        #expect { try Database(path: path, verify: true) } throws: {
            ($0 as? CallerIDError)?.code == .unsupportedVersion && ($0 as? CallerIDError)?.message.contains("2.7") == true
        }
    }

    @Test func nonZeroPaddingIsRefusedByVerify() throws {
        let dir = TempDir()
        let path = dir.path("pad.cid")
        let e = ImageEditor(HostileSample.image)
        // A gap between two sections (alignment padding), sealed checksums everywhere.
        var ends = e.sections.indices.map { i -> (Int, Int) in
            let t = e.tableOffset + i * 32
            return (Int(e.u64(t + 8)), Int(e.u64(t + 8) + e.u64(t + 16)))
        }
        ends.sort { $0.0 < $1.0 }
        let gap = try #require(zip(ends, ends.dropFirst()).first { $0.1 < $1.0 }).0.1
        var damaged = e
        damaged.set8(gap, 0x20)
        damaged.seal()
        Access.write(damaged.bytes, path)
        let db = try Database(path: path)
        #expect(try db.lookup(HostileSample.numbers[0]) == HostileSample.entries[0])
        #expect { try db.verify() } throws: { ($0 as? CallerIDError)?.message.contains("non-zero padding") == true }
        // Between the last section and the table too.
        var beforeTable = e
        let last = ends.last!.1
        try #require(last < e.tableOffset)
        beforeTable.set8(e.tableOffset - 1, 1)
        beforeTable.seal()
        Access.write(beforeTable.bytes, path)
        #expect { try Database(path: path, verify: true) } throws: { ($0 as? CallerIDError)?.message.contains("non-zero padding") == true }
    }

    /// 300 random entries in blocks of 64 with a sync point every 4 entries (hot and cold
    /// labels): five blocks, the last of 44.
    static func manySyncPoints(seed: UInt64) throws -> ImageEditor {
        var options = BuildOptions()
        options.blockSize = 64
        options.syncShift = 2
        options.hotLabelBytes = 40
        let (records, _) = randomRecords(count: 300, seed: seed, duplicateRate: 0)
        var builder = DatabaseBuilder(options: options)
        for r in records { try builder.add(r.number, label: r.label, category: r.category) }
        return ImageEditor(try builder.encode().0)
    }

    /// Every sync entry of blocks with many sync points (sixteen segments a block: verify and
    /// the scan decode the value codes four segments at a time), moved one bit either way or
    /// far past its place, is refused by verify, whichever segment of a group it starts; the
    /// last block is shorter, so its tail segments take the one-at-a-time path.
    @Test func everyMovedSyncEntryIsRefusedByVerify() throws {
        let original = try Self.manySyncPoints(seed: 77)
        #expect(original.blockCount == 5 && original.n(4) == 300 - 4 * 64)
        let dir = TempDir()
        let path = dir.path("moved-sync.cid")
        Access.write(original.bytes, path)
        try Database(path: path).verify()
        var moved = 0
        for b in 0..<original.blockCount {
            for s in 0..<original.syncCount(b) {
                let at = original.record(b) + Format.recordHeaderSize + 2 * s
                for change in [1, -1, 4096] {
                    let value = Int(original.u16(at)) + change
                    guard value >= 0, value <= Int(UInt16.max) else { continue }  // a sync entry is a u16
                    var e = original
                    e.set16(at, UInt16(value))
                    e.seal()
                    Access.write(e.bytes, path)
                    #expect(throws: CallerIDError.self, "block \(b), sync entry \(s) moved by \(change)") { try Database(path: path).verify() }
                    moved += 1
                }
            }
        }
        #expect(moved > 3 * 4 * 15)
    }

    /// A sync entry moved to the last bits of its value stream: a lookup of an entry after
    /// it walks codes from there, past the stream's end, and must throw rather than answer
    /// with bits of the next record. Lookups of the other entries still answer as before.
    @Test func lookupsWhoseCodesRunPastTheValueStreamThrow() throws {
        let original = try Self.manySyncPoints(seed: 78)
        let dir = TempDir()
        let path = dir.path("sync-at-end.cid")
        Access.write(original.bytes, path)
        let entries = Array(try Database(path: path).entries())
        #expect(entries.count == 300)
        var thrown = 0
        for b in [0, 2, original.blockCount - 1] {
            let valueBits = 8 * (original.recordEnd(b) - original.valueStart(b))
            for s in [0, original.syncCount(b) - 1] {
                var e = original
                e.set16(original.record(b) + Format.recordHeaderSize + 2 * s, UInt16(valueBits - 1))
                e.seal()
                Access.write(e.bytes, path)
                let db = try Database(path: path)
                let first = 64 * b + 4 * (s + 1)  // the entry the moved sync entry starts at
                for (i, entry) in entries.enumerated() where i / 64 == b {
                    if (first + 1..<min(first + 4, 64 * b + original.n(b))).contains(i) {
                        #expect("block \(b), entry \(i)") { _ = try db.lookup(entry.number) } throws: {
                            ($0 as? CallerIDError)?.code == .corrupt && ($0 as? CallerIDError)?.message.contains("value code") == true
                        }
                        thrown += 1
                    } else if i < first || i >= first + 4 {
                        #expect(try db.lookup(entry.number) == entry, "block \(b), entry \(i)")
                    }
                }
            }
        }
        #expect(thrown >= 15)
    }

    /// Bytes of a small file changed (one of three values; a sample of every field, or every
    /// byte with CALLERID_DEEP_TESTS=1) and then *sealed*: the
    /// checksums no longer catch anything, so the structural checks and the access checks
    /// must. Open and verify may accept (a changed label byte can make another valid file);
    /// whatever they accept must read consistently, and nothing may crash.
    @Test func everySealedByteChangeIsRefusedOrConsistent() throws {
        let original = ImageEditor(HostileSample.image)
        let dir = TempDir()
        let path = dir.path("sealed.cid")
        // Checksum fields are rewritten by seal(): skip them.
        var skip = Set(56..<64).union((original.footer + 8)..<(original.footer + 16))
        for i in 0..<original.sectionCount { skip.formUnion((original.tableOffset + i * 32 + 24)..<(original.tableOffset + i * 32 + 32)) }
        // Every byte with CALLERID_DEEP_TESTS=1. Otherwise every byte of the header, the
        // section table, the footer and the padding, each section's first and last 8 bytes,
        // and a third of the other section bytes (fixed seed): every field of every section.
        var offsets = Array(0..<original.bytes.count)
        if !deepTests {
            var inner = Set<Int>()
            for i in 0..<original.sectionCount {
                let t = original.tableOffset + i * 32
                let (start, length) = (Int(original.u64(t + 8)), Int(original.u64(t + 16)))
                if length > 16 { inner.formUnion((start + 8)..<(start + length - 8)) }
            }
            var rng = SeededGenerator(seed: 31)
            offsets.removeAll { inner.contains($0) && rng.next() % 3 != 0 }
        }
        var refusedAtOpen = 0, refusedAtVerify = 0, accepted = 0
        for offset in offsets where !skip.contains(offset) {
            let change = [UInt8(0x01), 0x80, 0xFF][offset % 3]
            var e = original
            e.bytes[offset] ^= change
            e.seal()
            Access.write(e.bytes, path)
            let db: Database
            do {
                db = try Database(path: path)
            } catch {
                #expect(error.code == .corrupt || error.code == .unsupportedVersion, "byte \(offset)")
                refusedAtOpen += 1
                continue
            }
            let report = Access.exercise(db, numbers: HostileSample.numbers.prefix(12) + HostileSample.numbers.suffix(4), image: e, path: path,
                                         "byte \(offset) ^ \(change)")
            if report.verifyError != nil { refusedAtVerify += 1 } else { accepted += 1 }
        }
        print("sealed byte changes at \(offsets.count - skip.count) offsets of a \(original.bytes.count)-byte file: refused at open \(refusedAtOpen), at verify \(refusedAtVerify), accepted as another valid file \(accepted)")
        #expect(refusedAtOpen > 0 && refusedAtVerify > 0 && accepted > 0)
    }

    /// Key codec 2's records (a file of major version 3: CorruptionTests' sample), every byte
    /// changed one of three ways and sealed: the header fields, the sync entries, the bitmap,
    /// the upper and lower bits, the value codes. Refused at open, at access or by verify, or
    /// read consistently; nothing crashes. By default the first four such records (every byte
    /// of each); with CALLERID_DEEP_TESTS=1 all ten, each byte changed all three ways.
    @Test func everySealedByteChangeOfGapOneBitmapRecordsIsRefusedOrConsistent() throws {
        let original = ImageEditor(CorruptionTests.sample.image)
        let blocks = original.blocks(codec: Format.keyCodecRunBitmap)
        #expect(blocks.count >= 4 && original.u16(8) == 3)
        let dir = TempDir()
        let path = dir.path("sealed-bitmap.cid")
        let numbers = blocks.flatMap { b in CorruptionTests.sample.entries[(16 * b)..<min(16 * b + 16, CorruptionTests.sample.entries.count)].map(\.number) }
        var refusedAtAccess = 0, refusedAtVerify = 0, accepted = 0
        for b in deepTests ? blocks : Array(blocks.prefix(4)) {
            for offset in original.record(b)..<original.recordEnd(b) {
                for change in deepTests ? [UInt8(0x01), 0x80, 0xFF] : [[UInt8(0x01), 0x80, 0xFF][offset % 3]] {
                    var e = original
                    e.bytes[offset] ^= change
                    e.seal()
                    Access.write(e.bytes, path)
                    let db = try Database(path: path)  // open reads no record
                    let report = Access.exercise(db, numbers: numbers, image: e, path: path, "block \(b) byte \(offset) ^ \(change)")
                    if !report.errors.isEmpty { refusedAtAccess += 1 }
                    if report.verifyError != nil { refusedAtVerify += 1 } else { accepted += 1 }
                }
            }
        }
        print("sealed changes of \(blocks.count) gap-1 bitmap records: refused at access \(refusedAtAccess), by verify \(refusedAtVerify), accepted \(accepted)")
        #expect(refusedAtAccess > 0 && refusedAtVerify > 0)
    }

    /// Crafted key codec 2 records (sealed): a bitmap that leaves more elements than the upper
    /// bits hold, one that leaves fewer, a bit set in the bitmap's padding, no upper words at
    /// all, and codec 2 in a record of one entry. Each is refused by the reads that meet it
    /// or by verify, with the block named.
    @Test(arguments: ["a cleared bitmap bit", "a set bitmap bit", "a padding bit", "no upper words", "one entry"])
    func craftedGapOneBitmapRecordsAreRefused(_ craft: String) throws {
        var e = ImageEditor(CorruptionTests.sample.image)
        let b = e.blocks(codec: Format.keyCodecRunBitmap).first { e.n($0) == 16 }!
        let word = e.u64(e.bitmapStart(b))
        switch craft {
        case "a cleared bitmap bit": e.set64(e.bitmapStart(b), word & (word - 1))
        case "a set bitmap bit": e.set64(e.bitmapStart(b), word | ((~word & ((1 << 15) - 1)) & (0 &- (~word & ((1 << 15) - 1)))))
        case "a padding bit": e.set64(e.bitmapStart(b), word | 1 << 40)
        case "no upper words": e.set16(e.record(b) + 4, 0)
        default: e.set16(e.record(b), 1)
        }
        e.seal()
        let dir = TempDir()
        let path = dir.path("crafted.cid")
        Access.write(e.bytes, path)
        let db = try Database(path: path)
        let numbers = CorruptionTests.sample.entries[(16 * b)..<(16 * b + 16)].map(\.number)
        let report = Access.exercise(db, numbers: numbers, image: e, path: path, craft)
        let errors = report.errors + (report.verifyError.map { [$0] } ?? [])
        #expect(report.verifyError != nil, "\(craft): verify accepted it")
        #expect(errors.allSatisfy { $0.message.contains("block \(b)") }, "\(craft): \(errors.map(\.message).prefix(3))")
    }
}
