/// Heap memory for a fixed number of values of a trivial type, owned by one value.
///
/// The tables a database builds when it opens (the value code's decoding table, the label
/// symbols, the powers of ten of the ranges) and the buffers a cursor, a batch or verify decode
/// into. The rest of the core indexes it like an array; the pointer stays here.
///
/// Invariants:
/// - The memory holds `count` elements, all initialized when the buffer is made, and is freed
///   exactly once, when its one owner ends (`~Copyable`: no copy can free it twice or outlive
///   it). `Element` is `BitwiseCopyable`, so nothing needs deinitializing.
/// - The subscript is unchecked in release builds (the hot loops index it per entry): an index
///   must be in `0..<count`, which `assert` checks in debug builds (the tests and the fuzz
///   runs). Callers index with their own loop counters or with values already checked against
///   the buffer's size (a block's entry count against the block size, a code byte below 256);
///   never with a number read from a file without a check.
/// - Writing needs the owner's exclusive access (`mutating`): a buffer held in a `let` is
///   immutable, so a class that holds its tables in `let`s can be `Sendable`.
/// - ``elements``, ``prefix(_:)`` and ``bytes(_:_:)`` lend the memory read-only,
///   ``writer()`` and ``writableBytes(_:_:)`` for writing (both `mutating`: only the caller
///   that holds the owner exclusively gets them). What is lent is valid while the owner lives
///   and is not replaced (a cursor's or batch's buffers are replaced only by their own owner,
///   between uses), and is never kept beyond that.
@usableFromInline
package struct FixedBuffer<Element: BitwiseCopyable>: ~Copyable {
    @usableFromInline let start: UnsafeMutablePointer<Element>
    /// Number of elements.
    @usableFromInline package let count: Int

    /// `count` (≥ 0) copies of `value`: one written, then copied by doubling runs of bytes
    /// (`memcpy`, which costs the same in every build; the generic element loop, unspecialized in
    /// a debug build, took a witness call per element of the 64 KiB tables and of the symbol
    /// training's 262,144 pair counters, cleared every round).
    package init(repeating value: Element, count: Int) {
        precondition(count >= 0, "negative buffer size")
        start = .allocate(capacity: max(count, 1))
        self.count = count
        Self.store(value, count, at: start)
    }

    /// Writes `count` copies of `value` at `start`: one element, then doubling runs copied as
    /// bytes (`Element` is `BitwiseCopyable`, so a byte copy initializes).
    private static func store(_ value: Element, _ count: Int, at start: UnsafeMutablePointer<Element>) {
        guard count > 0 else { return }
        start.initialize(to: value)
        let stride = MemoryLayout<Element>.stride
        let bytes = UnsafeMutableRawPointer(start)
        var filled = 1
        while filled < count {
            let n = min(filled, count - filled)
            (bytes + filled * stride).copyMemory(from: bytes, byteCount: n * stride)
            filled += n
        }
    }

    deinit { start.deallocate() }

    /// Element `i` (`0 ≤ i < count`, asserted; unchecked in release builds).
    @inlinable
    package subscript(i: Int) -> Element {
        @_transparent get {
            assert(i >= 0 && i < count, "FixedBuffer index out of range")
            return start[i]
        }
        @_transparent set {
            assert(i >= 0 && i < count, "FixedBuffer index out of range")
            start[i] = newValue
        }
    }

    /// All elements, lent read-only (valid while the owner lives, not to be kept): a copy that
    /// stays in registers in a hot loop.
    @inlinable
    package var elements: UnsafeBufferPointer<Element> { UnsafeBufferPointer(start: start, count: count) }

    /// The first `n` elements (`n ≤ count`), lent read-only like ``elements``.
    @inlinable
    package func prefix(_ n: Int) -> UnsafeBufferPointer<Element> {
        assert(n >= 0 && n <= count, "FixedBuffer prefix out of range")
        return UnsafeBufferPointer(start: start, count: n)
    }

    /// All elements, lent for writing to the one caller that holds the owner exclusively (a
    /// hot loop that fills a batch keeps the writer in a register; stores through the owner
    /// of a class's buffer reload its address after each store). Valid while the owner lives.
    @inline(__always)
    mutating func writer() -> FixedBufferWriter<Element> {
        FixedBufferWriter(start: start, count: count)
    }

    /// Sets every element to `value` (the fill of ``init(repeating:count:)``).
    mutating func fill(with value: Element) {
        Self.store(value, count, at: start)
    }

    /// Sets the elements of `range` (inside `0..<count`) to `value`, by the same doubling copy.
    mutating func fill(_ range: Range<Int>, with value: Element) {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "FixedBuffer fill out of range")
        Self.store(value, range.count, at: start + range.lowerBound)
    }

    /// Copies the first `n` elements of `other` (`n ≤` both counts).
    mutating func copyPrefix(_ n: Int, from other: borrowing FixedBuffer<Element>) {
        precondition(n >= 0 && n <= count && n <= other.count, "FixedBuffer copy out of range")
        start.update(from: other.start, count: n)
    }
}

/// The elements of a ``FixedBuffer`` lent for writing (``FixedBuffer/writer()``): the same
/// unchecked, asserted subscript, in a value that stays in a register. It does not own the
/// memory and must not outlive the owner's exclusive use that made it.
struct FixedBufferWriter<Element: BitwiseCopyable> {
    private let start: UnsafeMutablePointer<Element>
    let count: Int

    fileprivate init(start: UnsafeMutablePointer<Element>, count: Int) {
        self.start = start
        self.count = count
    }

    /// Element `i` (`0 ≤ i < count`, asserted; unchecked in release builds).
    subscript(i: Int) -> Element {
        @_transparent get {
            assert(i >= 0 && i < count, "FixedBuffer index out of range")
            return start[i]
        }
        @_transparent nonmutating set {
            assert(i >= 0 && i < count, "FixedBuffer index out of range")
            start[i] = newValue
        }
    }
}

extension FixedBuffer: @unchecked Sendable where Element: Sendable {}
// @unchecked: one owner; writes need `mutating` access, so shared (`let`) buffers are read-only.

extension FixedBuffer where Element == UInt8 {
    /// Bytes `[offset, offset + length)` (inside the buffer, asserted), lent read-only.
    @inlinable
    func bytes(_ offset: Int, _ length: Int) -> UnsafeRawBufferPointer {
        assert(offset >= 0 && length >= 0 && offset <= count && length <= count &- offset, "FixedBuffer bytes out of range")
        return UnsafeRawBufferPointer(start: start + offset, count: length)
    }

    /// Bytes `[offset, offset + length)` (inside the buffer, asserted), lent for writing to the
    /// one caller that holds the owner exclusively.
    mutating func writableBytes(_ offset: Int, _ length: Int) -> MutableByteView {
        assert(offset >= 0 && length >= 0 && offset <= count && length <= count &- offset, "FixedBuffer bytes out of range")
        return MutableByteView(start: UnsafeMutableRawPointer(start + offset), count: length)
    }
}
