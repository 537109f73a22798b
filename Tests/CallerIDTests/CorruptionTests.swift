import Foundation
import Testing
@testable import CallerID

/// Damaged files (format 2.0) are refused by `open` or `verify` with a clear error, never a
/// crash, and reads without `verify` never crash, loop or read out of bounds.
@Suite struct CorruptionTests {
    /// Several hundred entries in blocks of 16: Elias–Fano blocks, run blocks (a run of
    /// consecutive numbers) and gap-1 bitmap blocks (short runs between large gaps: key codec
    /// 2, so the file is major version 3), hot and cold labels (a small hot budget), several
    /// categories.
    static let sample = makeSample(.symbols)
    /// The same entries with their cold labels in LZ4 groups (version 3.1). A build that cannot
    /// write LZ4 (the PortableCodecs trait, as on Apple platforms) reads the copy kept in
    /// Fixtures/corruption-sample-3.1.cid, which ``theLZ4SampleFixtureIsWhatTheWriterWrites``
    /// holds to the writer's bytes.
    static let lz4Sample: (image: [UInt8], entries: [Entry]) = {
        if Codec.compressesLZ4 { return makeSample(.lz4) }
        let bytes = try! [UInt8](Data(contentsOf: lz4SampleFixture))
        return (bytes, sample.entries)
    }()

    static let lz4SampleFixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/corruption-sample-3.1.cid")

    /// The fixture copy of ``lz4Sample`` is the writer's output, byte for byte (with
    /// CALLERID_UPDATE_FIXTURES=1 in the environment this test rewrites it).
    @Test(.enabled(if: Codec.compressesLZ4, "this build cannot write LZ4"))
    func theLZ4SampleFixtureIsWhatTheWriterWrites() throws {
        if ProcessInfo.processInfo.environment["CALLERID_UPDATE_FIXTURES"] == "1" {
            try Data(Self.lz4Sample.image).write(to: Self.lz4SampleFixture)
        }
        let fixture = try [UInt8](Data(contentsOf: Self.lz4SampleFixture))
        #expect(fixture == Self.lz4Sample.image, "Fixtures/corruption-sample-3.1.cid is stale: run this test with CALLERID_UPDATE_FIXTURES=1")
        #expect(fixture[8] == 3 && fixture[10] == 1, "a 3.1 file")
    }

    static func sample(_ coding: LabelCoding) -> (image: [UInt8], entries: [Entry]) { coding == .lz4 ? lz4Sample : sample }

    static func makeSample(_ coding: LabelCoding) -> (image: [UInt8], entries: [Entry]) {
        var options = BuildOptions()
        options.labelCoding = coding
        options.blockSize = 16
        options.syncShift = 2
        options.hotLabelBytes = 40
        var (records, _) = randomRecords(count: 260, seed: 4242, duplicateRate: 0.02)
        for i in 0..<40 { records.append(Entry(number: 4_930_000_000 + UInt64(i), label: "Run \(i % 3)", category: .identify)) }
        for i in 0..<96 {
            records.append(Entry(number: 4_940_000_000 + UInt64(i / 4) * 1_000_003 + UInt64(i % 4), label: "Short run \(i % 5)", category: .block))
        }
        var builder = DatabaseBuilder(options: options)
        var expected: [UInt64: Entry] = [:]
        for r in records {
            try! builder.add(r.number, label: r.label, category: r.category)
            expected[r.number] = r
        }
        return (try! builder.encode().0, expected.values.sorted { $0.number < $1.number })
    }

    static var numbers: [UInt64] { sample.entries.map(\.number) }

    @Test func sampleHasBothKeyCodecsHotAndColdLabelsAndManyBlocks() throws {
        let e = ImageEditor(Self.sample.image)
        #expect(e.blockCount > 15)
        #expect(e.blocks(codec: Format.keyCodecRun).count >= 2)
        #expect(e.blocks(codec: Format.keyCodecEliasFano).count > 10)
        #expect(e.blocks(codec: Format.keyCodecRunBitmap).count >= 4)
        #expect(e.u16(8) == 3, "key codec 2 makes the file major version 3")
        #expect(e.hotCount > 0 && e.valueCount - e.hotCount > 8)
        let dir = TempDir()
        Access.write(e.bytes, dir.path("good.cid"))
        let db = try Database(path: dir.path("good.cid"), verify: true)
        #expect(Array(db.entries()) == Self.sample.entries)
    }

    @Test(arguments: [LabelCoding.symbols, .lz4])
    func everyTruncationIsRefusedAtOpen(_ coding: LabelCoding) throws {
        let bytes = Self.sample(coding).image
        let dir = TempDir()
        let path = dir.path("cut.cid")
        for length in 0..<bytes.count {
            Access.write(Array(bytes[0..<length]), path)
            do {
                _ = try Database(path: path)
                Issue.record("length \(length) was accepted")
            } catch {
                #expect(error.code == .corrupt && error.message.contains(path), "length \(length): \(error.message)")
            }
        }
    }

