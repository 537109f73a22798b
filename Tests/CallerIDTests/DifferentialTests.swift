// A differential property test. Over random data sets (fixed seeds)
// of many shapes — sizes 0, 1, 2, block size ± 1 and a few thousand; numbers including 1,
// 999999999999999 and runs of consecutive numbers; Zipf-like repeated labels, unique, empty,
// long and non-ASCII labels; categories of both actions; various BuildOptions — every reader
// agrees with a reference model of the input (a dictionary, last record wins) on every
// number of the set and on absent numbers:
//   Database.lookup, withEntry, contains; the cursor (from 0 and from random points, with and
//   without a CategoryFilter); the batch cursor (capacities 1, 7, 1024); the C ABI
//   (libcallerid.so: cid_lookup, cid_cursor_next, cid_cursor_next_batch), and verify() passes.
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import CallerID

// MARK: - Data sets

/// The label kinds a data set draws from, with weights.
struct LabelMix: Sendable {
    var zipf = 0, unique = 0, empty = 0, long = 0, nonASCII = 0
    static let mixed = LabelMix(zipf: 60, unique: 15, empty: 10, long: 3, nonASCII: 12)
    static let zipfOnly = LabelMix(zipf: 1)
    static let uniqueOnly = LabelMix(unique: 1)
    static let emptyHeavy = LabelMix(zipf: 20, empty: 80)
    static let longHeavy = LabelMix(zipf: 30, unique: 10, long: 30, nonASCII: 30)
}

/// One data set: its size (distinct numbers), seed, label mix and build options.
struct DiffSpec: Sendable, CustomTestStringConvertible {
    var name: String
    var size: Int
    var seed: UInt64
    var labels = LabelMix.mixed
    var blockSize = 256
    var syncShift = 5
    var hotLabelBytes = 64 * 1024
    var compressLabels = true
    /// Extra records for numbers already present (earlier or later in the input: last wins).
    var duplicateRate = 0.1
    /// Numbers in short runs of consecutive numbers with small gaps between them (about a
    /// third of the gaps 1, as in the default profile), so the writer picks key codec 2 and
    /// the file is major version 3.
    var shortRuns = false

    var options: BuildOptions {
        var o = BuildOptions()
        o.blockSize = blockSize
        o.syncShift = syncShift
        o.hotLabelBytes = hotLabelBytes
        o.compressLabels = compressLabels
        return o
    }

    var testDescription: String {
        "\(name): \(size) numbers, block \(blockSize), sync 2^\(syncShift), hot \(hotLabelBytes) B\(compressLabels ? "" : ", raw labels"), seed \(seed)"
    }
}

