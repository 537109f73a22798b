// The table behind `cid_db *` and `cid_cursor *`: a handle is not the address of a Swift
// object but an encoded (slot index, generation, kind) value. Closing a handle bumps its
// slot's generation, so a stale copy of the value never matches again, even once the slot
// is reused: no freed memory is ever read to check a handle, and a second close cannot
// close someone else's handle.
import Synchronization

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
    /// memory, never the object of a closed handle.
    @inline(__always)
    static func object(_ handle: UnsafeRawPointer, kind: HandleKind) -> UnsafeMutableRawPointer? {
        let value = UInt(bitPattern: handle)
        guard value & 3 == (kind.rawValue << 1 | 1) else { return nil }
        guard let slot = slotPointer(decodeIndex(value)) else { return nil }
        guard slot.pointee.tag.load(ordering: .acquiring) == value else { return nil }
        return UnsafeMutableRawPointer(bitPattern: slot.pointee.object.load(ordering: .acquiring))
    }

    /// Unregisters `handle` and returns its object (still retained: the caller releases it),
    /// or nil when it is not an open handle of `kind`.
    static func remove(_ handle: UnsafeRawPointer, kind: HandleKind) -> UnsafeMutableRawPointer? {
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
