import Foundation
import CallerID
import CallerIDQuery
import CallerIDDirectory

// `lookup store list`, `lookup store remove`, and what the source commands share: a store
// composed of sources (docs/CALL-DIRECTORY.md, "Sources and packs").

let storeHelp = """
usage: lookup store list --store DIR [--json]
       lookup store remove --store DIR --source NAME [--regions A,B] [--json]

list    prints the store's sources in precedence order (name, URL or folder, pinned key,
        priority, dataset version, subscribed regions with their packs and entries, packs
        missing from the store) and the entries of each slot. A store installed without
        --source shows its set as one source, 'default'.
remove  drops regions A,B from source NAME's subscription (--regions), or the whole source
        with its packs and pinned key: one new generation, made and switched atomically as
        every install (settings and slots kept). A source left with no region stays, its
        key pinned.

  --store DIR      the store
  --source NAME    the source to change (remove)
  --regions A,B    regions to drop from the subscription (remove)
  --json           one JSON object; a failure is one JSON object too:
                   {"store":…,"error":{"code":…,"message":…},"exit_code":N}

Sources join a store with 'lookup fetch URL --source NAME [--regions A,B]' and
'lookup install --store DIR BUILD_DIR --source NAME'.

Exit: 0, 64 usage, unknown source or region; 65 damaged store; 66 nothing installed or no
such store; 74 I/O error.

"""

func storeCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") || raw.isEmpty {
        print(storeHelp, terminator: "")
        return raw.isEmpty ? Exit.usage : Exit.ok
    }
    return try reportingJSON(raw) {
        switch raw[0] {
        case "list": try storeListBody(Array(raw.dropFirst()))
        case "remove": try storeRemoveBody(Array(raw.dropFirst()))
        default: throw ToolError.usage("unknown store command '\(raw[0])'; give list or remove", command: "store")
        }
    }
}

private func storeListBody(_ raw: [String]) throws -> Int32 {
    let command = "store"
    let args = try Arguments(raw, command: command, valued: ["--store"], flags: ["--json"])
    guard let storePath = args.value("--store") else { throw ToolError.usage("no store: pass --store DIR", command: command) }
    guard args.positionals.isEmpty else { throw ToolError.usage("unexpected argument '\(args.positionals[0])'", command: command) }
    guard FileManager.default.fileExists(atPath: storePath) else {
        throw ToolError(code: Exit.noInput, message: "\(storePath): no such store")
    }
    let store = try InstalledStore(path: storePath)
    let pinned = try store.pin()
    let sources = try store.sources(pinned.generation)
    var out = Output()
    let plan = pinned.plan
    if args.flag("--json") {
        let list = sources.map { s in
            let regions = s.regions.map { r in
                "{\"region\":\(jsonQuote(r.name)),\"packs\":\(jsonStrings(r.files)),\"entries\":\(r.entries.map(String.init) ?? "null"),\"bytes\":\(r.bytes)}"
            }
            let fields = sourceJSON(s.source).dropLast()
            return fields + ",\"implicit\":\(s.source.isImplicit),\"installed\":[\(regions.joined(separator: ","))],\"offered\":\(jsonStrings(s.offered)),\"unavailable\":\(jsonStrings(s.unavailable)),\"missing_packs\":\(jsonStrings(s.missingPacks)),\"shadowed\":\(jsonStrings(s.shadowed))}"
        }
        out.write("{\"store\":\(jsonQuote(storePath)),\"generation\":\(pinned.id),\"sources\":[\(list.joined(separator: ","))],\(slotsJSONFields(plan)),\"unreadable\":\(jsonStrings(pinned.snapshot.unreadable.map(\.file)))}\n")
    } else {
        out.write("\(storePath): generation \(pinned.id), \(sources.count) source\(sources.count == 1 ? "" : "s"), \(plan.slots.count) slot\(plan.slots.count == 1 ? "" : "s") of at most \(plan.maxEntries)\n")
        for s in sources {
            let r = s.source
            // Names, URLs and versions come from files and servers: shown escaped.
            let origin = r.url.map { "url \(escapedForDisplay($0))" } ?? r.folder.map { "folder \(escapedForDisplay($0))" }
                ?? (r.isImplicit ? "installed without --source" : "?")
            out.write("source \(r.name): \(origin), \(r.keyID.map { "key \($0)" } ?? "unsigned"), priority \(r.priority), dataset \(escapedForDisplay(r.datasetVersion ?? "?"))\n")
            let subscribed = r.regions == nil ? "every region (\(s.offered.count))" : "\(r.regions!.count) of \(s.offered.count) regions"
            out.write("  subscribed: \(subscribed)\n")
            for region in s.regions {
                out.write("  \(escapedForDisplay(region.name))\t\(region.files.count) pack\(region.files.count == 1 ? "" : "s")\t\(region.entries.map { grouped($0) } ?? "?") entries\t\(grouped(region.bytes)) bytes\n")
            }
            for name in s.unavailable { out.write("  \(escapedForDisplay(name))\tnot offered by the installed set\n") }
            for pack in s.missingPacks { out.write("  missing: \(pack) (the next fetch or install of source \(r.name) brings it back)\n") }
            if !s.shadowed.isEmpty {
                out.write("  answered by a source of higher precedence: \(s.shadowed.joined(separator: ", ")) (this source's packs of them left out)\n")
            }
        }
        writeSlotLines(plan, to: &out)
    }
    out.flush()
    return Exit.ok
}

