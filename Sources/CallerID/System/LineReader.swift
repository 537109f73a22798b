#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Splits a byte stream, given in chunks of any size, into lines (LF or CRLF; a trailing CR is
/// removed). The package's one line splitter: ``LineReader`` feeds it the chunks it reads from
/// a file descriptor, the pipeline the UTF-8 chunks of its decoders.
///
/// A line inside one chunk is handed out in place; only a line that crosses a chunk boundary
/// is copied (into `pending`). A line longer than `maxLineBytes` is never held: its bytes are
/// counted up to its line end and `overlong(lineNumber, lineBytes, prefix)` is called instead
/// of `line`, `prefix` holding its first `overlongPrefix` bytes. Memory stays at most about
/// `maxLineBytes` beyond the caller's chunk.
package struct LineSplitter {
    package private(set) var lineNumber = 0
    package var maxLineBytes: Int
    package var overlongPrefix: Int
    /// The start of a line that crosses a chunk boundary.
    private var pending: [UInt8] = []
    /// Inside a line over the limit: its bytes so far (nil otherwise), its first bytes, and
    /// whether the last byte counted was a CR (the CR of a CRLF split across chunks).
    private var skipped: Int? = nil
    private var skippedPrefix: [UInt8] = []
    private var skippedEndsInCR = false

    package init(maxLineBytes: Int = Int.max, overlongPrefix: Int = 0) {
        self.maxLineBytes = maxLineBytes
        self.overlongPrefix = overlongPrefix
    }

    /// Calls `line` for every line `chunk` completes, and with `final` (the end of the
    /// stream) for the unterminated rest.
    package mutating func feed<E: Error>(_ chunk: UnsafeRawBufferPointer, final: Bool,
                                         overlong: (_ lineNumber: Int, _ lineBytes: Int, _ prefix: [UInt8]) throws(E) -> Void,
                                         _ line: (_ bytes: UnsafeRawBufferPointer, _ lineNumber: Int) throws(E) -> Void) throws(E) {
        let n = chunk.count
        var start = 0
        while start < n {
            guard let found = memchr(chunk.baseAddress! + start, 0x0A, n - start) else { break }
            let nl = chunk.baseAddress!.distance(to: UnsafeRawPointer(found))
            lineNumber += 1
            let number = lineNumber
            var end = nl
            if let s = skipped {
                if end > start ? chunk[end - 1] == 0x0D : skippedEndsInCR { end -= 1 }
                let length = s + end - start
                keepPrefix(chunk, start, end)
                skipped = nil
                start = nl + 1
                try overlong(number, length, Array(skippedPrefix.prefix(length)))
            } else if pending.isEmpty {
                if end > start && chunk[end - 1] == 0x0D { end -= 1 }
                let s = start
                start = nl + 1
                if end - s > maxLineBytes {
                    try overlong(number, end - s, Array(chunk[s..<(s + min(overlongPrefix, end - s))]))
                } else {
                    try line(UnsafeRawBufferPointer(rebasing: chunk[s..<end]), number)
                }
            } else {
                pending.append(contentsOf: chunk[start..<nl])
                if pending.last == 0x0D { pending.removeLast() }
                start = nl + 1
                if pending.count > maxLineBytes {
                    let prefix = Array(pending.prefix(overlongPrefix))
                    let length = pending.count
                    pending.removeAll()
                    try overlong(number, length, prefix)
                } else {
                    try withPending(number, line)
                }
            }
        }
        if start < n {
            if let s = skipped {
                keepPrefix(chunk, start, n)
                skipped = s + n - start
                skippedEndsInCR = chunk[n - 1] == 0x0D
            } else if pending.count + n - start - 1 > maxLineBytes {
                // No line end, and more bytes than the limit and a CR: keep the first bytes,
                // count on to the line end.
                skippedPrefix = Array(pending.prefix(overlongPrefix))
                keepPrefix(chunk, start, n)
                skipped = pending.count + n - start
                skippedEndsInCR = chunk[n - 1] == 0x0D
                pending.removeAll()
            } else {
                pending.append(contentsOf: chunk[start..<n])
            }
        }
        guard final else { return }
        if let s = skipped {
            lineNumber += 1
            skipped = nil
            let length = skippedEndsInCR ? s - 1 : s
            try overlong(lineNumber, length, Array(skippedPrefix.prefix(length)))
        } else if !pending.isEmpty {
            lineNumber += 1
            if pending.last == 0x0D { pending.removeLast() }
            if pending.count > maxLineBytes {
                try overlong(lineNumber, pending.count, Array(pending.prefix(overlongPrefix)))
            } else {
                try withPending(lineNumber, line)
            }
        }
        pending.removeAll()
    }

    /// A line of ``lines(of:in:final:skipping:)``: where its bytes are, or the length of a line over the limit.
    package enum Place: Equatable, Sendable {
        /// The line's bytes are `bytes[start..<(start + count)]` of the returned buffer.
        case line(start: Int, count: Int, number: Int)
        case overlong(number: Int, bytes: Int)
    }

    /// The lines `chunk[range]` completes (and with `final` the unterminated rest), as places
    /// in the returned bytes: `chunk` itself, followed by copies of the lines that began before
    /// `range` (in an earlier chunk). For a reader that keeps the lines beyond the call (a
    /// second thread splits the next chunk while the first reads this one's lines);
    /// ``feed(_:final:overlong:_:)`` lends them instead. A chunk may be split in parts, each
    /// range starting where the one before ended. Lines `skipping` is true of get no place
    /// (their numbers are counted all the same).
    package mutating func lines(of chunk: consuming [UInt8], in range: Range<Int>? = nil, final: Bool,
                                skipping: (UnsafeRawBufferPointer) -> Bool = { _ in false }) -> (bytes: [UInt8], places: [Place]) {
        var places: [Place] = []
        var copied: [UInt8] = []
        let end = chunk.count
        let range = range ?? 0..<end
        precondition(range.lowerBound >= 0 && range.upperBound <= end, "lines(of:in:final:skipping:): range beyond the chunk")
        chunk.withUnsafeBytes { all in
            let raw = UnsafeRawBufferPointer(rebasing: all[range])
            let base = all.baseAddress.map { UnsafeRawPointer($0) }
            feed(raw, final: final, overlong: { (number, length, _) in
                places.append(.overlong(number: number, bytes: length))
            }, { (line, number) in
                if skipping(line) { return }
                // A line lent in place points into `chunk`; a held one into `pending`.
                if let base, let start = line.baseAddress, start >= base, start < base + end {
                    places.append(.line(start: base.distance(to: start), count: line.count, number: number))
                } else {
                    places.append(.line(start: end + copied.count, count: line.count, number: number))
                    copied.append(contentsOf: line)
                }
            })
        }
        var bytes = chunk   // (its last use: no copy when the caller gave its only reference)
        if !copied.isEmpty { bytes.append(contentsOf: copied) }
        return (bytes, places)
    }

    /// The index just after the `count`-th line feed of `bytes[range]`, or nil when it holds
    /// fewer: where to cut a chunk into parts of at most `count` lines.
    package static func end(ofLines count: Int, in bytes: [UInt8], _ range: Range<Int>) -> Int? {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count)
        return bytes.withUnsafeBytes { raw -> Int? in
            guard let base = raw.baseAddress else { return nil }
            var at = range.lowerBound
            var seen = 0
            while at < range.upperBound, let found = memchr(base + at, 0x0A, range.upperBound - at) {
                at = base.distance(to: UnsafeRawPointer(found)) + 1
                seen += 1
                if seen == count { return at }
            }
            return nil
        }
    }

    /// Adds `chunk[from..<to]` to the first bytes of a skipped line, up to `overlongPrefix`.
    private mutating func keepPrefix(_ chunk: UnsafeRawBufferPointer, _ from: Int, _ to: Int) {
        let room = overlongPrefix - skippedPrefix.count
        if room > 0 && to > from { skippedPrefix.append(contentsOf: chunk[from..<min(to, from + room)]) }
    }

    /// Hands out the held line and forgets it (keeping a buffer of up to 4 MiB for the next).
    private mutating func withPending<E: Error>(_ number: Int, _ line: (UnsafeRawBufferPointer, Int) throws(E) -> Void) throws(E) {
        defer { pending.removeAll(keepingCapacity: pending.count <= 4 << 20) }
        try pending.withUnsafeBytes { raw in Result { () throws(E) in try line(raw, number) } }.get()
    }
}

