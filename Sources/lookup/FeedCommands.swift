import Foundation
import CallerID
import CallerIDQuery
import CallerIDDirectory

// `lookup install`, `lookup feed`, `lookup diff`: the installed store and the Call Directory
// loader, run against the CallKit simulator (see docs/CALL-DIRECTORY.md).

/// True when `--json` is among the options (before a `--`), even if the rest fails to parse.
func wantsJSON(_ raw: [String]) -> Bool {
    raw.prefix { $0 != "--" }.contains("--json")
}

/// The one JSON object a `--json` command prints when it fails before producing its report:
/// `{"store":…,"error":{"code":"…","message":"…"},"exit_code":N}` (the code is the layer's error
/// code, or `usage`, `no-input`, `io` for the tool's own checks).
func jsonFailure(_ error: ToolError, store: String?, code: String?) -> String {
    let name = code ?? {
        switch error.code {
        case Exit.usage: "usage"
        case Exit.noInput: "file-not-found"
        case Exit.ioError: "io"
        case Exit.unavailable: "unreachable"
        default: "data"
        }
    }()
    return "{\"store\":\(store.map(jsonQuote) ?? "null"),\"error\":{\"code\":\(jsonQuote(name)),\"message\":\(jsonQuote(error.message))},\"exit_code\":\(error.code)}\n"
}

/// Runs a command body; a DirectoryError becomes its exit code. Under `--json` a failure is
/// printed as one JSON object on stdout (nothing on stderr) and its exit code returned;
/// otherwise it is thrown for `main` to print.
func reportingJSON(_ raw: [String], _ body: () throws -> Int32) throws(ToolError) -> Int32 {
    do {
        return try body()
    } catch {
        let tool = toolError(error)
        guard wantsJSON(raw) else { throw tool }
        var out = Output()
        out.write(jsonFailure(tool, store: storeArgument(raw), code: (error as? DirectoryError)?.code.rawValue))
        out.flush()
        return tool.code
    }
}

/// The value of `--store` in raw arguments (`--store X` or `--store=X`).
func storeArgument(_ raw: [String]) -> String? {
    for (i, a) in raw.enumerated() {
        if a == "--" { break }
        if a == "--store", i + 1 < raw.count { return raw[i + 1] }
        if a.hasPrefix("--store=") { return String(a.dropFirst(8)) }
    }
    return nil
}

/// `i/M` (1-based) → (index 0-based, M).
func parseSlot(_ text: String, command: String) throws(ToolError) -> (index: Int, count: Int) {
    let parts = text.split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 2, let i = Int(parts[0]), let m = Int(parts[1]), (1...64).contains(m), (1...m).contains(i) else {
        throw .usage("--slot takes i/M with 1 ≤ i ≤ M ≤ 64 (for example 2/3), not '\(text)'", command: command)
    }
    return (i - 1, m)
}

func parsePositive(_ text: String?, _ name: String, command: String) throws(ToolError) -> Int? {
    guard let text else { return nil }
    guard let v = Int(text.replacingOccurrences(of: "_", with: "").replacingOccurrences(of: ",", with: "")), v >= 1 else {
        throw .usage("\(name) takes a positive integer, not '\(text)'", command: command)
    }
    return v
}

// MARK: install

