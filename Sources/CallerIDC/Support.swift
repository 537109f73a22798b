// Internals of the C layer: status codes, the per-thread last error, C strings, the live-handle
// registry and the two handle classes. The exported functions are in Exports.swift; the
// contract is include/callerid.h.
import CallerID
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Status codes (enum cid_status)

enum Status {
    static let ok: Int32 = 0
    static let notFound: Int32 = 1
    static let end: Int32 = 2
    static let truncated: Int32 = 3
    static let invalidArgument: Int32 = -1
    static let badHandle: Int32 = -2
    static let fileNotFound: Int32 = -3
    static let io: Int32 = -4
    static let corrupt: Int32 = -5
    static let unsupportedVersion: Int32 = -6
    static let invalidNumber: Int32 = -7
    static let `internal`: Int32 = -8
    static let fileChanged: Int32 = -9

    /// Names by status, from -9 to 3 (index = status + 9); cid_status_name().
    nonisolated(unsafe) static let names: [UnsafePointer<CChar>] = [
        "file-changed", "internal", "invalid-number", "unsupported-version", "corrupt", "io", "file-not-found",
        "bad-handle", "invalid-argument", "ok", "not-found", "end", "truncated",
    ].map(makeCString)
    nonisolated(unsafe) static let unknownName = makeCString("unknown")

    static func name(_ status: Int32) -> UnsafePointer<CChar> {
        let i = Int(status) + 9
        return i >= 0 && i < names.count ? names[i] : unknownName
    }

    static func of(_ error: CallerIDError) -> Int32 {
        switch error.code {
        case .fileNotFound: fileNotFound
        case .io: io
        case .corrupt: corrupt
        case .unsupportedVersion: unsupportedVersion
        case .invalidNumber: invalidNumber
        case .fileChanged: fileChanged
        default: `internal`
        }
    }
}

// MARK: - C strings owned by the library

/// A NUL-terminated copy of `s` that lives until `free`d (or forever for globals).
func makeCString(_ s: String) -> UnsafePointer<CChar> {
    let utf8 = s.utf8CString
    let p = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
    utf8.withUnsafeBufferPointer { p.initialize(from: $0.baseAddress!, count: $0.count) }
    return UnsafePointer(p)
}

/// Static strings handed to C; never freed.
enum StaticStrings {
    nonisolated(unsafe) static let empty = makeCString("")
    nonisolated(unsafe) static let version = makeCString(CallerIDVersion.library)
    nonisolated(unsafe) static let format = makeCString(CallerIDVersion.format)
}

// MARK: - Last error, per thread

/// The message and status of the calling thread's last failing call, stored in one
/// malloc'd block per thread (status at offset 0, message from offset 8), freed by the
/// pthread key's destructor when the thread exits.
enum LastError {
    static let key: pthread_key_t? = {
        var k = pthread_key_t()
        return pthread_key_create(&k, { free($0) }) == 0 ? k : nil
    }()

    /// Records a failure and returns its status, so that `return fail(...)` reads well.
    @discardableResult
    static func set(_ status: Int32, _ message: String) -> Int32 {
        guard let key else { return status }
        let utf8 = message.utf8CString
        guard let block = malloc(8 + utf8.count) else { return status }
        block.storeBytes(of: status, as: Int32.self)
        utf8.withUnsafeBytes { (block + 8).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        let old = pthread_getspecific(key)
        pthread_setspecific(key, block)
        free(old)
        return status
    }

    static var message: UnsafePointer<CChar> {
        guard let key, let block = pthread_getspecific(key) else { return StaticStrings.empty }
        return UnsafePointer((block + 8).assumingMemoryBound(to: CChar.self))
    }

    static var status: Int32 {
        guard let key, let block = pthread_getspecific(key) else { return Status.ok }
        return block.load(as: Int32.self)
    }
}

@inline(never)
func fail(_ status: Int32, _ message: String) -> Int32 { LastError.set(status, message) }

@inline(never)
func fail(_ error: CallerIDError) -> Int32 { LastError.set(Status.of(error), error.message) }

// MARK: - Cold labels of lookups, per thread

/// Labels that cid_lookup and cid_lookup_batch hand out and that do not lie in the mapping
/// (cold labels, decoded per lookup): copied into the calling thread's segments, which stay
/// valid until that thread's next lookup call. Segments are 64 KiB (or one label when longer);
/// a new call keeps the first segment and frees the others, so a thread holds at most
/// 64 KiB between calls and, during a call, the cold labels of that call.
enum ThreadLabels {
    /// Per thread (``Pins/Record/labels``): a malloc'd head segment, then the others linked
    /// after it; each is [next: ptr][capacity: Int][used: Int] + bytes.
    static let segmentBytes = 64 * 1024
    static let headerBytes = 24

