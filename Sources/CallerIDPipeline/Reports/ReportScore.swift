import CallerID
import CallerIDDirectory
import Foundation

// The score of `lookup reports` (docs/REPORTS.md), in two passes over sorted records:
//   1. by (reporter, number, time): each reporter's latest report in the window decides, and a
//      reporter's verdicts of one UTC day share the daily cap;
//   2. by (number, time): the weights summed per number, the verdict and its category.
// Weights are fixed-point integers (ReportWeight), so the sums are exact in any order.

/// The third word of a report record: time (40 bits), verdict (8 bits: 0 `safe`, else the
/// category's code), region (16 bits). Ordered by time first, so the latest report sorts last.
enum ReportKey {
    static func pack(time: Int64, verdict: UInt8, region: UInt16) -> UInt64 {
        UInt64(time) << 24 | UInt64(verdict) << 16 | UInt64(region)
    }
    static func time(_ k: UInt64) -> Int64 { Int64(k >> 24) }
    static func verdict(_ k: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: k >> 16) }
    static func region(_ k: UInt64) -> UInt16 { UInt16(truncatingIfNeeded: k) }
}

extension Triple {
    /// A report as the first pass sorts it: by reporter, then number, then key.
    static func report(number: UInt64, reporter: UInt64, key: UInt64) -> Triple {
        Triple(a: reporter, b: number, c: key)
    }
}

/// A blocked number: its category (code), the distinct reporters whose verdict is a complaint,
/// the region of its latest complaint, and its score (fixed point).
struct ReportVerdict {
    var number: UInt64
    var category: UInt8
    var reporters: Int
    var region: UInt16
    var score: Int64
}

/// What the passes counted.
struct ScoreStats {
    var tooOld = 0
    var inFuture = 0
    var superseded = 0
    var cappedDays = 0
    var cappedReporters = 0
    var scored = 0
}

/// The two passes.
struct ReportScorer {
    let options: ReportOptions
    let now: Int64
    let categoryCount: Int
    let memoryLimit: Int?
    let spillTarget: String

    init(options: ReportOptions, now: Int64, categoryCount: Int, memoryLimit: Int?, spillTarget: String) {
        self.options = options
        self.now = now
        self.categoryCount = categoryCount
        self.memoryLimit = memoryLimit
        self.spillTarget = spillTarget
    }

    /// Scores the reports (sorted by reporter, number, key) and calls `blocked` with each number
    /// that passes, in ascending order.
    func score(_ reports: SortedTriples, stats: inout ScoreStats,
               blocked: (ReportVerdict) throws(PipelineError) -> Void) throws(PipelineError) {
        let weighed = try weigh(reports, stats: &stats)
        try decide(weighed, stats: &stats, blocked: blocked)
    }

    private func io<R>(_ body: () throws(CallerIDError) -> R) throws(PipelineError) -> R {
        do { return try body() } catch { throw PipelineError(error) }
    }

