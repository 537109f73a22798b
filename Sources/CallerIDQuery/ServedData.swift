package import CallerID
package import CallerIDDirectory

/// The databases `lookup serve` answers from: every file behind its `--db` paths, or the
/// current generation of its `--store`, each path resolved by ``DatabasePaths`` (so by
/// `DatabaseSet`) and every pack opened before the first answer: a damaged file refuses the
/// whole set at load time, when the server can keep the set it has, instead of failing requests
/// later. A pack missing from a build directory or store is left out and named (``missing``),
/// as `lookup NUMBER`, `lookup feed` and `lookup store list` leave it out: a number in its
/// bounds fails (its file is looked for again), every other is answered. Queries ask only the
/// packs whose manifest bounds can hold a number (``QueryAnswers``), as `lookup NUMBER` does.
///
/// Immutable once loaded. A request takes the set current when it starts and keeps it to its
/// end; a set is unmapped when the last request holding it ends (its databases' `deinit`).
package final class ServedData: Sendable {
    /// What to load: the `--db` paths (each a file, build directory or store, resolved once
    /// per load) or the store to follow.
    package enum Source: Sendable, Equatable {
        case paths([String])
        case store(String)
    }

    package let source: Source
    package let packs: PackSet
    /// The store generation answered from (`--store`, or a store given to `--db` alone).
    package let generation: UInt64?
    /// Entries and ranges in all the packs.
    package let entries: Int
    package let ranges: Int
    /// The packs' files answered from, in precedence order.
    package let files: [String]
    /// The packs' files listed by a manifest and missing on disk (precedence order).
    package let missing: [String]
    package let resolved: [DatabasePaths]

    /// Resolves and opens `source`. Throws a usage error when `--store` is not a store, exit 66
    /// for a missing path, 65 for damaged data, 74 when the files change while being opened.
    package init(_ source: Source) throws(QueryError) {
        self.source = source
        var sets: [DatabasePaths] = []
        switch source {
        case .paths(let paths):
            for p in paths { sets.append(try DatabasePaths.resolve(p, manifestFields: .lookup)) }
        case .store(let path):
            let set = try DatabasePaths.resolve(path, manifestFields: .lookup)
            guard set.kind == .store else {
                throw QueryError(.invalidRequest, "--store \(path) is a \(set.kind), not a store (a folder with CURRENT written by 'lookup install' or 'lookup fetch'); give it to --db instead")
            }
            sets = [set]
        }
        // A file named by --db itself is opened here, and refuses the set when missing.
        let packs = try PackSet(sets)
        let all = sets.flatMap(\.files)   // pack i's file is all[i]
        var missing: [String] = []
        for i in all.indices {
            do {
                _ = try packs.database(i, lookups: 0)
            } catch where error.code == .fileNotFound {
                missing.append(all[i])
            }
        }
        if !all.isEmpty && missing.count == all.count {
            throw QueryError(.fileNotFound, "every database file of the data is missing: \(missing.map { escapedForDisplay($0) }.joined(separator: ", "))")
        }
        // A pack's file is checked for an in-place change every 1,024 of its lookups (one
        // `stat`), besides the server's check every second.
        packs.watchFiles()
        let opened = packs.opened
        self.packs = packs
        resolved = sets
        self.missing = missing
        files = all.filter { !missing.contains($0) }
        generation = sets.count == 1 && sets[0].kind == .store ? sets[0].resolved.generation : nil
        entries = opened.reduce(0) { $0 + $1.count }
        ranges = opened.reduce(0) { $0 + $1.rangeCount }
    }

    /// One line for the log: `generation 7: 3 files, 4,000,000 entries`.
    package var summary: String {
        let what = "\(files.count) file\(files.count == 1 ? "" : "s"), \(grouped(entries)) entr\(entries == 1 ? "y" : "ies")"
            + (ranges > 0 ? ", \(grouped(ranges)) ranges" : "")
            + (missing.isEmpty ? "" : ", \(missing.count) missing (\(missing.map { escapedForDisplay($0) }.joined(separator: ", ")))")
        return generation.map { "generation \($0): \(what)" } ?? what
    }

    /// The current generation of the store this set follows (`--store`) now, reading only its
    /// pointer; nil for `--db` paths or when it cannot be read.
    package func storeGeneration() -> UInt64? {
        guard case .store(let path) = source else { return nil }
        return (try? InstalledStore(path: path).current())?.id
    }

    /// A pack's file modified in place (not replaced by rename) since it was opened, or cut
    /// short under its mapping (a read faulted: ``Database/mappingFaulted``): its mapping may
    /// read a mix of two files, or zeros. Its path, or nil.
    package func fileModifiedInPlace() -> String? {
        for db in packs.opened where db.mappingFaulted || db.fileChange == .modifiedInPlace { return db.path }
        return nil
    }

    /// What the files of the data are on disk now (one `stat` each): compared with an earlier
    /// look, it tells whether anything changed since.
    package func fileIdentities() -> [FileIdentity?] {
        files.map { FileIdentity(path: $0) }
    }

    /// Why the data cannot answer for every number: the first pack withdrawn because its file
    /// changed (``PackSet/withdraw(_:because:)``), nil when none is.
    package var withdrawn: String? { packs.withdrawn.first }
}
