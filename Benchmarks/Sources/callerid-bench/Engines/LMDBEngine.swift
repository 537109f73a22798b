// LMDB through its C API, used the way an expert would for a read-mostly integer map:
// - MDB_INTEGERKEY (native 8-byte keys, compared as integers), one file (MDB_NOSUBDIR);
// - built with MDB_APPEND in key order in one write transaction (pages filled completely),
//   MDB_NOSYNC during the build and one forced sync at the end;
// - read-only environment without a lock file (MDB_RDONLY | MDB_NOLOCK: one reader process),
//   one read-only transaction reused for all lookups (zero-copy values from the map);
// - value: category byte + label bytes, inline.
import CLMDB
import Foundation

struct LMDBEngine: Engine {
    func files(_ output: String) -> [String] { [output] }

    func build(tsv: String, output: String) throws {
        let dir = try TSVDirectory.load(tsv)
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "env_create")
        defer { mdb_env_close(env) }
        let mapSize = max(1 << 30, dir.text.count * 4)
        try check(mdb_env_set_mapsize(env, mapSize), "set_mapsize")
        try check(mdb_env_open(env, output, UInt32(MDB_NOSUBDIR | MDB_NOSYNC | MDB_NOLOCK), 0o644), "env_open \(output)")
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin")
        var dbi: MDB_dbi = 0
        try check(mdb_dbi_open(txn, nil, UInt32(MDB_INTEGERKEY | MDB_CREATE), &dbi), "dbi_open")
        var value = [UInt8](repeating: 0, count: 1 << 16)
        for i in 0..<dir.count {
            var k = dir.numbers[i]
            let n = Int(dir.labelLength[i])
            if n + 1 > value.count { value = [UInt8](repeating: 0, count: n + 1) }
            value[0] = dir.category[i]
            dir.withLabel(i) { l in value.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: 1).copyMemory(from: l.baseAddress!, byteCount: l.count) } }
            let rc = withUnsafeMutablePointer(to: &k) { kp in
                value.withUnsafeMutableBytes { vp in
                    var key = MDB_val(mv_size: 8, mv_data: UnsafeMutableRawPointer(kp))
                    var val = MDB_val(mv_size: n + 1, mv_data: vp.baseAddress)
                    return mdb_put(txn, dbi, &key, &val, UInt32(MDB_APPEND))
                }
            }
            try check(rc, "put")
        }
        try check(mdb_txn_commit(txn), "commit")
        try check(mdb_env_sync(env, 1), "sync")
    }

    func open(_ output: String) throws -> Reader { try Reader(output) }

    final class Reader: EngineReader {
        var env: OpaquePointer?
        var txn: OpaquePointer?
        var dbi: MDB_dbi = 0

        init(_ path: String) throws {
            try check(mdb_env_create(&env), "env_create")
            try check(mdb_env_set_mapsize(env, max(1 << 30, fileBytes(path) * 2)), "set_mapsize")
            try check(mdb_env_open(env, path, UInt32(MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK), 0o644), "env_open \(path)")
            try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "txn_begin")
            try check(mdb_dbi_open(txn, nil, UInt32(MDB_INTEGERKEY), &dbi), "dbi_open")
        }

        deinit {
            mdb_txn_abort(txn)
            mdb_env_close(env)
        }

        @inline(__always) func lookup(_ number: UInt64) throws -> Int? {
            var k = number
            var val = MDB_val()
            let rc = withUnsafeMutablePointer(to: &k) { kp in
                var key = MDB_val(mv_size: 8, mv_data: UnsafeMutableRawPointer(kp))
                return mdb_get(txn, dbi, &key, &val)
            }
            if rc == MDB_NOTFOUND { return nil }
            try check(rc, "get")
            let p = val.mv_data.assumingMemoryBound(to: UInt8.self)
            let n = val.mv_size - 1
            return n &+ Int(n > 0 ? p[1] : 0) &+ Int(p[0] != 0 ? 1 : 0)
        }

        func scan(sample: () -> Void) throws -> (entries: Int, checksum: Int) {
            var cur: OpaquePointer?
            try check(mdb_cursor_open(txn, dbi, &cur), "cursor_open")
            defer { mdb_cursor_close(cur) }
            var key = MDB_val(), val = MDB_val()
            var seen = 0, sum = 0
            var op = MDB_FIRST
            while true {
                let rc = mdb_cursor_get(cur, &key, &val, op)
                if rc == MDB_NOTFOUND { break }
                try check(rc, "cursor_get")
                op = MDB_NEXT
                let k = key.mv_data.loadUnaligned(as: UInt64.self)
                let p = val.mv_data.assumingMemoryBound(to: UInt8.self)
                let n = val.mv_size - 1
                sum &+= Int(truncatingIfNeeded: k) &+ n &+ Int(n > 0 ? p[1] : 0) &+ Int(p[0] != 0 ? 1 : 0)
                seen &+= 1
                if seen & 65535 == 0 { sample() }
            }
            return (seen, sum)
        }
    }
}

private func check(_ rc: Int32, _ what: String) throws {
    guard rc == 0 else { throw BenchError("lmdb: \(what): \(String(cString: mdb_strerror(rc)))") }
}
