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

// MARK: - Shared database state

/// A database plus the C strings of its category names. Handles and cursors retain it, so
/// that category names a cursor hands out stay valid after `cid_close`.
final class Core {
    let db: Database
    let categories: [Category]
    let categoryCount: Int
    /// Per category code: the name's String bits (see `index(of:)`), its C string and action;
    /// a plain buffer so that hot paths do no reference counting. Freed in deinit.
    let table: UnsafeMutablePointer<Slot>
    let empty: UnsafePointer<CChar>

    struct Slot {
        var bits: (UInt64, UInt64)
        var name: UnsafePointer<CChar>
        var action: UInt32
    }

    init(_ db: Database) {
        self.db = db
        categories = db.categories
        categoryCount = categories.count
        table = .allocate(capacity: max(categoryCount, 1))
        for (i, c) in categories.enumerated() {
            (table + i).initialize(to: Slot(bits: Core.bits(c.name) ?? (0, 0), name: makeCString(c.name),
                                            action: UInt32(c.action.rawValue)))
        }
        empty = StaticStrings.empty
    }

    deinit {
        for i in 0..<categoryCount { UnsafeMutablePointer(mutating: table[i].name).deallocate() }
        table.deallocate()
    }

    /// The 16 bytes of a String value: its inline contents for a small string, its storage
    /// reference and flags otherwise. Equal bits mean equal strings, not the converse.
    @inline(__always)
    static func bits(_ s: String) -> (UInt64, UInt64)? {
        guard MemoryLayout<String>.size == 16 else { return nil }
        return unsafeBitCast(s, to: (UInt64, UInt64).self)
    }

    /// The code of `category` in this database. The views the library hands out carry
    /// `db.categories[code]` itself, whose name has the same bits as the copy in `table`, so a
    /// scan of a few integers finds it; full string comparison is the fallback.
    /// (EntryView does not expose the code, see docs/C-ABI.md.)
    @inline(__always)
    func index(of category: Category) -> Int {
        if let b = Core.bits(category.name) {
            var i = 0
            while i < categoryCount {
                if table[i].bits == b { return i }
                i &+= 1
            }
        }
        return categories.firstIndex(of: category) ?? 0
    }

    /// Writes a found entry into `out`.
    @inline(__always)
    func fill(_ out: UnsafeMutablePointer<CEntry>, _ view: EntryView, source: UInt32 = 0) {
        let c = index(of: view.category)
        out.pointee = CEntry(
            number: view.number,
            label: view.labelBytes.baseAddress.map { $0.assumingMemoryBound(to: CChar.self) } ?? empty,
            labelLength: view.labelBytes.count,
            category: table[c].name,
            categoryIndex: UInt32(truncatingIfNeeded: c),
            action: table[c].action,
            source: source,
            reserved: 0)
    }

    func name(_ code: Int) -> UnsafePointer<CChar> { table[code].name }
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

    /// cid_cursor_next on this cursor.
    func next(_ out: UnsafeMutablePointer<CEntry>) -> Int32 {
        do throws(CallerIDError) {
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
}
