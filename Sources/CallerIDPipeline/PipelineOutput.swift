import CallerID
import CallerIDDirectory
import Foundation

/// One database a build wrote, as listed in `manifest.json`.
public struct OutputFile: Sendable, Equatable {
    /// File name inside the output directory (or the output path for a single file).
    public var file: String
    /// Region name (`all` when the build is not split; `top` for the starter set).
    public var region: String
    /// `all`, `identify`, `block` (with separate block lists) or `top`.
    public var kind: String
    /// 1-based shard number and shard count of its region and kind.
    public var shard: Int
    public var shards: Int
    public var entries: Int
    public var firstNumber: UInt64?
    public var lastNumber: UInt64?
    /// The slice of the number line this shard answers for: shards of one region and kind
    /// tile [first number of the first shard, last number of the last] without gaps.
    public var rangeStart: UInt64?
    public var rangeEnd: UInt64?
    /// Entries per category name, and per action.
    public var categories: [String: Int]
    public var actions: [String: Int]
    public var bytes: Int
    /// XXH3-64 (seed 0) of the whole file.
    public var xxh3: UInt64
    public var duplicatesMerged: Int
    /// SHA-256 of the whole file (64 hex digits), for files of a build directory (what a
    /// signature covers); nil for a single database output.
    public var sha256: String? = nil
    /// Ranges stored as ranges in this file (``PipelineOptions/keepRanges``).
    public var ranges: Int = 0
    /// The file's format version, as its header says: "2.0", "3.0" when its keys use the
    /// codec only 3.0 readers know, "3.1" when its cold labels are LZ4 groups (docs/FORMAT.md §9).
    public var formatVersion: String? = nil
}

/// What ``Pipeline/write(to:)`` did.
public struct PipelineSummary: Sendable {
    /// The output path; a directory when ``isDirectory``.
    public var output: String
    public var isDirectory: Bool
    public var files: [OutputFile]
    public var rowsRead: Int
    public var rowsRejected: Int
    public var numbersAccepted: Int
    /// Rows (numbers) dropped because a later row had the same number in the same output.
    public var duplicatesMerged: Int
    public var distinctLabels: Int
    public var rejectedByReason: [RejectReason: Int]
    public var warningsByKind: [WarningKind: Int]
    public var rangeRows: Int
    public var rangeNumbers: Int
    /// Ranges written as ranges (``PipelineOptions/keepRanges``), after overlaps were resolved.
    public var rangesKept: Int = 0
    public var datasetVersion: String
    public var buildTime: String
    /// Entries written, all files but the top-N set (the top sets of a build of them alone).
    public var entries: Int {
        let counted = files.filter { $0.kind != "top" }
        return (counted.isEmpty ? files : counted).reduce(0) { $0 + $1.entries }
    }
    public var bytes: Int { files.reduce(0) { $0 + $1.bytes } }
}

extension Pipeline {
    /// Why the options ask for a build directory whatever the data (nil: they do not).
    var directoryReason: String? {
        if options.split != .none { return "--split-by: one database per region" }
        if options.top != nil { return "--top: a top-N database beside the others" }
        if options.blockList == .separate { return "--block-list separate: block lists in databases of their own" }
        if let n = options.maxEntries { return "--max-entries: shards of at most \(n) entries" }
        return nil
    }

    /// True when a build to `output` writes a build directory (databases and `manifest.json`):
    /// the options ask for one (a split, a top-N set, separate block lists, a ``PipelineOptions/maxEntries``),
    /// `output` ends with `/`, or it is an existing directory. Never the data: a single database
    /// file has no entry cap.
    public func writesDirectory(to output: String) -> Bool {
        directoryReason != nil || namesDirectory(output) || (try? OutputPath.resolve(output))?.kind == .directory
    }

    /// A trailing slash names a directory (`-o bundle/`).
    private func namesDirectory(_ output: String) -> Bool { output.hasSuffix("/") && output != "/" }

