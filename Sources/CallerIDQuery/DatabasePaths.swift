package import CallerID
package import CallerIDDirectory

// What `--db PATH`, `lookup info PATH` and `lookup verify PATH...` accept: a database file, a
// build directory (`lookup build -o DIR`, with manifest.json) or an installed store (CURRENT
// and gen-N/, `lookup install`), whose current generation is used. What a path is comes from
// `DatabaseSet.resolve(path:)` (CallerIDDirectory), the one resolver every command shares.

/// The database files behind a path given on the command line, in precedence order.
package struct DatabasePaths {
    package let resolved: DatabaseSet
    /// Database files in precedence order: the first that holds a number answers for it
    /// (manifest order; a higher `priority` first, as the Call Directory feed merges them).
    package let files: [String]
    /// What the manifest says each file (same order) can answer; `.anywhere` for a lone file
    /// and for manifests without the fields.
    package let coverage: [PackCoverage]

    package var path: String { resolved.path }
    package var kind: DatabaseSet.Kind { resolved.kind }

    /// - Parameter manifestFields: `.lookup` for a query (reads only what it needs of the manifest).
    package static func resolve(_ path: String, manifestFields: DirectoryManifest.Fields = .all) throws(QueryError) -> DatabasePaths {
        let found: DatabaseSet
        do {
            found = try DatabaseSet.resolve(path: path, manifestFields: manifestFields)
        } catch {
            throw QueryError(passingOn: error)
        }
        guard let manifest = found.manifest, manifest.files.count == found.files.count else {
            return DatabasePaths(resolved: found, files: found.files, coverage: found.files.map { _ in .anywhere })
        }
        let order = manifest.files.indices.sorted {
            let a = manifest.files[$0].priority ?? 0, b = manifest.files[$1].priority ?? 0
            return a != b ? a > b : $0 < $1
        }
        return DatabasePaths(resolved: found, files: order.map { found.files[$0] },
                             coverage: order.map { PackCoverage(manifest.files[$0]) })
    }

    /// Opens every file (precedence order).
    package func open(mapping: DatabaseMapping = .map) throws(QueryError) -> [Database] {
        var result: [Database] = []
        for f in files {
            do {
                result.append(try Database(path: f, mapping: mapping))
            } catch {
                throw QueryError(passingOn: error)
            }
        }
        return result
    }
}

/// Where on the number line a database file can answer, as its manifest entry says.
package struct PackCoverage: Equatable {
    /// The numbers its entries lie between.
    package var entries: NumberSpan
    /// The numbers a range of it may answer for.
    package var ranges: NumberSpan

    package static let anywhere = PackCoverage(entries: .all, ranges: .all)

    /// From the manifest: entries between `first_number` and `last_number` (anywhere when the
    /// manifest lacks them); ranges nowhere when `ranges` is 0, anywhere otherwise (the
    /// manifest does not bound them; only `--keep-ranges` builds have any, in one file).
    package init(_ file: DirectoryManifest.File) {
        if let first = file.firstNumber, let last = file.lastNumber, first <= last {
            entries = .within(first, last)
        } else {
            entries = .all
        }
        ranges = file.ranges == 0 ? .none : .all
    }

    package init(entries: NumberSpan, ranges: NumberSpan) {
        self.entries = entries
        self.ranges = ranges
    }
}

/// A set of numbers: none, all, or `first...last`.
package enum NumberSpan: Equatable {
    case none
    case all
    case within(UInt64, UInt64)
}
