// A read-only memory mapping of a whole file, unmapped when released.
import Foundation

final class Mapped {
    let base: UnsafeRawPointer
    let count: Int

    init(_ path: String) throws {
        let fd = Foundation.open(path, O_RDONLY)
        guard fd >= 0 else { throw BenchError("\(path): cannot open (errno \(errno))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size > 0 else { throw BenchError("\(path): empty or unreadable") }
        count = Int(st.st_size)
        guard let m = mmap(nil, count, PROT_READ, MAP_SHARED, fd, 0), m != MAP_FAILED else {
            throw BenchError("\(path): mmap failed (errno \(errno))")
        }
        base = UnsafeRawPointer(m)
    }

    deinit { munmap(UnsafeMutableRawPointer(mutating: base), count) }

    @inline(__always) func u16(_ at: Int) -> UInt16 { UInt16(littleEndian: base.loadUnaligned(fromByteOffset: at, as: UInt16.self)) }
    @inline(__always) func u64(_ at: Int) -> UInt64 { UInt64(littleEndian: base.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
}

/// Writes `bytes` to `path` and fsyncs it.
func writeDurably(_ bytes: [UInt8], to path: String) throws {
    let fd = Foundation.open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { throw BenchError("\(path): cannot create (errno \(errno))") }
    defer { close(fd) }
    var at = 0
    try bytes.withUnsafeBytes { raw in
        while at < raw.count {
            let w = write(fd, raw.baseAddress! + at, raw.count - at)
            guard w > 0 else { throw BenchError("\(path): write failed (errno \(errno))") }
            at += w
        }
    }
    guard fsync(fd) == 0 else { throw BenchError("\(path): fsync failed (errno \(errno))") }
}

extension Array where Element == UInt8 {
    mutating func appendLE<T: FixedWidthInteger>(_ v: T) {
        Swift.withUnsafeBytes(of: v.littleEndian) { append(contentsOf: $0) }
    }
}
