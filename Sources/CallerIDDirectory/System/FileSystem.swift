// The one file of this target with libc calls: fsync, rename, link, flock, statvfs, directory listing.
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
import Foundation
import CallerID

package enum FileSystem {
    static func ioError(_ path: String, _ what: String, _ code: Int32 = errno) -> DirectoryError {
        DirectoryError(code == ENOENT || code == ENOTDIR ? .fileNotFound : .io, "\(path): cannot \(what): \(Platform.errorText(code))")
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// Size of a regular file, nil when it is missing or not a regular file.
    package static func fileSize(_ path: String) -> Int? {
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(st.st_size)
    }

    package static func makeDirectory(_ path: String) throws(DirectoryError) {
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw ioError(path, "create directory") }
    }

    /// Flushes a file or directory to stable storage.
    package static func sync(_ path: String, directory: Bool = false) throws(DirectoryError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0))
        guard fd >= 0 else { throw ioError(path, "open for fsync") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw ioError(path, "fsync") }
    }

    package static func rename(_ from: String, _ to: String) throws(DirectoryError) {
        guard systemRename(from, to) == 0 else { throw ioError(from, "rename to \(to)") }
    }

    /// True when both paths name the same file (device and inode): one is a hard link of the other.
    static func sameFile(_ a: String, _ b: String) -> Bool {
        var x = stat(), y = stat()
        return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino
    }

    /// A hard link; false when the file system refuses (the caller copies instead).
    static func hardLink(_ from: String, _ to: String) -> Bool {
        link(from, to) == 0
    }

    /// Copies a file to a new file `to` (O_EXCL) through the package's one write loop, then
    /// fsyncs the copy. A failed copy is removed.
    static func copy(_ from: String, _ to: String) throws(DirectoryError) {
        let source = open(from, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw ioError(from, "open for copying") }
        defer { Platform.close(source) }
        let target = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard target >= 0 else { throw ioError(to, "create") }
        var failure: DirectoryError? = nil
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while failure == nil {
            let n = buffer.withUnsafeMutableBytes { Platform.read(source, into: $0) }
            if n < 0 { failure = ioError(from, "read"); break }
            if n == 0 { break }
            if let code = buffer.withUnsafeBytes({ Platform.writeAll(target, UnsafeRawBufferPointer(rebasing: $0[..<n])) }) {
                failure = ioError(to, "write", code)
            }
        }
        if failure == nil && fsync(target) != 0 { failure = ioError(to, "fsync") }
        Platform.close(target)
        if let failure {
            unlink(to)
            throw failure
        }
    }

    /// Writes a small file durably through the package's one atomic writer (CallerID's
    /// `AtomicFileWriter`): temporary file `.NAME.tmp-XXXXXX` beside `path`, fsync, rename over
    /// `path`, fsync of the folder. A failure leaves `path` as it was.
    static func writeAtomically(_ data: Data, to path: String) throws(DirectoryError) {
        do throws(CallerIDError) {
            try AtomicFileWriter.write([UInt8](data), to: path)
        } catch {
            throw DirectoryError(error)
        }
    }

    /// Names in a store folder that only a process killed while writing leaves behind: the
    /// atomic writer's `.CURRENT.tmp-XXXXXX`, and `*.dat.nosync*` temporaries of Foundation's
    /// atomic `createFile` (used by earlier versions). Only called under the store's lock.
    static func isWriteLeftover(_ name: String) -> Bool {
        (name.hasPrefix(".") && name.contains(".tmp-")) || name.contains(".dat.nosync")
    }

    /// Creates `path` with `mode` (O_EXCL: fails if it exists), writes `bytes`, fsyncs.
    static func createExclusively(_ bytes: [UInt8], at path: String, mode: mode_t) throws(DirectoryError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else {
            if errno == EEXIST { throw DirectoryError(.invalidArgument, "\(path): exists; refusing to overwrite") }
            throw ioError(path, "create")
        }
        var failed = bytes.withUnsafeBytes { Platform.writeAll(fd, $0) }
        if failed == nil && fsync(fd) != 0 { failed = errno }
        if let failed {
            close(fd)
            unlink(path)
            throw ioError(path, "write", failed)
        }
        close(fd)
    }

    /// A file written from its end (a download, the server's report log), fsynced by
    /// ``sync()`` or ``finish()``.
    package final class Appender {
        package let path: String
        private var fd: Int32

        /// Opens `path` for appending (created if missing); `truncate` empties it first.
        package init(_ path: String, truncate: Bool) throws(DirectoryError) {
            self.path = path
            fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0o644)
            guard fd >= 0 else { throw FileSystem.ioError(path, "open for writing") }
        }

        /// Empties the file (the server sent the whole file instead of the range asked for).
        func truncate() throws(DirectoryError) {
            guard ftruncate(fd, 0) == 0 else { throw FileSystem.ioError(path, "truncate") }
        }

        package func write(_ bytes: UnsafeRawBufferPointer) throws(DirectoryError) {
            if let code = Platform.writeAll(fd, bytes) { throw FileSystem.ioError(path, "write", code) }
        }

        package func write(_ bytes: [UInt8]) throws(DirectoryError) {
            if let code = bytes.withUnsafeBytes({ Platform.writeAll(fd, $0) }) { throw FileSystem.ioError(path, "write", code) }
        }

        /// Flushes what was written to stable storage, keeping the file open.
        package func sync() throws(DirectoryError) {
            guard fsync(fd) == 0 else { throw FileSystem.ioError(path, "fsync") }
        }

        /// Cuts the file to `size` bytes (what a failed write left past it goes).
        package func truncate(to size: Int) throws(DirectoryError) {
            guard ftruncate(fd, off_t(size)) == 0 else { throw FileSystem.ioError(path, "truncate") }
        }

        package func finish() throws(DirectoryError) {
            defer { close() }
            guard fsync(fd) == 0 else { throw FileSystem.ioError(path, "fsync") }
        }

        package func close() {
            if fd >= 0 { Platform.close(fd) }
            fd = -1
        }

        deinit { close() }
    }

    static func removeTree(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Bytes an unprivileged process may still write on the file system holding `path`
    /// (statvfs: available blocks × fragment size), nil when it cannot be asked.
    static func freeBytes(_ path: String) -> Int? {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return nil }
        let free = UInt64(st.f_bavail).multipliedReportingOverflow(by: UInt64(st.f_frsize))
        return free.overflow || free.partialValue > UInt64(Int.max) ? Int.max : Int(free.partialValue)
    }

    static func list(_ path: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    }

    /// A test seam for crash safety: the step of a store change named by the environment
    /// variable `CALLERID_TEST_KILL_AT` kills the process (SIGKILL) when it is reached:
    /// `downloaded` (a fetch's files staged in `.fetch/`), `staged` (a generation's files in
    /// its staging folder), `verified`, `planned` (slot plan written, folder synced), `renamed`
    /// (staging folder renamed `gen-N`), `switched` (`CURRENT` replaced). Unset in normal use.
    static let killPoint: String? = ProcessInfo.processInfo.environment["CALLERID_TEST_KILL_AT"]

    /// Kills the process here when ``killPoint`` names `step`.
    static func checkpoint(_ step: String) {
        if killPoint == step { kill(getpid(), SIGKILL) }
    }

    /// An exclusive advisory lock on `path` (created if needed), held until `body` returns.
    static func withLock<R>(_ path: String, _ body: () throws(DirectoryError) -> R) throws(DirectoryError) -> R {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ioError(path, "open lock file") }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { throw ioError(path, "lock") }
        defer { _ = flock(fd, LOCK_UN) }
        return try body()
    }
}

/// `rename(2)`, named through the C library module (Foundation has a `rename` of its own).
private func systemRename(_ a: String, _ b: String) -> Int32 {
    #if canImport(Glibc)
    Glibc.rename(a, b)
    #elseif canImport(Musl)
    Musl.rename(a, b)
    #else
    Darwin.rename(a, b)
    #endif
}

