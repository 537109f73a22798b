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
