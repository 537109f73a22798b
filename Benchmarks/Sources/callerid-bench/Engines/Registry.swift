// The engines the harness knows, by name, in report order.
import CallerID

/// Engines by name, in report order. `callerid-cabi` runs as its own C program.
let engineNames = [
    "callerid", "callerid-cabi", "callerid-raw", "sqlite", "sqlite-labelid", "lmdb", "stream", "tsv-lz4", "tsv-lz4hc",
]
let engineTitles: [String: String] = [
    "callerid": "CallerID (Swift API)",
    "callerid-cabi": "CallerID (C ABI)",
    "callerid-raw": "CallerID, every label raw",
    "sqlite": "SQLite, labels as TEXT",
    "sqlite-labelid": "SQLite, label table + id",
    "lmdb": "LMDB, label inline",
    "stream": "naive stream (+ index in heap)",
    "tsv-lz4": "TSV + LZ4 (fast)",
    "tsv-lz4hc": "TSV + LZ4HC-12",
]

func runEngine(_ name: String, _ o: RunOptions) throws -> JSONObject {
    switch name {
    case "callerid": return try measure(CallerIDEngine(), name: name, options: o)
    case "callerid-raw":
        var opts = BuildOptions()
        opts.compressLabels = false
        return try measure(CallerIDEngine(options: opts), name: name, options: o)
    case "sqlite": return try measure(SQLiteEngine(), name: name, options: o)
    case "sqlite-labelid": return try measure(SQLiteEngine(labelTable: true), name: name, options: o)
    case "lmdb": return try measure(LMDBEngine(), name: name, options: o)
    case "stream": return try measure(StreamEngine(), name: name, options: o)
    case "tsv-lz4": return try measure(LZ4TSVEngine(), name: name, options: o)
    case "tsv-lz4hc": return try measure(LZ4TSVEngine(hcLevel: 12), name: name, options: o)
    default: throw UsageError("unknown engine '\(name)' (engines: \(engineNames.joined(separator: ", ")))")
    }
}
