#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Reason text for the current `errno`.
func errnoMessage(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}

/// How a ``Database`` holds its file's bytes.
public enum DatabaseMapping: Sendable, Equatable {
    /// `mmap` the file read-only and shared (the default): opening costs nothing, pages come
    /// from the page cache and are shared between processes. The file must not be modified in
    /// place while it is open (replace it with `rename`): a truncated mapping raises SIGBUS.
    case map
    /// Read the whole file into private memory at open: immune to the file being rewritten or
    /// truncated afterwards, at the cost of the file's size in RAM and one read at open.
    case copy
}

/// What happened to a database's file since it was opened (see ``Database/fileChange``).
public enum DatabaseFileChange: Sendable, Equatable {
    /// The path still names the opened file, with the same size, mtime and ctime.
    case none
    /// The path now names another file (replaced with `rename`): the open database still reads
    /// the old file safely; reopen to see the new one.
    case replaced
    /// The path no longer exists; the open database still reads the old file safely.
    case removed
    /// The opened file itself was written, truncated or extended (`cp` over it, `>`,
    /// `truncate`): a mapped database may read changed bytes or fault (SIGBUS) past a new end.
    case modifiedInPlace
}

/// A whole file mapped read-only (or copied into memory); unmapped or freed when the last
/// reference goes away.
final class MappedFile: @unchecked Sendable {
    // @unchecked: the bytes are read-only and immutable for the object's lifetime.
    let path: String
    let bytes: ByteView
    let mode: DatabaseMapping
    private let mapping: UnsafeMutableRawPointer?
    private let copied: UnsafeMutableRawPointer?
    /// The identity and state of the file when it was opened (from `fstat` of the open descriptor).
    private let identity: FileIdentity

    struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: timespec
        var changed: timespec

        init(_ st: stat) {
            device = UInt64(st.st_dev)
            inode = UInt64(st.st_ino)
            size = Int64(st.st_size)
            modified = Platform.modificationTime(st)
            changed = Platform.changeTime(st)
        }

        static func == (a: FileIdentity, b: FileIdentity) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size
                && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    /// Maps (or copies) `path`. An empty file is not mapped (mmap refuses length 0): `bytes` is then empty.
    init(path: String, mode: DatabaseMapping = .map) throws(CallerIDError) {
        self.path = path
        self.mode = mode
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
        identity = FileIdentity(st)
        let size = Int(st.st_size)
        if size == 0 {
            mapping = nil
            copied = nil
            bytes = ByteView(base: ByteView.emptyBase, count: 0)
            return
        }
        switch mode {
        case .map:
            guard let p = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), p != MAP_FAILED else {
                throw CallerIDError(.io, "\(path): cannot map \(size) bytes: \(errnoMessage())")
            }
            mapping = p
            copied = nil
            bytes = ByteView(base: UnsafeRawPointer(p), count: size)
        case .copy:
            let p = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
            var done = 0
            while done < size {
                let n = read(fd, p + done, size - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    let message = n == 0 ? "the file shrank while it was read (\(done) of \(size) bytes)" : errnoMessage()
                    p.deallocate()
                    throw CallerIDError(.io, "\(path): cannot read into memory: \(message)")
                }
                done += n
            }
            mapping = nil
            copied = p
            bytes = ByteView(base: UnsafeRawPointer(p), count: size)
        }
    }

    /// Compares the file at `path` with the one opened: one `stat`, no descriptor kept.
    func change() -> DatabaseFileChange {
        var st = stat()
        guard stat(path, &st) == 0 else { return errno == ENOENT || errno == ENOTDIR ? .removed : .replaced }
        let now = FileIdentity(st)
        if now.device != identity.device || now.inode != identity.inode { return .replaced }
        return now == identity ? .none : .modifiedInPlace
    }

    /// Tells the kernel the whole file will be needed soon (the lookup path touches it randomly).
    func adviseWillNeed() {
        if let mapping { _ = madvise(mapping, bytes.count, MADV_WILLNEED) }
    }

    deinit {
        if let mapping { munmap(mapping, bytes.count) }
        copied?.deallocate()
    }
}

