// TEMPORARY stand-in until the real codec lands (not committed).
struct LabelSymbolTable {
    static func train<C: Collection>(_ labels: C) -> LabelSymbolTable where C.Element == [UInt8] { LabelSymbolTable() }
    var symbolCount: Int { 0 }
    func encode(_ label: [UInt8], into out: inout [UInt8]) { for b in label { out.append(255); out.append(b) } }
    var serialized: [UInt8] { [0] }
}
struct LabelSymbolDecoder {
    init?(_ bytes: UnsafeRawBufferPointer) { guard bytes.count == 1, bytes[0] == 0 else { return nil } }
    var symbolCount: Int { 0 }
    func decode(_ codes: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer, capacity: Int) -> Int? {
        var i = 0, n = 0
        while i < codes.count {
            guard codes[i] == 255, i + 1 < codes.count, n < capacity else { return nil }
            out.storeBytes(of: codes[i + 1], toByteOffset: n, as: UInt8.self)
            n += 1; i += 2
        }
        return n
    }
}
