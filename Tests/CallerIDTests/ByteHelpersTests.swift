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
}