    /// Starts a lookup call of the thread whose record is `state`: forgets the previous call's
    /// labels.
    @inline(__always)
    static func begin(_ state: UnsafeMutablePointer<Pins.Record>) {
        guard let head = state.pointee.labels else { return }
        var segment = head.load(as: UnsafeMutableRawPointer?.self)
        while let s = segment {
            segment = s.load(as: UnsafeMutableRawPointer?.self)
            free(s)
        }
        head.storeBytes(of: nil, as: UnsafeMutableRawPointer?.self)
        head.storeBytes(of: 0, toByteOffset: 16, as: Int.self)
    }

    /// Frees a thread's segments (the thread exits).
    static func freeAll(_ head: UnsafeMutableRawPointer?) {
        var segment = head
        while let s = segment {
            segment = s.load(as: UnsafeMutableRawPointer?.self)
            free(s)
        }
    }

    /// A copy of `label` that stays valid until this thread's next lookup call; nil when
    /// memory runs out.
    static func keep(_ label: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        let state = Pins.current()
        var head = state.pointee.labels
        if head == nil {
            guard let h = malloc(headerBytes + segmentBytes) else { return nil }
            h.storeBytes(of: nil, as: UnsafeMutableRawPointer?.self)
            h.storeBytes(of: segmentBytes, toByteOffset: 8, as: Int.self)
            h.storeBytes(of: 0, toByteOffset: 16, as: Int.self)
            state.pointee.labels = h
            head = h
        }
        // The newest segment is linked right after the head; fill it, or link a new one.
        var segment = head!.load(as: UnsafeMutableRawPointer?.self) ?? head!
        var capacity = segment.load(fromByteOffset: 8, as: Int.self)
        var used = segment.load(fromByteOffset: 16, as: Int.self)
        if label.count > capacity - used {
            let size = max(segmentBytes, label.count)
            guard let fresh = malloc(headerBytes + size) else { return nil }
            fresh.storeBytes(of: head!.load(as: UnsafeMutableRawPointer?.self), as: UnsafeMutableRawPointer?.self)
            fresh.storeBytes(of: size, toByteOffset: 8, as: Int.self)
            fresh.storeBytes(of: 0, toByteOffset: 16, as: Int.self)
            head!.storeBytes(of: fresh, as: UnsafeMutableRawPointer?.self)
            segment = fresh
            capacity = size
            used = 0
        }
        let at = segment + headerBytes + used
        if label.count > 0 { at.copyMemory(from: label.baseAddress!, byteCount: label.count) }
        segment.storeBytes(of: used + label.count, toByteOffset: 16, as: Int.self)
        return UnsafeRawPointer(at)
    }
}

// MARK: - Shared database state

/// A database plus the C strings of its category names. Handles and cursors retain it, so
/// that category names a cursor hands out stay valid after `cid_close`.
final class Core {
    let db: Database
    let categories: [Category]
    let categoryCount: Int
    /// Per category code: the name's String bits (see `index(of:)`); a plain buffer so that
    /// hot paths do no reference counting. Freed in deinit.
    let nameBits: UnsafeMutablePointer<(UInt64, UInt64)>
    /// Per category code: the last four fields of its `cid_entry` (the name's C string, owned
    /// here, the code, the action, source 0 and reserved 0), as ``EntryRows`` copies them.
    let rowTails: UnsafeMutablePointer<RowTail>
    let empty: UnsafePointer<CChar>