private let diffSpecs: [DiffSpec] = [
    DiffSpec(name: "empty", size: 0, seed: 1),
    DiffSpec(name: "one (1)", size: 1, seed: 2, labels: .zipfOnly),
    DiffSpec(name: "one (max)", size: 1, seed: 3, labels: .longHeavy, hotLabelBytes: 0),
    DiffSpec(name: "two", size: 2, seed: 4, labels: .uniqueOnly, blockSize: 1, syncShift: 0),
    DiffSpec(name: "block 1, two", size: 2, seed: 5, blockSize: 1, hotLabelBytes: 0),
    DiffSpec(name: "block - 1", size: 63, seed: 6, blockSize: 64, syncShift: 2, hotLabelBytes: 100),
    DiffSpec(name: "block", size: 64, seed: 7, blockSize: 64, syncShift: 3, hotLabelBytes: 100),
    DiffSpec(name: "block + 1", size: 65, seed: 8, blockSize: 64, syncShift: 6, hotLabelBytes: 100),
    DiffSpec(name: "block 7 - 1", size: 6, seed: 9, labels: .emptyHeavy, blockSize: 7, syncShift: 1),
    DiffSpec(name: "block 7", size: 7, seed: 10, blockSize: 7, syncShift: 1, compressLabels: false),
    DiffSpec(name: "block 7 + 1", size: 8, seed: 11, blockSize: 7, syncShift: 0, hotLabelBytes: 0),
    DiffSpec(name: "default block - 1", size: 255, seed: 12),
    DiffSpec(name: "default block + 1", size: 257, seed: 13, labels: .uniqueOnly, hotLabelBytes: 500),
    DiffSpec(name: "block 1024 - 1", size: 1023, seed: 14, blockSize: 1024, syncShift: 10, hotLabelBytes: 300),
    DiffSpec(name: "block 1024 + 1", size: 1025, seed: 15, labels: .zipfOnly, blockSize: 1024, syncShift: 4),
    DiffSpec(name: "thousands, defaults", size: 4000, seed: 16),
    DiffSpec(name: "thousands, block 1", size: 2500, seed: 17, blockSize: 1, syncShift: 0, hotLabelBytes: 200),
    DiffSpec(name: "thousands, unique labels, all cold", size: 3000, seed: 18, labels: .uniqueOnly, blockSize: 1024, syncShift: 10, hotLabelBytes: 0),
    DiffSpec(name: "thousands, raw labels", size: 3500, seed: 19, blockSize: 100, syncShift: 3, hotLabelBytes: 0, compressLabels: false),
    DiffSpec(name: "thousands, long labels", size: 2000, seed: 20, labels: .longHeavy, blockSize: 17, syncShift: 2, hotLabelBytes: 2000),
    DiffSpec(name: "thousands, empty labels", size: 3000, seed: 21, labels: .emptyHeavy, blockSize: 512, syncShift: 7, hotLabelBytes: 1),
    DiffSpec(name: "thousands, Zipf", size: 5000, seed: 22, labels: .zipfOnly, blockSize: 64, syncShift: 4, hotLabelBytes: 400, duplicateRate: 0.5),
    DiffSpec(name: "thousands, no duplicates", size: 3000, seed: 23, blockSize: 333, syncShift: 8, hotLabelBytes: 5000, duplicateRate: 0),
    DiffSpec(name: "thousands, short runs (gap-1 bitmap keys)", size: 4000, seed: 24, shortRuns: true),
    DiffSpec(name: "thousands, short runs, block 64", size: 3000, seed: 25, labels: .zipfOnly, blockSize: 64, syncShift: 3,
             hotLabelBytes: 300, shortRuns: true),
]

/// Number and category pools and the label generator of one data set.
private struct Generator {
    var rng: SeededGenerator
    let spec: DiffSpec
    let zipfPool: [String]
    var uniqueCounter = 0
    var longestUsed = false

    init(_ spec: DiffSpec) {
        self.spec = spec
        var r = SeededGenerator(seed: spec.seed &* 0x9E37_79B9 &+ 1)
        let poolSize = Int.random(in: 20...400, using: &r)
        let scripts = ["Pizza", "Сбербанк", "스타벅스", "Taxi", "Аптека №", "Ünïcödé ✓", "מונית", "📞 Call", "出租车", "Debt"]
        zipfPool = (0..<poolSize).map { k in
            k == 0 ? "" : "\(scripts[k % scripts.count]) \(k)" + String(repeating: "-", count: k % 9)
        }
        rng = r
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }

    /// Roughly Zipf: rank k with probability ∝ 1/(k+1).
    mutating func zipfLabel() -> String {
        let u = Double(rng.next() >> 11) / Double(1 << 53)
        let k = Int(Foundation.pow(Double(zipfPool.count + 1), u)) - 1
        return zipfPool[min(max(k, 0), zipfPool.count - 1)]
    }

    mutating func label() -> String {
        let m = spec.labels
        var r = int(0...(m.zipf + m.unique + m.empty + m.long + m.nonASCII - 1))
        if r < m.zipf { return zipfLabel() }
        r -= m.zipf
        if r < m.unique {
            uniqueCounter += 1
            return "Unique business #\(uniqueCounter) \(rng.next() % 1_000_000)"
        }
        r -= m.unique
        if r < m.empty { return "" }
        r -= m.empty
        if r < m.long {
            if !longestUsed {
                longestUsed = true
                // The longest label allowed: 65,535 bytes, multi-byte characters up to its end.
                return String(repeating: "ж", count: 32_767) + "!"
            }
            let unit = ["long ", "длинный ", "長い", "✓"][int(0...3)]
            return String(repeating: unit, count: int(20...2000))
        }
        let samples = ["Ünïcödé ✓", "ООО «Ромашка»", "스타벅스 강남점", "Такси 24/7", "😀😃😄", "עברית", "中文名字", "e\u{301}cole"]
        return samples[int(0...samples.count - 1)] + " \(int(0...50))"
    }

