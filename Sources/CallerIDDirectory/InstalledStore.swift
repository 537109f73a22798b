import CallerID
import Foundation

/// The installed databases in the app group's shared container, as generations:
///
/// ```
/// STORE/
///   CURRENT            "current 7\nprevious 6\n": the pointer, replaced by rename
///   gen-7/             the set in use: manifest.json (verbatim from the build), settings.json,
///                      plan.json (the slot split), the database files
///   gen-6/             the previous set, kept until the next install succeeds
///   .lock              serializes installs
/// ```
///
/// An install never touches the set in use: it stages the new set in a fresh folder (files
/// that did not change are hard-linked from the current generation, others copied), verifies
/// every staged file (size, whole-file XXH3 against the manifest, full ``Database/verify()``),
/// computes the slot plan, fsyncs, renames the folder to `gen-N`, and only then switches
/// `CURRENT` with one atomic rename. A damaged, truncated or missing file, a bad manifest or
/// a set that does not fit the budget fails the install and leaves the previous set in place
/// and in use. The generation that was current before stays on disk until the next install
/// succeeds: an extension in the middle of loading it, or computing a delta from it, still
/// finds it. Nothing is deleted after loading: switching the extension off and on asks for the
/// full list again, and the current generation is always there to give it.
public final class InstalledStore: Sendable {
    /// One installed set.
    public struct Generation: Sendable, Equatable, Hashable {
        public let id: UInt64
        public let path: String
    }

    /// What an install did.
    public struct InstallReport: Sendable {
        public var generation: Generation
        public var previous: Generation?
        /// Regions added, removed or changed compared with the previous generation.
        public var changes: RegionChanges
        /// Files hard-linked from the previous generation (unchanged) and copied (new).
        public var linkedFiles: Int
        public var copiedFiles: Int
        public var plan: SlotPlan
        public var settings: FeedSettings
    }

    public let path: String

    /// Opens (and creates when missing) a store folder.
    public init(path: String) throws(DirectoryError) {
        self.path = path
        if !FileSystem.isDirectory(path) {
            try FileSystem.makeDirectory(path)
        }
    }

    var pointerPath: String { path + "/CURRENT" }

    func generationPath(_ id: UInt64) -> String { path + "/gen-\(id)" }

    /// The set in use, nil when nothing was installed yet.
    public func current() throws(DirectoryError) -> Generation? {
        try readPointer().current.map { Generation(id: $0, path: generationPath($0)) }
    }

    /// The set in use before the last install, while it is kept.
    public func previous() throws(DirectoryError) -> Generation? {
        guard let id = try readPointer().previous, FileSystem.exists(generationPath(id) + "/manifest.json") else { return nil }
        return Generation(id: id, path: generationPath(id))
    }

    /// Generation `id` if it is still on disk.
    public func generation(_ id: UInt64) -> Generation? {
        FileSystem.exists(generationPath(id) + "/manifest.json") ? Generation(id: id, path: generationPath(id)) : nil
    }

    /// Opens a generation (default: the current one) for streaming.
    public func snapshot(_ generation: Generation? = nil) throws(DirectoryError) -> DirectorySnapshot {
        guard let g = try resolve(generation) else {
            throw DirectoryError(.fileNotFound, "\(path): nothing installed yet")
        }
        return try DirectorySnapshot(directory: g.path)
    }

    /// The slot plan stored with a generation (default: the current one).
    public func plan(_ generation: Generation? = nil) throws(DirectoryError) -> SlotPlan {
        guard let g = try resolve(generation) else {
            throw DirectoryError(.fileNotFound, "\(path): nothing installed yet")
        }
        let file = g.path + "/plan.json"
        guard let data = FileManager.default.contents(atPath: file) else {
            throw DirectoryError(.fileNotFound, "\(file): missing")
        }
        let plan: SlotPlan
        do {
            plan = try JSONDecoder().decode(SlotPlan.self, from: data)
        } catch {
            throw DirectoryError(.badManifest, "\(file): not a slot plan: \(error)")
        }
        try plan.validate(path: file)
        return plan
    }

    private func resolve(_ g: Generation?) throws(DirectoryError) -> Generation? {
        if let g { return g }
        return try current()
    }

    /// The settings of the current generation (defaults when nothing is installed).
    public func settings() throws(DirectoryError) -> FeedSettings {
        guard let g = try current() else { return FeedSettings() }
        let file = g.path + "/settings.json"
        guard let data = FileManager.default.contents(atPath: file) else { return FeedSettings() }
        return try FeedSettings.decode(data, path: file)
    }

    /// Installs the set described by `buildDirectory/manifest.json` (a build output directory),
    /// with `settings` (default: the current generation's settings).
    /// - Throws: ``DirectoryError``: `corrupt` for a file that fails verification, `badManifest`,
    ///   `fileNotFound`, `budgetExceeded`, `io`. The store is unchanged when it throws.
    @discardableResult
    public func install(from buildDirectory: String, settings: FeedSettings? = nil) throws(DirectoryError) -> InstallReport {
        try FileSystem.withLock(path + "/.lock") { () throws(DirectoryError) -> InstallReport in
            try installLocked(from: buildDirectory, settings: settings)
        }
    }

    /// Installs the current data again with new settings (allow list, categories, rules,
    /// slots): a new generation whose files are hard links to the current ones.
    @discardableResult
    public func updateSettings(_ settings: FeedSettings) throws(DirectoryError) -> InstallReport {
        guard let g = try current() else { throw DirectoryError(.fileNotFound, "\(path): nothing installed yet") }
        return try install(from: g.path, settings: settings)
    }

