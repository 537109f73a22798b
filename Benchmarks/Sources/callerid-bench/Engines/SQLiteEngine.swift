// SQLite, used the way an expert would for a read-mostly key → label table:
// - the number is an INTEGER PRIMARY KEY (the rowid itself: one table b-tree, integer keys);
// - built in one transaction, rows inserted in key order through one prepared statement,
//   journal off, synchronous off, exclusive lock; fsync once at the end;
// - read-only connection, no mutex, `mmap_size` covering the file (pages are read in place),
//   one prepared statement per query reused with bind/step/reset.
// Two layouts: labels inline as TEXT, or a label table referenced by id (ids given in order
// of frequency, so frequent labels get the shortest varints).
import CSQLite
import CBenchSupport
import Foundation

struct SQLiteEngine: Engine {
    /// Label table + id instead of inline TEXT labels.
    var labelTable = false

    func files(_ output: String) -> [String] { [output] }

    func build(tsv: String, output: String) throws {
        let dir = try TSVDirectory.load(tsv)
        var db: OpaquePointer?
        guard sqlite3_open_v2(output, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK, let db else {
            throw BenchError("sqlite: cannot create \(output)")
        }
        defer { sqlite3_close(db) }
        try exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size=-262144;")
        if labelTable {
            try exec(db, """
                CREATE TABLE labels(id INTEGER PRIMARY KEY, text TEXT NOT NULL);
                CREATE TABLE directory(number INTEGER PRIMARY KEY, label_id INTEGER NOT NULL, category INTEGER NOT NULL);
                """)
        } else {
            try exec(db, "CREATE TABLE directory(number INTEGER PRIMARY KEY, label TEXT NOT NULL, category INTEGER NOT NULL);")
        }
        try exec(db, "BEGIN")
        if labelTable {
            let ids = LabelIDs(dir)
            let insLabel = try prepare(db, "INSERT INTO labels(id, text) VALUES (?1, ?2)")
            defer { sqlite3_finalize(insLabel) }
            for (id, row) in ids.firstRowByID.enumerated() {
                sqlite3_bind_int64(insLabel, 1, Int64(id))
                dir.withLabel(row) { _ = csqlite_bind_text_static(insLabel, 2, $0.baseAddress, Int32($0.count)) }
                guard sqlite3_step(insLabel) == SQLITE_DONE else { throw BenchError("sqlite: insert label: \(msg(db))") }
                sqlite3_reset(insLabel)
            }
            let ins = try prepare(db, "INSERT INTO directory(number, label_id, category) VALUES (?1, ?2, ?3)")
            defer { sqlite3_finalize(ins) }
            for i in 0..<dir.count {
                sqlite3_bind_int64(ins, 1, Int64(dir.numbers[i]))
                sqlite3_bind_int64(ins, 2, Int64(ids.idOfRow[i]))
                sqlite3_bind_int64(ins, 3, Int64(dir.category[i]))
                guard sqlite3_step(ins) == SQLITE_DONE else { throw BenchError("sqlite: insert: \(msg(db))") }
                sqlite3_reset(ins)
            }
        } else {
            let ins = try prepare(db, "INSERT INTO directory(number, label, category) VALUES (?1, ?2, ?3)")
            defer { sqlite3_finalize(ins) }
            for i in 0..<dir.count {
                sqlite3_bind_int64(ins, 1, Int64(dir.numbers[i]))
                dir.withLabel(i) { _ = csqlite_bind_text_static(ins, 2, $0.baseAddress, Int32($0.count)) }
                sqlite3_bind_int64(ins, 3, Int64(dir.category[i]))
                guard sqlite3_step(ins) == SQLITE_DONE else { throw BenchError("sqlite: insert: \(msg(db))") }
                sqlite3_reset(ins)
            }
        }
        try exec(db, "COMMIT")
        sqlite3_close(db)
        _ = cb_fsync_path(output)
    }

    func open(_ output: String) throws -> Reader { try Reader(output, labelTable: labelTable) }

    final class Reader: EngineReader {
        let db: OpaquePointer
        let get: OpaquePointer
        let all: OpaquePointer

        init(_ path: String, labelTable: Bool) throws {
            var h: OpaquePointer?
            guard sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let h else {
                throw BenchError("sqlite: cannot open \(path)")
            }
            db = h
            try exec(h, "PRAGMA mmap_size=4294967296; PRAGMA query_only=1;")
            if labelTable {
                get = try prepare(h, "SELECT l.text, d.category FROM directory d JOIN labels l ON l.id = d.label_id WHERE d.number = ?1")
                all = try prepare(h, "SELECT d.number, l.text, d.category FROM directory d JOIN labels l ON l.id = d.label_id ORDER BY d.number")
            } else {
                get = try prepare(h, "SELECT label, category FROM directory WHERE number = ?1")
                all = try prepare(h, "SELECT number, label, category FROM directory ORDER BY number")
            }
        }

        deinit {
            sqlite3_finalize(get)
            sqlite3_finalize(all)
            sqlite3_close(db)
        }

        @inline(__always) func lookup(_ number: UInt64) throws -> Int? {
            sqlite3_bind_int64(get, 1, Int64(bitPattern: number))
            defer { sqlite3_reset(get) }
            switch sqlite3_step(get) {
            case SQLITE_ROW:
                let p = sqlite3_column_text(get, 0)
                let n = Int(sqlite3_column_bytes(get, 0))
                return n &+ Int(n > 0 ? p![0] : 0) &+ Int(sqlite3_column_int(get, 1))
            case SQLITE_DONE:
                return nil
            default:
                throw BenchError("sqlite: lookup: \(msg(db))")
            }
        }

        func scan(sample: () -> Void) throws -> (entries: Int, checksum: Int) {
            defer { sqlite3_reset(all) }
            var seen = 0, sum = 0
            while true {
                let rc = sqlite3_step(all)
                if rc == SQLITE_DONE { break }
                guard rc == SQLITE_ROW else { throw BenchError("sqlite: scan: \(msg(db))") }
                let k = Int(sqlite3_column_int64(all, 0))
                let p = sqlite3_column_text(all, 1)
                let n = Int(sqlite3_column_bytes(all, 1))
                sum &+= k &+ n &+ Int(n > 0 ? p![0] : 0) &+ Int(sqlite3_column_int(all, 2))
                seen &+= 1
                if seen & 65535 == 0 { sample() }
            }
            return (seen, sum)
        }
    }
}

/// Label ids by descending frequency (ties: first appearance), for label-table layouts.
struct LabelIDs {
    var idOfRow: [Int32]
    /// For each id, a row that has that label.
    var firstRowByID: [Int]

