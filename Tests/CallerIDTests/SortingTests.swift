import Testing
@testable import CallerID

/// The package's two stable sorts against the standard library's sort of (key, index): equal
/// keys must keep their input order ("the last record for a number wins" depends on it).
@Suite struct SortingTests {
    /// Keys with many duplicates and every magnitude: 0, small, the largest E.164 number, and
    /// full 64-bit values (the sorts must not assume 15 digits).
    func keys(count: Int, seed: UInt64) -> [UInt64] {
        var rng = SeededGenerator(seed: seed)
        var keys: [UInt64] = []
        for _ in 0..<count {
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: keys.append(keys.randomElement(using: &rng) ?? 0)                 // a duplicate
            case 1: keys.append(UInt64.random(in: 0...300, using: &rng))               // small, many equal
            case 2: keys.append(UInt64.random(in: 0...999_999_999_999_999, using: &rng))
            case 3: keys.append(999_999_999_999_999)
            default: keys.append(UInt64.random(in: 0...UInt64.max, using: &rng))
            }
        }
        return keys
    }

    func expectedOrder(_ keys: [UInt64]) -> [Int32] {
        keys.indices.sorted { keys[$0] != keys[$1] ? keys[$0] < keys[$1] : $0 < $1 }.map { Int32($0) }
    }

    @Test(arguments: [(0, 1 as UInt64), (1, 2), (2, 3), (63, 4), (64, 5), (65, 6), (1000, 7), (70_000, 8)])
    func stableOrderIsTheStableSort(count: Int, seed: UInt64) {
        let k = keys(count: count, seed: seed)
        #expect(stableOrder(of: k) == expectedOrder(k))
    }

    @Test(arguments: [(0, 11 as UInt64), (1, 12), (2, 13), (1000, 14), (65_535, 16), (65_536, 17), (70_000, 15)])
    func radixSortPairsIsTheStableSort(count: Int, seed: UInt64) {
        expectPairSortIsStable(keys(count: count, seed: seed))
    }

    /// Keys whose digits (bytes) are the same in every key in some places, which the pair sort
    /// skips: one number block of a country (the high bytes shared), keys that differ only in
    /// their high bytes, and all keys equal.
    @Test(arguments: [UInt64(0x0000_FFFF), 0x00FF_0000_0000, 0xFF00_FF00_00FF, 0])
    func radixSortPairsSkipsSharedDigitsAndStaysStable(varying: UInt64) {
        var rng = SeededGenerator(seed: varying &+ 41)
        let base: UInt64 = 79_130_000_000 & ~varying
        var k: [UInt64] = []
        for _ in 0..<5000 {
            k.append(Bool.random(using: &rng) && !k.isEmpty ? k.randomElement(using: &rng)! : base | (UInt64.random(in: 0...UInt64.max, using: &rng) & varying))
        }
        expectPairSortIsStable(k)
    }

    func expectPairSortIsStable(_ keys: [UInt64]) {
        var k = keys
        let count = k.count
        let order = expectedOrder(k)
        var values = (0..<UInt32(count)).map { $0 }
        let original = k
        radixSortPairs(keys: &k, values: &values)
        #expect(values == order.map { UInt32($0) })
        #expect(k == order.map { original[Int($0)] })
    }
}

/// The module's one heap against a sort: any interleaving of pushes and pops must hand out the
/// least element held each time (duplicates included), and nothing when empty.
@Suite struct MinHeapTests {
    @Test(arguments: [1 as UInt64, 2, 3, 4])
    func popsInSortedOrderUnderInterleavedPushes(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var heap = MinHeap<UInt64>()
        var model: [UInt64] = []   // kept sorted
        var mismatches: [String] = []
        for step in 0..<3_000 {
            if model.isEmpty || Int.random(in: 0..<3, using: &rng) > 0 {
                // Few distinct values, so equal elements meet in the heap.
                let x = UInt64.random(in: 0...50, using: &rng) == 0 ? UInt64.max : UInt64.random(in: 0...200, using: &rng)
                heap.push(x)
                model.insert(x, at: model.firstIndex { $0 > x } ?? model.count)
            } else {
                let popped = heap.popMin()
                if popped != model.removeFirst() { mismatches.append("step \(step): popped \(String(describing: popped))") }
            }
            if heap.count != model.count || heap.min != model.first { mismatches.append("step \(step): count or min differs") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        var drained: [UInt64] = []
        while let x = heap.popMin() { drained.append(x) }
        #expect(drained == model.sorted())
        #expect(heap.isEmpty && heap.min == nil && heap.popMin() == nil)
    }
}
