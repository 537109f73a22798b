// `compare`: generates the data sets (tools/gen_directory.py, cached), measures their
// characteristics (tools/data_stats.py), draws one probe set per data set, runs every engine
// in a process of its own (`callerid-bench engine ...`, and the C program for the C ABI),
// re-runs an engine whose run overlapped outside load, and writes the report.
import CLMDB
import CSQLite
import CBenchSupport
import CallerIDPipeline
import Foundation

struct Dataset {
    var profile: String
    var entries: Int
    var tsv: String
    var stats: [String: Any] = [:]
    var key: String { "\(profile)-\(entries)" }
}

struct EngineRun {
    var dataset: String
    var engine: String
    var figures: [String: Any]
    var json: String
    var loadBefore: Double
    var loadAfter: Double
    /// Cores other processes kept busy on average during the run.
    var others: Double
    var attempts: Int
}

/// The repository root: Benchmarks/Sources/callerid-bench/Compare.swift → ../../..
let defaultRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path

/// Busy CPU seconds of the whole machine so far (all cores), from /proc/stat.
func machineBusySeconds() -> Double {
    guard let s = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
          let line = s.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return 0 }
    let f = line.split(separator: " ").dropFirst().compactMap { Double($0) }
    guard f.count >= 8 else { return 0 }
    // user nice system idle iowait irq softirq steal: everything but idle and iowait.
    return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// CPU seconds used so far by this process's waited-for children.
func childrenCPUSeconds() -> Double {
    var ru = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &ru)
    return Double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + Double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6
}

func loadAverage() -> Double {
    guard let s = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
          let first = s.split(separator: " ").first, let v = Double(first) else { return -1 }
    return v
}

func shell(_ exe: String, _ args: [String], stdout: Bool = true) throws -> (status: Int32, out: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: exe)
    p.arguments = args
    let pipe = Pipe()
    p.standardOutput = stdout ? pipe : FileHandle.nullDevice
    p.standardError = FileHandle.standardError
    try p.run()
    let data = stdout ? pipe.fileHandleForReading.readDataToEndOfFile() : Data()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: data, as: UTF8.self))
}

func which(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let p = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return nil
}