    /// Pass 1: per (reporter, number) the latest report at or before `now`, kept when it is
    /// younger than the maximum age; a reporter's kept verdicts of one UTC day share the daily
    /// cap, each weighing its decay times min(n, cap) / n. Out as (number, key, weight). A
    /// reporter's verdicts are counted per day as they are read and held until the reporter's
    /// last; a reporter with more than a budget's share of verdicts (a script) is read a second
    /// time by a cursor behind, kept in step, so a reporter of any size fits the budget.
    private func weigh(_ reports: SortedTriples, stats: inout ScoreStats) throws(PipelineError) -> SortedTriples {
        let out = TripleSorter(memoryLimit: memoryLimit, spillTarget: spillTarget)
        out.reserve(reports.count)
        let oldest = now - Int64(options.maxAgeDays) * ReportTime.secondsPerDay
        var ahead = try io { [cursor = try reports.open(bufferBytes: 1 << 19)] () throws(CallerIDError) in
            try LatestVerdicts(cursor, now: now, oldest: oldest)
        }
        // Opened for the first reporter that does not fit; `behindAt`: kept verdicts it has passed.
        var behind: LatestVerdicts? = nil
        var behindAt = 0, passed = 0
        let held = memoryLimit.map { max($0 / 8 / Triple.bytes, 64) } ?? Int.max
        var group: [Triple] = []
        let cap = Int64(options.reporterDailyCap)
        var decays: [Int64] = []
        func decay(_ age: Int64) -> Int64 {
            let i = Int(max(age, 0))
            while decays.count <= i { decays.append(ReportWeight.decay(ageDays: Int64(decays.count), halfLifeDays: options.halfLifeDays)) }
            return decays[i]
        }
        // The reporter's kept verdicts per UTC day, by days before `now`'s day.
        let today = now / ReportTime.secondsPerDay
        var perDay = [Int64](repeating: 0, count: options.maxAgeDays + 2)
        var days: [Int] = []
        func slot(_ key: UInt64) -> Int { Int(today - ReportKey.time(key) / ReportTime.secondsPerDay) }
        func weighed(_ r: Triple) throws(PipelineError) {
            let n = perDay[slot(r.c)]
            let age = (now - ReportKey.time(r.c)) / ReportTime.secondsPerDay
            try out.append(Triple(a: r.b, b: r.c, c: UInt64(decay(age) * min(n, cap) / n)))
        }

        var next = try io { () throws(CallerIDError) in try ahead.next() }
        while let first = next {
            var verdicts = 0
            next = first
            group.removeAll(keepingCapacity: group.capacity <= 1 << 16)
            while let v = next, v.a == first.a {
                // Kept verdicts lie in (oldest, now], so 0 <= d <= the maximum age + 1.
                let d = slot(v.c)
                if d >= perDay.count { perDay += repeatElement(0, count: d + 1 - perDay.count) }
                if perDay[d] == 0 { days.append(d) }
                perDay[d] += 1
                verdicts += 1
                if verdicts <= held { group.append(v) }
                next = try io { () throws(CallerIDError) in try ahead.next() }
            }
            var capped = false
            for d in days where perDay[d] > cap {
                stats.cappedDays += 1
                capped = true
            }
            if capped { stats.cappedReporters += 1 }
            if verdicts <= held {
                for r in group { try weighed(r) }
            } else {
                if behind == nil {
                    behind = try io { [cursor = try reports.open(bufferBytes: 1 << 19)] () throws(CallerIDError) in
                        try LatestVerdicts(cursor, now: now, oldest: oldest)
                    }
                }
                group = []
                for i in behindAt..<(passed + verdicts) {
                    guard let r = try io({ () throws(CallerIDError) in try behind!.next() }) else { break }
                    if i >= passed { try weighed(r) }
                }
                behindAt = passed + verdicts
            }
            passed += verdicts
            for d in days { perDay[d] = 0 }
            days.removeAll(keepingCapacity: true)
        }
        stats.tooOld += ahead.tooOld
        stats.inFuture += ahead.inFuture
        stats.superseded += ahead.superseded
        return try out.sorted()
    }

