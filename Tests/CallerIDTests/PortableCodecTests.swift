// The portable hashes (Sources/CPortable) against golden values in every build; against
// libxxhash, bit for bit, where the system codec is built in (Linux, default `SystemCodecs`
// trait). Fuzz/codec_xxh3.c carries the same comparison over fuzzed inputs
// (tools/fuzz.sh codec-xxh3).
import Testing
@testable import CallerID
import CPortable
#if SystemCodecs && os(Linux)
import CLZ4Shim
#endif

/// The deterministic bytes the golden values were computed over (libxxhash 0.8.1).
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
    #endif
}
