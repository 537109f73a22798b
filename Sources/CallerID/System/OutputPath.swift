// Where outputs go: symlinks followed to their target, devices and pipes streamed to, output
// directories switched in one step. The libc calls of output handling live here (and in the
// atomic writer of MappedFile.swift); callers in the other modules use the `package` API.
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import CPortable

/// What an output path leads to once symbolic links are followed.
package struct ResolvedOutput: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        /// Nothing there yet (a dangling link's target included): written atomically.
        case missing
        /// A regular file: replaced atomically (temporary file, fsync, rename) at `path`.
        case regular
        case directory
        /// A FIFO, a device, a socket, or a file reached through a descriptor link
        /// (`/dev/stdout`, `/proc/self/fd/N`): opened and written in place, never replaced.
        case stream
    }
    /// The path to write: the last link's target, or the path itself.
    package var path: String
    package var kind: Kind
}

package enum OutputPath {
    /// Links followed at most (Linux's own limit is 40).
    static let maxLinks = 40

    /// The directory part and the last component of `path` ("." for a bare name, "/" at the root).
    package static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let dir = String(path[..<slash])
        return (dir.isEmpty ? "/" : dir, String(path[path.index(after: slash)...]))
    }

    /// `path` without trailing slashes (`out/` and `out//` name `out`; `/` stays `/`), so that
    /// names joined to it have one slash.
    package static func withoutTrailingSlashes(_ path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        return String(trimmed)
    }

    /// Follows `path` through symbolic links to what a write should touch.
    /// - Throws: `.io` for a link loop or an unreadable link, `.fileNotFound` when a directory
    ///   on the way is missing.
    package static func resolve(_ path: String) throws(CallerIDError) -> ResolvedOutput {
        // `out/` names `out`: the slash only says "a directory" to a person.
        let path = withoutTrailingSlashes(path)
        var current = path
        // Anything that is not a regular file or a directory (after every link) is streamed to:
        // stat(2) follows descriptor links (/proc/self/fd/1 → "pipe:[…]") that readlink cannot.
        var st = stat()
        if stat(path, &st) == 0 {
            let type = st.st_mode & S_IFMT
            if type != S_IFREG && type != S_IFDIR { return ResolvedOutput(path: path, kind: .stream) }
        }
        for _ in 0...maxLinks {
            var lst = stat()
            guard lstat(current, &lst) == 0 else {
                let e = errno
                if e == ENOENT { return ResolvedOutput(path: current, kind: .missing) }
                throw CallerIDError(e == ENOTDIR ? .fileNotFound : .io, "\(current): cannot look at the output: \(errnoMessage(e))")
            }
            switch lst.st_mode & S_IFMT {
            case S_IFREG: return ResolvedOutput(path: current, kind: .regular)
            case S_IFDIR: return ResolvedOutput(path: current, kind: .directory)
            case S_IFLNK: break
            default: return ResolvedOutput(path: current, kind: .stream)
            }
            if isDescriptorLink(current) {
                // `/dev/stdout` redirected to a file: write the open file in place, as a shell would.
                return ResolvedOutput(path: current, kind: .stream)
            }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink(current, &buffer, buffer.count - 1)
            guard n >= 0 else { throw CallerIDError(.io, "\(current): cannot read the link: \(errnoMessage())") }
            let target = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = target.hasPrefix("/") ? target : split(current).directory + "/" + target
        }
        throw CallerIDError(.io, "\(path): too many levels of symbolic links")
    }

    /// Creates `prefix` followed by 6 random letters and digits, exclusively (a new name, never
    /// an existing one), as `mkstemp` and `mkdtemp` do, but with the permissions the process
    /// gives new files and folders: 0666 or 0777 less the umask (`mkstemp` makes 0600 and
    /// `mkdtemp` 0700 whatever the umask, and a published build kept them). A file is returned
    /// open for writing; a directory with descriptor -1. Nil with `errno` set on failure.
    static func createUnique(prefix: String, directory: Bool) -> (path: String, fd: Int32)? {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var random = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let suffix = String(decoding: (0..<6).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }, as: UTF8.self)
            let path = prefix + suffix
            if directory {
                if mkdir(path, 0o777) == 0 { return (path, -1) }
            } else {
                let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
                if fd >= 0 { return (path, fd) }
            }
            if errno != EEXIST { return nil }
        }
        return nil
    }

    /// `/proc/…/fd/N` and `/dev/fd/N`: links to open descriptors, not to names.
    private static func isDescriptorLink(_ path: String) -> Bool {
        let dir = split(path).directory
        return dir == "/dev/fd" || (dir.hasPrefix("/proc/") && dir.hasSuffix("/fd"))
    }
}

