#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
package import CallerID
package import CallerIDQuery

/// Now as `2026-01-31T12:34:56.789Z`.
package func utcTimestamp() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var t = time_t(now.tv_sec)
    var parts = tm()
    gmtime_r(&t, &parts)
    func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
    let ms = Int(now.tv_nsec / 1_000_000)
    let millis = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)Z"
}

/// A file opened for appending (created 0640 when missing), written with ``StandardStream``;
/// `-` is standard output.
package func openAppending(_ path: String) throws(QueryError) -> StandardStream {
    if path == "-" { return .output }
    let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
    guard fd >= 0 else {
        throw QueryError(.io, "\(path): cannot open for writing: \(Platform.errorText(errno))")
    }
    return StandardStream(descriptor: fd)
}

/// Bytes written once, then read back in order: held in memory up to `memoryLimit`, beyond
/// that in an unnamed temporary file (created in `$TMPDIR` or /tmp and unlinked at once), so a
/// request body of any allowed size costs a bounded amount of memory.
///
/// Invariant: `fd` is -1 or an open descriptor this object owns (closed in `deinit`); the bytes
/// written are `memory` when `fd` is -1, else the file's first `written` bytes.
package final class Spool {
    private var memory: [UInt8] = []
    private var fd: Int32 = -1
    private var written = 0
    private var readOffset = 0
    private let memoryLimit: Int

    package init(memoryLimit: Int = 1 << 20) {
        self.memoryLimit = memoryLimit
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// Bytes written.
    package var count: Int { fd >= 0 ? written : memory.count }

    package func append(_ bytes: UnsafeRawBufferPointer) throws(QueryError) {
        if fd < 0 {
            if memory.count + bytes.count <= memoryLimit {
                memory.append(contentsOf: bytes)
                return
            }
            try spill()
        }
        try writeAll(bytes)
    }

    package func append(_ bytes: [UInt8]) throws(QueryError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(QueryError) in try append(raw) } }.get()
    }

    /// The next bytes, at most `max`, replacing `buffer`'s contents; false at the end.
    package func read(into buffer: inout [UInt8], max: Int) throws(QueryError) -> Bool {
        buffer.removeAll(keepingCapacity: true)
        let n = min(max, count - readOffset)
        guard n > 0 else { return false }
        if fd < 0 {
            buffer.append(contentsOf: memory[readOffset..<(readOffset + n)])
        } else {
            buffer.reserveCapacity(n)
            var got = 0
            while got < n {
                let r = withUnsafeTemporaryAllocation(byteCount: n - got, alignment: 1) { raw in
                    let r = pread(fd, raw.baseAddress!, n - got, off_t(readOffset + got))
                    if r > 0 { buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[0..<r])) }
                    return r
                }
                if r < 0 && errno == EINTR { continue }
                guard r > 0 else { throw QueryError(.io, "request body spool: read failed: \(Platform.errorText(errno))") }
                got += r
            }
        }
        readOffset += n
        return true
    }

    private func spill() throws(QueryError) {
        let directory = (getenv("TMPDIR").map { String(cString: $0) }).flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((directory + "/lookup-serve-body-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard made >= 0 else {
            throw QueryError(.io, "\(directory): cannot create a file for a request body: \(Platform.errorText(errno))")
        }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        _ = fcntl(made, F_SETFD, FD_CLOEXEC)
        fd = made
        let held = memory
        memory = []
        try held.withUnsafeBytes { raw in Result { () throws(QueryError) in try writeAll(raw) } }.get()
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws(QueryError) {
        if let code = Platform.writeAll(fd, bytes, written: { written += $0 }) {
            throw QueryError(.io, "request body spool: write failed: \(Platform.errorText(code))")
        }
    }
}