    /// Pass 2: per number, complaints add their weight and `safe` verdicts take theirs (times
    /// the safe weight) away; blocked at the block score with enough reporters. The category is
    /// the one with the most weight (ties: the first by name).
    private func decide(_ weighed: SortedTriples, stats: inout ScoreStats,
                        blocked: (ReportVerdict) throws(PipelineError) -> Void) throws(PipelineError) {
        var cursor = try weighed.open()
        let safeWeight = ReportWeight.fixed(options.safeWeight)
        let threshold = ReportWeight.fixed(options.blockScore)
        var byCategory = [Int64](repeating: 0, count: categoryCount + 1)
        var touched: [Int] = []
        var number: UInt64? = nil
        var complaints = 0
        var against: Int64 = 0
        var region: UInt16 = 0
        func finish() throws(PipelineError) {
            guard let n = number else { return }
            stats.scored += 1
            var total: Int64 = 0
            var best = 0
            for c in touched {
                total += byCategory[c]
                if best == 0 || byCategory[c] > byCategory[best] || (byCategory[c] == byCategory[best] && c < best) { best = c }
            }
            let score = total - against * safeWeight / ReportWeight.one
            if best > 0, complaints >= options.minReporters, score >= threshold {
                try blocked(ReportVerdict(number: n, category: UInt8(best), reporters: complaints, region: region, score: score))
            }
            for c in touched { byCategory[c] = 0 }
            touched.removeAll(keepingCapacity: true)
            complaints = 0
            against = 0
        }
        while let r = try io({ () throws(CallerIDError) in try cursor.next() }) {
            if r.a != number {
                try finish()
                number = r.a
            }
            let verdict = Int(ReportKey.verdict(r.b))
            let weight = Int64(r.c)
            if verdict == 0 {
                against += weight
            } else {
                if byCategory[verdict] == 0 && !touched.contains(verdict) { touched.append(verdict) }
                byCategory[verdict] += weight
                complaints += 1
                region = ReportKey.region(r.b)   // records of a number come in time order: the latest complaint's
            }
        }
        try finish()
    }
}

/// The verdicts that decide, from reports sorted by (reporter, number, key): per (reporter,
/// number) the latest report at or before `now`, when it is younger than `oldest`.
struct LatestVerdicts {
    private var cursor: TripleCursor
    private var pending: Triple?
    private let now: Int64
    private let oldest: Int64
    /// Latest verdicts older than the window; reports after `now`; reports a later one replaced.
    private(set) var tooOld = 0, inFuture = 0, superseded = 0

    init(_ cursor: TripleCursor, now: Int64, oldest: Int64) throws(CallerIDError) {
        self.cursor = cursor
        self.now = now
        self.oldest = oldest
        pending = try self.cursor.next()
    }

    /// The next kept verdict (reporter, number, key); nil at the end.
    mutating func next() throws(CallerIDError) -> Triple? {
        while let first = pending {
            var latest: Triple? = nil
            var r = first
            while true {
                if ReportKey.time(r.c) > now {
                    inFuture += 1
                } else {
                    if latest != nil { superseded += 1 }
                    latest = r
                }
                guard let following = try cursor.next() else {
                    pending = nil
                    break
                }
                guard following.a == first.a && following.b == first.b else {
                    pending = following
                    break
                }
                r = following
            }
            if let latest {
                if ReportKey.time(latest.c) > oldest { return latest }
                tooOld += 1
            }
        }
        return nil
    }
}

/// Where each field of a report is.
struct ReportFields {
    var number: FieldSlots.Slot
    var reporter: FieldSlots.Slot
    var time: FieldSlots.Slot
    var category: FieldSlots.Slot?
    var country: FieldSlots.Slot?
    var region: FieldSlots.Slot?

    static let defaultNames: [String: [String]] = [
        "number": FieldSlots.defaultNames["number"]!,
        "reporter": ["reporter", "reporterid", "reporterhash", "user", "userid", "userhash", "device", "deviceid", "client", "clientid"],
        "time": ["time", "timestamp", "ts", "date", "datetime", "reportedat", "createdat", "created"],
        "category": ["category", "verdict", "type", "kind", "категория"],
    ]
    static let positions = ["number": 1, "reporter": 2, "time": 3, "category": 4]

    private static func selectors(_ o: ReportOptions) -> [(String, FieldSelector?)] {
        [("number", o.input.numberField), ("reporter", o.reporterField), ("time", o.timeField), ("category", o.input.categoryField),
         ("country", o.input.countryField), ("region", o.input.regionField)]
    }

    private init(_ slots: [String: FieldSlots.Slot]) {
        number = slots["number"]!
        reporter = slots["reporter"]!
        time = slots["time"]!
        category = slots["category"]
        country = slots["country"]
        region = slots["region"]
    }