    /// `cid_entry`'s fields after the label's length.
    struct RowTail {
        var category: UnsafePointer<CChar>
        var categoryIndex: UInt32
        var action: UInt32
        var source: UInt32
        var reserved: UInt32
    }

    init(_ db: Database) {
        self.db = db
        categories = db.categories
        categoryCount = categories.count
        // EntryRows writes cid_entry's fields at these offsets (callerid.h asserts C's side).
        precondition(MemoryLayout<CEntry>.offset(of: \CEntry.label) == 8 && MemoryLayout<CEntry>.offset(of: \CEntry.labelLength) == 16
                     && MemoryLayout<CEntry>.offset(of: \CEntry.category) == 24 && MemoryLayout<CEntry>.offset(of: \CEntry.source) == 40
                     && MemoryLayout<CEntry>.size == 48 && MemoryLayout<RowTail>.size == 24,
                     "cid_entry's layout is not the one EntryRows writes")
        // Category codes are one byte in the file (the builder refuses a 257th category).
        precondition(categoryCount <= 256, "more category codes than a file can hold")
        nameBits = .allocate(capacity: max(categoryCount, 1))
        rowTails = .allocate(capacity: max(categoryCount, 1))
        for (i, c) in categories.enumerated() {
            (nameBits + i).initialize(to: Core.bits(c.name) ?? (0, 0))
            (rowTails + i).initialize(to: RowTail(category: makeCString(c.name), categoryIndex: UInt32(i),
                                                  action: UInt32(c.action.rawValue), source: 0, reserved: 0))
        }
        empty = StaticStrings.empty
    }

    deinit {
        for i in 0..<categoryCount { UnsafeMutablePointer(mutating: rowTails[i].category).deallocate() }
        nameBits.deallocate()
        rowTails.deallocate()
    }

    /// The 16 bytes of a String value: its inline contents for a small string, its storage
    /// reference and flags otherwise. Equal bits mean equal strings, not the converse.
    @inline(__always)
    static func bits(_ s: String) -> (UInt64, UInt64)? {
        guard MemoryLayout<String>.size == 16 else { return nil }
        return unsafeBitCast(s, to: (UInt64, UInt64).self)
    }

    /// The code of `category` in this database. The views the library hands out carry
    /// `db.categories[code]` itself, whose name has the same bits as the copy in `nameBits`, so
    /// a scan of a few integers finds it; full string comparison is the fallback.
    /// Used where only a Category is at hand; views give their code (`categoryIndex`).
    @inline(__always)
    func index(of category: Category) -> Int {
        if let b = Core.bits(category.name) {
            var i = 0
            while i < categoryCount {
                if nameBits[i] == b { return i }
                i &+= 1
            }
        }
        return categories.firstIndex(of: category) ?? 0
    }

    /// Writes one found entry into `out`, as the batch scan writes its rows (``EntryRows``).
    /// `code` is a category code of this database.
    @inline(__always)
    func write(_ out: UnsafeMutablePointer<CEntry>, number: UInt64, label: UnsafeRawBufferPointer, code: Int,
               source: Int = 0) {
        EntryRows(base: UnsafeMutableRawPointer(out), stride: MemoryLayout<CEntry>.stride,
                  tails: UnsafeRawPointer(rowTails), empty: UnsafeRawPointer(empty))
            .put(0, number, label, UInt8(truncatingIfNeeded: code))
        if source != 0 { out.pointee.source = UInt32(truncatingIfNeeded: source) }
    }

