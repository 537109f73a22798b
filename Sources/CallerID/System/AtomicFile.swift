#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

// The one way the package writes a file that must not be seen half-written: `AtomicFileWriter`
// (temporary file, fsync, rename, directory fsync) and `AtomicOutputFile`, its buffered front for
// modules that stream a large file (the Live Caller ID export). `package` access: not part of
// the library's public API.

/// Writes a new file next to its final path and moves it into place atomically:
/// temporary file in the target directory, `fsync`, `rename`, `fsync` of the directory.
/// A failed or interrupted write never replaces the existing file.
///
/// The path is followed through symbolic links first: a link keeps pointing where it did and
/// its target (created if missing) gets the new contents, atomically. A FIFO, a device, a socket
/// or a descriptor link (`/dev/stdout`) is not a file to replace: it is opened and written in
/// place (streamed), and an interrupted write may leave part of the output there. An existing
/// regular file keeps its permission bits; a new one gets 0666 less the umask (0644 under the
/// usual 022), as any file the process creates.
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

    /// The durability steps of ``commit()``, replaceable by tests: a fault-injection seam. A
    /// process killed with SIGKILL cannot show whether the file was synced before the rename
    /// (the page cache survives the kill); a recorded order of these calls, and an injected
    /// failure of each, can. Production code never changes them.
    package struct Steps {
        /// `fsync` of the temporary file's descriptor: 0 or -1 with `errno` set.
        package var syncFile: (Int32) -> Int32 = { fsync($0) }
        /// `rename(from, to)`: 0 or -1 with `errno` set.
        package var moveIntoPlace: (String, String) -> Int32 = { rename($0, $1) }
        /// `fsync` of the folder that holds the target, after the rename (best effort).
        package var syncDirectory: (String) -> Void = { DirectorySwitch.syncDirectory($0) }
        package init() {}
    }
    /// See ``Steps``.
    package var steps = Steps()

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
        // A new file gets 0666 less the umask, as any file the process creates.
        guard let (temp, fd) = OutputPath.createUnique(prefix: "\(dir)/.\(name).tmp-", directory: false) else {
            let e = errno
            throw CallerIDError(e == ENOENT || e == ENOTDIR ? .fileNotFound : .io,
                                "\(path): cannot create a temporary file in \(dir): \(errnoMessage(e))")
        }
        self.fd = fd
        self.tempPath = temp
        _ = flock(fd, LOCK_EX | LOCK_NB)
        // A replaced file keeps its permission bits.
        var st = stat()
        if resolved.kind == .regular && stat(resolved.path, &st) == 0 { _ = fchmod(fd, st.st_mode & 0o7777) }
    }

    /// Removes `directory/.NAME.tmp-XXXXXX` regular files (exactly the names
    /// `OutputPath.createUnique` makes for `name`) whose mtime is more than `seconds` old; returns how many were removed. Best effort:
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

    /// Appends bytes (all of them: ``Platform/writeAll(_:_:written:)``).
    package mutating func write(_ data: UnsafeRawBufferPointer) throws(CallerIDError) {
        if let code = Platform.writeAll(fd, data) {
            let message = "\(path): write failed: \(errnoMessage(code))"
            abandon()
            throw CallerIDError(.io, message)
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
        guard steps.syncFile(fd) == 0 else {
            let message = "\(path): fsync failed: \(errnoMessage())"
            abandon()
            throw CallerIDError(.io, message)
        }
        close(fd)
        fd = -1
        guard steps.moveIntoPlace(tempPath, target) == 0 else {
            let message = "\(path): cannot move the new file into place: \(errnoMessage())"
            unlink(tempPath)
            finished = true
            throw CallerIDError(.io, message)
        }
        finished = true
        steps.syncDirectory(OutputPath.split(target).directory)
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

/// Streams a new file through a fixed buffer into a temporary file beside `path` and moves it
/// into place with ``commit()`` (temporary file, `fsync`, `rename`, directory `fsync`: the
/// atomic writer's rules). Until then `path` is untouched; a file released without a commit,
/// or one whose write failed, removes its temporary file, so a failed export never leaves a
/// half-written file under the final name.
///
/// Heap use is the buffer (`bufferBytes`), whatever is written.
package final class AtomicOutputFile {
    package let path: String
    private var writer: AtomicFileWriter
    private var buffer: [UInt8]
    private let capacity: Int
    private var done = false
    /// Bytes written so far (buffered or not).
    package private(set) var bytesWritten = 0

    package init(path: String, bufferBytes: Int = 1 << 20) throws(CallerIDError) {
        self.path = path
        writer = try AtomicFileWriter(path: path)
        capacity = max(bufferBytes, 4096)
        buffer = []
        buffer.reserveCapacity(capacity)
    }

    deinit {
        writer.abandon()
    }

    /// Appends bytes; writes the buffer out when it is full.
    package func write(_ bytes: UnsafeRawBufferPointer) throws(CallerIDError) {
        guard !done else { throw CallerIDError(.io, "\(path): write after the file was finished") }
        bytesWritten += bytes.count
        if buffer.count + bytes.count > capacity {
            try flush()
            if bytes.count >= capacity {
                try writer.write(bytes)
                return
            }
        }
        buffer.append(contentsOf: bytes)
    }

    /// Appends bytes.
    package func write(_ bytes: [UInt8]) throws(CallerIDError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try write(raw) } }.get()
    }

    private func flush() throws(CallerIDError) {
        guard !buffer.isEmpty else { return }
        do {
            try buffer.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try writer.write(raw) } }.get()
        } catch {
            done = true
            throw error
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Writes what is buffered, makes the file durable and moves it over ``path``.
    package func commit() throws(CallerIDError) {
        guard !done else { throw CallerIDError(.io, "\(path): the file was already finished") }
        try flush()
        done = true
        try writer.commit()
    }

    /// Removes the temporary file; ``path`` is left as it was.
    package func abandon() {
        done = true
        writer.abandon()
    }
}
