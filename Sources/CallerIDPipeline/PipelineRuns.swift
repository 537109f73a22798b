import CallerID

// The pipeline's bounded memory (`lookup build --memory`, ``BuildOptions/memoryLimit``): the
// accepted rows beyond the limit are sorted and spilled as runs (the core's `SpilledRuns`); at
// write time the runs are merged once, the last row of each number is kept per output (region
// and kind), and each output's rows go to a file of their own, from which its databases are
// streamed. docs/SCALE.md.

/// The spilled state of a pipeline: its runs, the categories the rows name, and the memory
/// the rows in memory take.
final class PipelineRuns {
    let runs: SpilledRuns
    /// Categories of spilled rows, by index (a row's payload holds the index).
    var categories: [Category] = []
    private var categoryIndex: [Category: Int] = [:]

    init(nextTo target: String, memoryLimit: Int) {
        runs = SpilledRuns(nextTo: target, memoryLimit: memoryLimit)
    }

    func index(of category: Category) -> Int {
        if let i = categoryIndex[category] { return i }
        categories.append(category)
        categoryIndex[category] = categories.count - 1
        return categories.count - 1
    }
}

/// One output's rows (one per number, ascending), spilled by the merge: the databases of a
/// region and kind are streamed from it, shard by shard.
struct SpilledList {
    let path: String
    /// Entries in the file.
    var count = 0
    /// File offset of the first row of each shard, and the end of the file.
    var shardOffsets: [Int] = [0]
}

/// A part of a ``SpilledList``'s file: the rows of one shard.
struct SpilledShard: SortedEntrySource {
    let path: String
    let from: Int
    let to: Int
    let count: Int

    func forEach(_ body: (UInt64, Int, UnsafeRawBufferPointer) throws(CallerIDError) -> Void) throws(CallerIDError) {
        let reader = try SpillReader(path: path, bufferBytes: 1 << 20, from: from, to: to)
        while try reader.nextRow({ (number, payload) throws(CallerIDError) -> Bool in
            guard let row = RunPayload.read(payload) else { throw CallerIDError(.io, "\(path): a damaged row") }
            try body(number, row.category, row.label)
            return true
        }) != nil {}
    }
}

extension Pipeline {
    /// Keeps the accepted rows within ``BuildOptions/memoryLimit`` of ``PipelineOptions/buildOptions``
    /// (when set): beyond it they are spilled to a temporary folder beside `output`. Builds
    /// with a top-N set or ranges kept as ranges need every row in memory and are left as they
    /// are. Call it before the first ``add(file:)``.
    package func spillRows(nextTo output: String) {
        guard let limit = options.buildOptions.memoryLimit, options.top == nil, !options.keepRanges else { return }
        spilled = PipelineRuns(nextTo: output, memoryLimit: limit)
    }

    /// Bytes the accepted rows in memory need until they are written: 8 + 4 + 2 per number,
    /// 8 more while sorting, 4 in its output's list; each distinct label and category once.
    var rowMemory: Int { numbers.count &* 32 &+ payloadBytes }

    /// Sorts the rows in memory and writes them as the next run; memory starts over.
    func spillRun(_ state: PipelineRuns) throws(PipelineError) {
        do throws(CallerIDError) {
            try writeRun(state) { count, row throws(CallerIDError) in try state.runs.write(count: count, row) }
        } catch {
            throw PipelineError(error)
        }
        numbers.removeAll(keepingCapacity: true)
        payloadOf.removeAll(keepingCapacity: true)
        regionOf.removeAll(keepingCapacity: true)
        clearPayloads()
    }

    /// The rows in memory in number order (stable), as run rows: `[group][category][label]`,
    /// the group being the output (region × 2 + 1 for a separate block list).
    private func writeRun<R>(_ state: PipelineRuns,
                             _ write: (Int, (Int, inout [UInt8]) -> UInt64) throws(CallerIDError) -> R) throws(CallerIDError) -> R {
        let order = sortedOrder()
        let split = options.split != .none
        let separate = options.blockList == .separate
        let categoryOf = payloads.map { state.index(of: $0.category) }
        return try write(order.count) { k, payload in
            let e = Int(order[k])
            let p = Int(payloadOf[e])
            let block = separate && payloads[p].category.action == .block
            RunPayload.append(group: (split ? Int(regionOf[e]) : 0) * 2 + (block ? 1 : 0), category: categoryOf[p],
                              label: payloads[p].label.utf8, to: &payload)
            return numbers[e]
        }
    }

    /// Merges the runs (and the rows still in memory): the last row of each number per output
    /// goes to that output's file. Returns the outputs in the order the in-memory build lists
    /// them, the rows merged away, and the distinct (label, category) values kept.
    func mergeRuns(_ state: PipelineRuns) throws(PipelineError) -> (lists: [EntryList], duplicates: Int, distinct: Int) {
        do throws(CallerIDError) {
            let all = try writeRun(state) { count, row throws(CallerIDError) in try state.runs.withTail(count: count, row) }
            let area = try state.runs.area()
            let cap = options.entriesPerDatabase
            var outputs: [Int: (file: SpillWriter, list: SpilledList)] = [:]
            var duplicates = 0
            var distinct = Set<UInt64>()
            // The rows of the current number, last per output, in the order outputs first appear.
            var current: UInt64 = 0
            var started = false
            var pending: [(group: Int, row: [UInt8])] = []
            func flush() throws(CallerIDError) {
                for (group, row) in pending {
                    if outputs[group] == nil {
                        let path = area.newPath("list")
                        outputs[group] = (try SpillWriter(path: path, bufferBytes: state.runs.mergeBuffer(files: 64)), SpilledList(path: path))
                    }
                    let out = outputs[group]!
                    if out.list.count > 0 && out.list.count % cap == 0 { outputs[group]!.list.shardOffsets.append(out.file.bytesWritten) }
                    try row.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try out.file.writeRow(current, raw) } }.get()
                    outputs[group]!.list.count += 1
                    distinct.insert(Checksum.xxh3(row.count > 0 ? Array(row.dropFirst(Varint.size(group))) : row))
                }
                pending.removeAll(keepingCapacity: true)
            }
            var merge = try RunMerge(runs: all, bufferBytes: state.runs.mergeBuffer(files: all.count))
            while try merge.next({ (number, payload) throws(CallerIDError) in
                if !started || number != current {
                    try flush()
                    current = number
                    started = true
                }
                guard let row = RunPayload.read(payload) else { throw CallerIDError(.io, "a spilled run holds a damaged row") }
                if let i = pending.firstIndex(where: { $0.group == row.group }) {
                    pending[i].row = Array(payload)
                    duplicates += 1
                } else {
                    pending.append((row.group, Array(payload)))
                }
            }) {}
            try flush()
            var lists: [EntryList] = []
            for (group, out) in outputs {
                try out.file.finish()
                var list = out.list
                list.shardOffsets.append(out.file.bytesWritten)
                let region = options.split != .none ? regionNames[group / 2] : "all"
                let kind = options.blockList == .separate ? (group % 2 == 1 ? "block" : "identify") : "all"
                var base = options.split != .none ? Pipeline.fileName(region) : "all"
                if kind == "block" { base += "-block" }
                lists.append(EntryList(region: region, kind: kind, fileBase: base, indices: [], spilled: list, key: group))
            }
            lists.sort { a, b in a.region != b.region && options.split != .none ? a.region < b.region : a.key < b.key }
            return (lists, duplicates, distinct.count)
        } catch {
            throw PipelineError(error)
        }
    }
}
