// Seed corpora for the fuzz targets, written on demand (tools/fuzz.sh runs a target with
// CALLERID_FUZZ_WRITE_SEEDS=DIR once): small valid files and inputs covering every format
// feature, so the fuzzers start from deep inside the format instead of at the magic bytes.
@testable import CallerID
#if canImport(Glibc)
import Glibc
#endif

private func save(_ bytes: [UInt8], _ dir: String, _ name: String) {
    let path = "\(dir)/\(name)"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    precondition(fd >= 0, "cannot create \(path)")
    bytes.withUnsafeBytes { raw in
        var done = 0
        while done < raw.count {
            let n = write(fd, raw.baseAddress! + done, raw.count - done)
            precondition(n > 0)
            done += n
        }
    }
    close(fd)
}

/// A deterministic generator (SplitMix64).
private struct Mix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: UInt64) -> UInt64 { next() % n }
}

private let labels = ["", "Pizza Hut", "Сбербанк", "스타벅스 강남점", "Debt collector", "Taxi 24/7", "A",
                      "Ünïcödé ✓", "Аптека №1", "long label long label long label long label"]
private let categories: [Category] = [
    .identify, .block, try! Category("spam", action: .block), try! Category("collector", action: .block),
    try! Category("taxi", action: .identify),
]

/// One database image from `count` records made by `seed`.
private func image(count: Int, seed: UInt64, blockSize: Int, syncShift: Int = 5, hotBytes: Int,
                   compress: Bool = true, clustered: Bool = true, distinct: Int = labels.count,
                   suffixes: Bool = true, gapOne: Bool = false) -> [UInt8] {
    var options = BuildOptions()
    options.blockSize = blockSize
    options.syncShift = syncShift
    options.hotLabelBytes = hotBytes
    options.compressLabels = compress
    var builder = DatabaseBuilder(options: options)
    var rng = Mix(state: seed)
    var number: UInt64 = 1 + rng.below(PhoneNumber.maximum)
    for i in 0..<count {
        if gapOne {  // mostly runs of consecutive numbers between gaps of ~1,000: key codec 2
            number = min(PhoneNumber.maximum, number + (rng.below(5) < 3 ? 1 : 1_000 + rng.below(1_000)))
        } else if clustered {
            number = min(PhoneNumber.maximum, number + 1 + rng.below(i % 7 == 0 ? 100_000 : 5))
        } else {
            number = 1 + rng.below(PhoneNumber.maximum)
        }
        let label = labels[Int(rng.below(UInt64(min(distinct, labels.count))))] + (suffixes && rng.below(4) == 0 ? " \(rng.below(40))" : "")
        let category = suffixes ? categories[Int(rng.below(UInt64(categories.count)))] : .identify
        try! builder.add(number, label: label, category: category)
    }
    return try! builder.encode().0
}

/// Valid database files, each a few hundred bytes to a few KB.
func writeReaderSeeds(to dir: String) {
    save(image(count: 0, seed: 1, blockSize: 128, hotBytes: 65536), dir, "empty.cid")
    save(image(count: 1, seed: 2, blockSize: 128, hotBytes: 65536), dir, "one.cid")
    save(image(count: 3, seed: 3, blockSize: 128, hotBytes: 0), dir, "three.cid")
    save(image(count: 40, seed: 4, blockSize: 8, syncShift: 1, hotBytes: 40), dir, "coded.cid")
    save(image(count: 60, seed: 5, blockSize: 16, syncShift: 0, hotBytes: 0), dir, "allcold.cid")
    save(image(count: 60, seed: 6, blockSize: 4, hotBytes: 65536, compress: false), dir, "raw.cid")
    save(image(count: 80, seed: 7, blockSize: 64, syncShift: 2, hotBytes: 100, distinct: 3), dir, "fewlabels.cid")
    save(image(count: 30, seed: 8, blockSize: 1, hotBytes: 200), dir, "blocksize1.cid")
    save(image(count: 50, seed: 9, blockSize: 8, hotBytes: 300, clustered: false), dir, "scattered.cid")
    save(image(count: 24, seed: 10, blockSize: 3, hotBytes: 0, distinct: 1, suffixes: false), dir, "constant.cid")
    save(structures(), dir, "structures.cid")
    save(image(count: 200, seed: 11, blockSize: 32, syncShift: 3, hotBytes: 50, gapOne: true), dir, "gapone.cid")
}

/// Both key codecs (Elias–Fano and a run of consecutive numbers), long value codes, hot and
/// cold labels and four categories in one file.
private func structures() -> [UInt8] {
    var options = BuildOptions()
    options.blockSize = 8
    options.syncShift = 2
    options.hotLabelBytes = 60
    var b = DatabaseBuilder(options: options)
    let spam = try! Category("spam", action: .block), taxi = try! Category("taxi", action: .identify)
    var rows: [(UInt64, String, Category)] = []
    for i in 0..<16 { rows.append((79_000_000_000 + UInt64(i), "Hot", .identify)) }  // two runs
    for k in 0..<40 {
        for r in 0..<3 {
            rows.append((79_000_001_000 + UInt64(k * 37 + r * 5), "Mid label \(k) of the city directory", k % 3 == 0 ? spam : k % 3 == 1 ? taxi : .identify))
        }
    }
    for k in 0..<20 { rows.append((79_500_000_000 + UInt64(k) * 100_003, "Cold label number \(k) of the city directory", .identify)) }
    for (number, label, category) in rows { try! b.add(number, label: label, category: category) }
    return try! b.encode().0
}

/// Input rows: TSV, CSV and JSON snippets and formatted numbers.
func writeParserSeeds(to dir: String) {
    let seeds: [(String, String)] = [
        ("tsv-basic", "79131234567\tPizza Hut\tidentify\n79131234568\tPizza Hut\n82212345678\t스타벅스\tspam\n"),
        ("tsv-formats", "+7 913 123-45-67\tA\n+1 (415) 555.0100\tB\tcollector\n44 20 7946 0958\t\tblock\n# comment\n\n"),
        ("tsv-bad", "0123\tleading zero\n12a4\tletters\n1234567890123456\ttoo long\nnotab\n1\t2\t3\t4\n"),
        ("tsv-crlf", "79131234567\tCRLF line\r\n79131234569\tÜnïcödé ✓\tcustom-cat\r\n"),
        ("number-nbsp", "+7\u{a0}913\u{a0}123\u{a0}45\u{a0}67\tnbsp\n"),
        ("csv", "phone,name,category\n\"+7 913 123-45-67\",\"Pizza, Hut\",spam\n79131234568,\"say \"\"hi\"\"\",\n"),
        ("csv-multiline", "number;label\n79131234567;\"two\nlines\"\n"),
        ("json", "[{\"phoneNumber\":\"8211111111\",\"name\":\"Type_1\"},{\"phoneNumber\":\"+7 913 123 45 67\",\"name\":\"\\u0410\\u0431\"}]"),
        ("jsonl", "{\"number\":\"79131234567\",\"label\":\"Pizza\",\"category\":\"spam\"}\n\n{\"number\":79131234568,\"label\":null}\n"),
        ("national", "8 (913) 123-45-67\tnational\n00 44 20 7946 0958\tinternational prefix\n"),
    ]
    for (name, text) in seeds { save(Array(text.utf8), dir, name) }
}
