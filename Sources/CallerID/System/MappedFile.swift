#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Reason text for the current `errno`.
func errnoMessage(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}

/// A whole file mapped read-only; unmapped when the last reference goes away.
final class MappedFile: @unchecked Sendable {
    // @unchecked: the mapping is read-only and immutable for the object's lifetime.
    let path: String
    let bytes: ByteView
    private let mapping: UnsafeMutableRawPointer?

    /// Maps `path`. An empty file is not mapped (mmap refuses length 0): `bytes` is then empty.
    init(path: String) throws(CallerIDError) {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            throw CallerIDError(e == ENOENT || e == ENOTDIR ? .fileNotFound : .io, "\(path): cannot open: \(errnoMessage(e))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw CallerIDError(.io, "\(path): cannot stat: \(errnoMessage())")
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw CallerIDError(.io, "\(path): not a regular file")
        }
        let size = Int(st.st_size)
        if size == 0 {
            mapping = nil
            bytes = ByteView(base: ByteView.emptyBase, count: 0)
            return
        }
        guard let p = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), p != MAP_FAILED else {
            throw CallerIDError(.io, "\(path): cannot map \(size) bytes: \(errnoMessage())")
        }
        mapping = p
        bytes = ByteView(base: UnsafeRawPointer(p), count: size)
    }

    /// Tells the kernel the whole file will be needed soon (the lookup path touches it randomly).
    func adviseWillNeed() {
        if let mapping { _ = madvise(mapping, bytes.count, MADV_WILLNEED) }
    }

    deinit {
        if let mapping { munmap(mapping, bytes.count) }
    }
}

/// Writes a new file next to its final path and moves it into place atomically:
/// temporary file in the target directory, `fsync`, `rename`, `fsync` of the directory.
/// A failed or interrupted write never replaces the existing file.
///
/// A process killed between creating the temporary file (`.NAME.tmp-XXXXXX`) and renaming it
/// leaves that file behind; the next write to the same path removes such leftovers once they
/// are older than ``staleTemporaryAge`` (a live writer keeps its file's mtime fresh).
struct AtomicFileWriter {
    let path: String
    private let tempPath: String
    private var fd: Int32
    private var finished = false
    /// Seconds after which a leftover temporary file of the same target is considered abandoned.
    static let staleTemporaryAge = 3600

    init(path: String) throws(CallerIDError) {
        self.path = path
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard !name.isEmpty else { throw CallerIDError(.io, "\(path): not a file path") }
        AtomicFileWriter.removeStaleTemporaries(directory: dir.isEmpty ? "/" : dir, name: name,
                                                olderThan: AtomicFileWriter.staleTemporaryAge)
        var template = Array("\(dir.isEmpty ? "/" : dir)/.\(name).tmp-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            let e = errno
            throw CallerIDError(e == ENOENT ? .fileNotFound : .io,
                                "\(path): cannot create a temporary file in \(dir.isEmpty ? "/" : dir): \(errnoMessage(e))")
        }
        self.fd = fd
        self.tempPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        _ = fchmod(fd, 0o644)
    }

