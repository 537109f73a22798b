// The exported C functions of libcallerid.so. The contract (ownership, lifetimes, threads)
// is written in include/callerid.h; keep the two in step.
//
// Rules of this file: no Swift error and no trap crosses the boundary. Every pointer from C
// is checked for NULL, every handle against the handle table (HandleTable.swift: encoded
// slot and generation, so a closed handle is refused even when its slot is reused), every
// count for range; failures return a negative status
// and record a per-thread message (LastError).
import CallerID
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Handle conversion

/// Runs `body` with the database behind `p` without retaining it (lookups from many threads
/// would otherwise contend on its reference count), or returns a failure status. The check
/// reads only the handle table, never the memory of a closed handle; the handle stays pinned
/// while `body` runs, so a `cid_close` on another thread waits for it.
@inline(__always)
private func withDatabase(_ p: OpaquePointer?, _ body: (Core) -> Int32) -> Int32 {
    withDatabase(p) { core, _ in body(core) }
}

/// ``withDatabase(_:_:)`` that also hands `body` the calling thread's record (its lookup labels).
@inline(__always)
private func withDatabase(_ p: OpaquePointer?, _ body: (Core, UnsafeMutablePointer<Pins.Record>) -> Int32) -> Int32 {
    guard let p else { return fail(Status.invalidArgument, "the database handle is NULL") }
    return HandleTable.withObject(UnsafeRawPointer(p), kind: .database) { object, thread in
        guard let object else {
            return fail(Status.badHandle, "not an open database handle (closed already, or a cursor?)")
        }
        return Unmanaged<Core>.fromOpaque(object)._withUnsafeGuaranteedRef { body($0, thread) }
    }
}

/// Runs `body` with the cursor behind `p`. Not pinned: a cursor belongs to one thread at a
/// time (callerid.h), so nothing frees it during a call on it.
@inline(__always)
private func withCursor(_ p: OpaquePointer, _ body: (CursorHandle) -> Int32) -> Int32 {
    guard let object = HandleTable.object(UnsafeRawPointer(p), kind: .cursor) else {
        return fail(Status.badHandle, "not a live cursor (freed already, or a database handle?)")
    }
    return Unmanaged<CursorHandle>.fromOpaque(object)._withUnsafeGuaranteedRef { body($0) }
}

// MARK: - Status, errors, versions

@c(cid_status_name)
public func cid_status_name(_ status: Int32) -> UnsafePointer<CChar> {
    Status.name(status)
}

@c(cid_last_error_message)
public func cid_last_error_message() -> UnsafePointer<CChar> {
    LastError.message
}

@c(cid_last_error_status)
public func cid_last_error_status() -> Int32 {
    LastError.status
}

@c(cid_version)
public func cid_version() -> UnsafePointer<CChar> {
    StaticStrings.version
}

@c(cid_format_version)
public func cid_format_version() -> UnsafePointer<CChar> {
    StaticStrings.format
}

// MARK: - Numbers

@c(cid_parse_number)
public func cid_parse_number(_ text: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let text, let out else { return fail(Status.invalidArgument, "text or out is NULL") }
    let bytes = UnsafeRawBufferPointer(start: text, count: strlen(text))
    do throws(CallerIDError) {
        out.pointee = try PhoneNumber.parse(utf8: bytes)
        return Status.ok
    } catch {
        return fail(error)
    }
}

// MARK: - Open, close, verify, facts

@c(cid_open)
public func cid_open(_ path: UnsafePointer<CChar>?, _ flags: UInt32, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return fail(Status.invalidArgument, "out_db is NULL") }
    out.pointee = nil
    guard let path else { return fail(Status.invalidArgument, "path is NULL") }
    guard flags & ~UInt32(3) == 0 else { return fail(Status.invalidArgument, "unknown open flags 0x\(String(flags, radix: 16))") }
    guard let pathString = String(validatingCString: path) else {
        return fail(Status.invalidArgument, "the path is not valid UTF-8")
    }
    do throws(CallerIDError) {
        let db = try Database(path: pathString, verify: flags & 1 != 0, mapping: flags & 2 != 0 ? .copy : .map)
        guard let handle = HandleTable.insert(Core(db), kind: .database) else {
            return fail(Status.internal, "too many open handles")
        }
        out.pointee = OpaquePointer(handle)
        return Status.ok
    } catch {
        return fail(error)
    }
}

