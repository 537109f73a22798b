// The portable codecs (Sources/CPortable) against golden values, round trips and crafted
// malformed blocks in every build; against liblz4 and libxxhash, bit for bit, where the
// system codecs are built in (Linux, default `SystemCodecs` trait). Fuzz/codec_*.c carry the
// same comparisons over fuzzed inputs (tools/fuzz.sh codec-lz4 / codec-xxh3).
import Testing
@testable import CallerID
import CPortable
#if SystemCodecs && os(Linux)
import CLZ4Shim
#endif

/// The deterministic bytes the golden values were computed over (libxxhash 0.8.1, liblz4 1.9.4).
private func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { i in
        let v = UInt64(i)
        return UInt8(truncatingIfNeeded: (v &* v &+ 3 &* v &+ 7) ^ (v >> 5))
    }
}

private func randomBytes(_ count: Int, _ rng: inout SeededGenerator) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    var i = 0
    while i < count {
        let w = rng.next()
        for k in 0..<min(8, count - i) { out[i + k] = UInt8(truncatingIfNeeded: w >> (8 * UInt64(k))) }
        i += 8
    }
    return out
}

/// Label-like text: words from a small vocabulary, digits, separators (compresses like label chunks).
private func labelText(_ count: Int, _ rng: inout SeededGenerator) -> [UInt8] {
    let words = ["Pizza", "Taxi", "Bank", "Dr.", "Müller", "Ltd", "Call", "Center", "Spam", "Insurance", "Москва", "Такси"]
    var out: [UInt8] = []
    out.reserveCapacity(count + 16)
    while out.count < count {
        out += Array(words[Int(rng.next() % UInt64(words.count))].utf8)
        out.append(rng.next() % 4 == 0 ? UInt8(ascii: "0") + UInt8(rng.next() % 10) : UInt8(ascii: " "))
    }
    return Array(out.prefix(count))
}

/// The portable decoder: bytes produced, or the negative CPORT_LZ4_* code.
private func portableDecode(_ block: [UInt8], capacity: Int, dictionary: [UInt8]) -> (Int, [UInt8]) {
    var out = [UInt8](repeating: 0, count: max(capacity, 1))
    let r = block.withUnsafeBytes { src in
        dictionary.withUnsafeBytes { dict in
            out.withUnsafeMutableBytes { dst in
                cport_lz4_decode(src.baseAddress ?? UnsafeRawPointer(bitPattern: 1), src.count, dst.baseAddress, capacity,
                               dict.count > 0 ? dict.baseAddress : nil, dict.count)
            }
        }
    }
    return (r, r > 0 ? Array(out.prefix(r)) : [])
}

private func portableEncode(_ input: [UInt8], dictionary: [UInt8]) -> [UInt8] {
    let encoder = dictionary.withUnsafeBytes { cport_lz4_encoder_create($0.baseAddress, $0.count) }!
    defer { cport_lz4_encoder_free(encoder) }
    var out = [UInt8](repeating: 0, count: cport_lz4_bound(input.count))
    let n = input.withUnsafeBytes { src in out.withUnsafeMutableBytes { cport_lz4_encode(encoder, src.baseAddress, src.count, $0.baseAddress, $0.count) } }
    return Array(out.prefix(n))
}

