import Foundation
import Testing
@testable import CallerID

/// Damaged files are refused by `open` or `verify` with a clear error, never a crash, and
/// reads without `verify` never crash, loop or read out of bounds.
@Suite struct CorruptionTests {
    /// A small file with several key blocks, palettes, compressed and raw label chunks.
    static func sampleImage() throws -> (bytes: [UInt8], db: TempDir) {
        let dir = TempDir()
        var options = BuildOptions()
        options.blockSize = 16
        options.labelsPerChunk = 8
        options.labelDictionaryBytes = 100
        let (records, _) = randomRecords(count: 300, seed: 4242, duplicateRate: 0.02)
        _ = try buildDatabase(records, at: dir.path("good.cid"), options: options)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.path("good.cid"))))
        return (bytes, dir)
    }

    static func write(_ bytes: [UInt8], _ path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    }

    @Test func sampleHasCompressedAndRawChunksAndManyBlocks() throws {
        let (_, dir) = try Self.sampleImage()
        let info = try Database(path: dir.path("good.cid"), verify: true).info
        #expect(info.blocks > 10)
        #expect(info.compressedLabelChunks > 0)
        #expect(info.labelChunks > info.compressedLabelChunks)
    }

    @Test func everyTruncationIsRefusedAtOpen() throws {
        let (bytes, dir) = try Self.sampleImage()
        let path = dir.path("cut.cid")
        for length in 0..<bytes.count {
            Self.write(Array(bytes[0..<length]), path)
            #expect(throws: CallerIDError.self, "length \(length)") { try Database(path: path) }
            do {
                _ = try Database(path: path)
            } catch {
                #expect(error.code == .corrupt)
                #expect(error.message.contains(path))
            }
        }
    }

    @Test func appendedBytesAreRefused() throws {
        let (bytes, dir) = try Self.sampleImage()
        let path = dir.path("long.cid")
        Self.write(bytes + [0], path)
        #expect(throws: CallerIDError.self) { try Database(path: path) }
    }

    /// Every byte of the file, set to three different values: open + verify refuse each.
    @Test func everySingleByteChangeIsRefusedByOpenOrVerify() throws {
        let (bytes, dir) = try Self.sampleImage()
        let path = dir.path("flip.cid")
        var refusedAtOpen = 0, refusedAtVerify = 0
        for offset in 0..<bytes.count {
            for change in [UInt8(0x01), 0x80, 0xFF] {
                var damaged = bytes
                damaged[offset] ^= change
                Self.write(damaged, path)
                do {
                    let db = try Database(path: path)
                    do {
                        try db.verify()
                        Issue.record("byte \(offset) ^ \(change) was accepted by verify")
                    } catch {
                        #expect(error.code == .corrupt)
                        refusedAtVerify += 1
                    }
                } catch {
                    #expect(error.code == .corrupt || error.code == .unsupportedVersion)
                    refusedAtOpen += 1
                }
            }
        }
        #expect(refusedAtOpen + refusedAtVerify == bytes.count * 3)
        #expect(refusedAtOpen > 0 && refusedAtVerify > 0)
    }

    /// Without verify, damaged data sections may be opened; lookups and enumeration must then
    /// terminate without crashing, and enumeration stays strictly ascending.
    @Test func readsWithoutVerifyNeverCrash() throws {
        let (bytes, dir) = try Self.sampleImage()
        let good = try Database(path: dir.path("good.cid"))
        let numbers = Array(good.entries()).map(\.number)
        let path = dir.path("flip.cid")
        var rng = SeededGenerator(seed: 7)
        var opened = 0
        for offset in stride(from: 0, to: bytes.count, by: 3) {
            var damaged = bytes
            damaged[offset] = UInt8.random(in: 0...255, using: &rng)
            Self.write(damaged, path)
            guard let db = try? Database(path: path) else { continue }
            opened += 1
            for n in numbers.prefix(40) {
                _ = try? db.lookup(n)
                _ = try? db.lookup(n + 1)
            }
            var cursor = db.cursor()
            var previous: UInt64 = 0
            var steps = 0
            while let e = try? cursor.next() {
                #expect(e.number > previous)
                previous = e.number
                steps += 1
                if steps > numbers.count { Issue.record("enumeration did not terminate"); break }
            }
        }
        #expect(opened > 0)
    }

    /// A section table offset near 2^64 with a valid header checksum: refused, no overflow trap.
    @Test func hostileTableOffsetIsRefused() throws {
        let (bytes, dir) = try Self.sampleImage()
        let path = dir.path("x.cid")
        for offset: UInt64 in [0xFFFF_FFFF_FFFF_FFF0, UInt64(bytes.count), 0, 63] {
            var b = bytes
            b.replaceSubrange(40..<48, with: withUnsafeBytes(of: offset.littleEndian) { Array($0) })
            b.replaceSubrange(56..<64, with: withUnsafeBytes(of: Codec.xxh3(Array(b[0..<56])).littleEndian) { Array($0) })
            Self.write(b, path)
            #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.code == .corrupt }
        }
    }

    @Test func wrongMagicAndVersionHaveClearMessages() throws {
        let (bytes, dir) = try Self.sampleImage()
        let path = dir.path("x.cid")
        Self.write(Array("79131234567\tPizza\n".utf8) + bytes, path)
        #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.message.contains("bad magic") == true }

        var v2 = bytes
        v2[8] = 2
        v2.replaceSubrange(56..<64, with: withUnsafeBytes(of: Codec.xxh3(Array(v2[0..<56])).littleEndian) { Array($0) })
        Self.write(v2, path)
        #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.code == .unsupportedVersion }

        Self.write([], path)
        #expect { try Database(path: path) } throws: { ($0 as? CallerIDError)?.message.contains("empty") == true }
        #expect { try Database(path: dir.path("missing.cid")) } throws: { ($0 as? CallerIDError)?.code == .fileNotFound }
    }
}