@c(cid_close)
public func cid_close(_ db: OpaquePointer?) -> Int32 {
    guard let db else { return Status.ok }
    guard let object = HandleTable.remove(UnsafeRawPointer(db), kind: .database) else {
        return fail(Status.badHandle, "cid_close: not an open database handle (closed twice, or a cursor?)")
    }
    Unmanaged<Core>.fromOpaque(object).release()
    return Status.ok
}

@c(cid_verify)
public func cid_verify(_ db: OpaquePointer?) -> Int32 {
    withDatabase(db) { core in
        do throws(CallerIDError) {
            try core.db.verify()
            return Status.ok
        } catch {
            return fail(error)
        }
    }
}

@c(cid_check_file)
public func cid_check_file(_ db: OpaquePointer?) -> Int32 {
    withDatabase(db) { core in
        do throws(CallerIDError) {
            try core.db.checkFile()
            return Status.ok
        } catch {
            return fail(error)
        }
    }
}

@c(cid_count)
public func cid_count(_ db: OpaquePointer?, _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    withDatabase(db) { core in
        guard let out else { return fail(Status.invalidArgument, "out is NULL") }
        out.pointee = UInt64(core.db.count)
        return Status.ok
    }
}

@c(cid_category_count)
public func cid_category_count(_ db: OpaquePointer?, _ out: UnsafeMutablePointer<UInt32>?) -> Int32 {
    withDatabase(db) { core in
        guard let out else { return fail(Status.invalidArgument, "out is NULL") }
        out.pointee = UInt32(core.categories.count)
        return Status.ok
    }
}

@c(cid_category)
public func cid_category(_ db: OpaquePointer?, _ index: UInt32, _ name: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                  _ action: UnsafeMutablePointer<UInt32>?) -> Int32 {
    withDatabase(db) { core in
        guard Int(index) < core.categories.count else {
            return fail(Status.invalidArgument, "category index \(index) out of range (the database has \(core.categories.count))")
        }
        name?.pointee = core.name(Int(index))
        action?.pointee = UInt32(core.categories[Int(index)].action.rawValue)
        return Status.ok
    }
}

// MARK: - Lookups

@c(cid_lookup)
public func cid_lookup(_ db: OpaquePointer?, _ number: UInt64, _ out: UnsafeMutableRawPointer?) -> Int32 {
    guard let out else { return fail(Status.invalidArgument, "out is NULL") }
    let entry = out.assumingMemoryBound(to: CEntry.self)
    let status = withDatabase(db) { core, thread in
        ThreadLabels.begin(thread)
        do throws(CallerIDError) {
            return try core.db.withEntry(number) { view in core.fillKeeping(entry, view) } ?? Status.notFound
        } catch {
            return fail(error)
        }
    }
    if status != Status.ok { entry.pointee = .notFound(number) }
    return status
}

@c(cid_lookup_match)
public func cid_lookup_match(_ db: OpaquePointer?, _ number: UInt64, _ out: UnsafeMutableRawPointer?, _ match: UnsafeMutablePointer<UInt32>?,
                             _ rangeFirst: UnsafeMutablePointer<UInt64>?, _ rangeLast: UnsafeMutablePointer<UInt64>?) -> Int32 {
    match?.pointee = 0
    rangeFirst?.pointee = 0
    rangeLast?.pointee = 0
    guard let out else { return fail(Status.invalidArgument, "out is NULL") }
    let entry = out.assumingMemoryBound(to: CEntry.self)
    var kind = MatchKind.entry
    let status = withDatabase(db) { core, thread in
        ThreadLabels.begin(thread)
        do throws(CallerIDError) {
            return try core.db.withAnswer(number) { view in
                kind = view.match
                return core.fillKeeping(entry, view)
            } ?? Status.notFound
        } catch {
            return fail(error)
        }
    }
    if status != Status.ok {
        entry.pointee = .notFound(number)
        return status
    }
    switch kind {
    case .entry:
        match?.pointee = 1
        rangeFirst?.pointee = number
        rangeLast?.pointee = number
    case .range(let first, let last):
        match?.pointee = 2
        rangeFirst?.pointee = first
        rangeLast?.pointee = last
    }
    return status
}

