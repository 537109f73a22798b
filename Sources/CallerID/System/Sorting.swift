/// Stable LSD radix sort of (key, value) pairs by key, 16 bits per pass.
/// Stability is what makes "the last record for a number wins" deterministic.
func radixSortPairs(keys: inout [UInt64], values: inout [UInt32]) {
    let n = keys.count
    guard n > 1 else { return }
    let maxKey = keys.max() ?? 0
    let passes = (Format.bitWidth(maxKey) + 15) / 16
    var keysB = [UInt64](repeating: 0, count: n)
    var valuesB = [UInt32](repeating: 0, count: n)
    var counts = [Int](repeating: 0, count: 65_536)
    for pass in 0..<passes {
        let shift = UInt64(pass * 16)
        keys.withUnsafeBufferPointer { k in
            values.withUnsafeBufferPointer { v in
                keysB.withUnsafeMutableBufferPointer { kb in
                    valuesB.withUnsafeMutableBufferPointer { vb in
                        counts.withUnsafeMutableBufferPointer { c in
                            for i in 0..<65_536 { c[i] = 0 }
                            for i in 0..<n { c[Int((k[i] >> shift) & 0xFFFF)] += 1 }
                            var sum = 0
                            for i in 0..<65_536 { let t = c[i]; c[i] = sum; sum += t }
                            for i in 0..<n {
                                let d = Int((k[i] >> shift) & 0xFFFF)
                                let j = c[d]
                                c[d] = j + 1
                                kb[j] = k[i]
                                vb[j] = v[i]
                            }
                        }
                    }
                }
            }
        }
        swap(&keys, &keysB)
        swap(&values, &valuesB)
    }
}