/// Puts a freshly written output directory in place of the previous one.
///
/// Readers see the old directory or the new one, never none: where the OS can swap two
/// directories in one step (Linux `renameat2(RENAME_EXCHANGE)`, Darwin `renamex_np(RENAME_SWAP)`)
/// the switch is that swap. Elsewhere it is two renames (the old directory goes to `.NAME.old-…`
/// first); a process killed between them leaves no `NAME`, and ``recover(_:)`` (run at the start
/// of the next build) renames the old one back. Temporary directories are locked (`flock`) while
/// their build runs, so ``removeLeftovers(of:)`` removes only those of dead builds.
package enum DirectorySwitch {
    /// Points where a test can stop a build (see ``install(_:at:allowExchange:hook:)``).
    package enum Step: String, Sendable, CaseIterable {
        case beforeSwitch = "before-switch"
        /// Two-rename fallback only: the old directory moved away, the new one not yet in.
        case betweenRenames = "between-renames"
        /// The new directory in place, the old one not yet removed.
        case afterSwitch = "after-switch"
    }

    /// A `.NAME.tmp-XXXXXX` directory next to the output, locked until ``close()``.
    package final class TemporaryDirectory {
        package let path: String
        private var fd: Int32

        init(path: String, fd: Int32) {
            self.path = path
            self.fd = fd
        }

        /// Releases the lock (the directory itself is left as it is).
        package func close() {
            if fd >= 0 { _ = systemClose(fd) }
            fd = -1
        }

        deinit { close() }
    }

    /// Creates and locks a temporary directory for a build of `target`.
    package static func makeTemporaryDirectory(for target: String) throws(CallerIDError) -> TemporaryDirectory {
        let (dir, name) = OutputPath.split(target)
        // Made as any new folder is (0777 less the umask): it becomes the output.
        guard let (path, _) = OutputPath.createUnique(prefix: "\(dir)/.\(name).tmp-", directory: true) else {
            let e = errno
            throw CallerIDError(e == ENOENT || e == ENOTDIR ? .fileNotFound : .io,
                                "\(target): cannot create a temporary directory in \(dir): \(errnoMessage(e))")
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { _ = flock(fd, LOCK_EX | LOCK_NB) }
        return TemporaryDirectory(path: path, fd: fd)
    }

    /// Moves the directory `new` to `target`: atomically swapped with an existing `target` when
    /// the OS allows it (and `allowExchange`), else two renames. The old directory is removed.
    /// `hook` runs at each ``Step`` (a test seam: it may end the process there).
    package static func install(_ new: String, at target: String, allowExchange: Bool = true,
                                hook: (Step) -> Void = { _ in }) throws(CallerIDError) {
        let (dir, name) = OutputPath.split(target)
        hook(.beforeSwitch)
        var st = stat()
        guard lstat(target, &st) == 0 else {
            guard rename(new, target) == 0 else {
                throw CallerIDError(.io, "\(target): cannot move the new directory into place: \(errnoMessage())")
            }
            syncDirectory(dir)
            hook(.afterSwitch)
            return
        }
        if allowExchange {
            if cport_rename_exchange(new, target) == 0 {
                // `new` now names the previous output.
                syncDirectory(dir)
                hook(.afterSwitch)
                removeTree(new)
                return
            }
            let e = errno
            guard e == EINVAL || e == ENOSYS || e == ENOTSUP || e == EOPNOTSUPP || e == EXDEV else {
                throw CallerIDError(.io, "\(target): cannot switch to the new directory: \(errnoMessage(e))")
            }
        }
        var template = Array("\(dir)/.\(name).old-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw CallerIDError(.io, "\(target): cannot make room for the old directory in \(dir): \(errnoMessage())")
        }
        let old = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        // rename(2) replaces the empty directory just made: the name is ours alone.
        guard rename(target, old) == 0 else {
            let message = errnoMessage()
            _ = rmdir(old)
            throw CallerIDError(.io, "\(target): cannot move the old directory away: \(message)")
        }
        hook(.betweenRenames)
        guard rename(new, target) == 0 else {
            let message = errnoMessage()
            _ = rename(old, target)
            throw CallerIDError(.io, "\(target): cannot move the new directory into place: \(message)")
        }
        syncDirectory(dir)
        hook(.afterSwitch)
        removeTree(old)
    }

    /// After a build killed between the two renames of the fallback: puts the newest
    /// `.NAME.old-*` directory back at `target` when `target` is missing. Returns true if it did.
    @discardableResult
    package static func recover(_ target: String) -> Bool {
        var st = stat()
        guard lstat(target, &st) != 0, errno == ENOENT else { return false }
        let (dir, name) = OutputPath.split(target)
        var newest: (path: String, time: Int)? = nil
        for entry in listDirectory(dir) where isLeftover(entry, of: name, kind: "old") {
            let path = dir + "/" + entry
            guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { continue }
            let time = modificationTime(st)
            if newest == nil || time > newest!.time { newest = (path, time) }
        }
        guard let newest, rename(newest.path, target) == 0 else { return false }
        syncDirectory(dir)
        return true
    }

    /// Removes what killed builds of `target` left next to it: `.NAME.tmp-*` and `.NAME.old-*`
    /// files and directories that no running build holds locked. Returns how many went.
    /// With `temporariesOnly`, only the `.NAME.tmp-*` ones (a build starting: a `.NAME.old-*`
    /// may be the output that ``recover(_:)`` puts back).
    @discardableResult
    package static func removeLeftovers(of target: String, temporariesOnly: Bool = false) -> Int {
        let (dir, name) = OutputPath.split(target)
        var removed = 0
        for entry in listDirectory(dir) where isLeftover(entry, of: name, kind: "tmp") || (!temporariesOnly && isLeftover(entry, of: name, kind: "old")) {
            let path = dir + "/" + entry
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            guard fd >= 0 else { continue }
            let free = flock(fd, LOCK_EX | LOCK_NB) == 0
            var st = stat()
            let isDirectory = fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
            let isFile = (st.st_mode & S_IFMT) == S_IFREG
            if free && isDirectory { removeTree(path); removed += 1 }
            if free && isFile && unlink(path) == 0 { removed += 1 }
            _ = systemClose(fd)
        }
        if removed > 0 { syncDirectory(dir) }
        return removed
    }

    /// `.NAME.tmp-…` / `.NAME.old-…` (any suffix: older builds used 8 characters, mkdtemp 6).
    private static func isLeftover(_ entry: String, of name: String, kind: String) -> Bool {
        let prefix = ".\(name).\(kind)-"
        return entry.hasPrefix(prefix) && entry.utf8.count > prefix.utf8.count
    }

    /// Best-effort fsync of a directory, so renames inside it are durable.
    package static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            _ = systemClose(fd)
        }
    }

    /// Removes a directory and everything in it; links are removed, never followed.
    package static func removeTree(_ path: String) {
        for entry in listDirectory(path) {
            let child = path + "/" + entry
            var st = stat()
            guard lstat(child, &st) == 0 else { continue }
            if (st.st_mode & S_IFMT) == S_IFDIR { removeTree(child) } else { _ = unlink(child) }
        }
        _ = rmdir(path)
    }

    /// Names in a directory, without `.` and `..`.
    static func listDirectory(_ path: String) -> [String] {
        guard let d = opendir(path) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(d) {
            let pointer = (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self)
            let name = String(cString: pointer)
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

/// Test seam of `lookup build` (`LOOKUP_TEST_KILL_AT`): ends the process as SIGKILL would.
package func killCurrentProcessForTesting() -> Never {
    _ = kill(getpid(), SIGKILL)
    _exit(137)
}

private func modificationTime(_ st: stat) -> Int {
    Int(Platform.modificationTime(st).tv_sec)
}

private func systemClose(_ fd: Int32) -> Int32 {
    Platform.close(fd)
}