    /// Checks that `output` can take what this build writes, before anything is read: a build
    /// directory needs a missing path or a directory (an earlier build's, with `manifest.json`,
    /// or an empty one), never a file, a device or a pipe; one database file needs a path that
    /// is not a directory. ``write(to:)`` checks the same.
    /// - Throws: ``PipelineError`` `invalidConfiguration` naming `output` and why; `io` or
    ///   `fileNotFound` when the path cannot be looked at.
    public func checkOutput(_ output: String) throws(PipelineError) {
        let resolved: ResolvedOutput
        do { resolved = try OutputPath.resolve(output) } catch { throw PipelineError(error) }
        guard writesDirectory(to: output) else { return }
        let why = directoryReason ?? "-o ends with /"
        switch resolved.kind {
        case .missing:
            return
        case .stream:
            throw PipelineError(.invalidConfiguration, "\(output) is a device or a pipe, and this build writes a build directory (\(why)): give -o a directory")
        case .regular:
            throw PipelineError(.invalidConfiguration, "\(output) is a file, and this build writes a build directory (\(why)): give -o a directory"
                                + (directoryReason == nil ? "" : ", or leave the option out for one database file (it has no entry cap)"))
        case .directory:
            let contents = (try? FileManager.default.contentsOfDirectory(atPath: resolved.path)) ?? []
            guard contents.isEmpty || contents.contains("manifest.json") else {
                throw PipelineError(.invalidConfiguration, "\(output): the directory exists and is not the output of a build (no manifest.json); refusing to replace it")
            }
        }
    }

    /// After a build killed in the middle of switching directories (where the OS has no atomic
    /// swap of two directories): puts the previous output back at `output` if it is missing and
    /// its old copy `.NAME.old-…` is still there. ``write(to:)`` does it too; call it before
    /// reading the inputs so that a build that fails early still leaves the previous output.
    /// Returns true when a directory was put back.
    @discardableResult
    public static func recoverInterruptedOutput(at output: String) -> Bool {
        guard let resolved = try? OutputPath.resolve(output) else { return false }
        return DirectorySwitch.recover(resolved.path)
    }

    /// Writes the databases. `output` is one database file, whatever its size, unless
    /// ``writesDirectory(to:)`` (a split, separate block lists, a top-N set, a
    /// ``PipelineOptions/maxEntries``, `output` ending with `/` or an existing directory): then it
    /// is a directory holding the databases, shards of at most
    /// ``PipelineOptions/entriesPerDatabase`` entries, and `manifest.json`.
    ///
    /// A directory is written into a locked temporary directory `.NAME.tmp-…` next to `output`
    /// and switched in at the end in one step where the OS can (Linux `renameat2`
    /// `RENAME_EXCHANGE`, Darwin `renamex_np` `RENAME_SWAP`), so readers find the old or the new
    /// output, never none; elsewhere with two renames, and a build killed between them is
    /// recovered by the next (``recoverInterruptedOutput(at:)``). What killed builds left
    /// (`.NAME.tmp-…`, `.NAME.old-…`) is removed after a successful write. A single file goes
    /// through the core's atomic writer. A failed build leaves the previous output as it was.
    ///
    /// `output` is followed through symbolic links (the link stays, its target is written);
    /// a FIFO or a device gets a single database streamed to it and is never replaced.
    @discardableResult
    public func write(to output: String) throws(PipelineError) -> PipelineSummary {
        reportNationalForms()
        try checkBadRowLimit()
        let resolved: ResolvedOutput
        do { resolved = try OutputPath.resolve(output) } catch { throw PipelineError(error) }
        let target = resolved.path
        if resolved.kind == .missing, DirectorySwitch.recover(target) { return try write(to: output) }
        try checkOutput(output)

        onProgress(PipelineProgress(file: "", bytesRead: 0, totalBytes: nil, rowsRead: rowsRead, phase: .sorting, count: numbersAccepted))
        if direct != nil {
            // The last rows go to a run first: the write's label dictionary and merge get the
            // memory they held (a spilled build's rows in memory are no use to the merge).
            do throws(CallerIDError) { try direct!.spillRemainder() } catch { throw PipelineError(error) }
            return try writeDirect(direct!, output: output, resolved: resolved)
        }
        let groups: (lists: [EntryList], duplicates: Int)
        var distinct: Int? = nil
        if let spilled, spilled.runs.count > 0 {
            let merged = try mergeRuns(spilled)
            (groups, distinct) = ((merged.lists, merged.duplicates), merged.distinct)
        } else {
            groups = groupEntries()
        }
        let duplicates = groups.duplicates
        let isDir = writesDirectory(to: output)
        let plan = plannedFiles(groups.lists, isDirectory: isDir, target: target)
        let fileCount = plan.count + (options.top == nil ? 0 : 1)
        func announce(_ name: String, _ entries: Int, _ index: Int) {
            onProgress(PipelineProgress(file: name, bytesRead: 0, totalBytes: nil, rowsRead: rowsRead, phase: .writing,
                                        count: entries, fileIndex: index, fileCount: fileCount))
        }

        if !isDir {
            // One file (or a stream): the core's atomic writer puts it in place; every check
            // that can abort the build has passed by now.
            let p = plan[0]
            announce(p.fileName, p.entries, 1)
            var file = try writeDatabase(p, to: target, withRanges: true)
            let list = groups.lists[p.list]
            file.region = list.region
            file.kind = list.kind
            file.rangeStart = file.firstNumber
            file.rangeEnd = file.lastNumber
            if resolved.kind != .stream { DirectorySwitch.removeLeftovers(of: target) }
            return summary(output: output, isDirectory: false, files: [file], lists: groups.lists, duplicates: duplicates, distinct: distinct)
        }

        return try writeDirectory(plan, groups: groups, output: output, target: target, distinct: distinct, announce: announce)
    }