@c(cid_lookup_copy)
public func cid_lookup_copy(_ db: OpaquePointer?, _ number: UInt64, _ buf: UnsafeMutablePointer<CChar>?, _ bufSize: Int,
                     _ labelLength: UnsafeMutablePointer<Int>?, _ out: UnsafeMutableRawPointer?) -> Int32 {
    // size_t arrives as Int: a size above Int.max reads as negative; no buffer is that large.
    let entry = out?.assumingMemoryBound(to: CEntry.self)
    entry?.pointee = .notFound(number)
    labelLength?.pointee = 0
    guard bufSize == 0 || buf != nil else { return fail(Status.invalidArgument, "buf is NULL but buf_size is \(UInt(bitPattern: bufSize))") }
    let capacity = bufSize < 0 ? Int.max : bufSize
    if let buf, capacity > 0 { buf.pointee = 0 }
    return withDatabase(db) { core in
        do throws(CallerIDError) {
            let result: Int32? = try core.db.withEntry(number) { view in
                let label = view.labelBytes
                labelLength?.pointee = label.count
                var n = min(label.count, max(capacity - 1, 0))
                if n < label.count {
                    // Do not cut a UTF-8 sequence: back off over continuation bytes (at most 3).
                    var k = 0
                    while n > 0 && k < 3 && label[n] & 0xC0 == 0x80 { n -= 1; k += 1 }
                }
                if let buf, capacity > 0 {
                    if n > 0 { UnsafeMutableRawPointer(buf).copyMemory(from: label.baseAddress!, byteCount: n) }
                    buf[n] = 0
                }
                if let entry {
                    core.fill(entry, view)
                    entry.pointee.label = UnsafePointer(buf)
                    entry.pointee.labelLength = n
                }
                return n < label.count ? Status.truncated : Status.ok
            }
            return result ?? Status.notFound
        } catch {
            return fail(error)
        }
    }
}

@c(cid_lookup_batch)
public func cid_lookup_batch(_ db: OpaquePointer?, _ numbers: UnsafePointer<UInt64>?, _ count: Int,
                      _ results: UnsafeMutableRawPointer?, _ found: UnsafeMutablePointer<Int>?) -> Int32 {
    found?.pointee = 0
    guard count >= 0 else { return fail(Status.invalidArgument, "count \(UInt(bitPattern: count)) is too large") }
    guard count == 0 || (numbers != nil && results != nil) else {
        return fail(Status.invalidArgument, "numbers or results is NULL")
    }
    guard count > 0, let numbers, let results else {
        return withDatabase(db) { _ in Status.ok }
    }
    let out = results.assumingMemoryBound(to: CEntry.self)
    return withDatabase(db) { core, thread in
        ThreadLabels.begin(thread)
        var hits = 0
        for i in 0..<count {
            let number = numbers[i]
            let entry = out + i
            do throws(CallerIDError) {
                switch try core.db.withEntry(number, { view in core.fillKeeping(entry, view) }) {
                case Status.ok?:
                    hits &+= 1
                case let status?:
                    for j in i..<count { out[j] = .notFound(numbers[j]) }
                    found?.pointee = hits
                    return status
                case nil:
                    entry.pointee = .notFound(number)
                }
            } catch {
                for j in i..<count { out[j] = .notFound(numbers[j]) }
                found?.pointee = hits
                return fail(error)
            }
        }
        found?.pointee = hits
        return Status.ok
    }
}

