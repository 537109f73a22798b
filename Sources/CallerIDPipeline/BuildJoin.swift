import CallerID
package import CallerIDDirectory
import Foundation

extension Pipeline {
    /// Joins build directories written apart (one region each, on the machines of a cluster:
    /// tools/spark) into one build directory at `output`: their databases side by side and one
    /// manifest, the one a single build of all their rows writes (files in region order, each
    /// part's own order kept; the dataset version a hash of the files unless given). Each
    /// part's databases are checked against its manifest (size, XXH3, SHA-256) as they are
    /// copied. The directory is switched in whole, as ``write(to:)`` does: a failed join leaves
    /// `output` as it was. docs/SCALE.md.
    /// - Throws: ``PipelineError`` for a part without a readable manifest, a file named by two
    ///   parts, parts built with different limits, or a copy that fails.
    package static func join(_ parts: [String], to output: String, datasetVersion: String? = nil,
                            buildTime: Double? = nil) throws(PipelineError) -> DirectoryManifest {
        var files: [(file: DirectoryManifest.File, from: String)] = []
        var maxEntries: Int? = nil
        for part in parts {
            let manifest: DirectoryManifest
            do { manifest = try DirectoryManifest.read(directory: part) } catch { throw PipelineError(error.code == .fileNotFound ? .fileNotFound : .invalidInput, error.message) }
            if let m = manifest.maxEntries {
                if let known = maxEntries, known != m {
                    throw PipelineError(.invalidInput, "\(part): built with --max-entries \(m), another part with \(known)")
                }
                maxEntries = m
            }
            for f in manifest.files {
                guard f.kind != "top" else { throw PipelineError(.invalidInput, "\(part): a top-N set belongs to one build of all rows, not to a part") }
                if files.contains(where: { $0.file.file.lowercased() == f.file.lowercased() }) {
                    throw PipelineError(.invalidInput, "\(part): \(f.file) is also in another part; each part must hold regions of its own")
                }
                files.append((f, part))
            }
        }
        // A single build lists its regions by name; a part keeps its own order (kinds, shards).
        let order = files.indices.sorted { a, b in
            let ra = files[a].file.region ?? "", rb = files[b].file.region ?? ""
            return ra != rb ? ra < rb : a < b
        }
        let resolved: ResolvedOutput
        do { resolved = try OutputPath.resolve(output) } catch { throw PipelineError(error) }
        var manifest = DirectoryManifest(files: [])
        try switchInDirectory(at: resolved.path) { (temp) throws(PipelineError) in
            var joined: [DirectoryManifest.File] = []
            for k in order {
                let (f, part) = files[k]
                try copy(f, from: part, to: "\(temp)/\(f.file)")
                joined.append(f)
            }
            manifest = DirectoryManifest(files: joined, datasetVersion: datasetVersion ?? contentVersion(joined.map {
                OutputFile(file: $0.file, region: "", kind: "", shard: 1, shards: 1, entries: 0, categories: [:], actions: [:],
                           bytes: $0.bytes, xxh3: $0.xxh3, duplicatesMerged: 0)
            }))
            manifest.formatVersion = manifest.newestFileFormat
            manifest.buildTime = timestamp(buildTime)
            manifest.generator = "CallerID \(CallerIDVersion.library)"
            manifest.maxEntries = maxEntries
            return [UInt8](manifest.jsonData())
        }
        return manifest
    }

    /// Copies a part's database, checked against its manifest entry (size, XXH3, SHA-256).
    private static func copy(_ f: DirectoryManifest.File, from part: String, to copy: String) throws(PipelineError) {
        let image: [UInt8]
        do {
            image = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(part)/\(f.file)")))
        } catch {
            throw PipelineError(.io, "\(part)/\(f.file): cannot read it: \(error.localizedDescription)")
        }
        guard image.count == f.bytes, Checksum.xxh3(image) == f.xxh3 else {
            throw PipelineError(.invalidInput, "\(part)/\(f.file): its size or XXH3 is not the manifest's")
        }
        try writeDurably(image, to: copy)
        if let sha = f.sha256, try sha256(of: copy) != sha {
            throw PipelineError(.invalidInput, "\(part)/\(f.file): its SHA-256 is not the manifest's")
        }
    }
}