    @Test func appendedBytesAreRefused() throws {
        let bytes = Self.sample.image
        let dir = TempDir()
        let path = dir.path("long.cid")
        for extra: [UInt8] in [[0], [UInt8](repeating: 0, count: 32), Array(bytes.suffix(32))] {
            Access.write(bytes + extra, path)
            #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.code == .corrupt }
        }
        // Also when the header and footer are made to agree with the new size (sealed).
        var e = ImageEditor(bytes + [UInt8](repeating: 0, count: 32))
        let footer = Array(bytes.suffix(32))
        e.bytes.replaceSubrange(e.footer..., with: footer)
        e.set64(16, UInt64(e.bytes.count))
        e.set64(e.footer, UInt64(e.bytes.count))
        e.seal()
        Access.write(e.bytes, path)
        #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.code == .corrupt }
    }

    /// Every byte of the file, changed three ways: open or verify refuses each.
    @Test(arguments: [LabelCoding.symbols, .lz4])
    func everySingleByteChangeIsRefusedByOpenOrVerify(_ coding: LabelCoding) throws {
        let bytes = Self.sample(coding).image
        let dir = TempDir()
        let path = dir.path("flip.cid")
        var refusedAtOpen = 0, refusedAtVerify = 0
        for offset in 0..<bytes.count {
            for change in [UInt8(0x01), 0x80, 0xFF] {
                var damaged = bytes
                damaged[offset] ^= change
                Access.write(damaged, path)
                do {
                    let db = try Database(path: path)
                    do {
                        try db.verify()
                        Issue.record("byte \(offset) ^ \(change) was accepted by verify")
                    } catch {
                        #expect(error.code == .corrupt && error.message.contains(path))
                        refusedAtVerify += 1
                    }
                } catch {
                    #expect(error.code == .corrupt || error.code == .unsupportedVersion, "byte \(offset): \(error.message)")
                    refusedAtOpen += 1
                }
            }
        }
        print("single byte changes of a \(bytes.count)-byte file: refused at open \(refusedAtOpen), at verify \(refusedAtVerify)")
        #expect(refusedAtOpen + refusedAtVerify == bytes.count * 3)
        #expect(refusedAtOpen > 0 && refusedAtVerify > 0)
    }

    /// Without verify, damaged data sections may be opened; then every lookup (each number
    /// and its neighbours), the cursor and the batch cursor must terminate without crashing and
    /// either throw `.corrupt` or return consistent data (a lookup answers the number asked,
    /// scans strictly ascend and agree with each other).
    @Test(arguments: [LabelCoding.symbols, .lz4])
    func readsWithoutVerifyNeverCrash(_ coding: LabelCoding) throws {
        let bytes = Self.sample(coding).image
        let dir = TempDir()
        let path = dir.path("flip.cid")
        var rng = SeededGenerator(seed: 7)
        var tried = 0, opened = 0, failedReads = 0
        let e = ImageEditor(bytes)
        // Every byte of the sections a read touches (label, block and index bytes).
        let sections: [Format.Section] = [.summary, .blockIndex, .blocks, .valueCategories, .hotOffsets, .hotLabels]
            + (coding == .lz4 ? [.lz4ColdIndex, .lz4ColdLabels] : [.coldIndex, .coldLabels])
        let offsets = sections.flatMap { e.start($0)..<(e.start($0) + e.length($0)) }
        for (k, offset) in offsets.enumerated() where k % 3 == 0 {
            var damaged = bytes
            damaged[offset] ^= UInt8.random(in: 1...255, using: &rng)
            tried += 1
            Access.write(damaged, path)
            guard let db = try? Database(path: path) else { continue }
            opened += 1
            let report = Access.exercise(db, numbers: Self.sample(coding).entries.map(\.number),
                                         image: ImageEditor(damaged), path: path, "byte \(offset)")
            #expect(report.verifyError != nil, "byte \(offset)")
            if !report.errors.isEmpty { failedReads += 1 }
        }
        print("damaged read bytes: \(tried) tried, \(opened) opened, \(failedReads) with failed reads")
        #expect(opened > tried / 2, "damage to these sections is found when read, not at open")
        #expect(failedReads > 0)
    }