func compare(_ a: Arguments) throws -> Int32 {
    let quick = a.flags.contains("--quick")
    let root = a.values["--root"] ?? defaultRoot
    let work = a.values["--work"] ?? (quick ? "/tmp/callerid-bench-quick" : "/tmp/callerid-bench")
    let seed = try a.int("--seed") ?? 1
    let lookups = try a.int("--lookups") ?? (quick ? 20_000 : 1_000_000)
    let scans = try a.int("--scans") ?? (quick ? 3 : 5)
    let colds = try a.int("--colds") ?? (quick ? 3 : 5)
    let maxOthers = Double(a.values["--max-load"] ?? "") ?? 0.15
    let datasetSpec = a.values["--datasets"]
        ?? (quick ? "study:10000,study:100000" : "study:10000,study:1000000,study:4000000,default:4000000")
    let engines = (a.values["--engines"].map { $0.split(separator: ",").map(String.init) }) ?? engineNames
    for e in engines where !engineNames.contains(e) { throw UsageError("unknown engine '\(e)'") }
    guard let python = which("python3") else { throw BenchError("python3 is needed for tools/gen_directory.py") }
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    if engines.contains(where: { $0.hasPrefix("callerid") }), phoneNumberLibrary() == nil {
        log("warning: libcallerid-phonenumber.so not found (CALLERID_PHONENUMBER_LIBRARY): CallerID's builds read numbers without libphonenumber, slower than `lookup build`")
    }
    let started = Date()
    let loadAtStart = loadAverage()
    let uptimeAtStart = (try? shell("/usr/bin/uptime", []).out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? ""

    // Data sets, cached under a name that changes when the generator does.
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    for b in try readFile("\(root)/tools/gen_directory.py") { hash = (hash ^ UInt64(b)) &* 0x100_0000_01B3 }
    let genTag = String(hash >> 32, radix: 16)
    var datasets: [Dataset] = []
    for item in datasetSpec.split(separator: ",") {
        let parts = item.split(separator: ":")
        guard parts.count == 2, let n = Int(parts[1].replacingOccurrences(of: "_", with: "")), n > 0 else {
            throw UsageError("--datasets: expected PROFILE:ENTRIES, got \(item)")
        }
        let profile = String(parts[0])
        let tsv = "\(work)/\(profile)-\(n)-seed\(seed)-gen\(genTag).tsv"
        if !FileManager.default.fileExists(atPath: tsv) {
            log("generating \(tsv)")
            let part = "\(tsv).part-\(getpid())"
            let r = try shell(python, ["\(root)/tools/gen_directory.py", "--profile", profile, "--entries", "\(n)",
                                       "--seed", "\(seed)", "-o", part], stdout: false)
            guard r.status == 0 else { throw BenchError("gen_directory.py failed (exit \(r.status))") }
            guard rename(part, tsv) == 0 else { throw BenchError("\(tsv): rename failed (errno \(errno))") }
        }
        var d = Dataset(profile: profile, entries: n, tsv: tsv)
        let statsPath = tsv + ".stats.json"
        if !FileManager.default.fileExists(atPath: statsPath) {
            log("measuring \(tsv)")
            let r = try shell(python, ["\(root)/tools/data_stats.py", "--json", tsv])
            guard r.status == 0 else { throw BenchError("data_stats.py failed (exit \(r.status))") }
            try r.out.write(toFile: statsPath, atomically: true, encoding: .utf8)
        }
        d.stats = (try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: statsPath))) as? [String: Any]) ?? [:]
        datasets.append(d)
    }

    // Databases and probes of this run in a directory of its own (several runs may share `work`
    // for the cached data sets); removed at the end unless --keep.
    let runDir = "\(work)/run-\(getpid())"
    try FileManager.default.createDirectory(atPath: runDir, withIntermediateDirectories: true)
    defer { if !a.flags.contains("--keep") { try? FileManager.default.removeItem(atPath: runDir) } }
    let selfExe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    let cabiExe = URL(fileURLWithPath: selfExe).deletingLastPathComponent().appendingPathComponent("callerid-cabi-bench").path
    var runs: [EngineRun] = []
    var notes: [String] = []

    for d in datasets {
        // One probe set per data set, shared by every engine (found, missing, and present numbers
        // whose label is cold in a CallerID file).
        let probesPath = "\(runDir)/\(d.key)-seed\(seed).probes"
        try Probes.make(try TSVDirectory.load(d.tsv), count: lookups, seed: 42).write(to: probesPath)
        for e in engines {
            if e == "callerid-cabi", !engines.contains("callerid") {
                notes.append("callerid-cabi needs the callerid engine (it reads its file); skipped.")
                continue
            }
            let db = "\(runDir)/\(d.key).\(e == "callerid-cabi" ? "callerid" : e).db"
            var best: EngineRun?
            var attempt = 0
            while attempt < 4 {
                attempt += 1
                let before = loadAverage()
                log("[\(d.key)] \(e)\(attempt > 1 ? " (again: other processes used \(String(format: "%.2f", best?.others ?? 0)) cores)" : "")")
                let exe: String, args: [String]
                if e == "callerid-cabi" {
                    guard FileManager.default.isExecutableFile(atPath: cabiExe) else {
                        notes.append("CallerID through the C ABI: \(cabiExe) was not built; skipped.")
                        break
                    }
                    exe = cabiExe
                    args = ["--db", db, "--probes", probesPath, "--lookups", "\(lookups)", "--scans", "\(scans)", "--colds", "\(colds)"]
                } else {
                    exe = selfExe
                    // An engine is rebuilt on every attempt: build time is one of its figures.
                    args = ["engine", e, "--tsv", d.tsv, "--db", db, "--probes", probesPath, "--lookups", "\(lookups)",
                            "--scans", "\(scans)", "--colds", "\(colds)"]
                }
                let busy0 = machineBusySeconds(), child0 = childrenCPUSeconds(), t0 = now()
                let r = try shell(exe, args)
                let wall = Double(now() - t0) / 1e9
                let others = max(0, (machineBusySeconds() - busy0) - (childrenCPUSeconds() - child0)) / max(wall, 0.01)
                let after = loadAverage()
                guard r.status == 0, let line = r.out.split(separator: "\n").last,
                      let obj = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    notes.append("\(e) on \(d.key) failed (exit \(r.status)); no figures.")
                    break
                }
                let run = EngineRun(dataset: d.key, engine: e, figures: obj, json: String(line), loadBefore: before,
                                    loadAfter: after, others: others, attempts: attempt)
                if best == nil || others < best!.others { best = run }
                if others <= maxOthers || quick { break }
            }
            if var b = best {
                b.attempts = attempt
                runs.append(b)
                if a.flags.contains("--json") {
                    print(b.json.dropLast() + ",\"dataset\":\"\(d.key)\",\"other_cores\":\(String(format: "%.2f", b.others))}")
                }
            }
        }
    }

    let finished = Date()
    let loadAtEnd = loadAverage()
    let uptimeAtEnd = (try? shell("/usr/bin/uptime", []).out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? ""
    let context = ReportContext(
        command: a.values["--command"] ?? CommandLine.arguments.joined(separator: " "),
        started: started, finished: finished, uptimeStart: uptimeAtStart, uptimeEnd: uptimeAtEnd,
        loadStart: loadAtStart, loadEnd: loadAtEnd, machine: machineDescription() + sourceDescription(root), datasets: datasets, runs: runs,
        notes: notes, lookups: lookups, scans: scans, colds: colds, maxOthers: maxOthers, quick: quick)

    if let path = a.values["--results"] {
        try resultsJSON(context).write(toFile: path, atomically: true, encoding: .utf8)
        log("wrote \(path)")
    }
    var md = markdown(context)
    if let path = a.values["--markdown"] {
        // Sections measured by other tools (from a `<!-- kept -->` line on) survive the rewrite.
        if let old = try? String(contentsOfFile: path, encoding: .utf8), let kept = old.range(of: "\n<!-- kept -->") {
            md += old[old.index(after: kept.lowerBound)...]
        }
        try md.write(toFile: path, atomically: true, encoding: .utf8)
        log("wrote \(path)")
    } else if !a.flags.contains("--json") {
        print(headlineOnly(context))
    }
    if let dir = a.values["--charts"], let results = a.values["--results"] {
        let r = try shell(python, ["\(root)/tools/bench_charts.py", results, dir], stdout: false)
        if r.status != 0 { log("warning: tools/bench_charts.py failed (exit \(r.status))") }
    }
    let failed = notes.contains { $0.contains("failed") }
    return failed ? 1 : 0
}