    mutating func category() -> Category { testCategories[int(0...testCategories.count - 1)] }

    /// `size` distinct numbers: 1 and the largest number, runs of consecutive numbers (some
    /// longer than a block), numbers near both ends, clusters with small gaps, scattered ones.
    mutating func numbers() -> [UInt64] {
        let size = spec.size
        let maximum = PhoneNumber.maximum
        var seen = Set<UInt64>()
        var out: [UInt64] = []
        func add(_ n: UInt64) { if n >= 1, n <= maximum, out.count < size, seen.insert(n).inserted { out.append(n) } }
        if size == 1 { add(spec.seed % 2 == 0 ? 1 : maximum) }
        add(1)
        add(maximum)
        var x: UInt64 = UInt64.random(in: 1...maximum, using: &rng)
        while spec.shortRuns && out.count < size {
            if int(0...199) == 0 { x = UInt64.random(in: 1...maximum, using: &rng) }  // a jump now and then
            x = min(maximum, x + (int(0...2) == 0 ? 1 : UInt64(int(2...9))))
            add(x)
        }
        while out.count < size {
            switch int(0...9) {
            case 0, 1, 2:  // a run of consecutive numbers
                let length = int(2...(2 * spec.blockSize + 3))
                for _ in 0..<length where x < maximum { x += 1; add(x) }
            case 3:  // near the ends
                add(UInt64(int(1...2000)))
                add(maximum - UInt64(int(0...2000)))
            case 4, 5:  // a jump
                x = UInt64.random(in: 1...maximum, using: &rng)
                add(x)
            default:  // small gaps
                x = min(maximum, x + UInt64(int(1...60)))
                add(x)
            }
        }
        return out
    }
}

/// A data set's records in input order and the reference model (last record wins).
struct DiffData {
    var records: [Entry]
    var model: [UInt64: Entry]
    var sorted: [Entry]
}

private func makeData(_ spec: DiffSpec) -> DiffData {
    var g = Generator(spec)
    let numbers = g.numbers()
    var records = numbers.map { Entry(number: $0, label: g.label(), category: g.category()) }
    if !numbers.isEmpty {
        for _ in 0..<Int(Double(numbers.count) * spec.duplicateRate) {
            records.append(Entry(number: numbers[g.int(0...numbers.count - 1)], label: g.label(), category: g.category()))
        }
    }
    records.shuffle(using: &g.rng)
    var model: [UInt64: Entry] = [:]
    for r in records { model[r.number] = r }
    return DiffData(records: records, model: model, sorted: model.values.sorted { $0.number < $1.number })
}

// MARK: - Checks

/// Collects mismatches (the first few, with a total) and records one issue at the end.
private struct Mismatches {
    var lines: [String] = []
    var total = 0
    mutating func add(_ s: @autoclosure () -> String) {
        total += 1
        if lines.count < 12 { lines.append(s()) }
    }
    func report(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(total == 0, "\(what): \(total) mismatches\n\(lines.joined(separator: "\n"))", sourceLocation: sourceLocation)
    }
}

/// Absent numbers to probe: the neighbours of every present number, 0, the largest number
/// + 1, UInt64.max and random numbers (uniform and near present ones).
private func absentProbes(_ data: DiffData, seed: UInt64) -> [UInt64] {
    var rng = SeededGenerator(seed: seed ^ 0xABCD)
    var probes: [UInt64] = [0, PhoneNumber.maximum + 1, UInt64.max, 1, 2, PhoneNumber.maximum, PhoneNumber.maximum - 1]
    for e in data.sorted { probes += [e.number - 1, e.number + 1] }
    for _ in 0..<300 { probes.append(UInt64.random(in: 1...PhoneNumber.maximum, using: &rng)) }
    for e in data.sorted.prefix(300) { probes.append(e.number &+ UInt64.random(in: 2...100, using: &rng)) }
    return probes.filter { data.model[$0] == nil }
}

