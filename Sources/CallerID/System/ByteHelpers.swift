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

extension Array where Element == UInt8 {
    /// Writes the decimal digits of `number` at `offset` (at most 20 bytes, no sign) and returns
    /// how many: the Live Caller ID export's keywords (`+` and the number) for 10⁷ entries
    /// without a check per digit. Traps when the array has no room for the digits.
    @inlinable
    package mutating func writeDecimal(_ number: UInt64, at offset: Int) -> Int {
        var digits = 1
        var v = number
        while v >= 10 { digits += 1; v /= 10 }
        precondition(offset >= 0 && offset <= count - digits)
        withUnsafeMutableBufferPointer { out in
            var v = number
            var i = offset + digits - 1
            repeat {
                out[i] = 0x30 &+ UInt8(truncatingIfNeeded: v % 10)
                v /= 10
                i &-= 1
            } while v > 0
        }
        return digits
    }
}