    /// Writes a found entry into `out`.
    @inline(__always)
    func fill(_ out: UnsafeMutablePointer<CEntry>, _ view: EntryView) {
        // The view's category index is a code of this database (checked by the reader).
        let c = view.categoryIndex < categoryCount ? view.categoryIndex : index(of: view.category)
        write(out, number: view.number, label: view.labelBytes, code: c)
    }

    func name(_ code: Int) -> UnsafePointer<CChar> { rowTails[code].category }

    /// ``fill(_:_:)`` for a lookup: a label that is not in the mapping (a decoded cold
    /// label) is copied to the thread's lookup labels (``ThreadLabels``). Status ok, or
    /// internalError when that copy cannot be made.
    func fillKeeping(_ out: UnsafeMutablePointer<CEntry>, _ view: EntryView) -> Int32 {
        fill(out, view)
        if view.labelIsMapped { return Status.ok }
        guard let kept = ThreadLabels.keep(view.labelBytes) else {
            out.pointee = .notFound(view.number)
            return fail(Status.internal, "out of memory for a decoded label")
        }
        out.pointee.label = kept.assumingMemoryBound(to: CChar.self)
        return Status.ok
    }
}

/// `cid_entry` (callerid.h): the same fields in the same order, so Swift's layout is C's
/// natural layout (asserted in the header with offsetof).
struct CEntry {
    var number: UInt64
    var label: UnsafePointer<CChar>?
    var labelLength: Int
    var category: UnsafePointer<CChar>?
    var categoryIndex: UInt32
    var action: UInt32
    var source: UInt32
    var reserved: UInt32

    static func notFound(_ number: UInt64) -> CEntry {
        CEntry(number: number, label: nil, labelLength: 0, category: nil, categoryIndex: UInt32.max,
               action: 0, source: 0, reserved: 0)
    }
}

/// `cid_filter` (callerid.h).
struct CFilter {
    var action: Int32
    var categoryCount: UInt32
    var categories: UnsafePointer<UnsafePointer<CChar>?>?
}

/// A filter read from C, resolved against one database's categories.
struct Selection {
    var action: CategoryAction?
    var names: Set<String>?

    /// Reads a `cid_filter`; nil pointer = everything. Throws a status for a bad filter.
    init(_ raw: UnsafeRawPointer?) throws(CError) {
        guard let raw else { return }
        let f = raw.assumingMemoryBound(to: CFilter.self).pointee
        switch f.action {
        case -1: action = nil
        case 0: action = .identify
        case 1: action = .block
        default: throw CError(Status.invalidArgument, "filter action \(f.action) is not CID_ANY_ACTION, CID_ACTION_IDENTIFY or CID_ACTION_BLOCK")
        }
        if f.categoryCount > 0 {
            guard let list = f.categories else {
                throw CError(Status.invalidArgument, "filter has category_count \(f.categoryCount) but categories is NULL")
            }
            var set = Set<String>()
            for i in 0..<Int(f.categoryCount) {
                guard let p = list[i] else { throw CError(Status.invalidArgument, "filter category \(i) is NULL") }
                guard let s = String(validatingCString: p) else {
                    throw CError(Status.invalidArgument, "filter category \(i) is not UTF-8")
                }
                set.insert(s)
            }
            names = set
        }
    }

    var isEverything: Bool { action == nil && names == nil }

    func matches(_ c: Category) -> Bool {
        (action == nil || c.action == action) && (names == nil || names!.contains(c.name))
    }

    /// Per category index of `core`: is it selected?
    func table(for core: Core) -> [Bool] { core.categories.map(matches) }