private func storeRemoveBody(_ raw: [String]) throws -> Int32 {
    let command = "store"
    let args = try Arguments(raw, command: command, valued: ["--store", "--source", "--regions"], flags: ["--json"])
    guard let storePath = args.value("--store") else { throw ToolError.usage("no store: pass --store DIR", command: command) }
    guard let name = args.value("--source") else { throw ToolError.usage("no source: pass --source NAME", command: command) }
    guard args.positionals.isEmpty else { throw ToolError.usage("unexpected argument '\(args.positionals[0])'", command: command) }
    let regions = try parseRegions(args.value("--regions"), command: command)
    guard FileManager.default.fileExists(atPath: storePath) else {
        throw ToolError(code: Exit.noInput, message: "\(storePath): no such store")
    }
    let store = try InstalledStore(path: storePath)
    let started = Date()
    let report = try regions.map { r throws(DirectoryError) in try store.unsubscribe(name, regions: r) } ?? store.removeSource(name)
    writeInstallReport(report, storePath: storePath, seconds: Date().timeIntervalSince(started), json: args.flag("--json"))
    return Exit.ok
}

/// A JSON array of strings.

/// One source's record as a JSON object.
func sourceJSON(_ s: StoreSource) -> String {
    "{\"name\":\(jsonQuote(s.name)),\"url\":\(s.url.map(jsonQuote) ?? "null"),\"folder\":\(s.folder.map(jsonQuote) ?? "null"),\"key_id\":\(s.keyID.map(jsonQuote) ?? "null"),\"priority\":\(s.priority),\"dataset_version\":\(s.datasetVersion.map(jsonQuote) ?? "null"),\"build_time\":\(s.buildTime.map(jsonQuote) ?? "null"),\"regions\":\(s.regions.map(jsonStrings) ?? "null")}"
}

/// `--source NAME`, checked.
func checkedSourceName(_ name: String, command: String) throws(ToolError) -> String {
    guard StoreSource.isValidName(name) else {
        throw .usage("--source \(quotedInput(name.utf8)): give 1 to 48 of a-z 0-9 - _, starting with a letter or a digit", command: command)
    }
    return name
}

/// `--regions A,B`: region names separated by commas (spaces around them ignored).
func parseRegions(_ text: String?, command: String) throws(ToolError) -> [String]? {
    guard let text else { return nil }
    let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    guard !names.isEmpty else { throw .usage("--regions takes region names separated by commas, not '\(text)'", command: command) }
    return names
}

/// `--priority N`: an integer, negative allowed.
func parsePriority(_ text: String?, command: String) throws(ToolError) -> Int? {
    guard let text else { return nil }
    guard let v = Int(text), abs(v) <= 1_000_000 else {
        throw .usage("--priority takes an integer from -1000000 to 1000000, not '\(text)'", command: command)
    }
    return v
}

/// `lookup fetch URL --list`: the regions a source offers.
func writeOffer(_ offer: SourceOffer, url: String, json: Bool) {
    var out = Output()
    if json {
        let regions = offer.regions.map { r in
            let numbers = r.numbers.map { "[\($0.lowerBound),\($0.upperBound)]" }.joined(separator: ",")
            return "{\"region\":\(jsonQuote(r.name)),\"files\":\(jsonStrings(r.files)),\"entries\":\(r.entries.map(String.init) ?? "null"),\"bytes\":\(r.bytes),\"numbers\":[\(numbers)],\"kinds\":\(jsonStrings(r.kinds))}"
        }
        out.write("{\"url\":\(jsonQuote(url)),\"dataset_version\":\(offer.datasetVersion.map(jsonQuote) ?? "null"),\"build_time\":\(offer.buildTime.map(jsonQuote) ?? "null"),\"regions\":[\(regions.joined(separator: ","))]}\n")
    } else {
        // Everything but the counts comes from the server: shown escaped.
        out.write("\(url): dataset \(escapedForDisplay(offer.datasetVersion ?? "?")) built \(escapedForDisplay(offer.buildTime ?? "?")), \(offer.regions.count) region\(offer.regions.count == 1 ? "" : "s")\n")
        for r in offer.regions {
            let numbers = r.numbers.prefix(4).map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: " ") + (r.numbers.count > 4 ? " …" : "")
            out.write("\(escapedForDisplay(r.name))\t\(r.entries.map { grouped($0) } ?? "?") entries\t\(grouped(r.bytes)) bytes\t\(escapedForDisplay(r.kinds.joined(separator: ",")))\t\(numbers)\n")
        }
    }
    out.flush()
}
