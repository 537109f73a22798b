#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Reads a file (or standard input for "-") in large chunks and hands out whole lines.
/// Memory stays bounded by the chunk size plus the longest line. The package's one line reader:
/// the TSV import and `lookup -` (a co-process: `beforeRead` flushes its answers before a read
/// that may block; one `read(2)` at a time, so lines piped one by one are handed out at once).
package struct LineReader {
    let path: String
    private var fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var end = 0
    private var eof = false
    private(set) var lineNumber = 0
    private static let chunk = 1 << 20

    package init(path: String) throws(CallerIDError) {
        self.path = path
        if path == "-" {
            fd = 0
        } else {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let e = errno
                throw CallerIDError(e == ENOENT || e == ENOTDIR ? .fileNotFound : .io, "\(path): cannot open: \(errnoMessage(e))")
            }
        }
        buffer = [UInt8](repeating: 0, count: LineReader.chunk)
    }

    package mutating func close() {
        if fd > 0 { Platform.close(fd) }
        fd = -1
    }

    /// Calls `body` with each line's bytes (without the line end; a trailing CR is removed).
    ///
    /// - Parameters:
    ///   - maxLineBytes: a longer line is not held in memory: its bytes are counted and
    ///     dropped up to its line end, then `overlong(lineNumber, lineBytes, prefix)` is called
    ///     instead of `body`, `prefix` holding its first `overlongPrefix` bytes. Memory stays at
    ///     about two chunks plus `maxLineBytes`.
    ///   - firstBytes: called once with the bytes of the first read (to refuse binary input
    ///     before anything else happens).
    ///   - beforeRead: called before every `read(2)`, which may block on a pipe or a terminal.
    package mutating func forEachLine(maxLineBytes: Int = Int.max, overlongPrefix: Int = 0,
                                      firstBytes: (UnsafeRawBufferPointer) throws(CallerIDError) -> Void = { _ in },
                                      beforeRead: () -> Void = {},
                                      overlong: (Int, Int, [UInt8]) throws(CallerIDError) -> Void = { _, _, _ in },
                                      _ body: (UnsafeRawBufferPointer, Int) throws(CallerIDError) -> Void) throws(CallerIDError) {
        var sniffed = false
        var skipping = false   // inside a line longer than maxLineBytes
        var skipped = 0        // bytes of that line dropped so far
        var skippedPrefix: [UInt8] = []
        while true {
            // Find a newline in [start, end).
            var nl = -1
            buffer.withUnsafeBytes { raw in
                if end > start, let p = memchr(raw.baseAddress! + start, 0x0A, end - start) {
                    nl = raw.baseAddress!.distance(to: UnsafeRawPointer(p))
                }
            }
            if skipping {
                if nl >= 0 {
                    lineNumber += 1
                    var length = skipped + nl - start
                    if nl > start, buffer[nl - 1] == 0x0D { length -= 1 }
                    start = nl + 1
                    skipping = false
                    try overlong(lineNumber, length, skippedPrefix)
                    continue
                }
                skipped += end - start
                start = end
                if eof {
                    lineNumber += 1
                    try overlong(lineNumber, skipped, skippedPrefix)
                    start = 0; end = 0
                    return
                }
            } else if nl >= 0 {
                lineNumber += 1
                var lineEnd = nl
                if lineEnd > start, buffer[lineEnd - 1] == 0x0D { lineEnd -= 1 }
                let s = start, n = lineNumber
                start = nl + 1
                if lineEnd - s > maxLineBytes {
                    try overlong(n, lineEnd - s, Array(buffer[s..<(s + min(overlongPrefix, lineEnd - s))]))
                    continue
                }
                try buffer.withUnsafeBytes { raw in
                    Result { () throws(CallerIDError) in try body(UnsafeRawBufferPointer(rebasing: raw[s..<lineEnd]), n) }
                }.get()
                continue
            } else if end - start > maxLineBytes {
                // No line end within the limit: drop what is held and look for the line end.
                skipping = true
                skippedPrefix = Array(buffer[start..<(start + min(overlongPrefix, end - start))])
                skipped = end - start
                start = end
                continue
            } else if eof {
                if end > start {
                    lineNumber += 1
                    var lineEnd = end
                    if buffer[lineEnd - 1] == 0x0D { lineEnd -= 1 }
                    let s = start, n = lineNumber
                    try buffer.withUnsafeBytes { raw in
                        Result { () throws(CallerIDError) in try body(UnsafeRawBufferPointer(rebasing: raw[s..<lineEnd]), n) }
                    }.get()
                }
                start = 0; end = 0
                return
            }
            // Compact, grow if one line fills the buffer, then read more.
            if start > 0 {
                let pending = end - start
                buffer.withUnsafeMutableBytes { raw in
                    _ = memmove(raw.baseAddress!, raw.baseAddress! + start, pending)
                }
                start = 0; end = pending
            }
            if end == buffer.count {
                // An array, not repeatElement: appending that goes element by element (a 10 MB
                // line took seconds in a debug build).
                buffer.append(contentsOf: [UInt8](repeating: 0, count: buffer.count))
            }
            let capacity = buffer.count - end
            let e = end
            beforeRead()
            let n = buffer.withUnsafeMutableBytes { raw in read(fd, raw.baseAddress! + e, capacity) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CallerIDError(.io, "\(path): read failed: \(errnoMessage())")
            }
            if n == 0 { eof = true } else { end += n }
            if !sniffed && end > 0 {
                sniffed = true
                let count = end
                try buffer.withUnsafeBytes { raw in
                    Result { () throws(CallerIDError) in try firstBytes(UnsafeRawBufferPointer(rebasing: raw[0..<count])) }
                }.get()
            }
        }
    }
}
