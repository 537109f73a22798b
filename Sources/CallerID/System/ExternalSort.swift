#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
internal import Dispatch

// The bounded-memory build's runs: rows sorted in memory, spilled to files next to the output,
// merged back in one pass. docs/SCALE.md describes the build; this file holds its raw I/O.
//
// A run file is a sequence of rows, each `[number: UInt64 LE][payload length: varint][payload]`,
// in ascending number order, rows of one number in the order they were added. Runs are numbered
// in the order they were written, so (number, run) is the order the rows were added in: the
// merge hands out the rows of a number in that order, and the caller keeps the last.

/// Where a build's runs live: a locked `.NAME.tmp-XXXXXX` directory beside the output (the
/// one `DirectorySwitch` makes for build directories), so a killed build's runs are removed
/// by the next build of the same output (`DirectorySwitch.removeLeftovers(of:)`), and a
/// finished one removes its own when this object goes.
package final class SpillArea {
    private let directory: DirectorySwitch.TemporaryDirectory
    private var next = 0
    /// The output the runs are kept beside.
    package let target: String

    /// Creates the directory beside `target` (a path that need not exist yet).
    package init(nextTo target: String) throws(CallerIDError) {
        let resolved = try OutputPath.resolve(target)
        // A stream (a pipe, /dev/stdout) has no folder of its own to hold runs: the current one.
        let beside = resolved.kind == .stream ? "./" + OutputPath.split(resolved.path).name : resolved.path
        self.target = beside
        // Runs of builds of the same output that were killed (their folders are no longer
        // locked): gone before this build spills its own, not only when one finishes.
        DirectorySwitch.removeLeftovers(of: beside, temporariesOnly: true)
        directory = try DirectorySwitch.makeTemporaryDirectory(for: beside)
    }

    /// A new file name inside the area.
    package func newPath(_ kind: String) -> String {
        next += 1
        return "\(directory.path)/\(kind)-\(next)"
    }

    /// Removes one file of the area (a run merged into another).
    package func remove(_ path: String) { _ = unlink(path) }

    deinit {
        DirectorySwitch.removeTree(directory.path)
        directory.close()
    }
}

/// A test seam: the disk "fills up" after this many more bytes are written by the package's
/// file writers (`write(2)` then fails with ENOSPC), set by `lookup` from
/// `LOOKUP_TEST_DISK_FULL_AFTER`. Nil (always, outside tests): no limit. Every write of a whole
/// buffer (``Platform/writeAll(_:_:written:)``) goes through it; standard output and error do
/// not count as the disk, so the message that says the disk is full still reaches the user.
package enum DiskFullSimulation {
    nonisolated(unsafe) private static var remaining: Int? = nil

    package static func fail(afterBytes n: Int?) { remaining = n }

    /// `write(2)` unless the simulated disk is full.
    static func write(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        if let left = remaining, fd > 2 {
            guard left > 0 else {
                errno = ENOSPC
                return -1
            }
            let n = Platform.write(fd, bytes, min(count, left))
            if n > 0 { remaining = left - n }
            return n
        }
        return Platform.write(fd, bytes, count)
    }
}

/// Appends bytes to a new file through a buffer (a run, a group's entries, a section written
/// before the file around it). No fsync: these files are thrown away after the build.
package final class SpillWriter {
    package let path: String
    // One thread writes a run at a time (the build's, or the background job's): no dynamic
    // exclusivity checks on the row path (they cost a fifth of a spilled build's merge).
    @exclusivity(unchecked) private var fd: Int32
    @exclusivity(unchecked) private var buffer: [UInt8] = []
    private let capacity: Int
    /// Bytes written so far (buffered or not).
    @exclusivity(unchecked) package private(set) var bytesWritten = 0

    package init(path: String, bufferBytes: Int = 1 << 20) throws(CallerIDError) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CallerIDError(.io, "\(path): cannot create a temporary file: \(errnoMessage())") }
        capacity = max(bufferBytes, 4096)
        buffer.reserveCapacity(capacity)
    }

    deinit { if fd >= 0 { _ = Platform.close(fd) } }

    package func write(_ bytes: UnsafeRawBufferPointer) throws(CallerIDError) {
        bytesWritten += bytes.count
        if buffer.count + bytes.count > capacity { try flush() }
        if bytes.count >= capacity { try writeOut(bytes); return }
        buffer.append(contentsOf: bytes)
    }

    package func write(_ bytes: [UInt8]) throws(CallerIDError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try write(raw) } }.get()
    }

    /// One row of a run: the number, the payload's length and the payload.
    package func writeRow(_ number: UInt64, _ payload: UnsafeRawBufferPointer) throws(CallerIDError) {
        if buffer.count + payload.count + 18 > capacity { try flush() }
        withUnsafeBytes(of: number.littleEndian) { buffer.append(contentsOf: $0) }
        buffer.appendVarint(payload.count)
        if payload.count + 18 > capacity {
            try flush()
            try writeOut(payload)
        } else {
            buffer.append(contentsOf: payload)
        }
        bytesWritten += 8 + payload.count + Varint.size(payload.count)
    }

    package func flush() throws(CallerIDError) {
        guard !buffer.isEmpty else { return }
        try buffer.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try writeOut(raw) } }.get()
        buffer.removeAll(keepingCapacity: true)
    }

    private func writeOut(_ bytes: UnsafeRawBufferPointer) throws(CallerIDError) {
        if let code = Platform.writeAll(fd, bytes) {
            throw CallerIDError(.io, "\(path): write failed: \(errnoMessage(code))")
        }
    }

    /// Writes what is buffered and closes the file.
    package func finish() throws(CallerIDError) {
        try flush()
        _ = Platform.close(fd)
        fd = -1
    }
}