    /// A section table offset near 2^64 (or otherwise wrong) with a valid header checksum:
    /// refused, no overflow trap.
    @Test func hostileTableOffsetIsRefused() throws {
        let bytes = Self.sample.image
        let dir = TempDir()
        let path = dir.path("x.cid")
        let table = ImageEditor(bytes).tableOffset
        for offset: UInt64 in [.max, 0xFFFF_FFFF_FFFF_FFE0, UInt64(bytes.count), UInt64(bytes.count - 32), 0, 32, 63, 64,
                               UInt64(table - 32), UInt64(table + 32), UInt64(table + 1)] {
            var e = ImageEditor(bytes)
            e.set64(48, offset)
            e.set64(56, Codec.xxh3(Array(e.bytes[0..<56])))
            Access.write(e.bytes, path)
            #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.code == .corrupt }
        }
    }

    @Test func wrongMagicAndEmptyFilesHaveClearMessages() throws {
        let bytes = Self.sample.image
        let dir = TempDir()
        let path = dir.path("x.cid")
        Access.write(Array("79131234567\tPizza\n".utf8) + bytes, path)
        #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.message.contains("bad magic") == true }
        for i in 0..<8 {
            var b = bytes
            b[i] ^= 0x20
            Access.write(b, path)
            #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.message.contains("bad magic") == true }
        }
        Access.write([], path)
        #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.message.contains("empty") == true }
        Access.write(Array(bytes.prefix(11)), path)
        #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.message.contains("too short") == true }
        #expect { try Database(path: dir.path("missing.cid")) } throws: { ($0 as? CallerIDError)?.code == .fileNotFound }
    }

    /// `bytes` written at `path` are refused as an unsupported version, opened or verified, with
    /// a message holding each of `parts`; and so is a file of just their magic and version (the
    /// version is read before anything else).
    static func expectUnsupported(_ bytes: [UInt8], at path: String, saying parts: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for prefix in [bytes.count, 12] {
            Access.write(Array(bytes.prefix(prefix)), path)
            for verify in [false, true] {
                do {
                    _ = try Database(path: path, verify: verify)
                    Issue.record("opened", sourceLocation: sourceLocation)
                } catch {
                    #expect(error.code == .unsupportedVersion, sourceLocation: sourceLocation)
                    #expect(parts.allSatisfy { error.message.contains($0) }, "\(error.message)", sourceLocation: sourceLocation)
                }
            }
        }
    }

    /// A minor version this reader does not know (a forged 3.9, 3.2, 2.1) is refused at open as a
    /// newer major is: a minor marks a change an older reader of the same major cannot read.
    @Test func unknownMinorVersionsAreUnsupported() throws {
        let dir = TempDir()
        let path = dir.path("v.cid")
        for (major, minor) in [(UInt16(3), UInt16(9)), (3, 2), (2, 1), (2, .max)] {
            var e = ImageEditor(Self.lz4Sample.image)
            e.set16(8, major)
            e.set16(10, minor)
            e.seal()
            Self.expectUnsupported(e.bytes, at: path, saying: ["unsupported version \(major).\(minor)", "reads versions 2.0, 3.0 and 3.1"])
        }
        // The samples as written (3.0 with key codec 2, 3.1 with LZ4 labels) open and verify.
        Access.write(Self.sample.image, path)
        #expect(try Database(path: path, verify: true).info.formatVersion == "3.0")
        Access.write(Self.lz4Sample.image, path)
        #expect(try Database(path: path, verify: true).info.formatVersion == "3.1")
    }

    /// Other major versions: a 1.0 file asks for a rebuild, a newer one for a newer reader.
    @Test func otherMajorVersionsAreUnsupported() throws {
        let dir = TempDir()
        let path = dir.path("v.cid")
        for (major, hint) in [(UInt16(1), "rebuild it with `lookup build`"), (0, "rebuild"), (4, "update CallerID"), (.max, "update CallerID")] {
            var e = ImageEditor(Self.sample.image)
            e.set16(8, major)
            e.seal()
            Self.expectUnsupported(e.bytes, at: path, saying: [path, "unsupported version \(major).0", hint])
        }
    }

