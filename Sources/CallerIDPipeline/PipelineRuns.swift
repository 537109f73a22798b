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
    /// Gets ready to write `output`; call it before the first ``add(file:)`` (``build(_:to:)``
    /// does). A build of one database file (no split, no separate block lists, no top-N set, no
    /// ranges kept, `output` not a directory) hands its accepted rows straight to the core's
    /// `DatabaseBuilder`, which keeps them within ``BuildOptions/memoryLimit`` itself; any
    /// other build keeps them within that limit (when set) by spilling them to a temporary
    /// folder beside `output`, except a build with a top-N set or ranges kept as ranges, which
    /// needs every row in memory. Either way the same bytes are written.
    package func prepare(output: String) {
        guard direct == nil, spilled == nil, numbersAccepted == 0, rowsRead == 0 else { return }
        if !writesDirectory(to: output) && !options.keepRanges {
            direct = DatabaseBuilder(options: options.buildOptions, spillingNextTo: output)
            return
        }
        guard let limit = options.buildOptions.memoryLimit, options.top == nil, !options.keepRanges else { return }
        spilled = PipelineRuns(nextTo: output, memoryLimit: limit)
    }

    /// Bytes the accepted rows in memory need until they are written: 8 + 4 + 2 per number,
    /// 8 more while sorting, 4 in its output's list; each distinct label and category once.
    var rowMemory: Int { numbers.count &* 32 &+ payloadBytes }

    /// Hands the rows in memory over to be sorted and written as the next run on another core
    /// while reading goes on (the run before is waited for first); memory starts over.
    func spillRun(_ state: PipelineRuns) throws(PipelineError) {
        let rows = handOverRows(state)
        spilledNumbers += rows.numbers.count
        do throws(CallerIDError) {
            try state.runs.background.startHandingOver { () throws(CallerIDError) in
                try rows.write { count, row throws(CallerIDError) in try state.runs.write(count: count, row) }
            }
        } catch {
            throw PipelineError(error)
        }
    }

    /// The rows in memory, taken out of the pipeline.
    private func handOverRows(_ state: PipelineRuns) -> RunRows {
        let rows = RunRows(numbers: numbers, payloadOf: payloadOf, regionOf: regionOf, labels: payloads.map(\.label),
                           categoryOf: payloads.map { state.index(of: $0.category) },
                           blockOf: payloads.map { $0.category.action == .block },
                           split: options.split != .none, separate: options.blockList == .separate)
        numbers = []
        payloadOf = []
        regionOf = []
        clearPayloads()
        return rows
    }

    /// Merges the runs (and the rows still in memory): the last row of each number per output
    /// goes to that output's file. Returns the outputs in the order the in-memory build lists
    /// them, the rows merged away, and the distinct (label, category) values kept.
    func mergeRuns(_ state: PipelineRuns) throws(PipelineError) -> (lists: [EntryList], duplicates: Int, distinct: Int) {
        do throws(CallerIDError) {
            try state.runs.background.wait()
            let tail = handOverRows(state)
            spilledNumbers += tail.numbers.count
            let all = try tail.write { count, row throws(CallerIDError) in try state.runs.withTail(count: count, added: -1, row) }
            let area = try state.runs.area()
            let cap = options.entriesPerDatabase
            var outputs: [Int: (file: SpillWriter, list: SpilledList)] = [:]
            var duplicates = 0
            // The distinct labels of the whole build, counted within a quarter of the limit.
            let distinct = DistinctHashes(memoryBytes: state.runs.memoryLimit / 4, scratch: area)
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
                    try distinct.insert(Checksum.xxh3(row.count > 0 ? Array(row.dropFirst(Varint.size(group))) : row))
                }
                pending.removeAll(keepingCapacity: true)
            }
            var merge = try RunMerge(runs: all, bufferBytes: state.runs.mergeBuffer(files: all.count))
            while try merge.next({ (number, payload, _) throws(CallerIDError) in
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
            return (lists, duplicates, try distinct.count())
        } catch {
            throw PipelineError(error)
        }
    }
}

/// Rows of a run before they are sorted: the pipeline's arrays, handed over whole.
struct RunRows {
    let numbers: [UInt64]
    let payloadOf: [UInt32]
    let regionOf: [UInt16]
    let labels: [String]
    let categoryOf: [Int]
    let blockOf: [Bool]
    let split: Bool
    let separate: Bool

    /// The rows in number order (stable), as run rows: `[group][category][label]`, the group
    /// being the output (region × 2 + 1 for a separate block list).
    func write<R>(_ write: (Int, (Int, inout [UInt8]) -> UInt64) throws(CallerIDError) -> R) throws(CallerIDError) -> R {
        let order = stableOrder(of: numbers)
        return try write(order.count) { k, payload in
            let e = Int(order[k])
            let p = Int(payloadOf[e])
            let group = (split ? Int(regionOf[e]) : 0) * 2 + (separate && blockOf[p] ? 1 : 0)
            RunPayload.append(group: group, category: categoryOf[p], label: labels[p].utf8, to: &payload)
            return numbers[e]
        }
    }
}
