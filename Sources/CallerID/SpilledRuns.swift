// The runs of a bounded-memory build (``BuildOptions/memoryLimit``): what the builder and the
// pipeline spill, and the merge that reads them back. docs/SCALE.md.

/// The sorted runs a build has spilled, in the order they were written, kept in a
/// ``SpillArea`` beside the output (made at the first run).
///
/// A run's rows are `number` and a payload: `[group: varint][category: varint][label bytes]`
/// (``RunPayload``). Runs are merged in tiers, as a log-structured merge does: a fresh run has
/// level 0, and whenever the last ``fanIn`` runs have the same level they are merged into one
/// run of the next level (rows and their order unchanged). A row is so rewritten once per
/// level, about log₁₆ of the runs' count times, whatever the memory limit (merging every run
/// into one each time 64 had gathered rewrote the rows already merged again and again:
/// quadratic as the limit shrank). Fewer than ``maxRuns`` runs are kept, so a merge never reads
/// more files than that at once: past it the last ``fanIn`` are merged whatever their levels.
package final class SpilledRuns {
    package let memoryLimit: Int
    private let target: String
    private var spill: SpillArea? = nil
    private(set) var paths: [String] = []
    /// The level of each run (``paths``): 0 written from memory, k + 1 merged from runs of level k.
    private var levels: [Int] = []
    /// Rows written again by merges of runs (a measure of the disk traffic, for the tests).
    package private(set) var rowsMerged = 0
    private var tail: (count: Int, path: String)? = nil
    /// Files a merge reads at once.
    package static let maxRuns = 64
    /// Runs of one level merged into one of the next.
    package static let fanIn = 16
    /// Where runs are sorted and written while the next is read.
    package let background = BackgroundJob()
    /// Each run holds a number once (its last row): merging runs into one keeps the last row
    /// of each number (``LastRowOfEachNumber`` needs it). False: every row is kept.
    package var uniqueNumbers = false

    package var count: Int { paths.count }

    package init(nextTo target: String, memoryLimit: Int) {
        self.target = target
        self.memoryLimit = max(memoryLimit, 1)
    }

    /// Runs kept in an area made already (the scratch files of one output), their merges
    /// reading with buffers of a quarter of `memoryLimit` between them.
    package init(in area: SpillArea, memoryLimit: Int) {
        self.target = area.target
        self.memoryLimit = max(memoryLimit, 1)
        spill = area
    }

    /// The folder of the runs, made when first needed.
    package func area() throws(CallerIDError) -> SpillArea {
        if let spill { return spill }
        let made = try SpillArea(nextTo: target)
        spill = made
        return made
    }

    /// Read buffer of each of `files` merged at once: a quarter of the memory limit between them,
    /// 4 KiB to 4 MiB each.
    package func mergeBuffer(files: Int) -> Int { min(max(memoryLimit / 4 / max(files, 1), 4096), 4 << 20) }

    /// Writes `count` rows in ascending number order (rows of one number in the order they
    /// were added) as the next run: `row(i, &payload)` fills the i-th row's payload (given
    /// empty) and returns its number.
    package func write(count: Int, _ row: (Int, inout [UInt8]) -> UInt64) throws(CallerIDError) {
        dropTail()
        let path = try writeRun(count: count, row)
        paths.append(path)
        levels.append(0)
        while true {
            let n = paths.count, k = SpilledRuns.fanIn
            if n >= k && levels[(n - k)...].allSatisfy({ $0 == levels[n - 1] }) {
                try compact(last: k)
            } else if n >= SpilledRuns.maxRuns {
                try compact(last: k)
            } else {
                break
            }
        }
    }

    /// The runs, and the rows still in memory as a last run (written once for a given count,
    /// so that writing the same builder twice reads the same runs).
    /// `added` tells the rows in memory apart: the same value, the same rows.
    package func withTail(count: Int, added: Int, _ row: (Int, inout [UInt8]) -> UInt64) throws(CallerIDError) -> [String] {
        guard count > 0 else { return paths }
        if let tail, tail.count == added { return paths + [tail.path] }
        dropTail()
        let path = try writeRun(count: count, row)
        tail = (added, path)
        return paths + [path]
    }

    /// Removes every run (their rows read, or no longer wanted).
    package func removeAll() {
        dropTail()
        if let spill { for path in paths { spill.remove(path) } }
        paths = []
        levels = []
    }

    private func dropTail() {
        if let tail, let spill { spill.remove(tail.path) }
        tail = nil
    }

    private func writeRun(count: Int, _ row: (Int, inout [UInt8]) -> UInt64) throws(CallerIDError) -> String {
        let path = try area().newPath("run")
        let out = try SpillWriter(path: path)
        var payload: [UInt8] = []
        for i in 0..<count {
            payload.removeAll(keepingCapacity: true)
            let number = row(i, &payload)
            try payload.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try out.writeRow(number, raw) } }.get()
        }
        try out.finish()
        return path
    }

    /// Merges the last `k` runs into one in their place, of the level above theirs (rows and
    /// their order unchanged: the runs merged are consecutive).
    private func compact(last k: Int) throws(CallerIDError) {
        let area = try area()
        let path = area.newPath("run")
        let out = try SpillWriter(path: path)
        let group = Array(paths.suffix(k))
        var merge = try RunMerge(runs: group, bufferBytes: mergeBuffer(files: group.count))
        let unique = uniqueNumbers
        var written = 0
        while try merge.next({ (number, payload, continues) throws(CallerIDError) in
            if unique && continues { return }
            try out.writeRow(number, payload)
            written += 1
        }) {}
        try out.finish()
        rowsMerged += written
        for old in group { area.remove(old) }
        let level = (levels.suffix(k).max() ?? 0) + 1
        paths.removeLast(k)
        levels.removeLast(k)
        paths.append(path)
        levels.append(level)
    }
}

/// The parts of a run row's payload.
package enum RunPayload {
    /// `[group][category][label]` for `row`'s payload.
    package static func append(group: Int, category: Int, label: some Collection<UInt8>, to payload: inout [UInt8]) {
        payload.appendVarint(group)
        payload.appendVarint(category)
        payload.append(contentsOf: label)
    }

    /// Reads a payload; nil when it is damaged.
    package static func read(_ payload: UnsafeRawBufferPointer) -> (group: Int, category: Int, label: UnsafeRawBufferPointer)? {
        var at = 0
        guard let group = Varint.read(payload, at: &at), let category = Varint.read(payload, at: &at) else { return nil }
        return (group, category, UnsafeRawBufferPointer(rebasing: payload[at...]))
    }
}

/// The merged runs of one output, one entry per number: the last row added for it. The runs
/// hold each number once (``SpilledRuns/uniqueNumbers``), so a row is the last of its number
/// when no later run holds the number: nothing is copied.
package struct LastRowOfEachNumber: SortedEntrySource {
    let runs: [String]
    let bufferBytes: Int

    package init(runs: [String], bufferBytes: Int) {
        self.runs = runs
        self.bufferBytes = bufferBytes
    }

    package func forEach(_ body: (UInt64, Int, UnsafeRawBufferPointer) throws(CallerIDError) -> Void) throws(CallerIDError) {
        var merge = try RunMerge(runs: runs, bufferBytes: bufferBytes)
        while try merge.next({ (number, payload, continues) throws(CallerIDError) in
            if continues { return }
            guard let row = RunPayload.read(payload) else { throw CallerIDError(.io, "a spilled run holds a damaged row") }
            try body(number, row.category, row.label)
        }) {}
    }
}
