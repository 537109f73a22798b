import CallerID
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
    public var datasetVersion: String
    public var buildTime: String
    /// Entries written, all files but the top-N set.
    public var entries: Int { files.filter { $0.kind != "top" }.reduce(0) { $0 + $1.entries } }
    public var bytes: Int { files.reduce(0) { $0 + $1.bytes } }
}

extension Pipeline {
    /// True when the options ask for several outputs whatever the data.
    var wantsDirectory: Bool { options.split != .none || options.top != nil || options.blockList == .separate }

    /// Writes the databases. `output` is one database file unless several outputs are wanted
    /// (a split, separate block lists, a top-N set, more than ``PipelineOptions/maxEntries``
    /// entries, or `output` is an existing directory): then it is a directory holding the
    /// databases and `manifest.json`. Everything is written into a temporary directory next
    /// to `output` and moved into place at the end: a failed build leaves nothing behind.
    @discardableResult
    public func write(to output: String) throws(PipelineError) -> PipelineSummary {
        try checkBadRowLimit()
        let groups = groupEntries()
        let duplicates = groups.duplicates
        var isDir = wantsDirectory || groups.lists.contains { $0.indices.count > options.maxEntries }
        var existingIsDir: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: output, isDirectory: &existingIsDir)
        if exists && existingIsDir.boolValue { isDir = true }
        if isDir && exists && !existingIsDir.boolValue {
            throw PipelineError(.io, "\(output): this build writes several files, so -o must name a directory, and this is a file")
        }
        if isDir && exists {
            let contents = (try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []
            guard contents.isEmpty || contents.contains("manifest.json") else {
                throw PipelineError(.io, "\(output): the directory exists and is not the output of a build (no manifest.json); refusing to replace it")
            }
        }

        let parent = (output as NSString).deletingLastPathComponent
        let name = (output as NSString).lastPathComponent
        let parentDir = parent.isEmpty ? "." : parent
        let temp = "\(parentDir)/.\(name).tmp-\(UUID().uuidString.prefix(8))"
        do {
            try FileManager.default.createDirectory(atPath: temp, withIntermediateDirectories: false)
        } catch {
            throw PipelineError(FileManager.default.fileExists(atPath: parentDir) ? .io : .fileNotFound,
                                "\(output): cannot create a temporary directory in \(parentDir): \(error.localizedDescription)")
        }
        var committed = false
        defer { if !committed { try? FileManager.default.removeItem(atPath: temp) } }

        // Databases.
        var files: [OutputFile] = []
        var usedNames = Set<String>()
        for list in groups.lists {
            let shards = list.indices.isEmpty ? [list.indices[...]] : stride(from: 0, to: list.indices.count, by: options.maxEntries).map {
                list.indices[$0..<min($0 + options.maxEntries, list.indices.count)]
            }
            let base = uniqueFileBase(list.fileBase, &usedNames)
            let width = String(shards.count).count
            for (k, shard) in shards.enumerated() {
                var fileName = base
                if shards.count > 1 { fileName += "-" + String(repeating: "0", count: width - String(k + 1).count) + String(k + 1) }
                fileName += ".cid"
                if !isDir { fileName = name }
                // One file: the builder's own atomic write (temporary file, fsync, rename) puts
                // it in place; every check that can abort the build has passed by now.
                var file = try writeDatabase(shard, to: isDir ? "\(temp)/\(fileName)" : output, fileName: fileName)
                file.region = list.region
                file.kind = list.kind
                file.shard = k + 1
                file.shards = shards.count
                if let first = file.firstNumber, let last = file.lastNumber {
                    file.rangeStart = first
                    file.rangeEnd = last
                    if k > 0 { files[files.count - 1].rangeEnd = first - 1 }
                }
                files.append(file)
            }
        }
        // Starter set.
        if let top = options.top {
            let (chosen, merged) = topEntries(top)
            _ = merged
            var file = try writeDatabase(chosen[...], to: "\(temp)/top.cid", fileName: "top.cid")
            file.region = "top"
            file.kind = "top"
            file.rangeStart = file.firstNumber
            file.rangeEnd = file.lastNumber
            files.append(file)
        }

        let buildTime = Pipeline.timestamp(options.buildTime)
        let version = options.datasetVersion ?? Pipeline.contentVersion(files)
        if isDir {
            let manifest = Pipeline.manifestJSON(files: files, datasetVersion: version, buildTime: buildTime, options: options)
            try Pipeline.writeDurably(Array(manifest.utf8), to: "\(temp)/manifest.json")
        }
        Pipeline.syncDirectory(temp)

        // Move into place.
        if isDir {
            let old = "\(parentDir)/.\(name).old-\(UUID().uuidString.prefix(8))"
            do {
                if exists { try FileManager.default.moveItem(atPath: output, toPath: old) }
                try FileManager.default.moveItem(atPath: temp, toPath: output)
            } catch {
                if exists && !FileManager.default.fileExists(atPath: output) { try? FileManager.default.moveItem(atPath: old, toPath: output) }
                throw PipelineError(.io, "\(output): cannot move the new files into place: \(error.localizedDescription)")
            }
            committed = true
            if exists { try? FileManager.default.removeItem(atPath: old) }
        }
        Pipeline.syncDirectory(parentDir)

        return PipelineSummary(
            output: output, isDirectory: isDir, files: files, rowsRead: rowsRead, rowsRejected: rowsRejected,
            numbersAccepted: numbersAccepted, duplicatesMerged: duplicates, distinctLabels: Set(payloads.map(\.label)).count,
            rejectedByReason: rejectedByReason, warningsByKind: warningsByKind, rangeRows: rangeRows, rangeNumbers: rangeNumbers,
            datasetVersion: version, buildTime: buildTime)
    }