    private func installLocked(from source: String, settings newSettings: FeedSettings?) throws(DirectoryError) -> InstallReport {
        let manifestData = try DirectoryManifest.readManifestBytes(directory: source)
        let manifest = try DirectoryManifest.decode(manifestData, path: source + "/manifest.json")
        // A damaged pointer must not block the install that repairs the store.
        let pointer: (current: UInt64?, previous: UInt64?) = (try? readPointer()) ?? (nil, nil)
        let current = pointer.current.map { Generation(id: $0, path: generationPath($0)) }
        let currentManifest = current.flatMap { try? DirectoryManifest.read(directory: $0.path) }
        var settings = FeedSettings()
        if let newSettings {
            settings = newSettings
        } else if let current, let data = FileManager.default.contents(atPath: current.path + "/settings.json") {
            settings = try FeedSettings.decode(data, path: current.path + "/settings.json")
        }
        try settings.validate()

        // Cheap checks before copying anything: every file present with the size the manifest says.
        for f in manifest.files {
            let p = source + "/" + f.file
            guard let size = FileSystem.fileSize(p) else {
                throw DirectoryError(.fileNotFound, "\(p): listed in the manifest but missing")
            }
            guard size == f.bytes else {
                throw DirectoryError(.corrupt, "\(p): \(size) bytes, the manifest says \(f.bytes) (truncated or incomplete download?)")
            }
        }

        // A fresh id above every generation folder on disk (a crashed install may have left one).
        var newID = (pointer.current ?? 0) + 1
        for name in FileSystem.list(path) where name.hasPrefix("gen-") {
            if let id = UInt64(name.dropFirst(4)), id >= newID { newID = id + 1 }
        }
        for name in FileSystem.list(path) where name.hasPrefix(".staging-") {
            FileSystem.removeTree(path + "/" + name)
        }
        let staging = path + "/.staging-\(newID)"
        try FileSystem.makeDirectory(staging)
        var linked = 0, copied = 0
        let plan: SlotPlan
        do {
            for f in manifest.files {
                let to = staging + "/" + f.file
                let same = currentManifest?.files.first { $0.file == f.file && $0.bytes == f.bytes && $0.xxh3 == f.xxh3 }
                if let current, same != nil, FileSystem.hardLink(current.path + "/" + f.file, to) {
                    linked += 1
                } else {
                    try FileSystem.copy(source + "/" + f.file, to)
                    copied += 1
                }
            }
            try FileSystem.writeDurably(manifestData, to: staging + "/manifest.json")
            try FileSystem.writeDurably(settings.jsonData(), to: staging + "/settings.json")
            // Verify what will be used: the staged files.
            for f in manifest.files {
                try Self.verify(staging + "/" + f.file, f)
            }
            let snapshot = try DirectorySnapshot(directory: staging, settings: settings)
            plan = try SlotPlan.make(snapshot, slots: settings.slots, maxEntries: settings.maxEntries)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try FileSystem.writeDurably((try? encoder.encode(plan)) ?? Data(), to: staging + "/plan.json")
            try FileSystem.sync(staging, directory: true)
            try FileSystem.rename(staging, generationPath(newID))
            try FileSystem.sync(path, directory: true)
        } catch {
            FileSystem.removeTree(staging)
            throw error
        }
        // The switch: one rename of the pointer file.
        do {
            try writePointer(current: newID, previous: pointer.current)
        } catch {
            FileSystem.removeTree(generationPath(newID))
            throw error
        }
        // Only now: drop generations that are neither current nor previous.
        for name in FileSystem.list(path) where name.hasPrefix("gen-") {
            if let id = UInt64(name.dropFirst(4)), id != newID, id != pointer.current {
                FileSystem.removeTree(path + "/" + name)
            }
        }
        return InstallReport(generation: Generation(id: newID, path: generationPath(newID)), previous: current,
                             changes: changedRegions(currentManifest, manifest), linkedFiles: linked, copiedFiles: copied,
                             plan: plan, settings: settings)
    }

    /// Size, whole-file XXH3 and full database verification of one staged file.
    static func verify(_ path: String, _ f: DirectoryManifest.File) throws(DirectoryError) {
        guard let size = FileSystem.fileSize(path), size == f.bytes else {
            throw DirectoryError(.corrupt, "\(path): size differs from the manifest's \(f.bytes) bytes")
        }
        let hash: UInt64
        do {
            hash = try Checksum.xxh3(fileAt: path)
        } catch {
            throw DirectoryError(error)
        }
        guard hash == f.xxh3 else {
            throw DirectoryError(.corrupt, "\(path): XXH3 \(hex16(hash)) differs from the manifest's \(hex16(f.xxh3)) (damaged file)")
        }
        do {
            _ = try Database(path: path, verify: true)
        } catch {
            throw DirectoryError(error)
        }
    }

    // MARK: Pointer file

    func readPointer() throws(DirectoryError) -> (current: UInt64?, previous: UInt64?) {
        guard let data = FileManager.default.contents(atPath: pointerPath) else {
            if FileSystem.exists(pointerPath) { throw DirectoryError(.io, "\(pointerPath): cannot read") }
            return (nil, nil)
        }
        var current: UInt64? = nil, previous: UInt64? = nil
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let id = UInt64(parts[1]) else { continue }
            if parts[0] == "current" { current = id }
            if parts[0] == "previous" { previous = id }
        }
        guard let current, FileSystem.exists(generationPath(current) + "/manifest.json") else {
            throw DirectoryError(.badManifest, "\(pointerPath): does not name an installed generation")
        }
        return (current, previous)
    }

    private func writePointer(current: UInt64, previous: UInt64?) throws(DirectoryError) {
        var text = "current \(current)\n"
        if let previous { text += "previous \(previous)\n" }
        try FileSystem.writeAtomically(Data(text.utf8), to: pointerPath)
    }
}
