// The peers' TSV import: what any of them needs before inserting in key order. The whole
// file is read into memory, rows are parsed (NUMBER<TAB>LABEL[<TAB>CATEGORY]), sorted by
// number, and a repeated number keeps its last row (as `lookup build` does).
import Foundation

final class TSVDirectory {
    /// The file's bytes; labels and lines are ranges of it.
    let text: [UInt8]
    /// Ascending, unique.
    private(set) var numbers: [UInt64] = []
    private(set) var lineStart: [UInt32] = []
    private(set) var lineLength: [UInt32] = []
    private(set) var labelStart: [UInt32] = []
    private(set) var labelLength: [UInt32] = []
    private(set) var category: [UInt8] = []
    /// Category names by index; 0 is "identify" (an empty or missing column).
    private(set) var categoryNames: [String] = ["identify"]
    var count: Int { numbers.count }

    private init(text: [UInt8]) { self.text = text }

    static func load(_ path: String) throws -> TSVDirectory {
        let d = TSVDirectory(text: try readFile(path))
        try d.parse(path)
        return d
    }

    @inline(__always) func withLabel<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try text.withUnsafeBytes { raw in
            try body(UnsafeRawBufferPointer(rebasing: raw[Int(labelStart[i])..<Int(labelStart[i] + labelLength[i])]))
        }
    }

    private struct Row: Comparable {
        var number: UInt64
        var index: UInt32
        static func < (a: Row, b: Row) -> Bool { a.number != b.number ? a.number < b.number : a.index < b.index }
    }

    private func parse(_ path: String) throws {
        guard text.count < Int(UInt32.max) else { throw BenchError("\(path): larger than 4 GB") }
        var rows: [Row] = []
        var ls: [UInt32] = [], ll: [UInt32] = [], lbs: [UInt32] = [], lbl: [UInt32] = []
        var cats: [UInt8] = []
        var names: [[UInt8]] = [Array("identify".utf8)]
        rows.reserveCapacity(text.count / 24)
        try text.withUnsafeBufferPointer { b in
            var i = 0
            var lineNo = 0
            let n = b.count
            while i < n {
                lineNo += 1
                let start = i
                var number: UInt64 = 0
                var digits = 0
                while i < n, b[i] != 0x09, b[i] != 0x0A {
                    let c = b[i] &- 0x30
                    guard c < 10 else { throw BenchError("\(path):\(lineNo): number is not digits") }
                    number = number &* 10 &+ UInt64(c)
                    digits += 1
                    i += 1
                }
                guard digits > 0, digits <= 15 else { throw BenchError("\(path):\(lineNo): bad number") }
                var labelFrom = i, labelTo = i
                var cat: UInt8 = 0
                if i < n, b[i] == 0x09 {
                    i += 1
                    labelFrom = i
                    while i < n, b[i] != 0x09, b[i] != 0x0A { i += 1 }
                    labelTo = i
                    if i < n, b[i] == 0x09 {
                        i += 1
                        let cs = i
                        while i < n, b[i] != 0x09, b[i] != 0x0A { i += 1 }
                        if i > cs {
                            let name = b[cs..<i]
                            if let k = names.firstIndex(where: { $0.elementsEqual(name) }) {
                                cat = UInt8(k)
                            } else {
                                guard names.count < 256 else { throw BenchError("\(path): more than 256 categories") }
                                names.append(Array(name))
                                cat = UInt8(names.count - 1)
                            }
                        }
                        while i < n, b[i] != 0x0A { i += 1 }  // extra columns (weight)
                    }
                }
                var end = i
                if end > start, b[end - 1] == 0x0D { end -= 1; if labelTo > end { labelTo = end } }
                rows.append(Row(number: number, index: UInt32(rows.count)))
                ls.append(UInt32(start))
                ll.append(UInt32(end - start))
                lbs.append(UInt32(labelFrom))
                lbl.append(UInt32(labelTo - labelFrom))
                cats.append(cat)
                i += 1  // newline
            }
        }
        rows.sort()
        // Keep the last row of each number.
        var keep: [Int] = []
        keep.reserveCapacity(rows.count)
        numbers.reserveCapacity(rows.count)
        for (j, r) in rows.enumerated() where j + 1 == rows.count || rows[j + 1].number != r.number {
            keep.append(Int(r.index))
            numbers.append(r.number)
        }
        lineStart = keep.map { ls[$0] }
        lineLength = keep.map { ll[$0] }
        labelStart = keep.map { lbs[$0] }
        labelLength = keep.map { lbl[$0] }
        category = keep.map { cats[$0] }
        categoryNames = names.map { String(decoding: $0, as: UTF8.self) }
    }
}

func readFile(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw BenchError("\(path): cannot open (errno \(errno))") }
    defer { close(fd) }
    let size = Int(lseek(fd, 0, SEEK_END))
    lseek(fd, 0, SEEK_SET)
    return try [UInt8](unsafeUninitializedCapacity: size) { buf, initialized in
        var at = 0
        while at < size {
            let r = read(fd, buf.baseAddress! + at, size - at)
            guard r > 0 else { throw BenchError("\(path): read failed (errno \(errno))") }
            at += r
        }
        initialized = size
    }
}