    /// The equivalent Swift filter for one database (nil = everything).
    func swiftFilter(for core: Core) -> CategoryFilter? {
        if isEverything { return nil }
        if names == nil, let action { return .action(action) }
        return .names(Set(core.categories.filter(matches).map(\.name)))
    }
}

/// A status and message raised inside the C layer.
struct CError: Error {
    let status: Int32
    let message: String
    init(_ status: Int32, _ message: String) {
        self.status = status
        self.message = message
    }
}

// MARK: - Handles

// A `cid_db *` is a HandleTable value whose slot holds a retained `Core`; a `cid_cursor *`
// one whose slot holds a retained `CursorHandle` (see HandleTable.swift).

/// The object behind a `cid_cursor *`: a cursor over one database or a merged one.
final class CursorHandle {
    let core: Core?
    // Mutated in place (one thread at a time, as the header requires of a cursor).
    @exclusivity(unchecked) var single: EntryCursor?
    @exclusivity(unchecked) var merged: MergedCursor?
    /// cid_cursor_next_batch on a single database: the batch its labels live in (replaced by a
    /// larger one when a call asks for more entries than it holds).
    private var batch = EntryBatch(capacity: 1)
    /// cid_cursor_next_batch on a merged cursor: labels copied here (the merge's own label
    /// memory holds one entry per source), and an entry read but not yet handed out.
    private var arena: UnsafeMutableRawPointer?
    private var pending: CEntry?
    static let arenaBytes = 64 * 1024
    static let maxBatch = 1024

    init(core: Core, cursor: EntryCursor) {
        self.core = core
        single = cursor
        merged = nil
    }

    init(merged: MergedCursor) {
        core = nil
        single = nil
        self.merged = merged
    }

    deinit { arena?.deallocate() }

    /// cid_cursor_next on this cursor.
    func next(_ out: UnsafeMutablePointer<CEntry>) -> Int32 {
        do throws(CallerIDError) {
            if let pending {
                out.pointee = pending  // its label is still valid: nothing advanced since
                self.pending = nil
                return Status.ok
            }
            if let core, single != nil {
                return try single!.next { view in core.fill(out, view) } == nil ? Status.end : Status.ok
            }
            if merged != nil {
                return try merged!.next(out) ? Status.ok : Status.end
            }
            return fail(Status.internal, "cursor has no state")
        } catch {
            return fail(error)
        }
    }

    /// cid_cursor_next_batch on this cursor: up to `capacity` entries into `out`, their
    /// count into `count` (0 at the end).
    func nextBatch(_ out: UnsafeMutablePointer<CEntry>, _ capacity: Int, _ count: UnsafeMutablePointer<Int>) -> Int32 {
        count.pointee = 0
        do throws(CallerIDError) {
            if let core, single != nil {
                let want = min(capacity, CursorHandle.maxBatch)
                if batch.capacity < want { batch = EntryBatch(capacity: want) }
                // Written straight into the caller's array (category codes were checked by the reader).
                let rows = EntryRows(base: UnsafeMutableRawPointer(out), stride: MemoryLayout<CEntry>.stride,
                                     tails: UnsafeRawPointer(core.rowTails), empty: UnsafeRawPointer(core.empty))
                let n = try single!.nextBatch(&batch, rows: rows, limit: want)
                count.pointee = n
                return n == 0 ? Status.end : Status.ok
            }
            guard merged != nil else { return fail(Status.internal, "cursor has no state") }
            if arena == nil { arena = .allocate(byteCount: CursorHandle.arenaBytes, alignment: 8) }
            var used = 0, n = 0
            while n < capacity {
                var entry: CEntry
                if let p = pending {
                    entry = p
                    pending = nil
                } else {
                    entry = CEntry.notFound(0)
                    guard try merged!.next(&entry) else { break }
                }
                if entry.labelLength > CursorHandle.arenaBytes - used {
                    if n > 0 { pending = entry; break }  // hand it out first in the next call
                    out[n] = entry  // alone and longer than the arena: valid until the next call
                    n += 1
                    break
                }
                if entry.labelLength > 0, let label = entry.label {
                    (arena! + used).copyMemory(from: label, byteCount: entry.labelLength)
                    entry.label = UnsafePointer((arena! + used).assumingMemoryBound(to: CChar.self))
                    used += entry.labelLength
                }
                out[n] = entry
                n += 1
            }
            count.pointee = n
            return n == 0 ? Status.end : Status.ok
        } catch {
            return fail(error)
        }
    }
}
