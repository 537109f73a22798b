import Foundation
@testable import CallerID
@testable import CallerIDDirectory

/// One database of a test build directory.
struct DirectoryTestFile {
    var name: String
    var region: String
    var entries: [Entry]
    var priority: Int? = nil
}

/// Writes each file with DatabaseBuilder and a `manifest.json` the way the pipeline does
/// (plus an unknown key per file and at the top, which readers must ignore).
@discardableResult
func writeBuildDirectory(_ dir: String, _ files: [DirectoryTestFile], datasetVersion: String = "test") throws -> [DirectoryManifest.File] {
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    var listed: [DirectoryManifest.File] = []
    var json: [String] = []
    for f in files {
        let path = dir + "/" + f.name
        _ = try buildDatabase(f.entries, at: path)
        let bytes = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        let hash = try Checksum.xxh3(fileAt: path)
        var m = DirectoryManifest.File(file: f.name, region: f.region, kind: "all", entries: f.entries.count, bytes: bytes, xxh3: hash, priority: f.priority)
        let identify = f.entries.filter { $0.category.action == .identify }.count
        m.actions = ["identify": identify, "block": f.entries.count - identify]
        listed.append(m)
        json.append("""
            {"file": "\(f.name)", "region": "\(f.region)", "kind": "all", "shard": 1, "shards": 1, "entries": \(f.entries.count),
             "categories": {}, "actions": {"identify": \(identify), "block": \(f.entries.count - identify)},
             "first_number": null, "last_number": null, "range_start": null, "range_end": null,
             "bytes": \(bytes), "xxh3": "\(hex16(hash))", "format_version": "\(CallerIDVersion.format)", "future_field": [1, 2]\(f.priority.map { ", \"priority\": \($0)" } ?? "")}
            """)
    }
    let manifest = """
        {"manifest_version": 1, "format_version": "\(CallerIDVersion.format)", "dataset_version": "\(datasetVersion)", "build_time": "2026-01-01T00:00:00Z",
         "generator": "tests", "max_entries": 1999999, "files": [
        \(json.joined(separator: ",\n"))
        ]}
        """
    try Data(manifest.utf8).write(to: URL(fileURLWithPath: dir + "/manifest.json"))
    return listed
}

/// The lists a feed must produce, computed directly from the entries (the oracle):
/// per list the winner by priority (higher first) then file order; blocking filtered by the
/// winner's category, rules added, allow list removed.
func expectedLists(_ files: [DirectoryTestFile], settings: FeedSettings = FeedSettings(), range: Range<UInt64> = 0..<UInt64.max)
    -> (identification: [(UInt64, String)], blocking: [UInt64])
{
    let order = files.indices.sorted {
        let a = files[$0].priority ?? 0, b = files[$1].priority ?? 0
        return a != b ? a > b : $0 < $1
    }
    var identify: [UInt64: String] = [:]
    var block: [UInt64: Category] = [:]
    for i in order {
        for e in files[i].entries where range.contains(e.number) {
            if e.category.action == .identify {
                if identify[e.number] == nil { identify[e.number] = e.label }
            } else if block[e.number] == nil {
                block[e.number] = e.category
            }
        }
    }
    var blocked = Set<UInt64>()
    if settings.blocking {
        for (n, c) in block where settings.blockCategories.map({ $0.contains(c.name) }) ?? true { blocked.insert(n) }
        for r in settings.rules {
            let lo = max(r.first, range.lowerBound), hi = min(r.last, range.upperBound &- 1)
            if lo <= hi { for n in lo...hi { blocked.insert(n) } }
        }
        blocked.subtract(settings.allowList)
    }
    let ids = settings.identification ? identify.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } : []
    return (ids, blocked.sorted())
}

/// Random files over a shared number space so that they overlap: `count` files of about
/// `entries` entries each, numbers in `base ..< base + span`.
func randomDirectoryFiles(seed: UInt64, count: Int, entries: Int, base: UInt64 = 79_000_000_000, span: UInt64 = 200_000,
                          labels: [String] = ["Pizza", "Bank", "Taxi 24/7", "Сбербанк", "", "Clinic"]) -> [DirectoryTestFile] {
    var rng = SeededGenerator(seed: seed)
    var files: [DirectoryTestFile] = []
    for i in 0..<count {
        var numbers = Set<UInt64>()
        while numbers.count < entries { numbers.insert(base + UInt64.random(in: 0..<span, using: &rng)) }
        let list = numbers.sorted().map { n in
            Entry(number: n, label: labels.randomElement(using: &rng)! + (Bool.random(using: &rng) ? "" : " \(i)"),
                  category: testCategories.randomElement(using: &rng)!)
        }
        let priority: Int? = Int.random(in: 0..<4, using: &rng) == 0 ? Int.random(in: -1...2, using: &rng) : nil
        files.append(DirectoryTestFile(name: "r\(i)-1.cid", region: "r\(i)", entries: list, priority: priority))
    }
    return files
}

/// Every entry of both lists of a snapshot, through the merged streams.
func streamLists(_ snapshot: DirectorySnapshot, range: Range<UInt64> = 0..<UInt64.max) throws -> (identification: [(UInt64, String)], blocking: [UInt64]) {
    var ids: [(UInt64, String)] = []
    var s = snapshot.stream(.identification, in: range)
    while try s.next() { ids.append((s.number, s.labelString)) }
    var blocks: [UInt64] = []
    var b = snapshot.stream(.blocking, in: range)
    while try b.next() { blocks.append(b.number) }
    return (ids, blocks)
}

/// The simulator's lists in the oracle's shape.
func simulatorLists(_ sim: CallDirectorySimulator) -> (identification: [(UInt64, String)], blocking: [UInt64]) {
    (sim.identificationEntries.map { (UInt64($0.number), $0.label) }, sim.blockingNumbers.map { UInt64($0) })
}

func sameLists(_ a: (identification: [(UInt64, String)], blocking: [UInt64]), _ b: (identification: [(UInt64, String)], blocking: [UInt64])) -> Bool {
    a.identification.count == b.identification.count
        && zip(a.identification, b.identification).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        && a.blocking == b.blocking
}

/// Runs requests until the feeder reports the slot complete; returns the request count.
/// Throws the simulator's error if a request fails.
@discardableResult
func feedUntilComplete(_ feeder: DirectoryFeeder, _ sim: CallDirectorySimulator, cursor: inout LoadCursor?, chunk: Int? = nil, maxRequests: Int = 100_000) throws -> Int {
    var requests = 0
    while requests < maxRequests {
        try sim.beginRequest()
        let result = try feeder.serve(sim, cursor: cursor, chunk: chunk)
        try sim.complete()
        cursor = result.cursor
        requests += 1
        if result.isComplete { return requests }
    }
    throw DirectoryError(.invalidArgument, "not complete after \(maxRequests) requests")
}
