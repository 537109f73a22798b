// The table behind `cid_db *` and `cid_cursor *`: a handle is not the address of a Swift
// object but an encoded (slot index, generation, kind) value. Closing a handle bumps its
// slot's generation, so a stale copy of the value never matches again, even once the slot
// is reused: no freed memory is ever read to check a handle, and a second close cannot
// close someone else's handle. A call pins the handle it uses (``Pins``), and a close waits
// for the calls pinned on its handle before it releases the object: a close that races a
// call makes that call either finish normally or fail with CID_ERR_BAD_HANDLE, never read
// freed memory.
import Synchronization
internal import CPortable
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The kinds of handle, one bit of the encoded value.
enum HandleKind: UInt {
    case database = 0
    case cursor = 1
}

/// Slot storage that is allocated in chunks and never freed, so a check on any index below
/// the published capacity reads valid memory without taking the lock.
///
/// Encoding (64-bit): bit 0 is always 1 (never a valid object address, never NULL), bit 1 the
/// kind, bits 2–25 the slot index, bits 32–63 the slot's generation. A slot whose generation
/// would wrap is retired rather than reused.
enum HandleTable {
    struct Slot: ~Copyable {
        /// The encoded value of the live handle in this slot; 0 when the slot is free.
        let tag = Atomic<UInt>(0)
        /// The retained object's address while live.
        let object = Atomic<UInt>(0)
    }

    static let chunkBits = 12
    static let chunkSize = 1 << chunkBits
    static let maxChunks = 4096  // 16,777,216 open handles at most
    static let indexMask: UInt = (1 << 24) - 1

    /// Chunk base addresses, published with release ordering; entries are never cleared.
    nonisolated(unsafe) static let directory: UnsafeMutablePointer<Atomic<UInt>> = {
        let d = UnsafeMutablePointer<Atomic<UInt>>.allocate(capacity: maxChunks)
        for i in 0..<maxChunks { (d + i).initialize(to: Atomic<UInt>(0)) }
        return d
    }()

    struct State {
        var free: [UInt32] = []
        var allocated = 0
        /// Next generation per slot (starts at 1).
        var generations: [UInt32] = []
    }

    static let state = Mutex(State())

    @inline(__always)
    static func decodeIndex(_ value: UInt) -> Int { Int((value >> 2) & indexMask) }

    /// Registers `object` (retained) and returns its handle value, or nil when the table is full.
    static func insert(_ object: AnyObject, kind: HandleKind) -> UnsafeMutableRawPointer? {
        guard MemoryLayout<UInt>.size == 8 else { return nil }  // the encoding needs 64-bit values
        return state.withLock { s -> UnsafeMutableRawPointer? in
            let index: Int
            if let i = s.free.popLast() {
                index = Int(i)
            } else {
                guard s.allocated < maxChunks * chunkSize else { return nil }
                index = s.allocated
                if index % chunkSize == 0 {
                    let chunk = UnsafeMutablePointer<Slot>.allocate(capacity: chunkSize)
                    for i in 0..<chunkSize { (chunk + i).initialize(to: Slot()) }
                    directory[index >> chunkBits].store(UInt(bitPattern: chunk), ordering: .releasing)
                }
                s.allocated += 1
                s.generations.append(1)
            }
            let generation = UInt(s.generations[index])
            let value = generation << 32 | UInt(index) << 2 | kind.rawValue << 1 | 1
            let slot = slotPointer(index)!
            slot.pointee.object.store(UInt(bitPattern: Unmanaged.passRetained(object).toOpaque()), ordering: .releasing)
            slot.pointee.tag.store(value, ordering: .releasing)
            return UnsafeMutableRawPointer(bitPattern: value)
        }
    }

    @inline(__always)
    static func slotPointer(_ index: Int) -> UnsafeMutablePointer<Slot>? {
        let base = directory[index >> chunkBits].load(ordering: .acquiring)
        guard let chunk = UnsafeMutablePointer<Slot>(bitPattern: base) else { return nil }
        return chunk + (index & (chunkSize - 1))
    }