    /// JSON: names are looked up in every object.
    init(json options: ReportOptions) {
        var slots: [String: FieldSlots.Slot] = [:]
        for (key, sel) in Self.selectors(options) {
            switch sel {
            case .name(let n)?:
                slots[key] = FieldSlots.Slot(place: .key(exact: Array(n.utf8), loose: [FieldSlots.loose(n)]), explicit: true, name: InputQuote.quoted(n))
            case .position(let p)?:
                slots[key] = FieldSlots.Slot(place: .position(p - 1), explicit: true, name: "field \(p)")
            case nil:
                guard let names = Self.defaultNames[key] else { continue }
                slots[key] = FieldSlots.Slot(place: .key(exact: nil, loose: Set(names)), explicit: true, name: names.prefix(3).joined(separator: "/"))
            }
        }
        self.init(slots)
    }

    /// TSV/CSV: decides from the first record whether it is a header and resolves the fields.
    static func delimited(first: Record, options: ReportOptions, file: String) throws(PipelineError) -> (ReportFields, Bool) {
        let chosen = selectors(options)
        let byName = chosen.contains { if case .name? = $0.1 { true } else { false } }
        let isHeader = try FieldSlots.isHeaderRow(first, options: options.input, byName: byName, file: file)
        let names = isHeader ? first.values.indices.map { String(decoding: first.value($0), as: UTF8.self).trimmedASCII } : []
        var slots: [String: FieldSlots.Slot] = [:]
        for (key, sel) in chosen {
            switch sel {
            case .position(let p)?:
                slots[key] = FieldSlots.Slot(place: .index(p - 1), explicit: true, name: "column \(p)")
            case .name(let n)?:
                guard let i = names.firstIndex(of: n) ?? names.firstIndex(where: { FieldSlots.loose($0) == FieldSlots.loose(n) }) else {
                    throw PipelineError(.invalidInput, "\(file): no column \(InputQuote.quoted(n)) for the \(key) in the header (columns: \(names.prefix(10).map { InputQuote.quoted($0) }.joined(separator: ", ")))")
                }
                slots[key] = FieldSlots.Slot(place: .index(i), explicit: true, name: InputQuote.quoted(names[i]))
            case nil:
                guard let wanted = defaultNames[key] else { continue }
                if isHeader {
                    if let i = names.firstIndex(where: { wanted.contains(FieldSlots.loose($0)) }) {
                        slots[key] = FieldSlots.Slot(place: .index(i), explicit: true, name: InputQuote.quoted(names[i]))
                    } else if key != "category" || options.input.fixedCategory == nil {
                        throw PipelineError(.invalidInput, "\(file): no \(key) column in the header (columns: \(names.prefix(10).map { InputQuote.quoted($0) }.joined(separator: ", "))); choose one with --\(key)-field")
                    }
                } else {
                    let p = positions[key]!
                    slots[key] = FieldSlots.Slot(place: .index(p - 1), explicit: true, name: "column \(p)")
                }
            }
        }
        if options.input.fixedCategory != nil && options.input.categoryField == nil { slots["category"] = nil }
        return (ReportFields(slots), isHeader)
    }
}

/// The numbers `--protect` keeps from being blocked, and the name each is shown with: allow
/// lists (TSV/CSV: a number, optionally its name) held in memory, databases asked per number.
struct Protection {
    private var names: [UInt64: String] = [:]
    private var databases: [Database] = []

