extension UnsafeRawBufferPointer {
    /// The 8 bytes at `offset` as a little-endian word, for byte scans that test eight bytes at
    /// a time (the pipeline's label check). Traps when the 8 bytes are not all inside the
    /// buffer: callers test `offset + 8 <= count` first.
    @inlinable @inline(__always)
    package func littleEndianWord(at offset: Int) -> UInt64 {
        precondition(offset >= 0 && offset <= count &- 8)
        return UInt64(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}