// MARK: - Cursors

@c(cid_cursor_open)
public func cid_cursor_open(_ db: OpaquePointer?, _ from: UInt64, _ filter: UnsafeRawPointer?,
                     _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return fail(Status.invalidArgument, "out is NULL") }
    out.pointee = nil
    return withDatabase(db) { core in
        do throws(CError) {
            let selection = try Selection(filter)
            let cursor = core.db.cursor(from: from, filter: selection.swiftFilter(for: core))
            guard let handle = HandleTable.insert(CursorHandle(core: core, cursor: cursor), kind: .cursor) else {
                return fail(Status.internal, "too many open handles")
            }
            out.pointee = OpaquePointer(handle)
            return Status.ok
        } catch {
            return fail(error.status, error.message)
        }
    }
}

@c(cid_cursor_open_merged)
public func cid_cursor_open_merged(_ dbs: UnsafePointer<OpaquePointer?>?, _ count: Int, _ from: UInt64,
                            _ filter: UnsafeRawPointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard let out else { return fail(Status.invalidArgument, "out is NULL") }
    out.pointee = nil
    guard let dbs else { return fail(Status.invalidArgument, "dbs is NULL") }
    guard count >= 1 && count <= 65535 else {
        return fail(Status.invalidArgument, "count \(UInt(bitPattern: count)) is outside 1...65535")
    }
    var cores: [Core] = []
    cores.reserveCapacity(count)
    for i in 0..<count {
        var core: Core?
        let status = withDatabase(dbs[i]) { c in core = c; return Status.ok }
        guard let core else {
            return fail(status, "dbs[\(i)]: \(String(cString: LastError.message))")
        }
        cores.append(core)
    }
    do throws(CError) {
        let selection = try Selection(filter)
        let merged = MergedCursor(cores: cores, from: from, selection: selection)
        guard let handle = HandleTable.insert(CursorHandle(merged: merged), kind: .cursor) else {
            return fail(Status.internal, "too many open handles")
        }
        out.pointee = OpaquePointer(handle)
        return Status.ok
    } catch {
        return fail(error.status, error.message)
    }
}

@c(cid_cursor_next)
public func cid_cursor_next(_ cursor: OpaquePointer?, _ out: UnsafeMutableRawPointer?) -> Int32 {
    guard let cursor else { return fail(Status.invalidArgument, "the cursor is NULL") }
    guard let out else { return fail(Status.invalidArgument, "out is NULL") }
    return withCursor(cursor) { $0.next(out.assumingMemoryBound(to: CEntry.self)) }
}

@c(cid_cursor_next_batch)
public func cid_cursor_next_batch(_ cursor: OpaquePointer?, _ out: UnsafeMutableRawPointer?, _ capacity: Int,
                                  _ count: UnsafeMutablePointer<Int>?) -> Int32 {
    count?.pointee = 0
    guard let cursor else { return fail(Status.invalidArgument, "the cursor is NULL") }
    guard let out, let count else { return fail(Status.invalidArgument, "out or count is NULL") }
    // size_t arrives as Int: a capacity above Int.max reads as negative; no array is that large.
    guard capacity != 0 else { return fail(Status.invalidArgument, "capacity must be at least 1") }
    let wanted = capacity < 0 ? Int.max : capacity
    return withCursor(cursor) { $0.nextBatch(out.assumingMemoryBound(to: CEntry.self), wanted, count) }
}

@c(cid_cursor_free)
public func cid_cursor_free(_ cursor: OpaquePointer?) -> Int32 {
    guard let cursor else { return Status.ok }
    guard let object = HandleTable.remove(UnsafeRawPointer(cursor), kind: .cursor) else {
        return fail(Status.badHandle, "cid_cursor_free: not a live cursor (freed twice, or a database handle?)")
    }
    Unmanaged<CursorHandle>.fromOpaque(object).release()
    return Status.ok
}