    /// The one database file of a build whose rows went straight to the core's builder
    /// (``prepare(output:)``).
    private func writeDirect(_ builder: DatabaseBuilder, output: String, resolved: ResolvedOutput) throws(PipelineError) -> PipelineSummary {
        guard !writesDirectory(to: output) else {
            throw PipelineError(.invalidConfiguration, "\(output) is a directory, and this build was prepared for one database file")
        }
        let name = OutputPath.split(resolved.path).name
        onProgress(PipelineProgress(file: name, bytesRead: 0, totalBytes: nil, rowsRead: rowsRead, phase: .writing,
                                    count: builder.count, fileIndex: 1, fileCount: 1))
        let built: BuildSummary
        let written: DatabaseBuilder.Written
        do { (built, written) = try builder.writeHashing(to: resolved.path) } catch { throw PipelineError(error) }
        var categories: [String: Int] = [:]
        var actions: [String: Int] = [:]
        for (c, n) in written.entriesByCategory {
            categories[c.name, default: 0] += n
            actions[c.action.description, default: 0] += n
        }
        let file = OutputFile(file: name, region: "all", kind: "all", shard: 1, shards: 1, entries: built.entries,
                              firstNumber: written.firstNumber, lastNumber: written.lastNumber,
                              rangeStart: written.firstNumber, rangeEnd: written.lastNumber, categories: categories, actions: actions,
                              bytes: built.fileBytes, xxh3: written.xxh3, duplicatesMerged: built.duplicatesMerged, ranges: built.ranges,
                              formatVersion: written.formatVersion)
        if resolved.kind != .stream { DirectorySwitch.removeLeftovers(of: resolved.path) }
        return summary(output: output, isDirectory: false, files: [file], lists: [], duplicates: built.duplicatesMerged,
                       distinct: built.distinctLabels)
    }

    /// One database of the plan: which entry list, which shard of it, and its file name.
    private struct PlannedFile {
        var list: Int
        var shard: ArraySlice<Int32>
        /// The shard's rows when the list was spilled (then ``shard`` is empty).
        var spilled: SpilledShard? = nil
        var entries: Int { spilled?.count ?? shard.count }
        var index: Int
        var count: Int
        var fileName: String
    }

    /// The databases to write, in order: in a directory, each list cut into shards of at most
    /// ``PipelineOptions/entriesPerDatabase``, named after the list (numbered when there are
    /// several shards); else the one list whole.
    private func plannedFiles(_ lists: [EntryList], isDirectory: Bool, target: String) -> [PlannedFile] {
        var plan: [PlannedFile] = []
        var usedNames = Set<String>()
        let cap = isDirectory ? options.entriesPerDatabase : Int.max
        for (l, list) in lists.enumerated() {
            let base = uniqueFileBase(list.fileBase, &usedNames)
            if let spilled = list.spilled {
                let count = spilled.shardOffsets.count - 1
                let width = String(count).count
                for k in 0..<count {
                    let rows = k == count - 1 ? spilled.count - k * cap : cap
                    let shard = SpilledShard(path: spilled.path, from: spilled.shardOffsets[k], to: spilled.shardOffsets[k + 1], count: rows)
                    plan.append(PlannedFile(list: l, shard: [], spilled: shard, index: k, count: count,
                                            fileName: shardFileName(base, k, count, width, isDirectory: isDirectory, target: target)))
                }
                continue
            }
            let shards = list.indices.isEmpty ? [list.indices[...]] : stride(from: 0, to: list.indices.count, by: cap).map {
                list.indices[$0..<min($0 + cap, list.indices.count)]
            }
            let width = String(shards.count).count
            for (k, shard) in shards.enumerated() {
                plan.append(PlannedFile(list: l, shard: shard, index: k, count: shards.count,
                                        fileName: shardFileName(base, k, shards.count, width, isDirectory: isDirectory, target: target)))
            }
        }
        return plan
    }

