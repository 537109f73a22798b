import Foundation
import Testing
@testable import CallerID

// tools/size_budget.py splits a file's bytes into keys, value codes, labels and structure
// (BENCHMARKS.md's account of the size against the entropy floor). It reads the records
// from docs/FORMAT.md alone; its parts must be the reader's.

@Suite struct SizeBudgetToolTests {
    private static let tool = BuiltProducts.packageRoot.appendingPathComponent("tools/size_budget.py").path

    /// A file with all three key codecs (gap-1 runs, whole runs and sparse keys, so a major-3
    /// file), hot and cold labels: every part the tool reports, times the entries, is the sum
    /// the reader's records and sections give; with a stats file, the floor is its figures.
    @Test func partsAreTheReadersRecordsAndSections() throws {
        var rng = SeededGenerator(seed: 11)
        var x: UInt64 = 79_000_000_000
        let keys = (0..<5_000).map { i -> UInt64 in
            switch i % 1_000 {
            case ..<300: x += 1  // whole blocks of consecutive numbers
            case ..<600: x += Bool.random(using: &rng) ? 1 : UInt64.random(in: 2...900, using: &rng)  // half gap 1
            default: x += UInt64.random(in: 2...900, using: &rng)  // sparse
            }
            return x
        }
        let labels = (0..<400).map { Array("Label \($0) \(String(repeating: "x", count: $0 % 37))".utf8) }
        var layout = LayoutOptions()
        layout.blockSize = 256
        layout.hotLabelBytes = 600
        let image = try FileWriter.encode(keys: keys, values: keys.indices.map { UInt32(($0 * 7) % labels.count) },
                                          labelCount: labels.count, label: { labels[$0][...] }, valueCategory: { UInt8($0 % 2) },
                                          categories: [.identify, .block], options: layout).image
        let dir = TempDir()
        let path = dir.path("budget.cid")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(image)))
        let db = try Database(path: path, verify: true)
        #expect(db.labels.hotCount > 0 && db.labels.hotCount < db.valueCount)

        var headers = 0, sync = 0, keyBytes = 0, valueBytes = 0
        var codecs = Set<UInt8>()
        for b in 0..<db.blockCount {
            let r = try db.record(b)
            codecs.insert(r.keyCodec)
            let syncBytes = 2 * ((r.entryCount - 1) >> db.syncShift)
            headers += Format.recordHeaderSize
            sync += syncBytes
            keyBytes += r.valueStart - Format.recordHeaderSize - syncBytes
            valueBytes += r.valueBits / 8
        }
        #expect(codecs == [Format.keyCodecEliasFano, Format.keyCodecRun, Format.keyCodecRunBitmap])
        let section = Dictionary(uniqueKeysWithValues: db.info.sections.map { ($0.name, $0.bytes) })
        let labelBytes = ["hot label offsets", "hot labels", "label symbol table", "cold label index", "cold labels"]
            .reduce(0) { $0 + section[$1, default: 0] }

        let stats = dir.path("stats.json")
        let statsJSON = #"{"entries": 5000, "key_gap_entropy_bits": 4.0, "label_entropy_bits": 8.5, "category_entropy_bits": 1.0, "label_text_lz4hc_bytes": 2500}"#
        #expect(FileManager.default.createFile(atPath: stats, contents: Data(statsJSON.utf8)))
        let run = try runTool("python3", [Self.tool, path, stats, "--json"], timeout: 60)
        #expect(run.status == 0, "\(run.stderr)")
        let out = try #require(try JSONSerialization.jsonObject(with: run.stdoutData) as? [String: Any])
        func bytes(_ key: String) -> Int { Int(((out[key] as? Double ?? -1) * Double(keys.count)).rounded()) }
        #expect(out["entries"] as? Int == keys.count && out["bytes"] as? Int == image.count)
        #expect(bytes("record_headers") == headers)
        #expect(bytes("sync_tables") == sync)
        #expect(bytes("keys") == keyBytes)
        #expect(bytes("value_codes") == valueBytes)
        #expect(bytes("labels") == labelBytes)
        #expect(bytes("structure") == image.count - keyBytes - valueBytes - labelBytes)
        let floor = try #require(out["floor"] as? [String: Double])
        #expect(floor["keys"] == 0.5 && floor["value_codes"] == 9.5 / 8 && floor["labels"] == 0.5 && floor["structure"] == 0)
    }
}
