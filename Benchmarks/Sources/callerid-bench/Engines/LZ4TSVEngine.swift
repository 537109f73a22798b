// "Just compress the text": the directory's TSV lines sorted by number, cut into blocks of
// at most 16 KB (whole lines), each compressed independently with LZ4 (fast, or HC level
// 12), and a block index (first number and offset of each block) so that a lookup
// decompresses one block. Layout: blocks, index (count + 1 offsets and count first
// numbers), footer [u64 blocks][u64 index offset][u64 largest raw block]["LZ4TSV01"].
import CBenchSupport
import Foundation

struct LZ4TSVEngine: Engine {
    /// 0: LZ4 fast (LZ4_compress_default); otherwise the LZ4HC level.
    var hcLevel: Int32 = 0
    var blockBytes = 16 * 1024

    func files(_ output: String) -> [String] { [output] }

    func build(tsv: String, output: String) throws {
        let dir = try TSVDirectory.load(tsv)
        var out = [UInt8]()
        var offsets: [UInt64] = [], firsts: [UInt64] = []
        var raw = [UInt8]()
        raw.reserveCapacity(blockBytes * 2)
        var packed = [UInt8](repeating: 0, count: Int(cb_lz4_bound(Int32(blockBytes * 2))))
        var largest = 0
        func flush() throws {
            guard !raw.isEmpty else { return }
            if packed.count < Int(cb_lz4_bound(Int32(raw.count))) {
                packed = [UInt8](repeating: 0, count: Int(cb_lz4_bound(Int32(raw.count))))
            }
            let n = raw.withUnsafeBytes { src in
                packed.withUnsafeMutableBytes { dst in
                    hcLevel == 0
                        ? cb_lz4_compress(src.baseAddress, dst.baseAddress, Int32(src.count), Int32(dst.count))
                        : cb_lz4_compress_hc(src.baseAddress, dst.baseAddress, Int32(src.count), Int32(dst.count), hcLevel)
                }
            }
            guard n > 0 else { throw BenchError("lz4: compression failed") }
            offsets.append(UInt64(out.count))
            out.append(contentsOf: packed[0..<Int(n)])
            largest = max(largest, raw.count)
            raw.removeAll(keepingCapacity: true)
        }
        dir.text.withUnsafeBufferPointer { text in
            for i in 0..<dir.count {
                let line = text[Int(dir.lineStart[i])..<Int(dir.lineStart[i] + dir.lineLength[i])]
                if !raw.isEmpty, raw.count + line.count + 1 > blockBytes { try? flush() }
                if raw.isEmpty { firsts.append(dir.numbers[i]) }
                raw.append(contentsOf: line)
                raw.append(0x0A)
            }
        }
        try flush()
        guard offsets.count == firsts.count else { throw BenchError("lz4: compression failed") }
        let indexOffset = out.count
        for o in offsets { out.appendLE(o) }
        out.appendLE(UInt64(indexOffset))  // end of the last block
        for f in firsts { out.appendLE(f) }
        out.appendLE(UInt64(offsets.count))
        out.appendLE(UInt64(indexOffset))
        out.appendLE(UInt64(largest))
        out.append(contentsOf: Array("LZ4TSV01".utf8))
        try writeDurably(out, to: output)
    }

    func open(_ output: String) throws -> Reader { try Reader(output) }

    final class Reader: EngineReader {
        let map: Mapped
        let blocks: Int
        let offsetsAt: Int, firstsAt: Int
        let buffer: UnsafeMutableRawBufferPointer

        init(_ path: String) throws {
            map = try Mapped(path)
            let f = map.count - 32
            guard f >= 0, map.u64(f + 24) == 0x3130_5653_5434_5A4C else { throw BenchError("\(path): not an LZ4 TSV file") }
            blocks = Int(map.u64(f))
            offsetsAt = Int(map.u64(f + 8))
            firstsAt = offsetsAt + (blocks + 1) * 8
            guard firstsAt + blocks * 8 == f else { throw BenchError("\(path): bad index") }
            buffer = .allocate(byteCount: Int(map.u64(f + 16)) + 64, alignment: 64)
        }

        deinit { buffer.deallocate() }

        /// Decompresses block `b` into the buffer; returns its size.
        @inline(__always) private func inflate(_ b: Int) throws -> Int {
            let from = Int(map.u64(offsetsAt + b * 8)), to = Int(map.u64(offsetsAt + b * 8 + 8))
            let n = cb_lz4_decompress(map.base + from, buffer.baseAddress, Int32(to - from), Int32(buffer.count))
            guard n >= 0 else { throw BenchError("lz4: block \(b) is damaged") }
            return Int(n)
        }

        func lookup(_ number: UInt64) throws -> Int? {
            // Last block whose first number ≤ number.
            var lo = 0, hi = blocks
            while lo < hi {
                let mid = (lo + hi) >> 1
                if map.u64(firstsAt + mid * 8) <= number { lo = mid + 1 } else { hi = mid }
            }
            guard lo > 0 else { return nil }
            let n = try inflate(lo - 1)
            let p = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var i = 0
            while i < n {
                // Parse the number only; skip the rest of the line with memchr (SIMD).
                var k: UInt64 = 0
                while p[i] != 0x09 { k = k &* 10 &+ UInt64(p[i] &- 0x30); i += 1 }
                i += 1
                let end = memchr(p + i, 0x0A, n - i).map { $0.assumingMemoryBound(to: UInt8.self) - p } ?? n
                if k == number {
                    let (len, cat) = Reader.labelAndCategory(p, i, end)
                    return len &+ Int(len > 0 ? p[i] : 0) &+ cat
                }
                if k > number { return nil }
                i = end + 1
            }
            return nil
        }

        /// The label length and whether a category column follows, for a line's fields [from, end).
        @inline(__always) static func labelAndCategory(_ p: UnsafeMutablePointer<UInt8>, _ from: Int, _ end: Int) -> (Int, Int) {
            guard let tab = cb_memrchr(p + from, 0x09, end - from) else { return (end - from, 0) }
            return (tab - UnsafeRawPointer(p) - from, 1)
        }

        func scan(sample: () -> Void) throws -> (entries: Int, checksum: Int) {
            var seen = 0, sum = 0
            let p = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            for b in 0..<blocks {
                let n = try inflate(b)
                var i = 0
                while i < n {
                    var k: UInt64 = 0
                    while p[i] != 0x09 { k = k &* 10 &+ UInt64(p[i] &- 0x30); i += 1 }
                    i += 1
                    let end = memchr(p + i, 0x0A, n - i).map { $0.assumingMemoryBound(to: UInt8.self) - p } ?? n
                    let (len, cat) = Reader.labelAndCategory(p, i, end)
                    sum &+= Int(truncatingIfNeeded: k) &+ len &+ Int(len > 0 ? p[i] : 0) &+ cat
                    i = end + 1
                    seen &+= 1
                    if seen & 65535 == 0 { sample() }
                }
            }
            return (seen, sum)
        }
    }
}
