import Testing
@testable import CallerID

/// The System layer's byte helpers against the standard library's own conversions.
@Suite struct ByteHelpersTests {
    @Test func writeDecimalWritesWhatStringDoes() {
        var rng = SeededGenerator(seed: 41)
        let edges: [UInt64] = [0, 9, 10, 99, 100, 999_999_999_999_999, 1_000_000_000_000_000, UInt64.max]
        for number in edges + (0..<2_000).map({ _ in UInt64.random(in: 0...UInt64.max, using: &rng) >> UInt64.random(in: 0...63, using: &rng) }) {
            var bytes = [UInt8](repeating: 0xEE, count: 23)
            let n = bytes.writeDecimal(number, at: 2)
            #expect(Array(bytes[2..<(2 + n)]) == Array(String(number).utf8), "\(number)")
            #expect(bytes[0..<2].allSatisfy { $0 == 0xEE } && bytes[(2 + n)...].allSatisfy { $0 == 0xEE }, "only the digits are written")
        }
    }

    @Test func littleEndianWordReadsEightBytesAnywhere() {
        let bytes: [UInt8] = Array(1...20)
        bytes.withUnsafeBytes { raw in
            for offset in 0...12 {
                let expected = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
                #expect(raw.littleEndianWord(at: offset) == expected)
            }
        }
    }

    /// A buffer made by repeating a value, or filled with one, holds it at every index, whatever the count (the fill
    /// copies doubling runs: powers of two and their neighbours are the edges) and the size of
    /// the element; nothing past the count is touched (the allocator's checks in the sanitized
    /// runs).
    @Test(arguments: [0, 1, 2, 3, 7, 8, 9, 255, 256, 257, 65_537])
    func fixedBufferHoldsItsValueAtEveryIndex(count: Int) {
        let bytes = FixedBuffer<UInt8>(repeating: 0xA5, count: count)
        let halves = FixedBuffer<Int16>(repeating: -1, count: count)
        var words = FixedBuffer<UInt64>(repeating: 0x0123_4567_89AB_CDEF, count: count)
        #expect(bytes.count == count && halves.count == count && words.count == count)
        var wrong = 0
        for i in 0..<count where bytes[i] != 0xA5 || halves[i] != -1 || words[i] != 0x0123_4567_89AB_CDEF { wrong += 1 }
        #expect(wrong == 0)
        words.fill(with: 7)
        for i in 0..<count where words[i] != 7 { wrong += 1 }
        #expect(wrong == 0, "fill(with:)")
        // A run inside the buffer: its elements change, the ones on either side keep theirs.
        let run = (count / 3)..<(count - count / 4)
        words.fill(run, with: 9)
        for i in 0..<count where words[i] != (run.contains(i) ? 9 : 7) { wrong += 1 }
        #expect(wrong == 0, "fill(\(run), with:)")
    }
}
