// The runs of a bounded-memory build (``BuildOptions/memoryLimit``): what the builder and the
// pipeline spill, and the merge that reads them back. docs/SCALE.md.

/// The sorted runs a build has spilled, in the order they were written, kept in a
/// ``SpillArea`` beside the output (made at the first run).
///
/// A run's rows are `number` and a payload: `[group: varint][category: varint][label bytes]`
/// (``RunPayload``). At most ``maxRuns`` runs are kept: the next one first merges them into one
/// (rows unchanged), so a merge never reads more files than that at once.
package final class SpilledRuns {
    package let memoryLimit: Int
    private let target: String
    private var spill: SpillArea? = nil
    private(set) var paths: [String] = []
    private var tail: (count: Int, path: String)? = nil
    /// Files a merge reads at once.
    package static let maxRuns = 64
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
        if paths.count >= SpilledRuns.maxRuns { try compact() }
        let path = try writeRun(count: count, row)
        paths.append(path)
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

    /// Merges every run into one (rows and their order unchanged).
    private func compact() throws(CallerIDError) {
        let area = try area()
        let path = area.newPath("run")
        let out = try SpillWriter(path: path)
        var merge = try RunMerge(runs: paths, bufferBytes: mergeBuffer(files: paths.count))
        let unique = uniqueNumbers
        while try merge.next({ (number, payload, continues) throws(CallerIDError) in
            if unique && continues { return }
            try out.writeRow(number, payload)
        }) {}
        try out.finish()
        for old in paths { area.remove(old) }
        paths = [path]
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