let installHelp = """
usage: lookup install --store DIR [BUILD_DIR] [--slots M] [--max-entries N] [--allow FILE]
                      [--rule RULE]... [--no-rules] [--block-categories LIST]
                      [--trust NAME.pub] [--require-signature NAME.pub] [--json]
       lookup install --store DIR BUILD_DIR --source NAME [--regions A,B] [--priority N]
                      [--trust NAME.pub] [settings] [--json]

Installs the databases of BUILD_DIR (a 'lookup build' output directory with manifest.json)
into the store DIR as a new generation, or, without BUILD_DIR, the current data again with
new settings; that also repairs the store: a file missing from the current generation,
cut short or damaged, is taken from the previous one when it holds the same file intact
(otherwise the error says what to fetch). Every file is verified first (size, whole-file XXH3 against the manifest, full
database check), staged, fsynced, and only then made current by one atomic rename. A damaged
or truncated file, a bad manifest or a set over the budget changes nothing: the previous set
stays in place and in use. The previous generation is kept until the next install succeeds.
The slots keep the previous generation's boundaries wherever they still fit; the report says
per slot whether its bounds and its entries changed (reload only the extensions whose
entries changed).

Settings (default: those of the current generation):
  --slots M               extensions the entries are split across (1-64)
  --max-entries N         entries per extension, both lists (default and at most 1,999,999,
                          CallKit's cap; more entries need more --slots)
  --allow FILE            numbers never blocked, one per line ('#' starts a comment)
  --rule RULE             block a prefix ('+33 6 12 ## ## ##') or a range (START..END);
                          repeat for several; replaces the current rules
  --no-rules              remove every rule
  --block-categories LIST block only these categories (comma-separated); 'all' for every one.
                          Each must be a blocking category of the set's databases or a
                          standard one (block, spam, scam, fraud, collector, …)
  --json                  print the report as JSON (per slot: bounds, bounds_since,
                          content_since, bounds_changed, content_changed; the split);
                          a failure is one JSON object too:
                          {"store":…,"error":{"code":…,"message":…},"exit_code":N}

Signatures ('lookup keygen', 'lookup sign'):
  --trust NAME.pub        BUILD_DIR/manifest.json.sig must be this key's signature of the
                          manifest, and every file must match the SHA-256 it lists
  --require-signature NAME.pub
                          the same, and the store records the key: from then on every
                          install and fetch into DIR must be signed by it (unsigned or
                          wrongly signed sets are refused with exit 65, the current
                          generation kept); given again with another key, replaces it

BUILD_DIR is the folder 'lookup build -o DIR/' writes (manifest.json beside the
databases), not a single database file.

Sources ('lookup store list' shows them; docs/CALL-DIRECTORY.md, "Sources and packs"):
  --source NAME           install BUILD_DIR as source NAME of the store (1 to 48 of a-z 0-9
                          - _) beside the other sources' packs, instead of replacing the set:
                          a new source, or an update of it. Without --source the set replaces
                          everything installed, sources included.
  --regions A,B           only these regions of BUILD_DIR (added to the source's subscription;
                          default: keep it, every region for a new source)
  --priority N            the source's precedence: higher wins, then the source subscribed
                          first (default: keep; -1 for a new local source, below fetched sources at their default 0,
                          the place of an app's starter set)
  With --trust the key is pinned for a new source; a source with a pinned key must be signed
  by it. A new source without --trust is pinned to the store's required key if it has one.

Exit: 0 installed, 64 usage, bad rule (or one larger than any extension holds), unknown
category, a budget above CallKit's cap, a file instead of a build directory; 65 damaged
file, bad manifest, missing or bad signature, or over budget; 66 missing file; 74 I/O error.

"""

func installCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(installHelp, terminator: "")
        return Exit.ok
    }
    return try reportingJSON(raw) { try installBody(raw) }
}

private func installBody(_ raw: [String]) throws -> Int32 {
    let command = "install"
    let args = try Arguments(raw, command: command, valued: ["--store", "--slots", "--max-entries", "--allow", "--rule", "--block-categories",
                                                             "--trust", "--require-signature", "--source", "--regions", "--priority"],
                             flags: ["--json", "--no-rules"])
    let trust = try args.value("--trust").map { p throws(ToolError) in try readTrustedKey(p) }
    let required = try args.value("--require-signature").map { p throws(ToolError) in try readTrustedKey(p) }
    guard let storePath = args.value("--store") else { throw ToolError.usage("no store: pass --store DIR", command: command) }
    guard args.positionals.count <= 1 else { throw ToolError.usage("give one build directory", command: command) }
    let source = try args.value("--source").map { name throws(ToolError) in try checkedSourceName(name, command: command) }
    let regions = try parseRegions(args.value("--regions"), command: command)
    let priority = try parsePriority(args.value("--priority"), command: command)
    if source == nil, regions != nil || priority != nil {
        throw ToolError.usage("--regions and --priority choose what a source brings: give --source NAME too", command: command)
    }
    if source != nil {
        guard args.positionals.count == 1 else { throw ToolError.usage("--source installs a build directory: give BUILD_DIR", command: command) }
        guard required == nil else { throw ToolError.usage("--require-signature applies to a set installed without --source; a source's key is pinned with --trust", command: command) }
    }
    do {
        let store = try InstalledStore(path: storePath)
        var settings = try store.settings()
        if let m = try parsePositive(args.value("--slots"), "--slots", command: command) { settings.slots = m }
        if let n = try parsePositive(args.value("--max-entries"), "--max-entries", command: command) { settings.maxEntries = n }
        if let file = args.value("--allow") { settings.allowList = try FeedSettings.readAllowList(file) }
        if args.flag("--no-rules") { settings.rules = [] }
        let rules = args.values("--rule")
        if !rules.isEmpty { settings.rules = try rules.map { r throws(DirectoryError) in try BlockingRule(r) } }
        if let list = args.value("--block-categories") {
            settings.blockCategories = list == "all" ? nil : list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        }
        let started = Date()
        let report: InstalledStore.InstallReport
        if let build = args.positionals.first, let source {
            report = try store.installSource(source, from: build, regions: regions, priority: priority, trust: trust, settings: settings)
        } else if let build = args.positionals.first {
            report = try store.install(from: build, settings: settings, trust: trust, requireSignature: required)
        } else {
            // The current set again (new settings, its signature checked, a file the store
            // lost taken from the previous generation).
            report = try store.reinstall(settings: settings, trust: trust, requireSignature: required)
        }
        writeInstallReport(report, storePath: storePath, seconds: Date().timeIntervalSince(started), json: args.flag("--json"))
        return Exit.ok
    }
}