    /// `BASE.cid`, or `BASE-k.cid` (k zero-padded to `width`) when a list has several shards; the
    /// output's own name for a single file.
    private func shardFileName(_ base: String, _ k: Int, _ count: Int, _ width: Int, isDirectory: Bool, target: String) -> String {
        guard isDirectory else { return OutputPath.split(target).name }
        var fileName = base
        if count > 1 { fileName += "-" + String(repeating: "0", count: width - String(k + 1).count) + String(k + 1) }
        return fileName + ".cid"
    }

    /// Writes every planned database (and the starter set) into a temporary folder beside
    /// `target`, then its manifest, and switches it into place.
    private func writeDirectory(_ plan: [PlannedFile], groups: (lists: [EntryList], duplicates: Int), output: String, target: String,
                                distinct: Int?, announce: (String, Int, Int) -> Void) throws(PipelineError) -> PipelineSummary {
        let duplicates = groups.duplicates
        let tops = options.top.map { topSets($0, groups.lists) } ?? []
        let fileCount = options.topOnly ? tops.count : plan.count + tops.count
        var result: PipelineSummary? = nil
        try Pipeline.switchInDirectory(at: target, allowExchange: allowDirectoryExchange, hook: switchHook) { (temp) throws(PipelineError) in
        // Databases.
        var files: [OutputFile] = []
        for (i, p) in plan.enumerated() where !options.topOnly {
            announce(p.fileName, p.entries, i + 1)
            var file = try writeDatabase(p, to: "\(temp)/\(p.fileName)", withRanges: i == 0)
            file.sha256 = try Pipeline.sha256(of: "\(temp)/\(p.fileName)")
            let list = groups.lists[p.list]
            file.region = list.region
            file.kind = list.kind
            file.shard = p.index + 1
            file.shards = p.count
            if let first = file.firstNumber, let last = file.lastNumber {
                file.rangeStart = first
                file.rangeEnd = last
                if p.index > 0 { files[files.count - 1].rangeEnd = first - 1 }
            }
            files.append(file)
        }
        // Starter set: one top.cid, or with --top-only and a split, one per region.
        for top in tops {
            announce(top.fileName, top.entries.count, files.count + 1)
            var file = try writeDatabase(top.entries[...], to: "\(temp)/\(top.fileName)", fileName: top.fileName)
            file.sha256 = try Pipeline.sha256(of: "\(temp)/\(top.fileName)")
            file.region = top.region
            file.kind = "top"
            file.rangeStart = file.firstNumber
            file.rangeEnd = file.lastNumber
            files.append(file)
        }

        let written = summary(output: output, isDirectory: true, files: files, lists: groups.lists, duplicates: duplicates, distinct: distinct)
        result = written
        return [UInt8](Pipeline.manifestJSON(files: files, datasetVersion: written.datasetVersion, buildTime: written.buildTime, options: options))
        }
        return result!
    }

    /// A build directory at `target`, written into a locked temporary folder beside it by
    /// `fill` (the databases; it returns the manifest's bytes), made durable and switched in
    /// (``DirectorySwitch/install(_:at:allowExchange:hook:)``); the folder is removed when
    /// anything fails, leaving `target` as it was, and what killed builds left goes after.
    static func switchInDirectory(at target: String, allowExchange: Bool = true, hook: (String) -> Void = { _ in },
                                  _ fill: (String) throws(PipelineError) -> [UInt8]) throws(PipelineError) {
        let temp: DirectorySwitch.TemporaryDirectory
        do { temp = try DirectorySwitch.makeTemporaryDirectory(for: target) } catch { throw PipelineError(error) }
        var committed = false
        defer {
            if !committed { DirectorySwitch.removeTree(temp.path) }
            temp.close()
        }
        let manifest = try fill(temp.path)
        try writeDurably(manifest, to: "\(temp.path)/manifest.json")
        DirectorySwitch.syncDirectory(temp.path)
        do {
            try DirectorySwitch.install(temp.path, at: target, allowExchange: allowExchange, hook: { hook($0.rawValue) })
        } catch {
            throw PipelineError(error)
        }
        committed = true
        DirectorySwitch.removeLeftovers(of: target)
    }

