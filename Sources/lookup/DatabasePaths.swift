import CallerID
import CallerIDDirectory

// What `--db PATH`, `lookup info PATH` and `lookup verify PATH...` accept: a database file, a
// build directory (`lookup build -o DIR`, with manifest.json) or an installed store (CURRENT
// and gen-N/, `lookup install`), whose current generation is used. What a path is comes from
// `DatabaseSet.resolve(path:)` (CallerIDDirectory), the one resolver every command shares.

/// The database files behind a path given on the command line, in precedence order.
struct DatabasePaths {
    let resolved: DatabaseSet
    /// Database files in precedence order: the first that holds a number answers for it
    /// (manifest order; a higher `priority` first, as the Call Directory feed merges them).
    let files: [String]

    var path: String { resolved.path }
    var kind: DatabaseSet.Kind { resolved.kind }

    static func resolve(_ path: String) throws(ToolError) -> DatabasePaths {
        let found: DatabaseSet
        do {
            found = try DatabaseSet.resolve(path: path)
        } catch {
            throw toolError(error)
        }
        guard let manifest = found.manifest, manifest.files.count == found.files.count else {
            return DatabasePaths(resolved: found, files: found.files)
        }
        let order = manifest.files.indices.sorted {
            let a = manifest.files[$0].priority ?? 0, b = manifest.files[$1].priority ?? 0
            return a != b ? a > b : $0 < $1
        }
        return DatabasePaths(resolved: found, files: order.map { found.files[$0] })
    }

    /// Opens every file (precedence order).
    func open(mapping: DatabaseMapping = .map) throws(ToolError) -> [Database] {
        var result: [Database] = []
        for f in files {
            do {
                result.append(try Database(path: f, mapping: mapping))
            } catch {
                throw ToolError(code: exitCode(for: error), message: error.message)
            }
        }
        return result
    }
}