/// What an install (or a step of a store of sources) did: `--json` one object, else lines.
func writeInstallReport(_ report: InstalledStore.InstallReport, storePath: String, seconds: Double, json: Bool) {
    var out = Output()
    let c = report.changes
    if json {
        let names = jsonStrings
        let sources = report.sources.isEmpty ? "null" : "[" + report.sources.map(sourceJSON).joined(separator: ",") + "]"
        out.write("{\"store\":\(jsonQuote(storePath)),\"generation\":\(report.generation.id),\"previous\":\(report.previous.map { String($0.id) } ?? "null"),\"added\":\(names(c.added)),\"changed\":\(names(c.changed)),\"removed\":\(names(c.removed)),\"unchanged\":\(names(c.unchanged)),\"copied_files\":\(report.copiedFiles),\"linked_files\":\(report.linkedFiles),\"repaired\":\(names(report.repairedFiles)),\"missing_packs\":\(names(report.missingPacks)),\"sources\":\(sources),\(slotsJSONFields(report.plan)),\"seconds\":\(String(format: "%.3f", seconds))}\n")
    } else {
        out.write("installed generation \(report.generation.id)\(report.previous.map { " (previous \($0.id) kept)" } ?? "") in \(storePath) in \(String(format: "%.2f", seconds)) s\n")
        out.write("regions: \(c.added.count) added, \(c.changed.count) changed, \(c.removed.count) removed, \(c.unchanged.count) unchanged")
        // Region names come from the manifest: shown escaped (LabelText's rule).
        let named = (c.added.map { "+\($0)" } + c.changed.map { "~\($0)" } + c.removed.map { "-\($0)" }).map { escapedForDisplay($0) }
        out.write(named.isEmpty ? "\n" : " (\(named.prefix(12).joined(separator: " "))\(named.count > 12 ? " …" : ""))\n")
        out.write("files: \(report.copiedFiles) copied, \(report.linkedFiles) hard-linked from the previous generation\n")
        if !report.repairedFiles.isEmpty {
            out.write("repaired: \(report.repairedFiles.joined(separator: ", ")) (missing from generation \(report.previous.map { String($0.id) } ?? "?"), taken from the generation before it)\n")
        }
        for pack in report.missingPacks {
            let source = report.sources.first { pack.hasPrefix($0.name + ".") }?.name ?? "?"
            out.write("missing: \(pack) (source \(source)): missing or damaged in the store and in the previous generation, left out; the next step of source \(source) brings it back\n")
        }
        if !report.sources.isEmpty {
            out.write("sources: \(report.sources.map { "\($0.name) (priority \($0.priority))" }.joined(separator: ", "))\n")
        }
        writeSlotLines(report.plan, to: &out)
    }
    out.flush()
}

