// CallerID through its Swift API: Pipeline.build (the row loop `lookup build` runs, the
// rows handed to DatabaseBuilder, which sorts and writes); Database.withEntry for
// lookups (zero-copy label view); cursor().nextBatch for the scan (1,024 entries per call);
// Database.verify for the verify time.
import CBenchSupport
import CallerID
import CallerIDPipeline

struct CallerIDEngine: Engine {
    var options = BuildOptions()

    func build(tsv: String, output: String) throws {
        var pipelineOptions = PipelineOptions()
        pipelineOptions.buildOptions = options
        // Any bad row stops the build; the file is written atomically (temporary file, fsync, rename).
        try Pipeline(options: pipelineOptions).build([tsv], to: output)
    }

    func files(_ output: String) -> [String] { [output] }

    func open(_ output: String) throws -> Reader { Reader(try Database(path: output)) }

    final class Reader: EngineReader {
        let db: Database
        init(_ db: Database) { self.db = db }

        @inline(__always) func lookup(_ number: UInt64) throws -> Int? {
            try db.withEntry(number) { v in
                let label = v.labelSpan
                return label.count &+ Int(label.isEmpty ? 0 : label[0]) &+ Int(v.category.action.rawValue)
            }
        }

        func verify() throws -> Bool {
            try db.verify()
            return true
        }

        func facts(_ into: inout JSONObject) {
            let info = db.info
            into.set("format_version", info.formatVersion)
            into.set("label_coding", info.labelCoding.rawValue)
            into.set("hot_labels", info.hotLabels)
            if info.labelCoding == .lz4 { into.set("lz4_group_labels", info.lz4GroupLabels) }
        }

        /// The probes whose value (label bytes, category) is among the hot values the file
        /// stores raw: the first `hotLabels` values, read from the sections "hot label offsets"
        /// (u32 offsets), "hot labels" and "value categories" (a category byte per value) that
        /// `Database.info` locates (docs/FORMAT.md 5.6–5.8). Nil when the file has no such sections.
        func hotAmong(_ numbers: [UInt64]) throws -> Int? {
            let info = db.info
            func section(_ name: String) -> SectionInfo? { info.sections.first { $0.name == name } }
            guard let offsets = section("hot label offsets"), let labels = section("hot labels"),
                  let categories = section("value categories") else { return nil }
            let h = info.hotLabels
            guard offsets.bytes >= 4 * (h + 1), categories.bytes >= h else { return nil }
            let file = try readFile(db.path)
            func u32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(file[at + $1]) << (8 * $1) } }
            var hot = Set<[UInt8]>()
            for i in 0..<h {
                let from = u32(offsets.offset + 4 * i), to = u32(offsets.offset + 4 * i + 4)
                guard from <= to, to <= labels.bytes else { return nil }
                hot.insert(Array(file[(labels.offset + from)..<(labels.offset + to)]) + [file[categories.offset + i]])
            }
            var n = 0
            for x in Set(numbers) {
                let key = try db.withEntry(x) { v -> [UInt8] in
                    let l = v.labelSpan
                    var k = [UInt8]()
                    k.reserveCapacity(l.count + 1)
                    for j in 0..<l.count { k.append(l[j]) }
                    k.append(UInt8(truncatingIfNeeded: v.categoryIndex))
                    return k
                }
                if let key, hot.contains(key) { n += 1 }
            }
            return n
        }

        func scan(sample: () -> Void) throws -> (entries: Int, checksum: Int) {
            var cursor = db.cursor()
            var batch = EntryBatch(capacity: 1024)
            var seen = 0, sum = 0, nextSample = 65536
            while true {
                let n = try cursor.nextBatch(&batch)
                if n == 0 { break }
                for i in 0..<n {
                    let v = batch[i]
                    let label = v.labelSpan
                    sum &+= Int(truncatingIfNeeded: v.number) &+ label.count &+ Int(label.isEmpty ? 0 : label[0])
                }
                seen &+= n
                if seen >= nextSample {
                    nextSample &+= 65536
                    sample()
                }
            }
            return (seen, sum)
        }
    }
}