/// The expected entries from `from` matching `filter`.
private func expected(_ data: DiffData, from: UInt64, filter: CategoryFilter?) -> [Entry] {
    data.sorted.filter { $0.number >= from && (filter?.matches($0.category) ?? true) }
}

/// Cursor starting points: 0, the ends, random present numbers and their neighbours, random numbers.
private func cursorStarts(_ data: DiffData, seed: UInt64) -> [UInt64] {
    var rng = SeededGenerator(seed: seed ^ 0x5151)
    var starts: [UInt64] = [0, 1, PhoneNumber.maximum, PhoneNumber.maximum + 1]
    if let first = data.sorted.first, let last = data.sorted.last { starts += [first.number, last.number, last.number + 1] }
    for _ in 0..<6 where !data.sorted.isEmpty {
        let n = data.sorted[Int.random(in: 0..<data.sorted.count, using: &rng)].number
        starts += [n, n - 1, n + 1]
    }
    for _ in 0..<3 { starts.append(UInt64.random(in: 1...PhoneNumber.maximum, using: &rng)) }
    return starts
}

private let diffFilters: [(String, CategoryFilter?)] = [
    ("all", nil),
    ("block", .action(.block)),
    ("identify", .action(.identify)),
    ("spam+taxi", .names(["spam", "taxi"])),
    ("no category", .names([])),
]

private func checkPointLookups(_ db: Database, _ data: DiffData, _ spec: DiffSpec) throws {
    var bad = Mismatches()
    for e in data.sorted {
        let got = try db.lookup(e.number)
        if got != e { bad.add("lookup(\(e.number)) = \(String(describing: got)), model \(e)") }
        let viewed = try db.withEntry(e.number) { v -> (Entry, Int, Int) in
            (v.entry, v.labelBytes.count, v.categoryIndex)
        }
        if let viewed {
            let (entry, bytes, index) = viewed
            if entry != e || bytes != e.label.utf8.count || index >= db.categories.count || db.categories[index] != e.category {
                bad.add("withEntry(\(e.number)) = \(entry) (\(bytes) B, category \(index)), model \(e)")
            }
        } else {
            bad.add("withEntry(\(e.number)) = nil, model \(e)")
        }
        if try !db.contains(e.number) { bad.add("contains(\(e.number)) = false") }
    }
    for n in absentProbes(data, seed: spec.seed) {
        if let got = try db.lookup(n) { bad.add("lookup(absent \(n)) = \(got)") }
        if try db.withEntry(n, { _ in true }) != nil { bad.add("withEntry(absent \(n)) called its body") }
        if try db.contains(n) { bad.add("contains(absent \(n)) = true") }
    }
    bad.report("point lookups")
}

private func checkCursors(_ db: Database, _ data: DiffData, _ spec: DiffSpec) throws {
    var bad = Mismatches()
    let starts = cursorStarts(data, seed: spec.seed)
    for (k, from) in starts.enumerated() {
        // Every filter from 0 and from the ends; the others from one rotating filter.
        let filters = k < 3 ? diffFilters : [diffFilters[0], diffFilters[1 + k % (diffFilters.count - 1)]]
        for (name, filter) in filters {
            let want = expected(data, from: from, filter: filter)
            var cursor = db.cursor(from: from, filter: filter)
            var got: [Entry] = []
            while let e = try cursor.next() {
                got.append(e)
                if got.count > want.count + 1 { break }
            }
            if got != want {
                let i = zip(got, want).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(got.count, want.count)
                bad.add("cursor(from: \(from), \(name)): \(got.count) entries, model \(want.count); first difference at \(i): \(got.count > i ? "\(got[i])" : "end") vs \(want.count > i ? "\(want[i])" : "end")")
            }
            if cursor.lastNumber != want.last?.number {
                bad.add("cursor(from: \(from), \(name)).lastNumber = \(String(describing: cursor.lastNumber)), model \(String(describing: want.last?.number))")
            }
            if try cursor.next() != nil { bad.add("cursor(from: \(from), \(name)) yields past its end") }
        }
    }
    // forEach with borrowed views, and the Sequence API, from 0.
    var viewed: [Entry] = []
    var viewCursor = db.cursor()
    try viewCursor.forEach { v in
        if v.labelBytes.count != v.label.utf8.count { bad.add("view of \(v.number): labelBytes and label disagree") }
        viewed.append(v.entry)
        return true
    }
    if viewed != data.sorted { bad.add("forEach from 0: \(viewed.count) entries, model \(data.sorted.count)") }
    var iterator = db.entries(filter: .action(.block)).makeIterator()
    var blocked: [Entry] = []
    while let e = iterator.next() { blocked.append(e) }
    if iterator.error != nil || blocked != expected(data, from: 0, filter: .action(.block)) { bad.add("entries(filter: block) differs") }
    bad.report("cursors")
}