    /// The summary of what was written: labels are counted over the entries stored (after
    /// de-duplication), as distinct label and category pairs, like `lookup info`.
    private func summary(output: String, isDirectory: Bool, files: [OutputFile], lists: [EntryList], duplicates: Int,
                         distinct counted: Int? = nil) -> PipelineSummary {
        var used = [Bool](repeating: false, count: payloads.count)
        var distinct = 0
        for list in lists {
            for e in list.indices where !used[Int(payloadOf[Int(e)])] {
                used[Int(payloadOf[Int(e)])] = true
                distinct += 1
            }
        }
        if let counted { distinct = counted }
        let buildTime = Pipeline.timestamp(options.buildTime)
        let version = options.datasetVersion ?? Pipeline.contentVersion(files)
        var result = PipelineSummary(
            output: output, isDirectory: isDirectory, files: files, rowsRead: rowsRead, rowsRejected: rowsRejected,
            numbersAccepted: numbersAccepted, duplicatesMerged: duplicates, distinctLabels: distinct,
            rejectedByReason: rejectedByReason, warningsByKind: warningsByKind, rangeRows: rangeRows, rangeNumbers: rangeNumbers,
            datasetVersion: version, buildTime: buildTime)
        result.rangesKept = files.reduce(0) { $0 + $1.ranges }
        return result
    }

    // MARK: Grouping

    struct EntryList {
        var region: String
        var kind: String
        var fileBase: String
        /// Entry indices in ascending number order, one per number.
        var indices: [Int32]
        /// The list's rows in a file instead (a build that spilled its rows).
        var spilled: SpilledList? = nil
        /// Its output: region id × 2, + 1 for a separate block list.
        var key = 0
    }

    /// Sorts all accepted entries by number (stable), keeps the last row per number within
    /// each output group, and returns the groups in a fixed order.
    func groupEntries() -> (lists: [EntryList], duplicates: Int) {
        var order = sortedOrder()
        let separate = options.blockList == .separate
        let split = options.split != .none
        var duplicates = 0
        if !split && !separate {
            // One output: the last entry of each run of equal numbers, compacted in place (no
            // second array of indices).
            var w = 0
            for k in order.indices {
                if k + 1 < order.count && numbers[Int(order[k + 1])] == numbers[Int(order[k])] {
                    duplicates += 1
                    continue
                }
                order[w] = order[k]
                w += 1
            }
            order.removeLast(order.count - w)
            return ([EntryList(region: "all", kind: "all", fileBase: "all", indices: order)], duplicates)
        }
        // Group key: region id * 2 + (block ? 1 : 0).
        var lists: [Int: [Int32]] = [:]
        var i = 0
        var lastOfGroup: [Int: Int32] = [:]
        while i < order.count {
            let n = numbers[Int(order[i])]
            var j = i
            lastOfGroup.removeAll(keepingCapacity: true)
            while j < order.count && numbers[Int(order[j])] == n {
                let e = order[j]
                let region = split ? Int(regionOf[Int(e)]) : 0
                let block = separate && payloads[Int(payloadOf[Int(e)])].category.action == .block
                let key = region * 2 + (block ? 1 : 0)
                if lastOfGroup.updateValue(e, forKey: key) != nil { duplicates += 1 }
                j += 1
            }
            for (key, e) in lastOfGroup { lists[key, default: []].append(e) }
            i = j
        }
        if lists.isEmpty && !split { lists[0] = [] }
        var result: [EntryList] = []
        for key in lists.keys.sorted(by: { a, b in
            let ra = split ? regionNames[a / 2] : "", rb = split ? regionNames[b / 2] : ""
            return ra != rb ? ra < rb : a < b
        }) {
            let region = split ? regionNames[key / 2] : "all"
            let kind = separate ? (key % 2 == 1 ? "block" : "identify") : "all"
            var base = split ? Pipeline.fileName(region) : "all"
            if kind == "block" { base += "-block" }
            result.append(EntryList(region: region, kind: kind, fileBase: base, indices: lists[key]!))
        }
        return (result, duplicates)
    }

    /// Entry indices ordered by number, input order kept among equal numbers (the core's
    /// `stableOrder(of:)`, the package's one sort).
    func sortedOrder() -> [Int32] { stableOrder(of: numbers) }

