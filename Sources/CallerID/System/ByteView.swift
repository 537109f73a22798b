/// A read-only view of bytes owned by someone else (a mapping or a decoded buffer).
///
/// The unchecked readers (`u64(_:)`, `bits(at:width:)`…) are used only on ranges that
/// ``Database`` validated against the view's `count` when the file was opened; every other
/// caller uses the checked forms, which return `nil` instead of reading out of bounds.
struct ByteView: @unchecked Sendable {
    // @unchecked: points into immutable memory kept alive by the owner of the view.
    let base: UnsafeRawPointer
    let count: Int

    init(base: UnsafeRawPointer, count: Int) {
        self.base = base
        self.count = count
    }

    init(_ buffer: UnsafeRawBufferPointer) {
        // An empty buffer may have no address: use a harmless static one.
        self.base = buffer.baseAddress ?? ByteView.emptyBase
        self.count = buffer.count
    }

    nonisolated(unsafe) private static let emptyStorage = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)
    static var emptyBase: UnsafeRawPointer { UnsafeRawPointer(emptyStorage) }

    /// `length` bytes at `offset`, or nil when that range is not inside the view.
    func slice(_ offset: Int, _ length: Int) -> ByteView? {
        guard offset >= 0, length >= 0, offset <= count, length <= count - offset else { return nil }
        return ByteView(base: base + offset, count: length)
    }

    /// Same as ``slice(_:_:)`` for 64-bit offsets read from a file.
    func slice(_ offset: UInt64, _ length: UInt64) -> ByteView? {
        guard offset <= UInt64(count), length <= UInt64(count) - offset else { return nil }
        return ByteView(base: base + Int(offset), count: Int(length))
    }

    /// `length` bytes at `offset`, a range the caller validated (asserted).
    @inline(__always)
    func view(_ offset: Int, _ length: Int) -> ByteView {
        assert(offset >= 0 && length >= 0 && offset <= count && length <= count - offset)
        return ByteView(base: base + offset, count: length)
    }

    var buffer: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    // MARK: Checked little-endian reads

    func readU8(_ offset: Int) -> UInt8? {
        guard offset >= 0, offset < count else { return nil }
        return base.load(fromByteOffset: offset, as: UInt8.self)
    }

    func readU32(_ offset: Int) -> UInt32? {
        guard offset >= 0, offset <= count - 4 else { return nil }
        return UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    // MARK: Unchecked reads on validated ranges

    @_transparent
    func u8(_ offset: Int) -> UInt8 {
        assert(offset >= 0 && offset < count)
        return base.load(fromByteOffset: offset, as: UInt8.self)
    }

    @_transparent
    func u16(_ offset: Int) -> UInt16 {
        assert(offset >= 0 && offset + 2 <= count)
        return UInt16(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    @_transparent
    func u32(_ offset: Int) -> UInt32 {
        assert(offset >= 0 && offset + 4 <= count)
        return UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @_transparent
    func u64(_ offset: Int) -> UInt64 {
        assert(offset >= 0 && offset + 8 <= count)
        return UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The 8 bytes at `offset` as a big-endian number (an MSB-first bit stream's window).
    @_transparent
    func u64BigEndian(_ offset: Int) -> UInt64 {
        assert(offset >= 0 && offset + 8 <= count)
        return UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The `width`-bit field (0…57) starting at bit `bitOffset` (LSB-first packing).
    /// Reads the 8 bytes at `bitOffset / 8`; the caller validated that they are in bounds.
    @_transparent
    func bits(at bitOffset: Int, width: Int) -> UInt64 {
        let word = u64(bitOffset &>> 3)
        let mask: UInt64 = width == 0 ? 0 : (~0 as UInt64) &>> UInt64(64 - width)
        return (word &>> UInt64(bitOffset & 7)) & mask
    }

    /// Bytes `[offset, offset + length)` as a buffer; the caller validated the range.
    func bytes(_ offset: Int, _ length: Int) -> UnsafeRawBufferPointer {
        assert(offset >= 0 && length >= 0 && offset + length <= count)
        return UnsafeRawBufferPointer(start: base + offset, count: length)
    }

    /// True when every byte in `[offset, offset + length)` is zero.
    func isZero(_ offset: Int, _ length: Int) -> Bool {
        for i in offset..<(offset + length) where u8(i) != 0 { return false }
        return true
    }
}