    /// The live object behind `handle` if it is an open handle of `kind`; reads only table
    /// memory, never the object of a closed handle. A database stays alive only while the
    /// calling thread has `handle` pinned (``withObject(_:kind:_:)``); a cursor while no other
    /// thread frees it (the caller's rule).
    @inline(__always)
    static func object(_ handle: UnsafeRawPointer, kind: HandleKind) -> UnsafeMutableRawPointer? {
        let value = UInt(bitPattern: handle)
        guard value & 3 == (kind.rawValue << 1 | 1) else { return nil }
        guard let slot = slotPointer(decodeIndex(value)) else { return nil }
        guard slot.pointee.tag.load(ordering: .acquiring) == value else { return nil }
        let object = slot.pointee.object.load(ordering: .acquiring)
        // The tag again: a close, and a new handle in the same slot, between the two loads
        // would have changed it (the object of another handle is never returned).
        guard slot.pointee.tag.load(ordering: .acquiring) == value else { return nil }
        return UnsafeMutableRawPointer(bitPattern: object)
    }

    /// Runs `body` with the live object behind `handle` (nil when it is not an open handle of
    /// `kind`) and the calling thread's record, with `handle` pinned on this thread: a close
    /// of it that starts meanwhile waits until `body` returns before it releases the object.
    @inline(__always)
    static func withObject<R>(_ handle: UnsafeRawPointer, kind: HandleKind,
                              _ body: (UnsafeMutableRawPointer?, UnsafeMutablePointer<Pins.Record>) -> R) -> R {
        let pin = Pins.current()
        // A new call number first (only this thread writes it), then the pin.
        pin.pointee.calls.store(pin.pointee.calls.load(ordering: .relaxed) &+ 1, ordering: .releasing)
        let saved = pin.pointee.handle.load(ordering: .relaxed)
        pin.pointee.handle.store(UInt(bitPattern: handle), ordering: .relaxed)
        Pins.lightBarrier(pin)
        defer { pin.pointee.handle.store(saved, ordering: .releasing) }
        return body(object(handle, kind: kind), pin)
    }

    /// Unregisters `handle` and returns its object (still retained: the caller releases it),
    /// or nil when it is not an open handle of `kind`. For a database, calls that pinned
    /// `handle` before it was unregistered have returned by then, and later ones find it closed.
    /// Cursors are not pinned (one thread at a time uses a cursor, callerid.h): a free costs
    /// no barrier, and `cid_cursor_next` no thread lookup per entry.
    static func remove(_ handle: UnsafeRawPointer, kind: HandleKind) -> UnsafeMutableRawPointer? {
        guard let object = unregister(handle, kind: kind) else { return nil }
        if kind == .database { Pins.waitUntilUnpinned(UInt(bitPattern: handle)) }
        return object
    }

    private static func unregister(_ handle: UnsafeRawPointer, kind: HandleKind) -> UnsafeMutableRawPointer? {
        let value = UInt(bitPattern: handle)
        guard value & 3 == (kind.rawValue << 1 | 1) else { return nil }
        let index = decodeIndex(value)
        return state.withLock { s -> UnsafeMutableRawPointer? in
            guard index < s.allocated, let slot = slotPointer(index),
                  slot.pointee.tag.load(ordering: .acquiring) == value else { return nil }
            slot.pointee.tag.store(0, ordering: .releasing)
            let object = slot.pointee.object.exchange(0, ordering: .acquiringAndReleasing)
            let next = s.generations[index] &+ 1
            if next != 0 {  // a slot whose generation would wrap is retired, never reused
                s.generations[index] = next
                s.free.append(UInt32(index))
            }
            return UnsafeMutableRawPointer(bitPattern: object)
        }
    }
}

/// The handle each thread is inside a call on (a hazard pointer per thread), so that a close
/// can wait for the calls that began before it without the calls taking a lock or touching a
/// shared reference count (lookups from many threads would contend on it).
///
/// A call stores its handle value in its thread's record, then checks the handle table; a
/// close clears the table entry, then waits while any record holds the value. For the two to
/// see each other (a store followed by a load on each side), a full barrier must separate each
/// side's store from its load. Where the OS has one, the close side pays for both with
/// `membarrier` (every running thread executes a full barrier) and a call needs only a
/// compiler barrier; elsewhere both sides put a full fence there.
///
/// Records are allocated once per thread that ever calls in, linked into a list that is never
/// freed (a close walks it), and handed to a new thread when their thread exits. A record also
/// holds its thread's lookup labels (``ThreadLabels``): a lookup reads its thread's state once.
enum Pins {
    struct Record: ~Copyable {
        /// The thread's lookup labels: the head segment of ``ThreadLabels``, or nil. Only the
        /// owning thread reads or writes it.
        var labels: UnsafeMutableRawPointer? = nil
        /// The pinned handle value; 0 when the thread is in no call.
        let handle = Atomic<UInt>(0)
        /// Calls begun on this thread (wrapping): a close waits for the call it saw pinned to
        /// end, not for the thread to stop calling with the closed handle.
        let calls = Atomic<UInt>(0)
        /// True while a live thread holds this record.
        let owned = Atomic<Bool>(true)
        /// A copy of ``asymmetric``, read on the hot path from the record's own cache line.
        let asymmetric: Bool
        /// The next record of the list; set before the record is published, never changed.
        let next: UnsafeMutablePointer<Record>?
    }