private func checkBatches(_ db: Database, _ data: DiffData, _ spec: DiffSpec) throws {
    var bad = Mismatches()
    var rng = SeededGenerator(seed: spec.seed ^ 0xBA7C)
    for capacity in [1, 7, 1024] {
        var runs: [(UInt64, String, CategoryFilter?)] = [(0, "all", nil), (0, "block", .action(.block))]
        if !data.sorted.isEmpty {
            let n = data.sorted[Int.random(in: 0..<data.sorted.count, using: &rng)].number
            runs += [(n, "all", nil), (n + 1, "spam+taxi", .names(["spam", "taxi"]))]
        }
        for (from, name, filter) in runs {
            let want = expected(data, from: from, filter: filter)
            var batch = EntryBatch(capacity: capacity)
            var cursor = db.cursor(from: from, filter: filter)
            var got: [Entry] = []
            var calls = 0
            while true {
                let count = try cursor.nextBatch(&batch)
                calls += 1
                if count != batch.count || count > capacity { bad.add("batch \(capacity) from \(from) \(name): count \(count), batch.count \(batch.count)") }
                if count == 0 { break }
                let numbers = Array(copying: batch.numbers)
                for i in 0..<count {
                    let e = batch[i].entry
                    if e.number != numbers[i] { bad.add("batch \(capacity): numbers[\(i)] \(numbers[i]) != entry \(e.number)") }
                    got.append(e)
                }
                if got.count > want.count || calls > want.count + 2 { break }
            }
            if got != want {
                let i = zip(got, want).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(got.count, want.count)
                bad.add("batches of \(capacity) from \(from), \(name): \(got.count) entries, model \(want.count); first difference at \(i)")
            }
            // A capacity that holds all the entries fills once when their labels are short
            // (cold labels far from filling the batch's 64 KiB buffer).
            let labelBytes = want.reduce(0) { $0 + $1.label.utf8.count }
            if capacity >= want.count, labelBytes < 16 * 1024, !want.contains(where: { $0.label.utf8.count > 500 }), calls != (want.isEmpty ? 1 : 2) {
                bad.add("batches of \(capacity) from \(from), \(name): \(calls) calls for \(want.count) entries")
            }
            if try cursor.nextBatch(&batch) != 0 { bad.add("batch \(capacity) from \(from) \(name): entries after the end") }
        }
    }
    bad.report("batch cursor")
}

// MARK: - C ABI

/// Reads commands from the file argv[2] and answers them through the C ABI:
///   L NUMBER                        -> cid_lookup
///   C FROM ACTION [NAME...]         -> cid_cursor_open (filter: action, names) + cid_cursor_next to the end
///   B FROM ACTION CAPACITY [NAME...] -> the same cursor drained with cid_cursor_next_batch
/// Output: one tab-separated line per answer; the label (which has no tab or newline) last.
/// A batch's labels are printed after the whole batch is filled: each must still be valid then.
private let differentialProgram = #"""
#include <callerid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_entry(const char *tag, const cid_entry *e) {
    if (e->category && (!e->label || e->source != 0 || e->reserved != 0))  /* found: a label, source 0, reserved 0 */
        printf("BAD\tlabel %p source %u reserved %u\n", (const void *)e->label, e->source, e->reserved);
    printf("%s\t%llu\t%s\t%u\t%u\t%.*s\n", tag, (unsigned long long)e->number, e->category ? e->category : "(null)",
           e->category_index, e->action, (int)e->label_len, e->label ? e->label : "");
}