/// Writes a new file next to its final path and moves it into place atomically:
/// temporary file in the target directory, `fsync`, `rename`, `fsync` of the directory.
/// A failed or interrupted write never replaces the existing file.
///
/// The path is followed through symbolic links first: a link keeps pointing where it did and
/// its target (created if missing) gets the new contents, atomically. A FIFO, a device, a socket
/// or a descriptor link (`/dev/stdout`) is not a file to replace: it is opened and written in
/// place (streamed), and an interrupted write may leave part of the output there. An existing
/// regular file keeps its permission bits; a new one gets 0644.
///
/// A process killed between creating the temporary file (`.NAME.tmp-XXXXXX`) and renaming it
/// leaves that file behind; the next write to the same path removes such leftovers once they
/// are older than ``staleTemporaryAge`` (a live writer keeps its file's mtime fresh, and holds
/// an `flock` on it).
package struct AtomicFileWriter {
    /// The path asked for.
    package let path: String
    /// Where the bytes go: `path` after symbolic links.
    package let target: String
    /// True when writing in place to a FIFO, device or socket (no temporary file, no rename).
    package let isStream: Bool
    private let tempPath: String
    private var fd: Int32
    private var finished = false
    /// Seconds after which a leftover temporary file of the same target is considered abandoned.
    static let staleTemporaryAge = 3600

    package init(path: String) throws(CallerIDError) {
        self.path = path
        let resolved = try OutputPath.resolve(path)
        target = resolved.path
        switch resolved.kind {
        case .directory:
            throw CallerIDError(.io, "\(path): is a directory")
        case .stream:
            let fd = open(resolved.path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else {
                let e = errno
                throw CallerIDError(e == ENOENT ? .fileNotFound : .io, "\(path): cannot open for writing: \(errnoMessage(e))")
            }
            self.fd = fd
            self.isStream = true
            self.tempPath = ""
            return
        case .regular, .missing:
            break
        }
        isStream = false
        let (dir, name) = OutputPath.split(resolved.path)
        guard !name.isEmpty else { throw CallerIDError(.io, "\(path): not a file path") }
        AtomicFileWriter.removeStaleTemporaries(directory: dir, name: name, olderThan: AtomicFileWriter.staleTemporaryAge)
        var template = Array("\(dir)/.\(name).tmp-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            let e = errno
            throw CallerIDError(e == ENOENT || e == ENOTDIR ? .fileNotFound : .io,
                                "\(path): cannot create a temporary file in \(dir): \(errnoMessage(e))")
        }
        self.fd = fd
        self.tempPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        _ = flock(fd, LOCK_EX | LOCK_NB)
        var st = stat()
        let mode: mode_t = resolved.kind == .regular && stat(resolved.path, &st) == 0 ? st.st_mode & 0o7777 : 0o644
        _ = fchmod(fd, mode)
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
                  Int(now - Platform.modificationTime(st).tv_sec) > seconds else { continue }
            if unlink(full) == 0 { removed += 1 }
        }
        return removed
    }

    /// Appends bytes, retrying short writes and EINTR.
    package mutating func write(_ data: UnsafeRawBufferPointer) throws(CallerIDError) {
        var done = 0
        while done < data.count {
            let n = Platform.write(fd, data.baseAddress! + done, data.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                let message = "\(path): write failed: \(errnoMessage())"
                abandon()
                throw CallerIDError(.io, message)
            }
            done += n
        }
    }

    package mutating func write(_ data: [UInt8]) throws(CallerIDError) {
        guard !data.isEmpty else { return }
        try data.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try write(raw) } }.get()
    }

    /// Makes the file durable and moves it over its target (a stream is just closed).
    package mutating func commit() throws(CallerIDError) {
        if isStream {
            // fsync of a pipe or a terminal fails with EINVAL: there is nothing to make durable.
            let failed = fsync(fd) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP
            let message = "\(path): fsync failed: \(errnoMessage())"
            abandon()
            if failed { throw CallerIDError(.io, message) }
            return
        }
        guard fsync(fd) == 0 else {
            let message = "\(path): fsync failed: \(errnoMessage())"
            abandon()
            throw CallerIDError(.io, message)
        }
        close(fd)
        fd = -1
        guard rename(tempPath, target) == 0 else {
            let message = "\(path): cannot move the new file into place: \(errnoMessage())"
            unlink(tempPath)
            finished = true
            throw CallerIDError(.io, message)
        }
        finished = true
        DirectorySwitch.syncDirectory(OutputPath.split(target).directory)
    }

    /// Writes `bytes` as the whole new content of `path` in one step: open, write, commit. On
    /// any failure, fsync's included, the temporary file is removed and `path` is untouched.
    package static func write(_ bytes: [UInt8], to path: String) throws(CallerIDError) {
        var writer = try AtomicFileWriter(path: path)
        try writer.write(bytes)
        try writer.commit()
    }

    /// Removes the temporary file; the target path is left untouched.
    package mutating func abandon() {
        guard !finished else { return }
        if fd >= 0 { close(fd); fd = -1 }
        if !isStream { unlink(tempPath) }
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
        if fd > 0 { Platform.close(fd) }
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
