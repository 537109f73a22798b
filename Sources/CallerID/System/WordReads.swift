extension UnsafeRawBufferPointer {
    /// The 8 bytes at `offset` as a little-endian word, for byte scans that test eight bytes at
    /// a time (the pipeline's label check). The caller tests `offset + 8 <= count` first (its
    /// loop condition); debug builds assert it again (a release check per word cost the plain
    /// 200,000-row build 0.5 % of its instructions).
    @inlinable @inline(__always)
    package func littleEndianWord(at offset: Int) -> UInt64 {
        assert(offset >= 0 && offset <= count &- 8)
        return UInt64(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}
