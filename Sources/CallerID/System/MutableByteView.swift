/// Writable bytes owned by someone else: where a cold label is decoded and a range label is
/// put together (a scratch allocation of ``withScratchBytes(_:_:)``, a cursor's or a batch's
/// label buffer, verify's buffer). The writing counterpart of ``ByteView``.
///
/// Invariants:
/// - `[start, start + count)` is writable memory that its owner keeps alive and does not hand to
///   anyone else while the view is in use (the scratch closure's duration; a cursor or batch
///   call). The view does not outlive that use.
/// - Stores are unchecked in release builds: each asserts that it lies inside `count`. Callers
///   compare with ``count`` before every store whose size depends on file bytes (the label
///   decoder checks its capacity before each symbol), so untrusted input never reaches past it.
/// - Little-endian stores write the same bytes on every host.
@usableFromInline
struct MutableByteView {
    @usableFromInline let start: UnsafeMutableRawPointer
    /// Writable bytes.
    @usableFromInline let count: Int

    @usableFromInline
    init(start: UnsafeMutableRawPointer, count: Int) {
        self.start = start
        self.count = count
    }

    /// The bytes of `buffer` (a temporary allocation, a test's buffer).
    @usableFromInline
    init(_ buffer: UnsafeMutableRawBufferPointer) {
        // An empty buffer may have no address; nothing is ever stored through an empty view.
        self.start = buffer.baseAddress ?? UnsafeMutableRawPointer(mutating: ByteView.emptyBase)
        self.count = buffer.count
    }

    /// Stores `value` little-endian (the same bytes on every host) at `offset`; the bytes must
    /// lie inside the view (asserted).
    @inline(__always)
    func store<T: FixedWidthInteger & BitwiseCopyable>(_ value: T, at offset: Int) {
        assert(offset >= 0 && offset <= count &- MemoryLayout<T>.size, "MutableByteView store out of range")
        start.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
    }

    /// Copies `bytes` to `[offset, offset + bytes.count)` (inside the view: a precondition, as
    /// the copy's length comes from the caller's data).
    @inline(__always)
    func copy(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        precondition(offset >= 0 && offset <= count && bytes.count <= count &- offset, "MutableByteView copy out of range")
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        (start + offset).copyMemory(from: source, byteCount: bytes.count)
    }

    /// The view without its first `n` bytes (`n ≤ count`, asserted).
    @inline(__always)
    func dropFirst(_ n: Int) -> MutableByteView {
        assert(n >= 0 && n <= count, "MutableByteView dropFirst out of range")
        return MutableByteView(start: start + n, count: count &- n)
    }

    /// The view of its first `n` bytes (`n ≤ count`, asserted).
    @inline(__always)
    func prefix(_ n: Int) -> MutableByteView {
        assert(n >= 0 && n <= count, "MutableByteView prefix out of range")
        return MutableByteView(start: start, count: n)
    }

    /// Moves the bytes of `range` (inside the view: a precondition) to the view's start.
    @inline(__always)
    func moveToStart(_ range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "MutableByteView move out of range")
        guard range.lowerBound > 0, !range.isEmpty else { return }
        start.copyMemory(from: start + range.lowerBound, byteCount: range.count)  // memmove: overlap is allowed
    }

    /// The first `n` bytes (`n ≤ count`, asserted), lent read-only: what was written.
    @inlinable @inline(__always)
    func bytes(upTo n: Int) -> UnsafeRawBufferPointer {
        assert(n >= 0 && n <= count, "MutableByteView bytes out of range")
        return UnsafeRawBufferPointer(start: start, count: n)
    }
}

/// Calls `body` with `count` bytes of scratch memory: on the stack when they fit (a label of a
/// lookup: no heap allocation per call), else a temporary heap block. The memory is
/// uninitialized, valid only during the call, and freed when it returns or throws.
@inlinable @inline(__always)
func withScratchBytes<R, E: Error>(_ count: Int, _ body: (MutableByteView) throws(E) -> R) throws(E) -> R {
    try withUnsafeTemporaryAllocation(byteCount: count, alignment: 8) { (buffer) throws(E) -> R in
        try body(MutableByteView(buffer))
    }
}
