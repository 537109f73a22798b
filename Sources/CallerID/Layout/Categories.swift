// Format 2.0, section kind 1: categories (docs/FORMAT.md §5.1). Its writer and its reader,
// beside the drawing of its bytes (little-endian):
//
//   offset  size   field   value
//   ------  -----  ------  ----------------------------------------------------------------------
//        0      4  count   number of categories, 1 … 256
//        4      …          `count` records, packed, no padding; a record:
//
//            0      1  action      0 = identify (show the label), 1 = block (block the call)
//            1      1  nameLength  1 … 64
//            2  nameLength  name   bytes a-z 0-9 - _, unique in the section
//
// A record's category code is its position (0-based). The records end exactly at the section's end.

/// The categories section (kind 1).
enum Categories {
    /// Where each field starts: of the section, then of a record (the drawing above).
    enum Offset {
        static let count = 0
        static let records = 4
        static let action = 0
        static let nameLength = 1
        static let name = 2
    }
    static let maxCount = 256

    // MARK: Writer

    /// The section's bytes for `categories`, in code order.
    static func encode(_ categories: [Category]) -> [UInt8] {
        var out: [UInt8] = []
        out.appendLE(UInt32(categories.count))
        for c in categories {
            out.append(c.action.rawValue)
            out.append(UInt8(c.name.utf8.count))
            out.append(contentsOf: c.name.utf8)
        }
        return out
    }

    // MARK: Reader

    /// The categories of section `s`, every record checked (inside the section, a known action,
    /// a valid and unique name) and no byte left over.
    static func decode(_ s: ByteView, path: String) throws(CallerIDError) -> [Category] {
        func bad(_ what: String) -> CallerIDError { CallerIDError.corrupt(path, "categories: \(what)") }
        guard let n = s.readU32(Offset.count), (1...UInt32(maxCount)).contains(n) else { throw bad("count outside 1...\(maxCount)") }
        var result: [Category] = []
        var p = Offset.records
        for _ in 0..<n {
            guard let actionByte = s.readU8(p + Offset.action), let action = CategoryAction(rawValue: actionByte),
                  let len = s.readU8(p + Offset.nameLength), let nameBytes = s.slice(p + Offset.name, Int(len)) else {
                throw bad("entry at offset \(p) is malformed")
            }
            let name = String(decoding: nameBytes.buffer, as: UTF8.self)
            // At most 256 names: a linear search, no `Set` (see the section table's list).
            guard let c = try? Category(name, action: action), !result.contains(where: { $0.name == name }) else {
                throw bad("invalid or repeated name at offset \(p)")
            }
            result.append(c)
            p += Offset.name + Int(len)
        }
        guard p == s.count else { throw bad("\(s.count - p) unexpected trailing bytes") }
        return result
    }
}
