// libFuzzer target: arbitrary bytes as a database file.
//
// Built by tools/fuzz.sh together with Sources/CallerID (compiled with -enable-testing and
// asserts kept on, so the bounds assertions of ByteView's unchecked reads are oracles too:
// AddressSanitizer does not see reads inside a memory mapping).
//
// For every input: open without verify, then lookups of numbers taken from the input and
// their neighbours, the first keys of blocks, a full enumeration, a filtered enumeration from
// a number in the middle, `info`, `verify()`; then open with `verify: true`. None of these may
// crash, trap or hang; enumeration must be strictly ascending and end within `count` entries;
// a file that passes verify must answer every enumerated number with the same entry.
// Every input runs twice: as it is, and `fixedUp` (magic, lengths and every checksum
// recomputed), so that mutations reach the structural checks behind the checksums.
@testable import CallerID
#if canImport(Glibc)
import Glibc
#endif

/// One scratch file per process (tmpfs when there is one).
private let scratchPath: String = {
    let dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    return "\(dir)/callerid-fuzz-reader-\(getpid()).cid"
}()

private func writeScratch(_ data: UnsafeRawBufferPointer) {
    let fd = open(scratchPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    precondition(fd >= 0, "cannot create \(scratchPath)")
    var done = 0
    while done < data.count {
        let n = write(fd, data.baseAddress! + done, data.count - done)
        precondition(n > 0, "short write to \(scratchPath)")
        done += n
    }
    close(fd)
}

private func fail(_ message: String) -> Never {
    let text = Array("callerid reader fuzz: invariant broken: \(message)\n".utf8)
    _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    abort()
}

/// Numbers worth asking for: 8-byte and 5-byte windows of the input, clamped into the valid
/// range, and their neighbours.
private func probes(_ data: UnsafeRawBufferPointer) -> [UInt64] {
    var out: [UInt64] = [0, 1, PhoneNumber.maximum, PhoneNumber.maximum + 1, UInt64.max]
    var i = 0
    while i + 8 <= data.count, out.count < 64 {
        let w = data.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        for v in [w, w % (PhoneNumber.maximum + 1), w & 0xFF_FFFF_FFFF] {
            out.append(v)
            out.append(v &+ 1)
            out.append(v &- 1)
        }
        i += 24
    }
    return out
}

/// Enumerates, checking order and termination; returns the entries (capped).
private func enumerate(_ db: Database, from: UInt64 = 0, filter: CategoryFilter? = nil, keep: Int) -> [Entry] {
    var cursor = db.cursor(from: from, filter: filter)
    var previous: UInt64? = nil
    var steps = 0
    var kept: [Entry] = []
    while true {
        let e: Entry?
        do { e = try cursor.next() } catch { return kept }
        guard let e else { return kept }
        if let previous, e.number <= previous { fail("enumeration not ascending: \(e.number) after \(previous)") }
        if e.number < from { fail("enumeration from \(from) returned \(e.number)") }
        if !PhoneNumber.isValid(e.number) { fail("enumeration returned invalid number \(e.number)") }
        previous = e.number
        steps += 1
        if steps > db.count { fail("enumeration returned more than count = \(db.count) entries") }
        if kept.count < keep { kept.append(e) }
    }
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    if let dir = getenv("CALLERID_FUZZ_WRITE_SEEDS") {
        writeReaderSeeds(to: String(cString: dir))
        exit(0)
    }
    return 0
}

/// The same bytes with every checksum, length and magic field recomputed, so that mutations
/// reach the structural checks behind them instead of stopping at a checksum mismatch.
func fixedUp(_ data: UnsafeRawBufferPointer) -> [UInt8]? {
    var b = Array(data)
    let size = b.count
    guard size >= Format.headerSize + Format.footerSize else { return nil }
    func u32(_ o: Int) -> UInt32 { b.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: o, as: UInt32.self)) } }
    func u64(_ o: Int) -> UInt64 { b.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: o, as: UInt64.self)) } }
    func hash(_ o: Int, _ n: Int) -> UInt64 { b.withUnsafeBytes { Codec.xxh3(UnsafeRawBufferPointer(rebasing: $0[o..<(o + n)])) } }
    func store(_ v: UInt64, at o: Int) { withUnsafeBytes(of: v.littleEndian) { b.replaceSubrange(o..<(o + 8), with: $0) } }
    let footer = size - Format.footerSize
    b.replaceSubrange(0..<8, with: Format.magic)
    store(UInt64(size), at: 16)
    let tableOffset = u64(48)
    if tableOffset >= UInt64(Format.headerSize), tableOffset <= UInt64(footer),
       (UInt64(footer) - tableOffset) % UInt64(Format.sectionEntrySize) == 0 {
        let table = Int(tableOffset)
        let sections = (footer - table) / Format.sectionEntrySize
        for i in 0..<sections {
            let e = table + i * Format.sectionEntrySize
            let offset = u64(e + 8), length = u64(e + 16)
            if offset <= UInt64(table), length <= UInt64(table) - offset {
                store(hash(Int(offset), Int(length)), at: e + 24)
            }
        }
        store(hash(table, sections * Format.sectionEntrySize), at: footer + 8)
    }
    store(UInt64(size), at: footer)
    store(u64(24), at: footer + 16)
    b.replaceSubrange((footer + 24)..<(footer + 32), with: Format.footerMagic)
    store(hash(0, 56), at: 56)
    return b
}