    /// The top-N sets to write: `top.cid` (region `top`) of the whole build; with
    /// ``PipelineOptions/topOnly`` and a split, one per region instead, named and keyed as the
    /// region's own file (the region's top N among its lists' entries).
    func topSets(_ n: Int, _ lists: [EntryList]) -> [(fileName: String, region: String, entries: [Int32])] {
        guard options.topOnly && options.split != .none else { return [("top.cid", "top", topEntries(n).0)] }
        var regions: [String] = [], byRegion: [String: (base: String, indices: [Int32])] = [:]
        for list in lists {
            if byRegion[list.region] == nil {
                regions.append(list.region)
                byRegion[list.region] = (list.fileBase, [])
            }
            byRegion[list.region]!.indices += list.indices
        }
        return regions.map { r in
            let (base, indices) = byRegion[r]!
            var seen = Set<UInt64>(), unique: [Int32] = []
            for e in indices where seen.insert(numbers[Int(e)]).inserted { unique.append(e) }
            return ("\(base).cid", r, heaviest(n, unique))
        }
    }

    /// The `n` heaviest of `unique` (one entry per number; ties: smaller number first), ascending.
    private func heaviest(_ n: Int, _ unique: [Int32]) -> [Int32] {
        var sorted = unique
        sorted.sort { a, b in
            let wa = weightOf[Int(a)], wb = weightOf[Int(b)]
            return wa != wb ? wa > wb : numbers[Int(a)] < numbers[Int(b)]
        }
        var chosen = Array(sorted.prefix(n))
        chosen.sort { numbers[Int($0)] < numbers[Int($1)] }
        return chosen
    }

    /// The `n` heaviest entries (last row per number; ties: smaller number first), ascending.
    func topEntries(_ n: Int) -> ([Int32], Int) {
        let order = sortedOrder()
        var unique: [Int32] = []
        var merged = 0
        for (k, e) in order.enumerated() {
            if k + 1 < order.count && numbers[Int(order[k + 1])] == numbers[Int(e)] { merged += 1; continue }
            unique.append(e)
        }
        return (heaviest(n, unique), merged)
    }

    // MARK: Writing

    private func writeDatabase(_ planned: PlannedFile, to path: String, withRanges: Bool = false) throws(PipelineError) -> OutputFile {
        guard let shard = planned.spilled, let spilled else {
            return try writeDatabase(planned.shard, to: path, fileName: planned.fileName, withRanges: withRanges)
        }
        let written: StreamedFile
        do throws(CallerIDError) {
            written = try StreamedFileWriter.write(shard, categories: spilled.categories, options: options.buildOptions,
                                                   scratch: try spilled.runs.area(), to: path)
        } catch {
            throw PipelineError(error)
        }
        var categories: [String: Int] = [:]
        var actions: [String: Int] = [:]
        for (c, n) in written.entriesByCategory {
            categories[spilled.categories[c].name, default: 0] += n
            actions[spilled.categories[c].action.description, default: 0] += n
        }
        return OutputFile(file: planned.fileName, region: "", kind: "", shard: 1, shards: 1, entries: written.entries,
                          firstNumber: written.firstNumber, lastNumber: written.lastNumber, rangeStart: nil, rangeEnd: nil,
                          categories: categories, actions: actions, bytes: written.bytes, xxh3: written.xxh3, duplicatesMerged: 0, ranges: 0,
                          formatVersion: written.formatVersion)
    }

    private func writeDatabase(_ entries: ArraySlice<Int32>, to path: String, fileName: String, withRanges: Bool = false) throws(PipelineError) -> OutputFile {
        var builder = DatabaseBuilder(options: options.buildOptions)
        var categories: [String: Int] = [:]
        var actions: [String: Int] = [:]
        do {
            if withRanges {
                for k in keptFirst.indices {
                    let p = payloads[Int(keptPayload[k])]
                    try builder.addRange(keptFirst[k], keptLast[k], label: p.label, category: p.category)
                }
            }
            for e in entries {
                let p = payloads[Int(payloadOf[Int(e)])]
                try builder.add(numbers[Int(e)], label: p.label, category: p.category)
                categories[p.category.name, default: 0] += 1
                actions[p.category.action.description, default: 0] += 1
            }
        } catch {
            throw PipelineError(error)
        }
        let summary: BuildSummary
        let written: DatabaseBuilder.Written
        do {
            // The hash of the bytes written: the output may be a pipe that cannot be read back.
            (summary, written) = try builder.writeHashing(to: path)
        } catch {
            throw PipelineError(error)
        }
        return OutputFile(file: fileName, region: "", kind: "", shard: 1, shards: 1, entries: summary.entries,
                          firstNumber: entries.first.map { numbers[Int($0)] }, lastNumber: entries.last.map { numbers[Int($0)] },
                          rangeStart: nil, rangeEnd: nil, categories: categories, actions: actions,
                          bytes: summary.fileBytes, xxh3: written.xxh3, duplicatesMerged: summary.duplicatesMerged, ranges: summary.ranges,
                          formatVersion: written.formatVersion)
    }