    // MARK: Grouping

    struct EntryList {
        var region: String
        var kind: String
        var fileBase: String
        /// Entry indices in ascending number order, one per number.
        var indices: [Int32]
    }

    /// Sorts all accepted entries by number (stable), keeps the last row per number within
    /// each output group, and returns the groups in a fixed order.
    func groupEntries() -> (lists: [EntryList], duplicates: Int) {
        let order = sortedOrder()
        let separate = options.blockList == .separate
        let split = options.split != .none
        // Group key: region id * 2 + (block ? 1 : 0).
        var lists: [Int: [Int32]] = [:]
        var duplicates = 0
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

    /// Entry indices ordered by number, input order kept among equal numbers (LSD radix sort).
    func sortedOrder() -> [Int32] {
        let n = numbers.count
        var keys = numbers
        var idx = (0..<Int32(n)).map { $0 }
        guard n > 1 else { return idx }
        let maxKey = keys.max() ?? 0
        let passes = max(1, (64 - maxKey.leadingZeroBitCount + 15) / 16)
        var keysB = [UInt64](repeating: 0, count: n)
        var idxB = [Int32](repeating: 0, count: n)
        var counts = [Int](repeating: 0, count: 65_536)
        for pass in 0..<passes {
            let shift = UInt64(pass * 16)
            for i in 0..<65_536 { counts[i] = 0 }
            for k in keys { counts[Int((k >> shift) & 0xFFFF)] += 1 }
            var sum = 0
            for i in 0..<65_536 { let t = counts[i]; counts[i] = sum; sum += t }
            for i in 0..<n {
                let d = Int((keys[i] >> shift) & 0xFFFF)
                let j = counts[d]
                counts[d] = j + 1
                keysB[j] = keys[i]
                idxB[j] = idx[i]
            }
            swap(&keys, &keysB)
            swap(&idx, &idxB)
        }
        return idx
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
        unique.sort { a, b in
            let wa = weightOf[Int(a)], wb = weightOf[Int(b)]
            return wa != wb ? wa > wb : numbers[Int(a)] < numbers[Int(b)]
        }
        var chosen = Array(unique.prefix(n))
        chosen.sort { numbers[Int($0)] < numbers[Int($1)] }
        return (chosen, merged)
    }

    // MARK: Writing

    private func writeDatabase(_ entries: ArraySlice<Int32>, to path: String, fileName: String) throws(PipelineError) -> OutputFile {
        var builder = DatabaseBuilder(options: options.buildOptions)
        var categories: [String: Int] = [:]
        var actions: [String: Int] = [:]
        do {
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
        let hash: UInt64
        do {
            summary = try builder.write(to: path)
            hash = try Checksum.xxh3(fileAt: path)
        } catch {
            throw PipelineError(error)
        }
        return OutputFile(file: fileName, region: "", kind: "", shard: 1, shards: 1, entries: summary.entries,
                          firstNumber: entries.first.map { numbers[Int($0)] }, lastNumber: entries.last.map { numbers[Int($0)] },
                          rangeStart: nil, rangeEnd: nil, categories: categories, actions: actions,
                          bytes: summary.fileBytes, xxh3: hash, duplicatesMerged: summary.duplicatesMerged)
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

    /// A file-system-safe name for a region: letters and digits (any script), `-`, `_`, `.`;
    /// everything else becomes `_`.
    static func fileName(_ region: String) -> String {
        var out = ""
        for c in region {
            if c.isLetter || c.isNumber || c == "-" || c == "." {
                out.append(c)
            } else if out.last != "_" {
                out.append("_")
            }
        }
        while out.hasPrefix(".") || out.hasPrefix("_") { out.removeFirst() }
        while out.hasSuffix("_") { out.removeLast() }
        if out.utf8.count > 100 { out = String(out.prefix(40)) }
        return out.isEmpty ? "region" : out
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

    static func manifestJSON(files: [OutputFile], datasetVersion: String, buildTime: String, options: PipelineOptions) -> String {
        func str(_ s: String) -> String { jsonQuote(s) }
        func counts(_ d: [String: Int]) -> String {
            "{" + d.keys.sorted().map { "\(str($0)): \(d[$0]!)" }.joined(separator: ", ") + "}"
        }
        func num(_ v: UInt64?) -> String { v.map(String.init) ?? "null" }
        var out = "{\n"
        out += "  \"manifest_version\": 1,\n"
        out += "  \"format_version\": \(str(CallerIDVersion.format)),\n"
        out += "  \"dataset_version\": \(str(datasetVersion)),\n"
        out += "  \"build_time\": \(str(buildTime)),\n"
        out += "  \"generator\": \(str("CallerID \(CallerIDVersion.library)")),\n"
        out += "  \"max_entries\": \(options.maxEntries),\n"
        out += "  \"files\": [\n"
        out += files.map { f in
            """
                {"file": \(str(f.file)), "region": \(str(f.region)), "kind": \(str(f.kind)), "shard": \(f.shard), "shards": \(f.shards),
                 "entries": \(f.entries), "categories": \(counts(f.categories)), "actions": \(counts(f.actions)),
                 "first_number": \(num(f.firstNumber)), "last_number": \(num(f.lastNumber)), "range_start": \(num(f.rangeStart)), "range_end": \(num(f.rangeEnd)),
                 "bytes": \(f.bytes), "xxh3": \(str(hex(f.xxh3))), "format_version": \(str(CallerIDVersion.format))}
            """
        }.joined(separator: ",\n")
        out += "\n  ]\n}\n"
        return out
    }

    /// Writes a small file and fsyncs it.
    static func writeDurably(_ bytes: [UInt8], to path: String) throws(PipelineError) {
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)),
              let handle = FileHandle(forUpdatingAtPath: path) else {
            throw PipelineError(.io, "\(path): cannot write")
        }
        try? handle.synchronize()
        try? handle.close()
    }

    /// Best-effort fsync of a directory, so renames inside it are durable.
    static func syncDirectory(_ path: String) {
        if let h = FileHandle(forReadingAtPath: path) {
            try? h.synchronize()
            try? h.close()
        }
    }
}

/// A JSON string literal (RFC 8259 escapes), as the manifest and the `lookup` tool write them.
public func jsonQuote(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where u.value < 0x20:
            let h = String(u.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
        default: out.unicodeScalars.append(u)
        }
    }
    return out + "\""
}