    init(_ dir: TSVDirectory) {
        var table: [LabelKey: Int32] = [:]
        var rowOf: [Int] = []
        var counts: [Int] = []
        var provisional = [Int32](repeating: 0, count: dir.count)
        dir.text.withUnsafeBytes { raw in
            for i in 0..<dir.count {
                let key = LabelKey(bytes: UnsafeRawBufferPointer(rebasing: raw[Int(dir.labelStart[i])..<Int(dir.labelStart[i] + dir.labelLength[i])]))
                if let id = table[key] {
                    provisional[i] = id
                    counts[Int(id)] += 1
                } else {
                    let id = Int32(rowOf.count)
                    table[key] = id
                    rowOf.append(i)
                    counts.append(1)
                    provisional[i] = id
                }
            }
        }
        let order = counts.indices.sorted { counts[$0] != counts[$1] ? counts[$0] > counts[$1] : $0 < $1 }
        var rank = [Int32](repeating: 0, count: order.count)
        for (r, id) in order.enumerated() { rank[id] = Int32(r) }
        idOfRow = provisional.map { rank[Int($0)] }
        firstRowByID = order.map { rowOf[$0] }
    }
}

/// Label bytes as a dictionary key, borrowed from the TSV buffer.
struct LabelKey: Hashable {
    let bytes: UnsafeRawBufferPointer
    static func == (a: LabelKey, b: LabelKey) -> Bool {
        a.bytes.count == b.bytes.count && (a.bytes.count == 0 || memcmp(a.bytes.baseAddress!, b.bytes.baseAddress!, a.bytes.count) == 0)
    }
    func hash(into h: inout Hasher) { h.combine(bytes: bytes) }
}

private func msg(_ db: OpaquePointer) -> String { String(cString: sqlite3_errmsg(db)) }

private func exec(_ db: OpaquePointer, _ sql: String) throws {
    var err: UnsafeMutablePointer<CChar>?
    guard sqlite3_exec(db, sql, nil, nil, &err) == SQLITE_OK else {
        let m = err.map { String(cString: $0) } ?? "?"
        sqlite3_free(err)
        throw BenchError("sqlite: \(sql): \(m)")
    }
}

private func prepare(_ db: OpaquePointer, _ sql: String) throws -> OpaquePointer {
    var s: OpaquePointer?
    guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &s, nil) == SQLITE_OK, let s else {
        throw BenchError("sqlite: prepare \(sql): \(msg(db))")
    }
    return s
}