    private func uniqueFileBase(_ base: String, _ used: inout Set<String>) -> String {
        var candidate = base
        var k = 2
        while used.contains(candidate.lowercased()) || candidate.lowercased() == "top" || candidate.lowercased() == "manifest" {
            candidate = "\(base)_\(k)"
            k += 1
        }
        used.insert(candidate.lowercased())
        return candidate
    }

    /// The file name (without `.cid`) of a region's database: a portable name
    /// (``DirectoryManifest/isPortableFileName(_:)``: `A–Z a–z 0–9 . _ -`) that still reads as
    /// the region. ASCII letters, digits, `-` and `.` stay; Latin letters lose their accents
    /// (`Île-de-France` → `Ile-de-France`); Cyrillic is transliterated (`Санкт-Петербург` →
    /// `Sankt-Peterburg`, BGN/PCGN without apostrophes); any other run of characters becomes
    /// `_`. When letters or digits of another script were left, the name is the Punycode
    /// (RFC 3492, as in domain names) of the name so far, `xn--…`: distinct regions keep
    /// distinct, reproducible names (`서울특별시` → `xn--bm3bl3fptb42g9ys`). Leading `.` and `_`
    /// and trailing `_` are dropped; an empty name is `region`.
    static func fileName(_ region: String) -> String {
        var ascii = ""
        var foreign = false
        for c in region.precomposedStringWithCanonicalMapping.unicodeScalars {
            if isPortable(c) {
                ascii.unicodeScalars.append(c)
            } else if let latin = transliterated(c) {
                ascii += latin
            } else if let letter = String(c).decomposedStringWithCanonicalMapping.unicodeScalars.first,
                      letter.value < 0x80, isPortable(letter) {
                ascii.unicodeScalars.append(letter)   // é → e
            } else if c.properties.generalCategory == .nonspacingMark {
                continue
            } else if c.properties.isAlphabetic || c.properties.numericType != nil {
                foreign = true
                ascii.unicodeScalars.append(c)
            } else if ascii.last != "_" {
                ascii.append("_")
            }
        }
        var out = ascii
        while out.hasPrefix(".") || out.hasPrefix("_") { out.removeFirst() }
        while out.hasSuffix("_") { out.removeLast() }
        if foreign, !out.isEmpty { out = "xn--" + punycode(out) }
        if out.utf8.count > 100 { out = String(out.prefix(40)) }
        return out.isEmpty ? "region" : out
    }