/// Reads a spilled file back through a buffer: rows of a run, or plain bytes.
package final class SpillReader {
    package let path: String
    // Read by one merge on one thread: no dynamic exclusivity checks on the row path.
    @exclusivity(unchecked) private var fd: Int32
    @exclusivity(unchecked) private var buffer: [UInt8]
    @exclusivity(unchecked) private var start = 0
    @exclusivity(unchecked) private var end = 0
    @exclusivity(unchecked) private var atEOF = false
    /// Bytes of the file consumed so far.
    @exclusivity(unchecked) package private(set) var offset = 0
    /// Stop at this offset of the file (a part of a file: one shard of a group).
    @exclusivity(unchecked) private var limit: Int

    package init(path: String, bufferBytes: Int = 1 << 20, from: Int = 0, to: Int = Int.max) throws(CallerIDError) {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CallerIDError(.io, "\(path): cannot open a temporary file: \(errnoMessage())") }
        buffer = [UInt8](repeating: 0, count: max(bufferBytes, 4096))
        limit = to
        if from > 0 {
            guard lseek(fd, off_t(from), SEEK_SET) >= 0 else { throw CallerIDError(.io, "\(path): seek failed: \(errnoMessage())") }
            offset = from
        }
    }

    deinit { _ = Platform.close(fd) }

    /// Makes at least `count` bytes available from `start`; false at the end of the file.
    private func fill(_ count: Int) throws(CallerIDError) -> Bool {
        while end - start < count {
            if atEOF { return false }
            if start > 0 {
                let kept = end - start
                buffer.withUnsafeMutableBytes { raw in
                    if kept > 0 { raw.baseAddress!.copyMemory(from: raw.baseAddress! + start, byteCount: kept) }
                }
                start = 0
                end = kept
            }
            if end == buffer.count { buffer.append(contentsOf: repeatElement(0, count: buffer.count)) }
            let want = min(buffer.count - end, limit - (offset + end - start))
            if want <= 0 { atEOF = true; continue }
            let n = buffer.withUnsafeMutableBytes { raw in Platform.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[end..<(end + want)])) }
            if n < 0 { throw CallerIDError(.io, "\(path): read failed: \(errnoMessage())") }
            if n == 0 { atEOF = true } else { end += n }
        }
        return true
    }

    /// The next row: its number and payload (valid until the next call); nil at the end.
    package func nextRow<R>(_ body: (UInt64, UnsafeRawBufferPointer) throws(CallerIDError) -> R) throws(CallerIDError) -> R? {
        _ = try fill(18)
        if end == start { return nil }
        // Made only when thrown: a message built per row cost more than reading the row.
        func truncated() -> CallerIDError { CallerIDError(.io, "\(path): a spilled run ends inside a row") }
        guard end - start >= 9 else { throw truncated() }
        var number: UInt64 = 0
        var length: Int? = nil
        var header = 0
        buffer.withUnsafeBytes { raw in
            number = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: start, as: UInt64.self))
            var k = 8
            length = Varint.read(UnsafeRawBufferPointer(rebasing: raw[start..<end]), at: &k)
            header = k
        }
        guard let length else { throw truncated() }
        guard try fill(header + length) else { throw truncated() }
        let rowStart = start
        start += header + length
        offset += header + length
        return try buffer.withUnsafeBytes { raw in
            Result { () throws(CallerIDError) in
                try body(number, UnsafeRawBufferPointer(rebasing: raw[(rowStart + header)..<(rowStart + header + length)]))
            }
        }.get()
    }

    /// Up to `max` plain bytes (a section spilled whole), a multiple of `unit` bytes unless the
    /// file ends first (fixed-size records are never cut); empty at the end.
    package func nextBytes<R>(max: Int, unit: Int = 1, _ body: (UnsafeRawBufferPointer) throws(CallerIDError) -> R) throws(CallerIDError) -> R {
        let whole = try fill(unit)
        var n = min(max, end - start)
        if whole { n -= n % unit }
        let from = start
        start += n
        offset += n
        return try buffer.withUnsafeBytes { raw in
            Result { () throws(CallerIDError) in try body(UnsafeRawBufferPointer(rebasing: raw[from..<(from + n)])) }
        }.get()
    }
}