/// An installed plan as JSON fields: `"max_entries"`, `"split"` and `"slots"` (per slot its
/// bounds, ``slotJSONFields(_:_:)`` and entries per list). One shape for every report that
/// installs a generation (install, fetch, store remove) and for `store list`.
func slotsJSONFields(_ plan: SlotPlan) -> String {
    let slots = plan.slots.enumerated().map { i, s in
        "{\"slot\":\(i + 1),\(slotJSONFields(plan, i)),\"identify\":\(s.identification),\"block\":\(s.blocking)}"
    }
    return "\"max_entries\":\(plan.maxEntries),\"split\":\(plan.split.map { jsonQuote($0.rawValue) } ?? "null"),\"slots\":[\(slots.joined(separator: ","))]"
}

/// An installed plan in lines: how it was made, then per slot its entries and whether its
/// extension needs a reload.
func writeSlotLines(_ plan: SlotPlan, to out: inout Output) {
    if let split = plan.split { out.write("slot plan: \(splitText(split))\n") }
    for (i, s) in plan.slots.enumerated() {
        out.write("slot \(i + 1)/\(plan.slots.count): \(s.identification) identification + \(s.blocking) blocking = \(s.count) of at most \(plan.maxEntries); \(slotText(plan, i))\n")
    }
}

/// Slot `i` of an installed plan as JSON fields: its bounds, since which generation they and
/// its entries are the same, and whether they changed from the previous generation (true when
/// unknown): an app reloads the extensions whose `content_changed` is true.
func slotJSONFields(_ plan: SlotPlan, _ i: Int) -> String {
    let s = plan.slots[i]
    return "\"lower_bound\":\(s.lowerBound),\"upper_bound\":\(s.upperBound),\"bounds_since\":\(s.boundsSince.map(String.init) ?? "null"),\"content_since\":\(s.contentSince.map(String.init) ?? "null"),\"bounds_changed\":\(plan.boundsChanged(slot: i)),\"content_changed\":\(plan.contentChanged(slot: i))"
}

/// Slot `i` of an installed plan in words: what changed, what an app reloads.
func slotText(_ plan: SlotPlan, _ i: Int) -> String {
    if !plan.contentChanged(slot: i) {
        return "unchanged since generation \(plan.slots[i].contentSince.map(String.init) ?? "?"), no reload needed"
    }
    return plan.boundsChanged(slot: i) ? "new bounds, reload" : "same bounds, entries changed, reload"
}

func splitText(_ split: SlotPlan.Split) -> String {
    switch split {
    case .balanced: "balanced (no previous plan)"
    case .kept: "every boundary kept"
    case .adjusted: "boundaries moved only where slots overflowed or were added or removed"
    case .rebalanced: "every boundary placed anew (nothing else fitted)"
    }
}

// MARK: feed

let feedHelp = """
usage: lookup feed --store DIR [--slot i/M] [--max-entries N] [--chunk K] [--simulate]
                   [--from-previous] [--json]

Runs the Call Directory loader of extension i of M over the store's current generation, as
the extension would on a phone, and reports entries per list, requests, time, heap peak and
the CallKit error the load would have hit, if any.

  --slot i/M         the slot (default 1/M of the installed plan); an M other than the
                     installed one, or --max-entries, splits the entries anew for this run
                     (said on stderr, and in the JSON's note)
  --max-entries N    entries per extension, both lists (default: the installed plan's)
  --chunk K          at most K additions and removals per request (default: all in one);
                     the requests after the first are incremental, as on a phone; a request
                     whose chunk ends the load completes it (no empty request follows)
  --simulate         load into the CallKit simulator, which keeps every entry (its memory
                     counts in the heap peak); without it a streaming checker verifies the
                     same rules (order, duplicates, cap) without keeping the entries
  --from-previous    first load the previous generation kept in the store into the simulator,
                     then time the incremental requests that bring it to the current one (the
                     delta, or a full reload when cheaper; nothing for a slot whose bounds
                     and entries did not change): what a phone does after an install
  --model-os-cap N   model a CallKit version whose cap is N entries per extension instead of
                     1,999,999 (today's); without it, --max-entries above 1,999,999 is fed
                     and CallKit's maximumEntriesExceeded (5) is reported, as on a phone
  --json             one JSON object ("calls": sink calls, "remove all" included;
                     "slot_plan": the slot as the install planned it), on failure too:
                     {"store":…,"error":{"code":…,"message":…},"exit_code":N}

Exit: 0 loaded, 65 CallKit would fail the request (the error is printed) or damaged data,
64 usage, 66 nothing installed, 74 I/O error.

"""

func feedCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(feedHelp, terminator: "")
        return Exit.ok
    }
    return try reportingJSON(raw) { try feedBody(raw) }
}

/// What `lookup feed` was asked.
private struct FeedRequest {
    let storePath: String
    let feed: SlotFeedRequest
    let json: Bool

    init(_ raw: [String]) throws(ToolError) {
        let command = "feed"
        let args = try Arguments(raw, command: command, valued: ["--store", "--slot", "--max-entries", "--chunk", "--model-os-cap"],
                                 flags: ["--simulate", "--from-previous", "--json"])
        guard let storePath = args.value("--store") else { throw ToolError.usage("no store: pass --store DIR", command: command) }
        guard args.positionals.isEmpty else { throw ToolError.usage("unexpected argument '\(args.positionals[0])'", command: command) }
        self.storePath = storePath
        var feed = SlotFeedRequest()
        feed.slot = try args.value("--slot").map { s throws(ToolError) in try parseSlot(s, command: command) }
        feed.maxEntries = try parsePositive(args.value("--max-entries"), "--max-entries", command: command)
        feed.chunk = try parsePositive(args.value("--chunk"), "--chunk", command: command)
        if let cap = try parsePositive(args.value("--model-os-cap"), "--model-os-cap", command: command) { feed.systemCap = cap }
        feed.fromPrevious = args.flag("--from-previous")
        feed.simulate = args.flag("--simulate") || feed.fromPrevious
        self.feed = feed
        json = args.flag("--json")
    }
}

private func feedBody(_ raw: [String]) throws -> Int32 {
    let request = try FeedRequest(raw)
    guard FileManager.default.fileExists(atPath: request.storePath) else {
        throw ToolError(code: Exit.noInput, message: "\(request.storePath): no such store")
    }
    let report = try InstalledStore(path: request.storePath).feed(request.feed)
    writeFeedReport(request, report)
    if let failure = report.tally.failure, !request.json {
        printError("error: CallKit would fail the request: \(failure.code.name) (\(failure.code.rawValue)): \(failure.message)"
                   + (report.note.map { "\nnote: \($0)" } ?? ""))
    }
    return report.tally.failure == nil ? Exit.ok : Exit.dataError
}