    /// Bytes and alignment of a record's allocation.
    static let recordBytes = 128

    /// True when the close side issues `membarrier`, so that calls need only a compiler barrier.
    static let asymmetric: Bool = cport_membarrier_register() == 0

    /// The first record of the list (an address; 0 for none), published with release ordering.
    static let head = Atomic<UInt>(0)

    static let key: pthread_key_t = {
        var k = pthread_key_t()
        // Fails only when the process has used up its keys or its memory: as running out of
        // memory, that aborts (callerid.h).
        precondition(pthread_key_create(&k, { record in
            // The thread exits: its labels are freed and its record is free for the next thread.
            guard let r = record?.assumingMemoryBound(to: Record.self) else { return }
            ThreadLabels.freeAll(r.pointee.labels)
            r.pointee.labels = nil
            r.pointee.handle.store(0, ordering: .releasing)
            r.pointee.owned.store(false, ordering: .releasing)
        }) == 0, "libcallerid: no thread-specific key left")
        return k
    }()

    /// The calling thread's record (made or adopted at its first call).
    @inline(__always)
    static func current() -> UnsafeMutablePointer<Record> {
        if let r = pthread_getspecific(key) { return r.assumingMemoryBound(to: Record.self) }
        return adopt()
    }

    /// A record for a thread that has none: a free one of the list, or a new one.
    @inline(never)
    private static func adopt() -> UnsafeMutablePointer<Record> {
        var next = UnsafeMutablePointer<Record>(bitPattern: head.load(ordering: .acquiring))
        while let r = next {
            if r.pointee.owned.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
                precondition(pthread_setspecific(key, r) == 0, "libcallerid: out of memory")
                return r
            }
            next = r.pointee.next
        }
        // A record to itself on 128 bytes (two cache lines, as adjacent lines are fetched in
        // pairs): each thread writes its own record on every call, on lines no other thread writes.
        precondition(MemoryLayout<Record>.stride <= recordBytes)
        let r = UnsafeMutableRawPointer.allocate(byteCount: recordBytes, alignment: recordBytes).bindMemory(to: Record.self, capacity: 1)
        var first = head.load(ordering: .acquiring)
        r.initialize(to: Record(asymmetric: asymmetric, next: UnsafeMutablePointer(bitPattern: first)))
        while true {
            let (exchanged, seen) = head.compareExchange(expected: first, desired: UInt(bitPattern: r), ordering: .acquiringAndReleasing)
            if exchanged { break }
            // Another thread published first: link behind its record (ours is not yet shared).
            first = seen
            let asymmetric = r.pointee.asymmetric
            r.deinitialize(count: 1)
            r.initialize(to: Record(asymmetric: asymmetric, next: UnsafeMutablePointer(bitPattern: first)))
        }
        precondition(pthread_setspecific(key, r) == 0, "libcallerid: out of memory")
        return r
    }

    /// Between a call's pin and its check of the handle table.
    @inline(__always)
    static func lightBarrier(_ pin: UnsafeMutablePointer<Record>) {
        if pin.pointee.asymmetric { cport_compiler_barrier() } else { atomicMemoryFence(ordering: .sequentiallyConsistent) }
    }

    /// After a close has unregistered `value`: returns once no thread has it pinned. Calls that
    /// pin it from now on find it unregistered and do not touch its object.
    static func waitUntilUnpinned(_ value: UInt) {
        if !asymmetric || cport_membarrier() != 0 { atomicMemoryFence(ordering: .sequentiallyConsistent) }
        var next = UnsafeMutablePointer<Record>(bitPattern: head.load(ordering: .acquiring))
        while let r = next {
            // The call this record holds now, if it is on `value`: wait until it ends (the pin
            // is dropped, or a later call has begun). Calls begun from now on fail the check.
            if r.pointee.handle.load(ordering: .acquiring) == value {
                let call = r.pointee.calls.load(ordering: .acquiring)
                while r.pointee.handle.load(ordering: .acquiring) == value && r.pointee.calls.load(ordering: .acquiring) == call {
                    sched_yield()
                }
            }
            next = r.pointee.next
        }
    }
}
