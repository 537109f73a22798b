// The naive stream a real deployment shipped (BRIEF.md §1): records
// [uint16 label size][uint64 number][label bytes], little-endian, in ascending order, and
// nothing else (no category, no index, no checksum). It is built for the ascending scan;
// a point lookup needs an index, which this engine builds in the heap when it opens the
// file (sorted keys + record offsets, 12 bytes per entry): open time and open heap show it.
import Foundation

struct StreamEngine: Engine {
    func files(_ output: String) -> [String] { [output] }

    func build(tsv: String, output: String) throws {
        let dir = try TSVDirectory.load(tsv)
        var out = [UInt8]()
        out.reserveCapacity(dir.count * 10 + dir.labelLength.reduce(0) { $0 + Int($1) })
        for i in 0..<dir.count {
            let n = min(Int(dir.labelLength[i]), Int(UInt16.max))
            out.appendLE(UInt16(n))
            out.appendLE(dir.numbers[i])
            dir.withLabel(i) { out.append(contentsOf: $0.prefix(n)) }
        }
        try writeDurably(out, to: output)
    }

    func open(_ output: String) throws -> Reader { try Reader(output) }

    final class Reader: EngineReader {
        let map: Mapped
        var keys: [UInt64] = []
        var offsets: [UInt32] = []

        init(_ path: String) throws {
            map = try Mapped(path)
            guard map.count < Int(UInt32.max) else { throw BenchError("\(path): too large for this index") }
            var at = 0
            while at + 10 <= map.count {
                keys.append(map.u64(at + 2))
                offsets.append(UInt32(at))
                at += 10 + Int(map.u16(at))
            }
            guard at == map.count else { throw BenchError("\(path): truncated record at \(at)") }
        }

        @inline(__always) func lookup(_ number: UInt64) throws -> Int? {
            var lo = 0, hi = keys.count
            while lo < hi {
                let mid = (lo &+ hi) >> 1
                if keys[mid] < number { lo = mid &+ 1 } else { hi = mid }
            }
            guard lo < keys.count, keys[lo] == number else { return nil }
            let at = Int(offsets[lo])
            let n = Int(map.u16(at))
            return n &+ Int(n > 0 ? map.base.load(fromByteOffset: at + 10, as: UInt8.self) : 0)
        }

        func scan(sample: () -> Void) throws -> (entries: Int, checksum: Int) {
            var at = 0, seen = 0, sum = 0
            let end = map.count
            while at + 10 <= end {
                let n = Int(map.u16(at))
                let k = map.u64(at + 2)
                sum &+= Int(truncatingIfNeeded: k) &+ n &+ Int(n > 0 ? map.base.load(fromByteOffset: at + 10, as: UInt8.self) : 0)
                at += 10 + n
                seen &+= 1
                if seen & 65535 == 0 { sample() }
            }
            return (seen, sum)
        }
    }
}