/// The rows of several runs in (number, run) order: a binary heap of the runs' heads (the
/// package's one heap). Memory: one read buffer per run.
package struct RunMerge {
    private var readers: [SpillReader]
    private var heap: MinHeap<MergeHead>
    private var current: Int32 = -1
    private var started = false

    package init(runs: [String], bufferBytes: Int) throws(CallerIDError) {
        var readers: [SpillReader] = []
        for path in runs { readers.append(try SpillReader(path: path, bufferBytes: bufferBytes)) }
        self.readers = readers
        heap = MinHeap(capacity: runs.count)
    }

    /// Puts run `r`'s next row in the heap (nothing when it has ended).
    private mutating func advance(_ r: Int32) throws(CallerIDError) {
        if let n = try readers[Int(r)].peekNumber() { heap.push(MergeHead(number: n, source: r)) }
    }

    /// Calls `body` with the next row's number, its payload (valid during the call) and whether
    /// a later run holds a row of the same number (with runs that hold each number once: the
    /// row is not the last of its number); false at the end.
    package mutating func next(_ body: (UInt64, UnsafeRawBufferPointer, Bool) throws(CallerIDError) -> Void) throws(CallerIDError) -> Bool {
        if !started {
            started = true
            for r in readers.indices { try advance(Int32(r)) }
        }
        guard let head = heap.popMin() else { return false }
        let continues = heap.min?.number == head.number
        _ = try readers[Int(head.source)].nextRow { (number, payload) throws(CallerIDError) in try body(number, payload, continues) }
        try advance(head.source)
        return true
    }
}

extension SpillReader {
    /// The number of the next row without consuming it; nil at the end.
    package func peekNumber() throws(CallerIDError) -> UInt64? {
        guard try fill(8) else {
            if end > start { throw CallerIDError(.io, "\(path): a spilled run ends inside a row") }
            return nil
        }
        return buffer.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: start, as: UInt64.self)) }
    }
}

/// Unsigned LEB128, the lengths and small numbers of spilled rows.
package enum Varint {
    package static func size(_ v: Int) -> Int {
        var v = v, n = 1
        while v >= 0x80 { v >>= 7; n += 1 }
        return n
    }

    /// Reads one of at most `maxBytes` bytes at `at`, moving `at` past it; nil when the bytes
    /// end first or it runs longer.
    package static func read(_ bytes: UnsafeRawBufferPointer, at: inout Int, maxBytes: Int = 9) -> Int? {
        var v = 0, shift = 0
        while at < bytes.count, shift < 7 * maxBytes {
            let b = bytes[at]
            at += 1
            v |= Int(b & 0x7F) << shift
            if b < 0x80 { return v }
            shift += 7
        }
        return nil
    }
}

extension Array where Element == UInt8 {
    package mutating func appendVarint(_ v: Int) {
        var v = v
        while v >= 0x80 {
            append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        append(UInt8(v))
    }
}

/// Runs a job on another thread while the caller goes on (a run sorted and spilled while the
/// next one is read): at most one at a time, its error kept for ``wait()``.
package final class BackgroundJob: @unchecked Sendable {
    private let group = DispatchGroup()
    private var failure: CallerIDError? = nil
    private var running = false

    package init() {}

    /// Waits for the job before (if any), then starts `work`. The work (and what it holds) is
    /// released before ``wait()`` returns, so its state can go with its owner.
    package func start(_ work: @escaping @Sendable () throws(CallerIDError) -> Void) throws(CallerIDError) {
        try wait()
        running = true
        group.enter()
        let holder = Holder(work)
        DispatchQueue.global().async { [self] in
            do throws(CallerIDError) { try holder.work?() } catch { failure = error }
            holder.work = nil
            group.leave()
        }
    }

    private final class Holder: @unchecked Sendable {
        var work: (@Sendable () throws(CallerIDError) -> Void)?
        init(_ work: @escaping @Sendable () throws(CallerIDError) -> Void) { self.work = work }
    }

    /// ``start(_:)`` for work on state that is not `Sendable` (a run's arrays and the runs it
    /// joins): the caller hands that state over and touches it again only after ``wait()``.
    package func startHandingOver(_ work: @escaping () throws(CallerIDError) -> Void) throws(CallerIDError) {
        let box = HandedOver(work)
        try start { () throws(CallerIDError) in try box.work() }
    }

    private final class HandedOver: @unchecked Sendable {
        let work: () throws(CallerIDError) -> Void
        init(_ work: @escaping () throws(CallerIDError) -> Void) { self.work = work }
    }

    /// Waits for the running job; throws its error.
    package func wait() throws(CallerIDError) {
        guard running else { return }
        group.wait()
        running = false
        if let failure {
            self.failure = nil
            throw failure
        }
    }
}
