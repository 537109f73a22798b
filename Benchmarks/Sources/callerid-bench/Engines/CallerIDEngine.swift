// CallerID through its Swift API: DatabaseBuilder.addTSV + write; Database.withEntry for
// lookups (zero-copy label view); cursor().nextBatch for the scan (1,024 entries per call);
// Database.verify for the verify time.
import CBenchSupport
import CallerID

struct CallerIDEngine: Engine {
    var options = BuildOptions()

    func build(tsv: String, output: String) throws {
        var builder = DatabaseBuilder(options: options)
        var bad = 0
        _ = try builder.addTSV(path: tsv) { _ in bad += 1 }
        guard bad == 0 else { throw BenchError("\(tsv): \(bad) bad rows") }
        _ = try builder.write(to: output)  // atomic: temporary file, fsync, rename
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