/// Golden XXH3-64 (seed 0) and XXH64 (seed = length) of `pattern(length)`, from libxxhash 0.8.1.
private let hashGoldens: [(Int, UInt64, UInt64)] = [
    (0, 0x2D06800538D394C2, 0xEF46DB3751D8E999), (1, 0x4C5CCA45D0F4811F, 0x0766883A0A47A96A),
    (2, 0x99EB8C923FBD325B, 0x7687CD62CCC12092), (3, 0x41FFB2B01BE7553E, 0x73514A1E88733E48),
    (4, 0xE5A66D093C592C6A, 0x99C8DB0DC71FD0B3), (5, 0x6DF0294B0B8124B8, 0xE77F0AA646C78192),
    (8, 0xA8B5C20DAA6ECB38, 0x10DB21C50449215D), (9, 0xFA8963B52FF7F874, 0x1113F04F5CF6FE15),
    (15, 0x9D5549FC80CBA363, 0x8AF81659799C473E), (16, 0x4B66F62B89709939, 0x56F3DE7DD5FB4523),
    (17, 0xB8059679B4F284C9, 0xD06884ECE2CF1C7E), (31, 0x7920329F20423957, 0xCCF86FD67E5EDB1B),
    (32, 0xDB219AA21A0FCF75, 0xEEF66E6BEB8C6E0F), (64, 0x9EC891BA7D69FC2F, 0xA070AE9B4DFDC7C2),
    (127, 0xF652C82FE7F343C7, 0x2EBB21BA6B3D0A9E), (128, 0x060F861DBEAA9F31, 0x4CF6242EF8619C7B),
    (129, 0x6A9B7FCD0FD43B20, 0xCB856D0567EF5353), (200, 0x5EC7B5EBBFBECCC8, 0x2FE00BCF0A11F9EB),
    (239, 0x9BFB9C65BD6801D7, 0xB9B1149EB607A39B), (240, 0xAFCC967AA4174DCC, 0x99C0EF80CF1EB732),
    (241, 0xC119F583D20CF661, 0x5F11CE8E7F173ED3), (255, 0x0D83CA7BC224F7B1, 0xB4721B4C59F40DE0),
    (256, 0xDE8295DA1747B405, 0xF7916A44923734E3), (1023, 0xEAD891BF336F4A57, 0xD6FC4446BC848772),
    (1024, 0x32AE51EBF4A3B4F8, 0x5093E2CC43BE3F29), (1025, 0x63E245DD0B0CAE70, 0x5E73856AF88BFE52),
    (2047, 0x1259DB2B06256FB3, 0x8FE5EE138EF63B94), (2048, 0xA37A42849CAC26BE, 0xFA60F739D81F1E17),
    (4096, 0x6022BD1659C34A8A, 0x9C9DE0EB82505B4D), (65537, 0xB11FD1E0CD346447, 0xAB265D72F48EF68C),
    (1_048_576, 0x6BBDE067081CAB93, 0x9A4903AD3FA91961),
]

private let goldenDictionary = Array("+7 913 Pizza Express, Taxi Moscow, Bank of Nowhere, Spam likely; ".utf8)
private let goldenText = Array("Taxi Moscow; Pizza Express Moscow; Spam likely; Bank of Nowhere branch 12, Taxi Moscow again and again and again.".utf8)
/// `goldenText` compressed by LZ4HC level 12 (liblz4 1.9.4) against `goldenDictionary`.
private let goldenBlock: [UInt8] = [
    0x07, 0x2B, 0x00, 0x1A, 0x3B, 0x47, 0x00, 0x05, 0x16, 0x00, 0x09, 0x30, 0x00, 0x0B, 0x4E, 0x00, 0xA9, 0x20,
    0x62, 0x72, 0x61, 0x6E, 0x63, 0x68, 0x20, 0x31, 0x32, 0x76, 0x00, 0xA8, 0x20, 0x61, 0x67, 0x61, 0x69, 0x6E,
    0x20, 0x61, 0x6E, 0x64, 0x0A, 0x00, 0x50, 0x67, 0x61, 0x69, 0x6E, 0x2E,
]

@Suite struct PortableCodecTests {
    @Test func xxh3AndXXH64MatchTheGoldenValues() {
        let data = pattern(1_048_576)
        data.withUnsafeBytes { raw in
            for (length, xxh3, xxh64) in hashGoldens {
                #expect(cport_xxh3_64(raw.baseAddress, length) == xxh3, "XXH3-64 of \(length) bytes")
                #expect(cport_xxh64(raw.baseAddress, length, UInt64(length)) == xxh64, "XXH64 of \(length) bytes")
            }
        }
        #expect(cport_xxh3_64(nil, 0) == 0x2D06_8005_38D3_94C2)
        #expect(Codec.xxh3(Array(data.prefix(241))) == 0xC119_F583_D20C_F661)   // whichever codec this build uses
    }