int main(int argc, char **argv) {
    if (argc != 3) return 64;
    cid_db *db = NULL;
    if (cid_open(argv[1], CID_OPEN_DEFAULT, &db) != CID_OK) { printf("open\t%s\n", cid_last_error_message()); return 1; }
    FILE *f = fopen(argv[2], "r");
    if (!f) return 2;
    static char line[8192];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0] == 'L') {
            unsigned long long n = strtoull(line + 2, NULL, 10);
            cid_entry e;
            memset(&e, 0x5A, sizeof e);
            cid_status s = cid_lookup(db, (uint64_t)n, &e);
            if (s == CID_OK) {
                if (e.number != n || e.label == NULL || e.category == NULL) printf("BAD\tlookup %llu fields\n", n);
                print_entry("L", &e);
            } else {
                int clean = e.number == n && e.label == NULL && e.label_len == 0 && e.category == NULL && e.category_index == CID_NO_CATEGORY;
                printf("L\t%llu\t%s\t%s\n", n, cid_status_name(s), clean ? "clean" : "DIRTY");
            }
        } else if (line[0] == 'C' || line[0] == 'B') {
            char *p = line + 2, *end;
            unsigned long long from = strtoull(p, &end, 10);
            long action = strtol(end, &end, 10);
            size_t capacity = line[0] == 'B' ? (size_t)strtoul(end, &end, 10) : 0;
            const char *names[16];
            uint32_t count = 0;
            for (char *t = strtok(end, " "); t && count < 16; t = strtok(NULL, " ")) names[count++] = t;
            cid_filter filter = { (int32_t)action, count, count ? names : NULL };
            cid_cursor *c = NULL;
            cid_status s = cid_cursor_open(db, (uint64_t)from, (action == CID_ANY_ACTION && count == 0) ? NULL : &filter, &c);
            if (s != CID_OK) { printf("END\t%s\n", cid_status_name(s)); continue; }
            if (capacity == 0) {
                cid_entry e;
                while ((s = cid_cursor_next(c, &e)) == CID_OK) print_entry("E", &e);
            } else {
                cid_entry *batch = calloc(capacity, sizeof *batch);
                if (!batch) return 3;
                size_t n = 0;
                while ((s = cid_cursor_next_batch(c, batch, capacity, &n)) == CID_OK) {
                    if (n == 0 || n > capacity) printf("BAD\tbatch of %zu for capacity %zu\n", n, capacity);
                    for (size_t i = 0; i < n; i++) print_entry("E", &batch[i]);
                }
                if (n != 0) printf("BAD\tcount %zu at the end\n", n);
                free(batch);
            }
            printf("END\t%s\n", cid_status_name(s));
            cid_cursor_free(c);
        }
    }
    fclose(f);
    cid_close(db);
    return 0;
}
"""#

/// The compiled program (once per test run), or why it could not be built.
private let differentialExecutable: Result<URL, CABIFailure> = {
    do {
        return .success(try compileC("differential", differentialProgram))
    } catch let failure as CABIFailure {
        return .failure(failure)
    } catch {
        return .failure(CABIFailure("cannot compile the differential C program: \(error)"))
    }
}()

private func entryLine(_ tag: String, _ e: Entry, _ db: Database) -> String {
    let index = db.categories.firstIndex(of: e.category).map(String.init) ?? "?"
    return "\(tag)\t\(e.number)\t\(e.category.name)\t\(index)\t\(e.category.action.rawValue)\t\(e.label)"
}

private func checkCABI(_ db: Database, _ data: DiffData, _ spec: DiffSpec, path: String, dir: TempDir) throws {
    let exe = try differentialExecutable.get()
    var commands: [String] = []
    var want: [String] = []
    for e in data.sorted {
        commands.append("L \(e.number)")
        want.append(entryLine("L", e, db))
    }
    for n in absentProbes(data, seed: spec.seed).prefix(2000) {
        commands.append("L \(n)")
        want.append("L\t\(n)\tnot-found\tclean")
    }
    let cFilters: [(Int, [String], CategoryFilter?)] = [
        (-1, [], nil), (Int(CategoryAction.block.rawValue), [], .action(.block)),
        (Int(CategoryAction.identify.rawValue), [], .action(.identify)), (-1, ["spam", "taxi"], .names(["spam", "taxi"])),
    ]
    for (k, from) in cursorStarts(data, seed: spec.seed).enumerated() {
        let filters = k < 2 ? cFilters : [cFilters[k % cFilters.count]]
        for (action, names, filter) in filters {
            let lines = expected(data, from: from, filter: filter).map { entryLine("E", $0, db) } + ["END\tend"]
            commands.append((["C", String(from), String(action)] + names).joined(separator: " "))
            want += lines
            // The batch call, with capacities 1, 7 and 1024 in turn.
            let capacity = [1, 7, 1024][(k + Int(action) + 1) % 3]
            commands.append((["B", String(from), String(action), String(capacity)] + names).joined(separator: " "))
            want += lines
        }
    }
    let file = dir.path("commands.txt")
    try (commands.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
    let r = try runTool(exe.path, [path, file], timeout: 60)
    #expect(r.status == 0, "exit \(r.status): \(r.stderr)")
    // The whole output compared byte for byte (stricter than String's canonical equivalence,
    // and cheap); only a difference is split into lines to report it. Splitting a large
    // non-ASCII output by Character took most of this test's time.
    if Data(r.stdout.utf8) == Data((want.joined(separator: "\n") + "\n").utf8) { return }
    let got = r.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    var bad = Mismatches()
    if got.count != want.count { bad.add("\(got.count) output lines, model \(want.count)") }
    for (i, (g, w)) in zip(got, want).enumerated() where g != w {
        bad.add("line \(i): \(g.prefix(200)) vs model \(w.prefix(200))")
    }
    bad.report("C ABI")
}

// MARK: - Tests

@Suite("Differential: readers vs. the input")
struct DifferentialTests {
    @Test("lookup, cursor, batch, C ABI and verify agree with the model", arguments: diffSpecs)
    func differential(spec: DiffSpec) throws {
        let data = makeData(spec)
        #expect(data.model.count == spec.size)
        let dir = TempDir()
        let path = dir.path("diff.cid")
        let summary = try buildDatabase(data.records, at: path, options: spec.options)
        #expect(summary.entries == data.model.count)
        #expect(summary.duplicatesMerged == data.records.count - data.model.count)
        let db = try Database(path: path)
        try db.verify()
        #expect(db.count == data.model.count)
        if spec.shortRuns { #expect(db.info.formatVersion.hasPrefix("3.") && db.maxKeyCodec == Format.keyCodecRunBitmap) }
        try checkPointLookups(db, data, spec)
        try checkCursors(db, data, spec)
        try checkBatches(db, data, spec)
        try checkCABI(db, data, spec, path: path, dir: dir)
    }

    /// The generator covers what the issue asks for, over the whole list of data sets.
    @Test("the data sets cover the required shapes")
    func coverage() {
        var sizes = Set<Int>(), blockEdges = 0, hasOne = false, hasMax = false, runs = false
        var repeated = false, empty = false, long = false, nonASCII = false, blockActions = false, identify = false
        for spec in diffSpecs {
            let data = makeData(spec)
            sizes.insert(spec.size)
            if abs(spec.size - spec.blockSize) <= 1, spec.size > 2 { blockEdges += 1 }
            hasOne = hasOne || data.model[1] != nil
            hasMax = hasMax || data.model[PhoneNumber.maximum] != nil
            runs = runs || zip(data.sorted, data.sorted.dropFirst(spec.blockSize)).contains { $1.number - $0.number == UInt64(spec.blockSize) }
            var counts: [String: Int] = [:]
            for e in data.sorted { counts[e.label, default: 0] += 1 }
            repeated = repeated || counts.values.contains { $0 >= 100 }
            empty = empty || counts[""] != nil
            long = long || counts.keys.contains { $0.utf8.count == Format.maxLabelBytes }
            nonASCII = nonASCII || counts.keys.contains { $0.utf8.contains { $0 >= 0x80 } }
            blockActions = blockActions || data.sorted.contains { $0.category.action == .block && $0.category != .block }
            identify = identify || data.sorted.contains { $0.category.action == .identify }
        }
        #expect(sizes.isSuperset(of: [0, 1, 2]) && sizes.contains { $0 >= 2000 })
        #expect(blockEdges >= 6)
        #expect(hasOne && hasMax && runs)
        #expect(repeated && empty && long && nonASCII && blockActions && identify)
    }
}
