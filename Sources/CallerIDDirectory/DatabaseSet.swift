/// What a path given to a command names: one database file, a build output directory
/// (`manifest.json` beside its files, written by `lookup build`) or an installed store
/// (`CURRENT` and `gen-N` folders, written by `lookup install`), and the database files it
/// holds.
///
/// ```swift
/// let set = try DatabaseSet.resolve(path: argument)
/// for file in set.files { let db = try Database(path: file) … }
/// ```
///
/// For a store, ``files`` are those of ONE generation, the current one when resolved
/// (`CURRENT` is read once; see ``InstalledStore/pin()``). An install keeps the current and
/// the previous generation on disk, so the files stay in place until two more installs
/// complete; to read them across installs, open them at once (a database is memory-mapped
/// and stays readable once opened).
public struct DatabaseSet: Sendable, Equatable {
    public enum Kind: Sendable, Equatable, CustomStringConvertible {
        /// A single database file.
        case file
        /// A folder with `manifest.json` (a build output directory).
        case buildDirectory
        /// A folder with `CURRENT` (an installed store).
        case store

        public var description: String {
            switch self {
            case .file: "database file"
            case .buildDirectory: "build directory"
            case .store: "store"
            }
        }
    }

    public let kind: Kind
    /// The path as given.
    public let path: String
    /// The database files, `path` joined with each file name of the manifest, in manifest
    /// order (for a file: `[path]`).
    public let files: [String]
    /// The manifest of a build directory or of the store's generation; nil for a file.
    public let manifest: DirectoryManifest?
    /// The store generation the files belong to; nil unless ``kind`` is ``Kind/store``.
    public let generation: UInt64?

    /// Tells what `path` is and lists its database files (see the type's documentation).
    /// The files are listed, not opened or verified.
    /// - Throws: ``DirectoryError``: `fileNotFound` when `path` does not exist, is a folder
    ///   that is neither a build directory nor a store, or a store with nothing installed;
    ///   `badManifest` for a manifest or `CURRENT` that cannot be read.
    public static func resolve(path: String) throws(DirectoryError) -> DatabaseSet {
        guard FileSystem.exists(path) else {
            throw DirectoryError(.fileNotFound, "\(path): no such file or directory")
        }
        guard FileSystem.isDirectory(path) else {
            return DatabaseSet(kind: .file, path: path, files: [path], manifest: nil, generation: nil)
        }
        if FileSystem.exists(joinPath(path, "CURRENT")) {
            let store = try InstalledStore(path: path)
            return try store.withCurrent { (g, _) throws(DirectoryError) -> DatabaseSet in
                guard let g else { throw DirectoryError(.fileNotFound, "\(path): store with nothing installed yet") }
                let manifest = try DirectoryManifest.read(directory: g.path)
                return DatabaseSet(kind: .store, path: path, files: manifest.files.map { joinPath(g.path, $0.file) },
                                   manifest: manifest, generation: g.id)
            }
        }
        if FileSystem.exists(joinPath(path, "manifest.json")) {
            let manifest = try DirectoryManifest.read(directory: path)
            return DatabaseSet(kind: .buildDirectory, path: path, files: manifest.files.map { joinPath(path, $0.file) },
                               manifest: manifest, generation: nil)
        }
        throw DirectoryError(.fileNotFound,
                             "\(path): a folder that is neither a build directory (no manifest.json) nor a store (no CURRENT)")
    }
}

/// `directory/name`, without doubling a trailing `/`.
func joinPath(_ directory: String, _ name: String) -> String {
    directory.hasSuffix("/") ? directory + name : directory + "/" + name
}