private func exercise(_ data: UnsafeRawBufferPointer) {
    writeScratch(data)
    defer { unlink(scratchPath) }
    let size = data.count
    if let db = try? Database(path: scratchPath) {
        // Each block costs 12 bytes of index and 8 of record header.
        if db.blockCount > size / 20 { fail("\(db.blockCount) blocks in a \(size)-byte file") }
        var asked = probes(data)
        // The first key of every block (at most 64) and its neighbours.
        for b in 0..<min(db.blockCount, 64) {
            let k = db.firstKey(b)
            asked += [k, k &+ 1, k &- 1]
        }
        for n in asked {
            let found = try? db.lookup(n)
            if let found, found.number != n { fail("lookup(\(n)) returned \(found.number)") }
            _ = try? db.contains(n)
            _ = try? db.withEntry(n) { $0.labelBytes.count }
        }
        let all = enumerate(db, keep: 256)
        // The batch cursor agrees with the entry cursor on everything it returns.
        do {
            var cursor = db.cursor()
            var batch = EntryBatch(capacity: 7)
            var seen = 0
            var previous: UInt64? = nil
            batches: while let n = try? cursor.nextBatch(&batch), n > 0 {
                for i in 0..<n {
                    let e = batch[i].entry
                    if let previous, e.number <= previous { fail("batch not ascending: \(e.number) after \(previous)") }
                    previous = e.number
                    if seen < all.count, all[seen] != e { fail("batch entry \(seen) = \(e), cursor says \(all[seen])") }
                    seen += 1
                    if seen > db.count { fail("batch returned more than count = \(db.count) entries") }
                    if seen >= 256 { break batches }
                }
            }
        }
        if let middle = all.dropFirst(all.count / 2).first {
            _ = enumerate(db, from: middle.number, filter: .action(.block), keep: 0)
            _ = enumerate(db, from: middle.number &+ 1, filter: .action(.identify), keep: 0)
        }
        _ = db.info
        var verified = true
        do { try db.verify() } catch { verified = false }
        if verified {
            // A verified file is self-consistent: every entry enumerated is found by lookup.
            if all.count != min(db.count, 256) { fail("verified file enumerates \(all.count) of \(db.count) entries") }
            for e in all {
                guard let found = try? db.lookup(e.number) else { fail("verified file: lookup(\(e.number)) failed") }
                if found != e { fail("verified file: lookup(\(e.number)) = \(found), enumeration says \(e)") }
            }
        }
        let reopened = try? Database(path: scratchPath, verify: true)
        if verified != (reopened != nil) { fail("verify() says \(verified), open with verify says \(reopened != nil)") }
    } else {
        if (try? Database(path: scratchPath, verify: true)) != nil { fail("open with verify accepted a file that open refused") }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReader(_ start: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let data = UnsafeRawBufferPointer(start: start, count: size)
    exercise(data)
    if let fixed = fixedUp(data) {
        fixed.withUnsafeBytes { exercise($0) }
    }
    return 0
}
