import CallerID
import Foundation

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
package struct DatabaseSet: Sendable, Equatable {
    package enum Kind: Sendable, Equatable, CustomStringConvertible {
        /// A single database file.
        case file
        /// A folder with `manifest.json` (a build output directory).
        case buildDirectory
        /// A folder with `CURRENT` (an installed store).
        case store

        package var description: String {
            switch self {
            case .file: "database file"
            case .buildDirectory: "build directory"
            case .store: "store"
            }
        }
    }

    package let kind: Kind
    /// The path as given.
    package let path: String
    /// The database files, `path` joined with each file name of the manifest, in manifest
    /// order (for a file: `[path]`).
    package let files: [String]
    /// The manifest of a build directory or of the store's generation; nil for a file. Only
    /// its lookup fields when resolved with ``DirectoryManifest/Fields/lookup``.
    package let manifest: DirectoryManifest?
    /// The store generation the files belong to; nil unless ``kind`` is ``Kind/store``.
    package let generation: UInt64?
    /// The path of the manifest read; nil for a file.
    package let manifestPath: String?
    /// The identity of the manifest file read (nil for a file): see ``isUnchanged()``.
    let manifestIdentity: FileIdentity?

    /// Tells what `path` is and lists its database files (see the type's documentation).
    /// The files are listed, not opened or verified.
    /// - Parameter manifestFields: what to read of the manifest: ``DirectoryManifest/Fields/lookup``
    ///   when only the files' names, priorities and number bounds are needed (a query).
    /// - Throws: ``DirectoryError``: `fileNotFound` when `path` does not exist, is a folder
    ///   that is neither a build directory nor a store, or a store with nothing installed;
    ///   `badManifest` for a manifest or `CURRENT` that cannot be read.
    package static func resolve(path: String, manifestFields: DirectoryManifest.Fields = .all) throws(DirectoryError) -> DatabaseSet {
        guard FileSystem.exists(path) else {
            throw DirectoryError(.fileNotFound, "\(path): no such file or directory")
        }
        guard FileSystem.isDirectory(path) else {
            return DatabaseSet(kind: .file, path: path, files: [path], manifest: nil, generation: nil, manifestPath: nil, manifestIdentity: nil)
        }
        if FileSystem.exists(joinPath(path, "CURRENT")) {
            let store = try InstalledStore(path: path)
            return try store.withCurrent { (g, _) throws(DirectoryError) -> DatabaseSet in
                guard let g else { throw DirectoryError(.fileNotFound, "\(path): store with nothing installed yet (install a build directory: lookup install --store \(path) DIR, or fetch one: lookup fetch URL --store \(path) --trust KEY.pub)") }
                let (manifest, identity) = try readManifest(g.path, manifestFields)
                return DatabaseSet(kind: .store, path: path, files: manifest.files.map { joinPath(g.path, $0.file) },
                                   manifest: manifest, generation: g.id, manifestPath: joinPath(g.path, "manifest.json"),
                                   manifestIdentity: identity)
            }
        }
        if FileSystem.exists(joinPath(path, "manifest.json")) {
            let (manifest, identity) = try readManifest(path, manifestFields)
            return DatabaseSet(kind: .buildDirectory, path: path, files: manifest.files.map { joinPath(path, $0.file) },
                               manifest: manifest, generation: nil, manifestPath: joinPath(path, "manifest.json"),
                               manifestIdentity: identity)
        }
        throw DirectoryError(.fileNotFound,
                             "\(path): a folder that is neither a build directory (no manifest.json) nor a store (no CURRENT)")
    }

    /// The manifest of `directory` and the identity of the file it was read from (the same
    /// before and after the read; nil when it kept changing).
    private static func readManifest(_ directory: String, _ fields: DirectoryManifest.Fields)
        throws(DirectoryError) -> (DirectoryManifest, FileIdentity?)
    {
        let path = joinPath(directory, "manifest.json")
        for _ in 0..<4 {
            let before = FileIdentity(path: path)
            let manifest = try DirectoryManifest.read(directory: directory, fields: fields)
            if let before, FileIdentity(path: path) == before { return (manifest, before) }
        }
        return (try DirectoryManifest.read(directory: directory, fields: fields), nil)
    }

    /// The settings the Call Directory feed applies to this set (allow list, category choice,
    /// rules, which lists are fed): `settings.json` beside the manifest (an installed
    /// generation has one; a build directory may), the defaults otherwise and for a file.
    /// - Throws: ``DirectoryError`` `badManifest` for a settings file that cannot be read.
    package func feedSettings() throws(DirectoryError) -> FeedSettings {
        guard let manifestPath else { return FeedSettings() }
        guard let settings = try FeedSettings.stored(in: OutputPath.split(manifestPath).directory) else { return FeedSettings() }
        try settings.validate()
        return settings
    }

    /// True while the manifest read by ``resolve(path:manifestFields:)`` is still the file at
    /// its path, unchanged (one `stat`): the build directory was not replaced by a later build,
    /// nor the store generation removed by later installs. A reader that opens the files one by
    /// one, when first needed, checks it after each open: a file opened after a replacement may
    /// belong to another build than the manifest that sent it there. Always true for a file.
    package func isUnchanged() -> Bool {
        guard let manifestPath else { return true }
        guard let manifestIdentity else { return false }
        return FileIdentity(path: manifestPath) == manifestIdentity
    }
}

/// `directory/name`, without doubling a trailing `/`.
func joinPath(_ directory: String, _ name: String) -> String {
    directory.hasSuffix("/") ? directory + name : directory + "/" + name
}
