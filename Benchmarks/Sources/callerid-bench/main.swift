// callerid-bench: CallerID side by side with SQLite, LMDB, the naive stream format and
// LZ4-compressed TSV, on the same generated directories, in one run.
//
//   callerid-bench compare [--quick] [--markdown BENCHMARKS.md] [--json] ...   the whole comparison
//   callerid-bench engine NAME --tsv FILE --db FILE [--probes FILE] [--lookups N]   one engine, one data set
//   callerid-bench probes --tsv FILE --out FILE [--lookups N]   the probe file `compare` draws, for `engine --probes`
//   callerid-bench INPUT.tsv [--json] [--db OUT] [--existing] [--raw-labels] ...   CallerID only (as before)
//   callerid-bench --scan-only --db FILE     open and scan (for valgrind; --repeat N times the fastest)
//   callerid-bench --verify-only --db FILE   open and verify once (for valgrind --tool=callgrind)
//   callerid-bench ranges --plan DIR [--db OUT] [--lookups N]   a numbering plan kept as ranges
//   callerid-bench categories [--rows N]     the TSV import with one category and with N/4 and N distinct ones
//
// `compare --help` lists the options. tools/bench.sh is the one command that rewrites
// BENCHMARKS.md and the charts.
import CallerID
import Foundation

let usage = """
    usage: callerid-bench compare [--quick] [--markdown FILE] [--json] [--results FILE] [--charts DIR]
                                  [--datasets PROFILE:N,...] [--engines NAME,...] [--lookups N] [--work DIR] [--keep]
                                  [--max-load CORES]   (repeat a run during which other processes used more CPU)
           callerid-bench engine NAME --tsv FILE --db FILE [--probes FILE] [--lookups N] [--existing] [--no-verify]
           callerid-bench probes --tsv FILE --out FILE [--lookups N]
           callerid-bench INPUT.tsv [--json] [--lookups N] [--db OUT] [--existing] [--raw-labels]
                                    [--block-size N] [--sync-shift N] [--hot-label-bytes N]
           callerid-bench --scan-only --db FILE [--engine callerid|lmdb] [--repeat N]
           callerid-bench --verify-only --db FILE [--repeat N]
           callerid-bench ranges --plan DIR [--db OUT] [--lookups N] [--builds N] [--block-size RANGES]
           callerid-bench categories [--rows N] [--builds N] [--max-growth R] [--work DIR]
    engines: \(engineNames.joined(separator: ", "))

    """

struct UsageError: Error { var message: String; init(_ m: String) { message = m } }

/// `--opt value` and `--opt=value`; flags without values; positional arguments.
struct Arguments {
    var values: [String: String] = [:]
    var flags: Set<String> = []
    var positional: [String] = []

    init(_ args: [String], valued: Set<String>) throws {
        var i = 0
        while i < args.count {
            let a = args[i]
            if a.hasPrefix("--") {
                if let eq = a.firstIndex(of: "=") {
                    values[String(a[..<eq])] = String(a[a.index(after: eq)...])
                } else if valued.contains(a) {
                    guard i + 1 < args.count else { throw UsageError("\(a) needs a value") }
                    values[a] = args[i + 1]
                    i += 1
                } else {
                    flags.insert(a)
                }
            } else {
                positional.append(a)
            }
            i += 1
        }
    }

    func int(_ k: String) throws -> Int? {
        guard let v = values[k] else { return nil }
        guard let n = Int(v.replacingOccurrences(of: "_", with: "")), n >= 0 else { throw UsageError("\(k): not a count: \(v)") }
        return n
    }
}

let valued: Set<String> = [
    "--tsv", "--db", "--probes", "--lookups", "--markdown", "--results", "--charts", "--datasets", "--engines",
    "--work", "--root", "--seed", "--scans", "--colds", "--block-size", "--sync-shift", "--hot-label-bytes", "--max-load", "--command", "--plan", "--builds",
    "--rows", "--max-growth", "--repeat", "--engine", "--out",
]