    init(paths: [String], normalizer: NumberNormalizer) throws(PipelineError) {
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw PipelineError(.fileNotFound, "\(path): no such protect list, database or build directory")
            }
            do {
                if isDirectory.boolValue {
                    let manifest = try DirectoryManifest.read(directory: path)
                    for f in manifest.files { databases.append(try Database(path: path + "/" + f.file)) }
                } else if path.hasSuffix(".cid") {
                    databases.append(try Database(path: path))
                } else {
                    try readList(path, normalizer: normalizer)
                }
            } catch let error as PipelineError {
                throw error
            } catch let error as CallerIDError {
                throw PipelineError(code: .init(error.code), message: "\(path): \(error.message)", underlying: error)
            } catch {
                throw PipelineError(.invalidInput, "\(path): \(error)")
            }
        }
    }

    /// An allow list: a number per line, then optionally a TAB or comma and its name; `#`
    /// comments and a header line without digits are skipped.
    private mutating func readList(_ path: String, normalizer: NumberNormalizer) throws(PipelineError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PipelineError(.unreadableInput, "\(path): cannot read the protect list")
        }
        let text = String(decoding: data, as: UTF8.self)
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            if line.isEmpty || line.hasPrefix("#") { continue }
            let cut = line.firstIndex { $0 == "\t" || $0 == "," }
            let numberText = String(cut.map { line[..<$0] } ?? line[...]).trimmedASCII
            if i == 0 && !numberText.contains(where: \.isNumber) { continue }
            let name = cut.map { String(line[line.index(after: $0)...]).trimmedASCII } ?? ""
            do throws(NumberProblem) {
                for n in try normalizer.normalize(numberText).numbers { names[n] = name }
            } catch {
                throw PipelineError(.invalidInput, "\(path):\(i + 1): \(error.message)")
            }
        }
    }

    /// The name a protected number is shown with ("" when it has none); nil when not protected.
    func name(of number: UInt64) throws(PipelineError) -> String? {
        if let name = names[number] { return name }
        for db in databases {
            do {
                if let e = try db.lookup(number), e.category.action == .identify { return e.label }
            } catch {
                throw PipelineError(error)
            }
        }
        return nil
    }
}

/// Counts what changed against an earlier pack, walking both in number order.
struct PackDiff {
    private var merge: PrecedenceMerge
    private var databases: [Database]
    private var pending = false
    private var changes = PackChanges()

    init(previous path: String) throws(PipelineError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw PipelineError(.fileNotFound, "\(path): no such previous pack")
        }
        var dbs: [Database] = []
        do {
            if isDirectory.boolValue {
                let manifest = try DirectoryManifest.read(directory: path)
                for f in manifest.files where f.kind != "top" { dbs.append(try Database(path: path + "/" + f.file)) }
            } else {
                dbs.append(try Database(path: path))
            }
        } catch let error as CallerIDError {
            throw PipelineError(code: .init(error.code), message: "\(path): \(error.message)", underlying: error)
        } catch {
            throw PipelineError(.invalidInput, "\(path): \(error)")
        }
        databases = dbs
        merge = PrecedenceMerge(dbs.map { $0.cursor() })
        do { pending = try merge.next() } catch { throw PipelineError(error) }
    }

    private func previousCategory() -> String { databases[merge.source].categories[merge.category].name }

    /// The next entry of the new pack (numbers ascending).
    mutating func note(_ number: UInt64, category: String, label: String) throws(PipelineError) {
        do {
            while pending && merge.number < number {
                changes.removed[previousCategory(), default: 0] += 1
                pending = try merge.next()
            }
            if pending && merge.number == number {
                if previousCategory() == category && merge.label.elementsEqual(label.utf8) {
                    changes.unchanged += 1
                } else {
                    changes.relabelled[category, default: 0] += 1
                }
                pending = try merge.next()
            } else {
                changes.added[category, default: 0] += 1
            }
        } catch {
            throw PipelineError(error)
        }
    }

    /// The counts, the previous pack's remaining numbers counted as removed.
    mutating func finish() throws(PipelineError) -> PackChanges {
        do {
            while pending {
                changes.removed[previousCategory(), default: 0] += 1
                pending = try merge.next()
            }
        } catch {
            throw PipelineError(error)
        }
        return changes
    }
}