    /// A file streamed to disk is hashed in pieces: every length (short, medium, around the
    /// 64-byte stripes and the 1,024-byte blocks) cut at random points must give the one-shot
    /// value (libxxhash's where it is built in).
    @Test func streamingXXH3EqualsTheOneShotHashWhateverThePieces() {
        var rng = SeededGenerator(seed: 41)
        let data = randomBytes(9_000, &rng)
        var lengths = Array(0...300) + [511, 512, 513, 1023, 1024, 1025, 1087, 1088, 1089, 2048, 2049, 4096, 8999]
        for _ in 0..<60 { lengths.append(Int(rng.next() % 9_000)) }
        for length in lengths {
            let whole = Array(data.prefix(length))
            var state = StreamingXXH3()
            var at = 0
            while at < length {
                let piece = min(length - at, Int(rng.next() % 700))
                state.update(Array(whole[at..<(at + piece)]))
                at += piece
            }
            #expect(state.digest == Codec.xxh3(whole), "length \(length)")
        }
    }

    @Test func decodesTheGoldenLZ4HCBlockWithItsDictionary() {
        let (n, out) = portableDecode(goldenBlock, capacity: goldenText.count, dictionary: goldenDictionary)
        #expect(n == goldenText.count)
        #expect(out == goldenText)
        // Without the dictionary, its matches point before the block: refused.
        #expect(portableDecode(goldenBlock, capacity: goldenText.count, dictionary: []).0 == Int(CPORT_LZ4_MALFORMED))
    }

    @Test func portableEncoderRoundTripsWithAndWithoutDictionary() {
        var rng = SeededGenerator(seed: 14)
        let dictionary = labelText(60_000, &rng)
        for size in [1, 5, 12, 13, 17, 64, 1000, 4096, 65_536, 200_000] {
            for input in [labelText(size, &rng), randomBytes(size, &rng), [UInt8](repeating: 0x41, count: size)] {
                for dict in [[], dictionary] {
                    let block = portableEncode(input, dictionary: dict)
                    #expect(!block.isEmpty && block.count <= cport_lz4_bound(input.count))
                    let (n, out) = portableDecode(block, capacity: input.count, dictionary: dict)
                    #expect(n == input.count && out == input, "size \(size), dictionary \(dict.count)")
                }
            }
        }
        // Label text against a dictionary of label text actually compresses.
        let text = labelText(65_536, &rng)
        #expect(portableEncode(text, dictionary: dictionary).count < text.count / 2)
    }

    @Test func refusesCraftedMalformedBlocks() {
        let malformed = Int(CPORT_LZ4_MALFORMED)
        // Literals "abcdefgh" then a match, then 5 last literals: a valid 8 + 8 + 5 byte block.
        let lits = Array("abcdefgh".utf8)
        func block(offset: UInt16, matchCode: UInt8 = 4, tail: [UInt8] = Array("vwxyz".utf8)) -> [UInt8] {
            [0x80 | matchCode] + lits + [UInt8(offset & 0xFF), UInt8(offset >> 8)] + [UInt8(tail.count << 4)] + tail
        }
        let good = block(offset: 8)
        #expect(portableDecode(good, capacity: 21, dictionary: []).0 == 21)
        #expect(portableDecode(good, capacity: 21, dictionary: []).1 == Array("abcdefghabcdefghvwxyz".utf8))
        // Offset 0 is invalid in the format.
        #expect(portableDecode(block(offset: 0), capacity: 21, dictionary: []).0 == Int(CPORT_LZ4_OFFSET_ZERO))
        // Offset past the output (no dictionary), past dictionary + output.
        #expect(portableDecode(block(offset: 9), capacity: 21, dictionary: []).0 == malformed)
        #expect(portableDecode(block(offset: 12), capacity: 21, dictionary: [1, 2, 3]).0 == malformed)
        #expect(portableDecode(block(offset: 11), capacity: 21, dictionary: [1, 2, 3]).0 == 21)
        // Every truncation is refused, except the one that is itself a block: the token and
        // its 8 literals, a valid last sequence of 8 bytes.
        for cut in 0..<good.count {
            let r = portableDecode(Array(good.prefix(cut)), capacity: 21, dictionary: []).0
            #expect(cut == 9 ? r == 8 : r < 0, "cut at \(cut)")
        }
        // Output too small by one byte; one byte too large is accepted (fewer bytes produced).
        #expect(portableDecode(good, capacity: 20, dictionary: []).0 < 0)
        #expect(portableDecode(good, capacity: 22, dictionary: []).0 == 21)
        // A literal run longer than the input; an extension byte chain running off the input.
        #expect(portableDecode([0xF0, 0xFF, 0xFF, 0x10] + [UInt8](repeating: 1, count: 20), capacity: 1000, dictionary: []).0 == malformed)
        #expect(portableDecode([0xF0] + [UInt8](repeating: 0xFF, count: 30), capacity: 100_000, dictionary: []).0 == malformed)
        // The last sequence must be literals only and end exactly at the input's end.
        #expect(portableDecode([0x50] + Array("hello".utf8) + [0], capacity: 5, dictionary: []).0 < 0)
        #expect(portableDecode([0x50] + Array("hello".utf8), capacity: 5, dictionary: []).0 == 5)
        // Empty output: only the single zero token.
        #expect(portableDecode([0x00], capacity: 0, dictionary: []).0 == 0)
        #expect(portableDecode([0x10, 0x41], capacity: 0, dictionary: []).0 == malformed)
        #expect(portableDecode([], capacity: 10, dictionary: []).0 == malformed)
    }

