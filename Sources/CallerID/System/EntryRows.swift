// The batch fill's raw output for the C ABI: entries written as `cid_entry` rows into the
// caller's array (EntryCursor.nextBatch(_:rows:limit:)).

/// Entries written as rows of `stride` bytes, each laid out as the C ABI's `cid_entry`: the
/// number (`UInt64`) at byte 0, the label's address at 8 (`empty` for a label without one),
/// its length (`Int`) at 16, and at 24 the 24 bytes that `tails` holds for the entry's
/// category code (at `tails + 24 × code`: the category's name, index and action, source and
/// reserved fields). The caller checks that its row type has this layout.
package struct EntryRows: EntrySink {
    let base: UnsafeMutableRawPointer
    let stride: Int
    let tails: UnsafeRawPointer
    let empty: UnsafeRawPointer

    package init(base: UnsafeMutableRawPointer, stride: Int, tails: UnsafeRawPointer, empty: UnsafeRawPointer) {
        self.base = base
        self.stride = stride
        self.tails = tails
        self.empty = empty
    }

    @inline(__always)
    package func put(_ i: Int, _ number: UInt64, _ label: UnsafeRawBufferPointer, _ category: UInt8) {
        let row = base + i &* stride
        let tail = tails + 24 &* Int(category)
        row.storeBytes(of: number, as: UInt64.self)
        row.storeBytes(of: label.baseAddress ?? empty, toByteOffset: 8, as: UnsafeRawPointer.self)
        row.storeBytes(of: label.count, toByteOffset: 16, as: Int.self)
        row.storeBytes(of: tail.loadUnaligned(as: UInt64.self), toByteOffset: 24, as: UInt64.self)
        row.storeBytes(of: tail.loadUnaligned(fromByteOffset: 8, as: UInt64.self), toByteOffset: 32, as: UInt64.self)
        row.storeBytes(of: tail.loadUnaligned(fromByteOffset: 16, as: UInt64.self), toByteOffset: 40, as: UInt64.self)
    }
}