func main() -> Int32 {
    var args = Array(CommandLine.arguments.dropFirst())
    if args.isEmpty || args.contains("--help") || args.contains("-h") {
        print(usage, terminator: "")
        return args.isEmpty ? 64 : 0
    }
    do {
        if args.contains("--scan-only") {
            let a = try Arguments(args, valued: valued)
            guard let path = a.values["--db"] else { throw UsageError("--scan-only needs --db FILE") }
            let reader: any EngineReader
            switch a.values["--engine"] ?? "callerid" {
            case "callerid": reader = try CallerIDEngine().open(path)
            case "lmdb": reader = try LMDBEngine().open(path)
            case let other: throw UsageError("--scan-only: engine '\(other)' (callerid or lmdb)")
            }
            var times: [Double] = []
            var r = (entries: 0, checksum: 0)
            for _ in 0..<max(try a.int("--repeat") ?? 1, 1) {
                let t0 = DispatchTime.now().uptimeNanoseconds
                r = try reader.scan(sample: {})
                times.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            }
            let best = times.min()!
            print(String(format: "scanned %ld entries (checksum %ld): fastest of %ld %.2f ms, %.1f M/s", r.entries, r.checksum, times.count, best,
                         Double(r.entries) / best / 1e3))
            return 0
        }
        if args.contains("--verify-only") {
            let a = try Arguments(args, valued: valued)
            guard let path = a.values["--db"] else { throw UsageError("--verify-only needs --db FILE") }
            let db = try Database(path: path)
            let repeats = max(try a.int("--repeat") ?? 1, 1)
            var times: [Double] = []
            for _ in 0..<repeats {
                let t0 = DispatchTime.now().uptimeNanoseconds
                try db.verify()
                times.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            }
            let best = times.sorted()[times.count / 2]
            let bytes = Double(db.info.fileBytes)
            print(String(format: "verified %.1f MB: median %.2f ms, %.2f GB/s", bytes / 1e6, best, bytes / best / 1e6))
            return 0
        }
        switch args.first {
        case "compare":
            args.removeFirst()
            return try compare(Arguments(args, valued: valued))
        case "ranges":
            args.removeFirst()
            return try rangeBench(Arguments(args, valued: valued))
        case "categories":
            args.removeFirst()
            return try categoryBench(Arguments(args, valued: valued))
        case "probes":
            args.removeFirst()
            let a = try Arguments(args, valued: valued)
            guard let tsv = a.values["--tsv"], let out = a.values["--out"] else { throw UsageError("probes needs --tsv FILE --out FILE") }
            let p = Probes.make(try TSVDirectory.load(tsv), count: try a.int("--lookups") ?? 1_000_000, seed: 42)
            try p.write(to: out)
            print("\(out): \(p.found.count) found, \(p.missing.count) missing, \(p.coldLabel.count) with a cold label (\(Set(p.coldLabel).count) distinct)")
            return 0
        case "engine":
            args.removeFirst()
            let a = try Arguments(args, valued: valued)
            guard let name = a.positional.first, let tsv = a.values["--tsv"], let db = a.values["--db"] else {
                throw UsageError("engine needs NAME --tsv FILE --db FILE")
            }
            var o = RunOptions(tsv: tsv, db: db, probes: a.values["--probes"])
            o.lookups = try a.int("--lookups") ?? o.lookups
            o.scans = try a.int("--scans") ?? o.scans
            o.colds = try a.int("--colds") ?? o.colds
            o.existing = a.flags.contains("--existing")
            o.verify = !a.flags.contains("--no-verify")
            var r = try runEngine(name, o)
            r.set("clock_overhead_ns", clockOverheadNs())
            print(r.text)
            return 0
        default:
            // CallerID only, the original interface of this tool.
            let a = try Arguments(args, valued: valued)
            guard let tsv = a.positional.first else { throw UsageError("missing INPUT.tsv") }
            var opts = BuildOptions()
            opts.compressLabels = !a.flags.contains("--raw-labels")
            if let n = try a.int("--block-size") { opts.blockSize = n }
            if let n = try a.int("--sync-shift") { opts.syncShift = n }
            if let n = try a.int("--hot-label-bytes") { opts.hotLabelBytes = n }
            var o = RunOptions(tsv: tsv, db: a.values["--db"] ?? "/tmp/callerid-bench.cid", probes: nil)
            o.lookups = try a.int("--lookups") ?? 2_000_000
            o.existing = a.flags.contains("--existing")
            let r = try measure(CallerIDEngine(options: opts), name: "callerid", options: o)
            if a.flags.contains("--json") {
                print(r.text)
            } else {
                for (k, v) in r.items { print("\(k.padding(toLength: 28, withPad: " ", startingAt: 0)) \(v)") }
            }
            return 0
        }
    } catch let e as UsageError {
        FileHandle.standardError.write(Data("error: \(e.message)\n\(usage)".utf8))
        return 64
    } catch {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        return 65
    }
}

exit(main())
