package import CallerID
import CallerIDDirectory

// `lookup dump`: every entry of a database file, or every answer of a build directory or
// store, in ascending order, as lines or JSON lines.

/// Which entries a dump writes.
package enum DumpFilter {
    case all
    /// The entries of one list: the identification list's labels, or the blocking list's.
    case action(CategoryAction)
    /// The entries (answers) of these categories.
    case categories(Set<String>)
}

extension DatabasePaths {
    /// Writes what this path holds from `from` on, ascending: a database file's entries as
    /// stored, or the feed's two merged lists of a build directory or store in one stream,
    /// each number written as its point answer (``AnswerRule``): blocked when the blocking list
    /// holds it (the blocking entry's category, `block` for a rule; the identifying label where
    /// the identification list holds it too), identified otherwise. A category that a lone
    /// database file does not have is refused before anything is written.
    package func dump(from: UInt64, filter: DumpFilter, json: Bool, to out: inout Output) throws(QueryError) {
        guard kind == .file else { return try dumpLists(from: from, filter: filter, json: json, to: &out) }
        let db: Database
        do { db = try Database(path: files[0]) } catch { throw QueryError(passingOn: error) }
        let known = db.categories.map(\.name)
        var entries: CategoryFilter? = nil
        switch filter {
        case .all: break
        case .action(let action): entries = .action(action)
        case .categories(let names):
            let unknown = names.filter { !known.contains($0) }.sorted()
            guard unknown.isEmpty else {
                throw QueryError(code: .invalidRequest, message: "--category: \(unknown.map { "'\($0)'" }.joined(separator: ", ")) not in \(db.path); its categories: \(known.joined(separator: ", "))", underlying: nil)
            }
            entries = .names(names)
        }
        var cursor = db.cursor(from: from, filter: entries)
        do {
            try cursor.forEach { view in
                writeEntry(view, json: json, to: &out)
                return true
            }
        } catch {
            throw QueryError(passingOn: error)
        }
    }

    private func dumpLists(from: UInt64, filter: DumpFilter, json: Bool, to out: inout Output) throws(QueryError) {
        do throws(DirectoryError) {
            let snapshot = kind == .store ? try InstalledStore(path: path).snapshot() : try DirectorySnapshot(directory: path)
            var answers = AnswerStream(snapshot, from: from)
            while try answers.next() {
                switch filter {
                case .action(.identify):
                    if answers.isIdentified, let category = answers.identifiedCategory {
                        writeEntry(number: answers.number, label: answers.identifiedLabel, category: category, json: json, to: &out)
                    }
                case .action(.block):
                    if answers.isBlocked { writeEntry(number: answers.number, label: answers.label, category: answers.category, json: json, to: &out) }
                case .categories(let names) where !names.contains(answers.category.name):
                    break
                case .all, .categories:
                    writeEntry(number: answers.number, label: answers.label, category: answers.category, json: json, to: &out)
                }
            }
        } catch {
            throw QueryError(passingOn: error)
        }
    }
}
