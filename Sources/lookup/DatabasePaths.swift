import Foundation
import CallerID
import CallerIDDirectory

// What `--db PATH`, `lookup info PATH` and `lookup verify PATH...` accept: a database file, a
// build directory (`lookup build -o DIR`, with manifest.json) or an installed store (CURRENT
// and gen-N/, `lookup install`), whose current generation is used.

/// The database files behind a path given on the command line.
struct DatabasePaths {
    enum Kind: String {
        case file = "database file"
        case buildDirectory = "build directory"
        case store = "installed store"
    }

    let path: String
    let kind: Kind
    /// Database files in precedence order: the first that holds a number answers for it
    /// (manifest order, higher `priority` first, as the Call Directory feed merges them).
    let files: [String]

    /// Resolves `path`; a path that is not a directory is taken as a database file.
    static func resolve(_ path: String) throws(ToolError) -> DatabasePaths {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return DatabasePaths(path: path, kind: .file, files: [path])
        }
        let dir = path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path
        do {
            if FileManager.default.fileExists(atPath: dir + "/manifest.json") {
                return DatabasePaths(path: path, kind: .buildDirectory, files: try files(of: dir))
            }
            if FileManager.default.fileExists(atPath: dir + "/CURRENT") {
                guard let generation = try InstalledStore(path: dir).current() else {
                    throw ToolError(code: Exit.noInput, message: "\(path): installed store with nothing installed yet")
                }
                return DatabasePaths(path: path, kind: .store, files: try files(of: generation.path))
            }
        } catch let error as DirectoryError {
            throw toolError(error)
        } catch {
            throw toolError(error)
        }
        throw ToolError(code: Exit.usage,
                        message: "\(path): a directory that is neither a build directory (manifest.json) nor an installed store (CURRENT); give a database file, a build directory or a store",
                        hint: nil)
    }

    private static func files(of directory: String) throws(DirectoryError) -> [String] {
        let manifest = try DirectoryManifest.read(directory: directory)
        let order = manifest.files.indices.sorted {
            let a = manifest.files[$0].priority ?? 0, b = manifest.files[$1].priority ?? 0
            return a != b ? a > b : $0 < $1
        }
        return order.map { directory + "/" + manifest.files[$0].file }
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
