#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Reason text for the current `errno`.
func errnoMessage(_ code: Int32 = errno) -> String {
    Platform.errorText(code)
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

/// Which file a path named, and its state: device, inode, size, modification and change times
/// (from `stat`). Two equal identities are the same file, unchanged; a file replaced by rename
/// has another inode, one written in place another size or time.
package struct FileIdentity: Equatable, Sendable {
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    var modified: (seconds: Int64, nanoseconds: Int64)
    var changed: (seconds: Int64, nanoseconds: Int64)

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        let m = Platform.modificationTime(st), c = Platform.changeTime(st)
        modified = (Int64(m.tv_sec), Int64(m.tv_nsec))
        changed = (Int64(c.tv_sec), Int64(c.tv_nsec))
    }

    /// The identity of what `path` names now (following symbolic links); nil when it cannot
    /// be stat'ed (missing, or a folder on the way is).
    package init?(path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        self.init(st)
    }

    package static func == (a: FileIdentity, b: FileIdentity) -> Bool {
        a.device == b.device && a.inode == b.inode && a.size == b.size
            && a.modified == b.modified && a.changed == b.changed
    }
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
    /// The mapping's entry in ``MappingGuard``'s registry (nil: copied, empty, or not registered).
    private let guarded: UnsafeMutableRawPointer?
    /// The identity and state of the file when it was opened (from `fstat` of the open descriptor).
    private let identity: FileIdentity

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
            guarded = nil
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
            guarded = MappingGuard.register(p, count: size)
            bytes = ByteView(base: UnsafeRawPointer(p), count: size)
        case .copy:
            let p = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
            var done = 0
            while done < size {
                let n = Platform.read(fd, into: UnsafeMutableRawBufferPointer(start: p + done, count: size - done))
                guard n > 0 else {
                    let message = n == 0 ? "the file shrank while it was read (\(done) of \(size) bytes)" : errnoMessage()
                    p.deallocate()
                    throw CallerIDError(.io, "\(path): cannot read into memory: \(message)")
                }
                done += n
            }
            mapping = nil
            copied = p
            guarded = nil
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

    /// True once a read of the mapping faulted past the file's end and read zeros instead
    /// (``MappingGuard``): what was read from it may be wrong.
    var faulted: Bool { MappingGuard.faulted(guarded) }

    deinit {
        // Out of the registry before the addresses can be given to another mapping.
        MappingGuard.unregister(guarded)
        if let mapping { munmap(mapping, bytes.count) }
        copied?.deallocate()
    }
}