private func writeFeedReport(_ request: FeedRequest, _ r: SlotFeedReport) {
    let t = r.tally, index = r.slot, slots = r.slots, cap = r.cap, generation = r.generation
    let (loadedNow, previousID, plan, note, missing) = (r.loadedNow, r.previousID, r.plan, r.note, r.missing)
    let chunk = request.feed.chunk, simulate = request.feed.simulate
    let total = t.identification + t.blocking
    let rate = t.seconds > 0 ? Double(total + t.removedIdentification + t.removedBlocking) / t.seconds : 0
    let mode = t.firstMode.map { "\($0)" } ?? "none"
    var out = Output()
    if request.json {
        let err = t.failure.map { "{\"code\":\($0.code.rawValue),\"name\":\(jsonQuote($0.code.name)),\"message\":\(jsonQuote($0.message))}" } ?? "null"
        out.write("{\"store\":\(jsonQuote(request.storePath)),\"generation\":\(generation),\"slot\":\(index + 1),\"slots\":\(slots),\"max_entries\":\(cap),\"identification\":\(t.identification),\"blocking\":\(t.blocking),\"requests\":\(t.requests),\"chunk\":\(chunk.map(String.init) ?? "null"),\"simulated\":\(simulate),\"seconds\":\(String(format: "%.4f", t.seconds)),\"entries_per_second\":\(Int(rate)),\"heap_peak_bytes\":\(t.heapPeak),\"mode\":\"\(mode)\",\"from_generation\":\(previousID.map(String.init) ?? "null"),\"removed_identification\":\(t.removedIdentification),\"removed_blocking\":\(t.removedBlocking),\"delta_changes\":\(t.weighed.map { String($0.changes) } ?? "null"),\"full_reload_calls\":\(t.weighed.map { String($0.fullReload) } ?? "null"),\"calls\":\(t.calls),\"slot_plan\":\(plan.map { "{\(slotJSONFields($0, index))}" } ?? "null"),\"error\":\(err),\"note\":\(note.map(jsonQuote) ?? "null"),\"missing_packs\":\(jsonStrings(missing)),\"exit_code\":\(t.failure == nil ? Exit.ok : Exit.dataError)}\n")
    } else {
        out.write("slot \(index + 1)/\(slots) of generation \(generation) (\(simulate ? "CallKit simulator" : "streaming check")):\n")
        if let previousID {
            out.write("  from generation \(previousID): \(mode)\(t.weighed.map { " (\($0.changes) changes; a full reload would be \($0.fullReload) calls: \($0.fullReload - 2) entries and 2 remove-all)" } ?? "")\n")
            out.write("  removed         \(t.removedIdentification) identification, \(t.removedBlocking) blocking\n")
            out.write("  added           \(t.identification) identification, \(t.blocking) blocking\n")
            out.write("  loaded now      \(loadedNow) of at most \(cap)\n")
        } else {
            out.write("  identification  \(t.identification)\n  blocking        \(t.blocking)\n  total           \(total) of at most \(cap)\n")
        }
        if let plan { out.write("  slot            \(slotText(plan, index))\n") }
        out.write("  requests        \(t.requests)\(chunk.map { " (chunks of \($0))" } ?? "")\n")
        out.write("  time            \(String(format: "%.3f", t.seconds)) s (\(Int(rate)) calls/s)\n")
        out.write("  heap peak       \(t.heapPeak) bytes above the start\n")
        out.write("  CallKit         \(t.failure.map { "error \($0.code.rawValue) \($0.code.name): \($0.message)" } ?? "OK")\n")
        if !missing.isEmpty, let note { out.write("  missing packs   \(missing.joined(separator: ", ")): \(note)\n") }
    }
    out.flush()
    // A note the text report does not show (the packs' is shown above) goes to stderr.
    if !request.json, missing.isEmpty, t.failure == nil, let note { printError("note: \(note)") }
}

// MARK: diff

let diffHelp = """
usage: lookup diff OLD NEW [--json]

Prints the change set that turns OLD's entries into NEW's, in the order an incremental Call
Directory request sends it: identification removals, blocking removals, identification
additions, blocking additions, each ascending; a changed label is a removal and an addition.
One line per change:

  +|-<TAB>identify|block<TAB>NUMBER<TAB>LABEL     (the old label for a removal)

OLD and NEW are stores (their current generation and its settings), build output
directories (manifest.json; default settings) or database files (default settings). --json prints one object per line:
{"op":"+","list":"identify","number":…,"label":…}.

Exit: 0, 64 usage, 65 damaged file or bad manifest, 66 missing directory.

"""

/// A store folder (its current generation), a build output directory, or one database file.
/// What the path names is `DatabaseSet`'s decision, the same as for `--db`.
func openSnapshot(_ path: String) throws(DirectoryError) -> DirectorySnapshot {
    switch try DatabaseSet.resolve(path: path).kind {
    case .store: try InstalledStore(path: path).snapshot()
    case .buildDirectory: try DirectorySnapshot(directory: path)
    case .file: try DirectorySnapshot(databaseFile: path)
    }
}

func diffCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(diffHelp, terminator: "")
        return Exit.ok
    }
    let args = try Arguments(raw, command: "diff", valued: [], flags: ["--json"])
    guard args.positionals.count == 2 else { throw .usage("give OLD and NEW", command: "diff") }
    let json = args.flag("--json")
    var out = Output()
    do {
        let old = try openSnapshot(args.positionals[0])
        let new = try openSnapshot(args.positionals[1])
        try DirectoryDiff.forEach(old: old, new: new) { change in
            let op = change.kind == .removal ? "-" : "+"
            if json {
                out.write("{\"op\":\"\(op)\",\"list\":\"\(change.list)\",\"number\":\(change.number),\"label\":\(jsonQuote(change.label))}\n")
            } else {
                out.write("\(op)\t\(change.list)\t\(change.number)\t\(change.label)\n")
            }
        }
    } catch {
        out.flush()
        throw toolError(error)
    }
    out.flush()
    return Exit.ok
}
