// Format 2.0, section kind 6: value categories (docs/FORMAT.md §5.6), and the same table of the
// ranges section's values (part P2 of §5.12). Its writer and its reader, beside the drawing of
// its bytes:
//
//   offset  size  field     value
//   ------  ----  --------  ----------------------------------------------------------------------
//        v     1  category  value v's category code: an index into the categories (section 1)
//
// valueCount bytes. A code ≥ the number of categories is damage, checked where the value is used.

/// A table of one category code per value (kind 6, and P2 of the ranges section).
enum ValueCategories {
    // MARK: Writer

    /// The codes of values 0 ..< count.
    static func encode(count: Int, category: (Int) -> UInt8) -> [UInt8] { (0..<count).map(category) }

    // MARK: Reader

    /// Value `value`'s category code (value < the table's length), nil when it names no category.
    @inline(__always)
    static func code(_ table: ByteView, _ value: Int, categoryCount: Int) -> Int? {
        let code = Int(table.u8(value))
        return code < categoryCount ? code : nil
    }
}