    @Test func codecMatchesTheBuildsTrait() {
        #if SystemCodecs && os(Linux)
        #expect(Codec.implementation == "system")
        #else
        #expect(Codec.implementation == "portable")
        #endif
    }

    #if SystemCodecs && os(Linux)
    @Test func xxh3AndXXH64AgreeWithLibxxhash() {
        var rng = SeededGenerator(seed: 3)
        let data = randomBytes(3 << 20, &rng)
        data.withUnsafeBytes { raw in
            let base = raw.baseAddress!
            var differences = 0
            for length in 0...2048 {
                if cport_xxh3_64(base, length) != clz4_xxh3_64(base, length) { differences += 1 }
                if cport_xxh64(base, length, UInt64(length)) != clz4_xxh64(base, length, UInt64(length)) { differences += 1 }
            }
            for _ in 0..<40 {
                let start = Int(rng.next() % 64), length = Int(rng.next() % UInt64(raw.count - 64))
                if cport_xxh3_64(base + start, length) != clz4_xxh3_64(base + start, length) { differences += 1 }
            }
            #expect(differences == 0)
        }
    }

    /// liblz4's decoder on the same block: bytes produced or a negative value.
    private func systemDecode(_ block: [UInt8], capacity: Int, dictionary: [UInt8]) -> (Int, [UInt8]) {
        var out = [UInt8](repeating: 0, count: max(capacity, 1))
        let r = block.withUnsafeBytes { src in
            dictionary.withUnsafeBytes { dict in
                out.withUnsafeMutableBytes { dst in
                    dict.count > 0
                        ? clz4_decompress_safe_dict(src.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, dst.baseAddress!, Int32(src.count), Int32(capacity), dict.baseAddress!, Int32(dict.count))
                        : clz4_decompress_safe(src.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, dst.baseAddress!, Int32(src.count), Int32(capacity))
                }
            }
        }
        return (Int(r), r > 0 ? Array(out.prefix(Int(r))) : [])
    }

    private func systemCompress(_ input: [UInt8], dictionary: [UInt8], hc: Bool) -> [UInt8] {
        let bound = Int(clz4_compress_bound(Int32(input.count)))
        var out = [UInt8](repeating: 0, count: bound)
        let n: Int32 = input.withUnsafeBytes { src in
            dictionary.withUnsafeBytes { dict in
                out.withUnsafeMutableBytes { dst in
                    if hc {
                        let c = clz4_dict_compressor_create(dict.baseAddress ?? src.baseAddress!, Int32(dict.count), 9)!
                        defer { clz4_dict_compressor_free(c) }
                        return clz4_dict_compress(c, src.baseAddress!, dst.baseAddress!, Int32(src.count), Int32(bound))
                    }
                    return clz4_compress_fast_dict(src.baseAddress!, dst.baseAddress!, Int32(src.count), Int32(bound),
                                                   dict.baseAddress ?? src.baseAddress!, Int32(dict.count), 1)
                }
            }
        }
        return Array(out.prefix(Int(n)))
    }