    /// Key codec 2 exists only in major version 3: the same file marked major 2 opens (open
    /// reads no record), but every lookup, cursor and verify that meets a codec-2 block
    /// refuses it as damaged; no entry of such a block is answered.
    @Test func gapOneBitmapBlocksInAMajor2FileAreDamaged() throws {
        var e = ImageEditor(Self.sample.image)
        let bitmapBlocks = e.blocks(codec: Format.keyCodecRunBitmap)
        #expect(!bitmapBlocks.isEmpty)
        e.set16(8, 2)
        e.seal()
        let dir = TempDir()
        let path = dir.path("v2.cid")
        Access.write(e.bytes, path)
        let db = try Database(path: path)
        #expect(db.info.formatVersion == "2.0")
        for b in bitmapBlocks {
            let number = e.firstKey(b) + 1
            #expect { try db.lookup(number) } throws: {
                ($0 as? CallerIDError)?.code == .corrupt && ($0 as? CallerIDError)?.message.contains("block \(b): record") == true
            }
            var cursor = db.cursor(from: e.firstKey(b))
            #expect { while try cursor.next({ $0.number }) != nil {} } throws: { ($0 as? CallerIDError)?.code == .corrupt }
        }
        #expect { try db.verify() } throws: { ($0 as? CallerIDError)?.code == .corrupt }
        // The blocks of the other codecs still answer.
        for (i, entry) in Self.sample.entries.enumerated() where !bitmapBlocks.contains(i / 16) { #expect(try db.lookup(entry.number) == entry) }
        // And the major-3 original opens, verifies and answers every entry.
        Access.write(Self.sample.image, path)
        let good = try Database(path: path, verify: true)
        #expect(good.info.formatVersion == "3.0")
        for entry in Self.sample.entries { #expect(try good.lookup(entry.number) == entry) }
    }

    /// A format 2.0 file written before key codec 2 (docs in Fixtures/README.md: `lookup build
    /// --block-size 16` of Fixtures/format-2.0.tsv by commit fc95826): it opens, verifies and
    /// answers every row of its input, and today's writer writes the same bytes (major 2: no
    /// block is worth codec 2 there). Before: verify weighed codec 2 in every file, so this
    /// file's block of short runs — Elias–Fano, as 2.0 had to write it, although codec 2
    /// would be smaller — failed the canonical check ("a key codec ... the writer would not
    /// choose").
    @Test func aFormat2_0FileOpensVerifiesAndAnswers() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        let path = dir.appendingPathComponent("format-2.0.cid").path
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes[8] == 2 && bytes[9] == 0, "the fixture is a 2.0 file")
        let db = try Database(path: path, verify: true)
        #expect(db.info.formatVersion == "2.0")
        let rows = try String(contentsOf: dir.appendingPathComponent("format-2.0.tsv"), encoding: .utf8).split(separator: "\n")
        #expect(db.count == rows.count && rows.count == 208)
        for row in rows {
            let fields = row.split(separator: "\t", omittingEmptySubsequences: false)
            let entry = try db.lookup(UInt64(fields[0])!)
            #expect(entry?.label == String(fields[1]) && entry?.category.name == (fields.count > 2 ? String(fields[2]) : "identify"), "\(row)")
        }
        // A block where the rule of a major-3 file would pick codec 2.
        var keys = FixedBuffer<UInt64>(repeating: 0, count: db.blockSize)
        var ids = FixedBuffer<UInt32>(repeating: 0, count: db.blockSize)
        var wouldUseBitmap = 0
        for b in 0..<db.blockCount {
            let (r, _) = try db.decodeBlock(b, after: b == 0 ? 0 : db.firstKey(b) - 1, keys: &keys, ids: &ids)
            let shape = BlockRecord.KeyShape(count: r.entryCount) { keys[$0] }
            if BlockRecord.keyCodec(shape, runBitmap: true) == Format.keyCodecRunBitmap { wouldUseBitmap += 1 }
        }
        #expect(wouldUseBitmap > 0)
        // Today's writer, cold labels coded with the symbol table: the same bytes.
        var builder = DatabaseBuilder(options: { var o = BuildOptions(); o.blockSize = 16; o.labelCoding = .symbols; return o }())
        for e in Array(db.entries()) { try builder.add(e.number, label: e.label, category: e.category) }
        #expect(try builder.encode().0 == bytes)
    }

    /// A real format 1.0 file (3 entries, written by `lookup build` of commit 2b19b9d, the last
    /// 1.0 version): refused as unsupported with a rebuild hint by the library and the CLI.
    static let fixture1_0 = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/format-1.0.cid").path

    @Test func aFormat1_0FileIsRefusedWithARebuildHint() throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.fixture1_0)))
        #expect(Array(bytes.prefix(8)) == Format.magic && bytes[8] == 1 && bytes[9] == 0, "the fixture is a 1.0 file")
        for verify in [false, true] {
            do {
                _ = try Database(path: Self.fixture1_0, verify: verify)
                Issue.record("a 1.0 file was opened")
            } catch {
                #expect(error.code == .unsupportedVersion)
                #expect(error.message.contains("unsupported version 1.0") && error.message.contains("rebuild"), "\(error.message)")
            }
        }
        for args in [["verify", Self.fixture1_0], ["info", Self.fixture1_0], ["79131234567", "--db", Self.fixture1_0]] {
            let r = try lookup(args)
            #expect(r.status == 65, "lookup \(args[0]): \(r.status)")
            #expect(r.stderr.contains("rebuild"), "lookup \(args[0]): \(r.stderr)")
        }
    }
}