    private static func isPortable(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E: true
        default: false
        }
    }

    /// Cyrillic (Russian, Ukrainian, Belarusian letters) and a few Latin letters without a
    /// decomposition, in ASCII; nil for anything else.
    private static func transliterated(_ c: Unicode.Scalar) -> String? {
        let lower: [UInt32: String] = [
            0x430: "a", 0x431: "b", 0x432: "v", 0x433: "g", 0x434: "d", 0x435: "e", 0x451: "e", 0x436: "zh", 0x437: "z",
            0x438: "i", 0x439: "y", 0x43A: "k", 0x43B: "l", 0x43C: "m", 0x43D: "n", 0x43E: "o", 0x43F: "p", 0x440: "r",
            0x441: "s", 0x442: "t", 0x443: "u", 0x444: "f", 0x445: "kh", 0x446: "ts", 0x447: "ch", 0x448: "sh",
            0x449: "shch", 0x44A: "", 0x44B: "y", 0x44C: "", 0x44D: "e", 0x44E: "yu", 0x44F: "ya",
            0x454: "ye", 0x456: "i", 0x457: "yi", 0x491: "g", 0x45E: "u",
            0xDF: "ss", 0xE6: "ae", 0xF8: "o", 0x153: "oe", 0x111: "d", 0x142: "l", 0xFE: "th", 0x131: "i", 0xF0: "d",
        ]
        if let s = lower[c.value] { return s }
        // Upper case: the lower-case letter's transliteration, capitalized.
        guard let l = c.properties.lowercaseMapping.unicodeScalars.first, l != c,
              c.properties.lowercaseMapping.unicodeScalars.count == 1, let s = lower[l.value] else { return nil }
        return s.prefix(1).uppercased() + s.dropFirst()
    }

    /// RFC 3492 Punycode of `s` (the encoder of section 6.3, with its parameters).
    static func punycode(_ s: String) -> String {
        let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700
        let input = s.unicodeScalars.map { Int($0.value) }
        func digit(_ d: Int) -> Character { Character(Unicode.Scalar(UInt8(d < 26 ? 0x61 + d : 0x30 + d - 26))) }
        func adapt(_ delta: Int, _ points: Int, _ first: Bool) -> Int {
            var delta = first ? delta / damp : delta / 2
            delta += delta / points
            var k = 0
            while delta > ((base - tMin) * tMax) / 2 {
                delta /= base - tMin
                k += base
            }
            return k + (base - tMin + 1) * delta / (delta + skew)
        }
        var out = String(String.UnicodeScalarView(input.filter { $0 < 0x80 }.compactMap { Unicode.Scalar(UInt32($0)) }))
        let basic = out.count
        var handled = basic
        if basic > 0 { out.append("-") }
        var n = 0x80, delta = 0, bias = 72
        while handled < input.count {
            let m = input.filter { $0 >= n }.min()!
            delta += (m - n) * (handled + 1)
            n = m
            for c in input {
                if c < n { delta += 1 }
                if c == n {
                    var q = delta
                    var k = base
                    while true {
                        let t = k <= bias ? tMin : k >= bias + tMax ? tMax : k - bias
                        if q < t { break }
                        out.append(digit(t + (q - t) % (base - t)))
                        q = (q - t) / (base - t)
                        k += base
                    }
                    out.append(digit(q))
                    bias = adapt(delta, handled + 1, handled == basic)
                    delta = 0
                    handled += 1
                }
            }
            delta += 1
            n += 1
        }
        return out
    }

    static func timestamp(_ seconds: Double?) -> String {
        var t = seconds
        if t == nil, let env = ProcessInfo.processInfo.environment["SOURCE_DATE_EPOCH"], let v = Double(env) { t = v }
        let date = t.map { Date(timeIntervalSince1970: $0) } ?? Date()
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        f.timeZone = TimeZone(identifier: "UTC")
        return f.string(from: date)
    }

    /// A dataset version that changes exactly when an output file changes.
    static func contentVersion(_ files: [OutputFile]) -> String {
        var bytes: [UInt8] = []
        for f in files {
            bytes.append(contentsOf: f.file.utf8)
            withUnsafeBytes(of: f.xxh3.littleEndian) { bytes.append(contentsOf: $0) }
        }
        return "xxh3-" + hex(Checksum.xxh3(bytes))
    }

    static func hex(_ v: UInt64) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    /// The manifest of a build directory, written from the one model CallerIDDirectory reads
    /// (``DirectoryManifest``): keys sorted, one per line.
    static func manifestJSON(files: [OutputFile], datasetVersion: String, buildTime: String, options: PipelineOptions) -> Data {
        var manifest = DirectoryManifest(files: files.map { f in
            var m = DirectoryManifest.File(file: f.file, region: f.region, kind: f.kind, entries: f.entries,
                                           bytes: f.bytes, xxh3: f.xxh3, sha256: f.sha256)
            m.shard = f.shard
            m.shards = f.shards
            m.categories = f.categories
            m.actions = f.actions
            m.firstNumber = f.firstNumber
            m.lastNumber = f.lastNumber
            m.rangeStart = f.rangeStart
            m.rangeEnd = f.rangeEnd
            m.ranges = f.ranges
            m.formatVersion = f.formatVersion
            return m
        }, datasetVersion: datasetVersion)
        manifest.formatVersion = manifest.newestFileFormat
        manifest.buildTime = buildTime
        manifest.generator = "CallerID \(CallerIDVersion.library)"
        manifest.maxEntries = options.entriesPerDatabase
        return manifest.jsonData()
    }

    /// SHA-256 of a written database, in hex.
    static func sha256(of path: String) throws(PipelineError) -> String {
        do throws(DirectoryError) { return try DirectoryManifest.sha256Hex(fileAt: path) } catch {
            throw PipelineError(error.code == .fileNotFound ? .fileNotFound : .io, error.message)
        }
    }

    /// Writes a small file through the package's one atomic writer (temporary file, fsync,
    /// rename, fsync of the folder); every failure, fsync's included, is an error.
    static func writeDurably(_ bytes: [UInt8], to path: String) throws(PipelineError) {
        do throws(CallerIDError) { try AtomicFileWriter.write(bytes, to: path) } catch { throw PipelineError(error) }
    }

}
