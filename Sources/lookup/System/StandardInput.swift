#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One line of standard input, as `StdinLines` hands it out.
enum StdinLine {
    /// The line's raw bytes without its line end (a trailing CR is removed too).
    case line(ArraySlice<UInt8>)
    /// A line longer than ``StdinLines/maxLineBytes``: its first bytes (cut on a UTF-8
    /// boundary) and its full length; the rest was read and discarded, never buffered.
    case tooLong(prefix: [UInt8], length: Int)
}

/// Lines of standard input as raw bytes (no UTF-8 repair, so bad input is echoed as sent).
///
/// Linear in the input (each byte is scanned for the newline once) and bounded in memory:
/// a line longer than ``maxLineBytes`` is skipped while it is read, so a 50 MB line or
/// `/dev/zero` costs one read buffer, not the line. Reads with one `read(2)` at a time, so
/// lines typed or piped one by one are handed out as soon as they arrive; `beforeWaiting`
/// runs before every read that may block (a co-process flushes its answers there).
struct StdinLines {
    /// No phone number, however written, comes near this.
    static let maxLineBytes = 4096
    /// How much of an over-long line is kept to quote it.
    static let quotedPrefix = 64
    private static let chunk = 1 << 16

    private var buffer: [UInt8] = []
    private var readBuffer = [UInt8](repeating: 0, count: StdinLines.chunk)
    private var start = 0
    /// Bytes of `buffer[start...]` already scanned (no newline among them).
    private var scanned = 0
    private var eof = false
    /// While skipping an over-long line: its prefix and the bytes dropped so far.
    private var skipping: (prefix: [UInt8], dropped: Int)? = nil
    /// Reads done so far (a caller can tell that new input arrived).
    private(set) var reads = 0

    init() { buffer.reserveCapacity(StdinLines.chunk + StdinLines.maxLineBytes) }

    mutating func next(beforeWaiting: () -> Void = {}) throws(ToolError) -> StdinLine? {
        while true {
            if let nl = newline(from: start + scanned) {
                var line = buffer[start..<nl]
                start = nl + 1
                scanned = 0
                if let s = skipping {
                    skipping = nil
                    return .tooLong(prefix: s.prefix, length: s.dropped + line.count)
                }
                if line.count > StdinLines.maxLineBytes { return .tooLong(prefix: StdinLines.prefix(of: line), length: line.count) }
                if line.last == 0x0D { line = line.dropLast() }
                return .line(line)
            }
            scanned = buffer.count - start
            if scanned > StdinLines.maxLineBytes {
                // Too long already: keep its prefix, drop the rest as it comes.
                if skipping == nil { skipping = (StdinLines.prefix(of: buffer[start...]), 0) }
                skipping!.dropped += scanned
                buffer.removeAll(keepingCapacity: true)
                start = 0
                scanned = 0
            }
            if eof {
                if let s = skipping {
                    skipping = nil
                    let rest = buffer.count - start
                    start = buffer.count
                    return .tooLong(prefix: s.prefix, length: s.dropped + rest)
                }
                guard start < buffer.count else { return nil }
                var line = buffer[start...]
                start = buffer.count
                scanned = 0
                if line.last == 0x0D { line = line.dropLast() }
                return .line(line)
            }
            if start > 0 {
                buffer.removeSubrange(0..<start)  // at most one partial line (≤ maxLineBytes) moves
                start = 0
            }
            beforeWaiting()
            try fill()
        }
    }

    /// The index of the first newline in `buffer[from...]`.
    private func newline(from: Int) -> Int? {
        guard from < buffer.count else { return nil }
        return buffer.withUnsafeBytes { raw in
            memchr(raw.baseAddress! + from, 0x0A, raw.count - from).map { raw.baseAddress!.distance(to: UnsafeRawPointer($0)) }
        }
    }

    private mutating func fill() throws(ToolError) {
        var n: Int
        repeat {
            n = readBuffer.withUnsafeMutableBytes { read(0, $0.baseAddress!, $0.count) }
        } while n < 0 && errno == EINTR
        reads += 1
        if n < 0 { throw ToolError(code: Exit.ioError, message: "stdin: read failed: \(String(cString: strerror(errno)))") }
        if n == 0 { eof = true } else { buffer.append(contentsOf: readBuffer[0..<n]) }
    }

    /// The first ``quotedPrefix`` bytes of `line`, not cutting a UTF-8 sequence.
    private static func prefix(of line: ArraySlice<UInt8>) -> [UInt8] {
        var n = min(line.count, quotedPrefix)
        if n < line.count {
            var k = 0
            while n > 0, k < 3, line[line.startIndex + n] & 0xC0 == 0x80 { n -= 1; k += 1 }
        }
        return Array(line.prefix(n))
    }
}