    /// Removes `directory/.NAME.tmp-XXXXXX` regular files (exactly the names `mkstemp` makes for
    /// `name`) whose mtime is more than `seconds` old; returns how many were removed. Best effort:
    /// errors are ignored, other files are never touched.
    @discardableResult
    static func removeStaleTemporaries(directory: String, name: String, olderThan seconds: Int) -> Int {
        guard let d = opendir(directory) else { return 0 }
        defer { closedir(d) }
        let prefix = Array(".\(name).tmp-".utf8)
        let now = time(nil)
        var removed = 0
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(d) {
            // The name in place, up to its NUL: a dirent is only `d_reclen` bytes long, so
            // copying the whole 256-byte `d_name` array can read past the end of the buffer.
            let namePointer = UnsafeRawPointer(entry) + nameOffset
            let length = strlen(namePointer.assumingMemoryBound(to: CChar.self))
            let candidate = Array(UnsafeRawBufferPointer(start: namePointer, count: length))
            guard candidate.count == prefix.count + 6, candidate.starts(with: prefix) else { continue }
            let full = directory + "/" + String(decoding: candidate, as: UTF8.self)
            var st = stat()
            guard lstat(full, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG,
                  Int(now - st.st_mtim.tv_sec) > seconds else { continue }
            if unlink(full) == 0 { removed += 1 }
        }
        return removed
    }

    /// Appends bytes, retrying short writes and EINTR.
    mutating func write(_ data: UnsafeRawBufferPointer) throws(CallerIDError) {
        var done = 0
        while done < data.count {
            let n = Glibc.write(fd, data.baseAddress! + done, data.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                let message = "\(path): write failed: \(errnoMessage())"
                abandon()
                throw CallerIDError(.io, message)
            }
            done += n
        }
    }

    mutating func write(_ data: [UInt8]) throws(CallerIDError) {
        guard !data.isEmpty else { return }
        try data.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try write(raw) } }.get()
    }

    /// Makes the file durable and moves it over `path`.
    mutating func commit() throws(CallerIDError) {
        guard fsync(fd) == 0 else {
            let message = "\(path): fsync failed: \(errnoMessage())"
            abandon()
            throw CallerIDError(.io, message)
        }
        close(fd)
        fd = -1
        guard rename(tempPath, path) == 0 else {
            let message = "\(path): cannot move the new file into place: \(errnoMessage())"
            unlink(tempPath)
            finished = true
            throw CallerIDError(.io, message)
        }
        finished = true
        let dir = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let dfd = open(dir.isEmpty ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }

    /// Removes the temporary file; the target path is left untouched.
    mutating func abandon() {
        guard !finished else { return }
        if fd >= 0 { close(fd); fd = -1 }
        unlink(tempPath)
        finished = true
    }
}

/// Reads a file (or standard input for "-") in large chunks and hands out whole lines.
/// Memory stays bounded by the chunk size plus the longest line.
struct LineReader {
    let path: String
    private var fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var end = 0
    private var eof = false
    private(set) var lineNumber = 0
    private static let chunk = 1 << 20

    init(path: String) throws(CallerIDError) {
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

    mutating func close() {
        if fd > 0 { _ = Glibc.close(fd) }
        fd = -1
    }

    /// Calls `body` with each line's bytes (without the line end; a trailing CR is removed).
    ///
    /// - Parameters:
    ///   - maxLineBytes: a longer line is not held in memory: its bytes are counted and
    ///     dropped up to its line end, then `overlong(lineNumber, lineBytes)` is called
    ///     instead of `body`. Memory stays at about two chunks plus `maxLineBytes`.
    ///   - firstBytes: called once with the bytes of the first read (to refuse binary input
    ///     before anything else happens).
    mutating func forEachLine(maxLineBytes: Int = Int.max,
                              firstBytes: (UnsafeRawBufferPointer) throws(CallerIDError) -> Void = { _ in },
                              overlong: (Int, Int) throws(CallerIDError) -> Void = { _, _ in },
                              _ body: (UnsafeRawBufferPointer, Int) throws(CallerIDError) -> Void) throws(CallerIDError) {
        var sniffed = false
        var skipping = false   // inside a line longer than maxLineBytes
        var skipped = 0        // bytes of that line dropped so far
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
                    try overlong(lineNumber, length)
                    continue
                }
                skipped += end - start
                start = end
                if eof {
                    lineNumber += 1
                    try overlong(lineNumber, skipped)
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
                    try overlong(n, lineEnd - s)
                    continue
                }
                try buffer.withUnsafeBytes { raw in
                    Result { () throws(CallerIDError) in try body(UnsafeRawBufferPointer(rebasing: raw[s..<lineEnd]), n) }
                }.get()
                continue
            } else if end - start > maxLineBytes {
                // No line end within the limit: drop what is held and look for the line end.
                skipping = true
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