/// Reads a file (or standard input for "-") in chunks of 1 MiB and hands out whole lines
/// through a ``LineSplitter``. Memory stays bounded by the chunk size plus the longest line.
/// Used by the TSV import and `lookup -` (a co-process: `beforeRead` flushes its answers before
/// a read that may block; one `read(2)` at a time, so lines piped one by one are handed out at
/// once).
package struct LineReader {
    let path: String
    private var fd: Int32
    private var buffer: [UInt8]
    private var splitter = LineSplitter()
    package var lineNumber: Int { splitter.lineNumber }
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
    ///     instead of `body`, `prefix` holding its first `overlongPrefix` bytes.
    ///   - beforeRead: called before every `read(2)`, which may block on a pipe or a terminal
    ///     (an error it throws ends the reading).
    package mutating func forEachLine(maxLineBytes: Int = Int.max, overlongPrefix: Int = 0,
                                      beforeRead: () throws(CallerIDError) -> Void = {},
                                      overlong: (Int, Int, [UInt8]) throws(CallerIDError) -> Void = { _, _, _ in },
                                      _ body: (UnsafeRawBufferPointer, Int) throws(CallerIDError) -> Void) throws(CallerIDError) {
        splitter.maxLineBytes = maxLineBytes
        splitter.overlongPrefix = overlongPrefix
        while true {
            try beforeRead()
            let n = buffer.withUnsafeMutableBytes { raw in Platform.read(fd, into: raw) }
            if n < 0 { throw CallerIDError(.io, "\(path): read failed: \(errnoMessage())") }
            try buffer.withUnsafeBytes { raw in
                Result { () throws(CallerIDError) in
                    try splitter.feed(UnsafeRawBufferPointer(rebasing: raw[0..<n]), final: n == 0, overlong: overlong, body)
                }
            }.get()
            if n == 0 { return }
        }
    }
}