    /// Same verdict and, when accepted, the same bytes. The portable decoder may refuse a block
    /// liblz4 lets through only for the documented reasons (offset 0, end-of-block rules).
    private func agree(_ block: [UInt8], capacity: Int, dictionary: [UInt8]) -> Bool {
        let mine = portableDecode(block, capacity: capacity, dictionary: dictionary)
        let theirs = systemDecode(block, capacity: capacity, dictionary: dictionary)
        if mine.0 >= 0 || theirs.0 >= 0 {
            if mine.0 == theirs.0 { return mine.1 == theirs.1 }
            return theirs.0 >= 0 && (mine.0 == Int(CPORT_LZ4_OFFSET_ZERO) || mine.0 == Int(CPORT_LZ4_END_RULE))
        }
        return true
    }

    @Test func lz4DecodingAgreesWithLiblz4OnItsBlocksAndTheirCorruptions() {
        var rng = SeededGenerator(seed: 11)
        let dictionary = labelText(65_536, &rng)
        var checked = 0, disagreements = 0
        for round in 0..<60 {
            let size = round < 30 ? Int(rng.next() % 300) + 1 : Int(rng.next() % 70_000) + 1
            let input = round % 3 == 0 ? randomBytes(size, &rng) : labelText(size, &rng)
            let dict = round % 2 == 0 ? dictionary : (round % 4 == 1 ? [] : Array(dictionary.suffix(Int(rng.next() % 5000))))
            for hc in [false, true] {
                let block = systemCompress(input, dictionary: dict, hc: hc)
                let mine = portableDecode(block, capacity: input.count, dictionary: dict)
                #expect(mine.0 == input.count && mine.1 == input, "liblz4 block, size \(size), hc \(hc)")
                // Malformed variants: truncations, flipped bits, other capacities.
                for k in 0..<30 {
                    var bad = Array(block.prefix(k % 3 == 0 ? Int(rng.next() % UInt64(block.count + 1)) : block.count))
                    if k % 2 == 1, !bad.isEmpty { bad[Int(rng.next() % UInt64(bad.count))] ^= UInt8(1) << (rng.next() % 8) }
                    let capacity = k % 5 == 4 ? Int(rng.next() % UInt64(input.count + 20)) : input.count
                    checked += 1
                    if !agree(bad, capacity: capacity, dictionary: dict) { disagreements += 1 }
                }
            }
            // liblz4 decodes what the portable encoder writes.
            let mineBlock = portableEncode(input, dictionary: dict)
            let theirs = systemDecode(mineBlock, capacity: input.count, dictionary: dict)
            #expect(theirs.0 == input.count && theirs.1 == input, "portable block, size \(size)")
        }
        #expect(checked == 3600)
        #expect(disagreements == 0)
    }

    @Test func craftedMalformedBlocksGetLiblz4sVerdict() {
        let lits = Array("abcdefgh".utf8)
        var blocks: [([UInt8], Int, [UInt8])] = []
        for offset: UInt16 in [0, 1, 7, 8, 9, 11, 12, 300, 65535] {
            for tail in [4, 5, 6] {
                let b = [0x84] + lits + [UInt8(offset & 0xFF), UInt8(offset >> 8)] + [UInt8(tail << 4)] + [UInt8](repeating: 0x7A, count: tail)
                for capacity in [0, 16, 20, 21, 22, 100] {
                    blocks.append((b, capacity, []))
                    blocks.append((b, capacity, [1, 2, 3]))
                }
            }
        }
        // Over-long literal runs and match lengths, length chains off the end.
        blocks.append(([0xF0, 0xFF, 0xFF, 0x10] + [UInt8](repeating: 1, count: 20), 1000, []))
        blocks.append(([0xF0] + [UInt8](repeating: 0xFF, count: 30), 100_000, []))
        blocks.append(([0x1F, 0x41, 0x01, 0x00] + [UInt8](repeating: 0xFF, count: 6) + [0x00, 0x50] + Array("hello".utf8), 5000, []))
        blocks.append(([0x1F, 0x41, 0x01, 0x00, 0x10, 0x50] + Array("hello".utf8), 40, []))
        for (block, capacity, dict) in blocks {
            #expect(agree(block, capacity: capacity, dictionary: dict), "\(block) capacity \(capacity)")
        }
    }
    #endif
}