/// Which CallerID was measured: the commit, and whether the work tree had changes in it.
func sourceDescription(_ root: String) -> [(String, String)] {
    guard let git = which("git"), let head = try? shell(git, ["-C", root, "rev-parse", "--short", "HEAD"]), head.status == 0 else { return [] }
    let dirty = (try? shell(git, ["-C", root, "status", "--porcelain", "--", "Sources", "Package.swift", "CLZ4Shim", "Benchmarks"]).out) ?? ""
    let commit = head.out.trimmingCharacters(in: .whitespacesAndNewlines)
    return [("source", "commit \(commit)\(dirty.isEmpty ? "" : " plus uncommitted changes in the work tree")")]
}

/// The libcallerid-phonenumber.so CallerID's pipeline loaded for this process's builds, as
/// `lookup build` loads it (the one `CALLERID_PHONENUMBER_LIBRARY` names, or one beside the
/// harness). Nil: the builds read numbers without libphonenumber, on a slower path than the
/// product's, so their time is not `lookup build`'s.
func phoneNumberLibrary() -> String? { NumberNormalizer.libphonenumberPath }

func machineDescription() -> [(String, String)] {
    var m: [(String, String)] = []
    let lscpu = (try? shell("/usr/bin/lscpu", []).out) ?? ""
    func field(_ name: String) -> String? {
        lscpu.split(separator: "\n").first { $0.hasPrefix(name + ":") }
            .map { $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces) }
    }
    m.append(("CPU", "\(field("Model name") ?? "?") (\(field("Vendor ID") ?? "?"), \(field("Hypervisor vendor").map { "\($0) guest" } ?? "bare metal"))"))
    m.append(("cores", "\(ProcessInfo.processInfo.activeProcessorCount) (\(field("Thread(s) per core") ?? "?") thread(s) per core); caches L1d \(field("L1d cache") ?? "?"), L2 \(field("L2 cache") ?? "?"), L3 \(field("L3 cache") ?? "?")"))
    m.append(("RAM", String(format: "%.1f GiB", Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824)))
    let os = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8))?.split(separator: "\n")
        .first { $0.hasPrefix("PRETTY_NAME=") }.map { $0.dropFirst(12).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) } ?? "?"
    var uts = utsname()
    uname(&uts)
    let kernel = withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    m.append(("OS", "\(os), Linux \(kernel)"))
    let swiftVersion = which("swift").flatMap { try? shell($0, ["--version"]).out }
        .flatMap { $0.split(separator: "\n").first.map(String.init) } ?? "Swift 6"
    m.append(("compiler", "\(swiftVersion), release builds (-c release)"))
    m.append(("number checks", phoneNumberLibrary().map { "CallerID's builds read numbers with libphonenumber (\($0)), as `lookup build` does" }
        ?? "CallerID's builds ran WITHOUT libphonenumber (the numbering plan's slower path; set CALLERID_PHONENUMBER_LIBRARY, as tools/bench.sh does)"))
    m.append(("libraries", "SQLite \(String(cString: sqlite3_libversion())), \(String(cString: mdb_version(nil, nil, nil)).replacingOccurrences(of: ":", with: "")), LZ4 \(String(cString: cb_lz4_version())) (Debian packages)"))
    return m
}
