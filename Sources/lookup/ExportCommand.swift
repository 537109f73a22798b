import Foundation
import CallerID
import CallerIDQuery
import CallerIDDirectory

// MARK: export

let exportHelp = """
usage: lookup export --live-caller-id OUTDIR --db FILE|DIR [FILE|DIR...] [--cache-expiry-minutes N]
                     [--identity-category CATEGORY=person|business]... [--icons DIR] [--text] [--json]

Writes the datasets of iOS Live Caller ID Lookup (Apple's live-caller-id-lookup-example server)
into OUTDIR (created when missing):
  block.binpb     one KeywordDatabaseRow per number: keyword "+E164" (UTF-8), value one byte,
                  1 = block (the number's category blocks), 0 = do not block
  identity.binpb  one row per number whose CallIdentity has a field set (a label, an icon, a
                  cache expiry or a category), as Apple's ConstructDatabase writes them: value a
                  serialized CallIdentity (name = label, icon, cache_expiry_minutes, category)
Both are KeywordDatabase messages in the protobuf binary format, the input of PIRProcessDatabase.
With --text, writes input.txtpb instead: an InputIdentities message in the text format, the
input of the example's ConstructDatabase tool.

Numbers come out ascending, one row per number, each as the phone treats it and as
'lookup NUMBER' answers it: blocked when the merged blocking list holds it (a store's allow
list, category choice and rules applied; the identifying label where an entry identifies it),
identified otherwise; a number in neither list gets no row. A store with such settings is
exported alone.
Rows are written as they are read (memory does not grow with the data); the files are written
under temporary names and renamed into place at the end: a failed export replaces nothing.
Every label is checked as 'lookup verify' checks it: a label with a control or hidden character
(a damaged database, or one built before labels were held to that rule) stops the export (65).

Beside the datasets it writes block-config.json and identity-config.json, PIRProcessDatabase's
configurations (those of Apple's example); the identity one sets a fixed-size cuckoo table
sized from the rows, since with PIRProcessDatabase's defaults a row larger than its neighbours
can be dropped without an error (docs/LIVE-CALLER-ID.md: why, and how to check its log). The
report gives the sizes of the identity rows.

  --db FILE|DIR                 a database, a build directory or a store (default: $LOOKUP_DB);
                                repeat it, or list more paths, for several (first wins)
  --cache-expiry-minutes N      how long a device keeps an answer (default 1440; 0 leaves it out)
  --identity-category C=KIND    the identity category of CallerID category C: person or business
                                (repeatable; default unspecified)
  --icons DIR                   attach DIR/+NUMBER.heic (each under 64 KB) to those numbers
  --text                        write input.txtpb (ConstructDatabase's input) instead
  --json                        print the report as one JSON object

Exit: 0 written, 64 usage, 65 damaged database or bad icon, 66 missing database or folder,
74 I/O error.

"""

func exportCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(exportHelp, terminator: "")
        return Exit.ok
    }
    let command = "export"
    let args = try Arguments(raw, command: command,
                             valued: ["--live-caller-id", "--db", "--cache-expiry-minutes", "--identity-category", "--icons"],
                             flags: ["--text", "--json"])
    guard let outdir = args.value("--live-caller-id"), !outdir.isEmpty else {
        throw .usage("say what to export: --live-caller-id OUTDIR", command: command)
    }
    let options = try exportOptions(args)
    var paths = args.values("--db") + args.positionals
    if paths.isEmpty { paths = [try databasePath(args)] }
    var files: [String] = []
    var settings: [(path: String, FeedSettings)] = []
    for p in paths {
        let set = try query { () throws(QueryError) in try DatabasePaths.resolve(p) }
        files += set.files
        do { settings.append((p, try set.resolved.feedSettings())) } catch { throw toolError(error) }
    }
    // A store's settings decide what the phone's lists hold; they apply to its own packs, so a
    // store with settings is exported alone.
    if settings.count > 1, let set = settings.first(where: { $0.1 != FeedSettings() }) {
        throw .usage("\(set.path) has feed settings (allow list, category choice or rules) that apply to its own databases: export it alone, without other --db",
                     command: command)
    }
    let report: LiveCallerIDExportReport
    do {
        report = try LiveCallerIDExport.write(databases: files, settings: settings.first?.1 ?? FeedSettings(), to: outdir, options: options)
    } catch {
        throw toolError(error)
    }
    if args.flag("--json") {
        print(exportJSON(report, options))
    } else {
        writeExportText(report, options)
    }
    return Exit.ok
}

/// The export's options from the command line.
private func exportOptions(_ args: Arguments) throws(ToolError) -> LiveCallerIDExportOptions {
    let command = args.command
    var options = LiveCallerIDExportOptions()
    options.output = args.flag("--text") ? .text : .datasets
    if let text = args.value("--cache-expiry-minutes") {
        guard let minutes = UInt32(text) else {
            throw .usage("--cache-expiry-minutes takes 0 to 4294967295, not '\(text)'", command: command)
        }
        options.cacheExpiryMinutes = minutes
    }
    for pair in args.values("--identity-category") {
        let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let kind = LiveCallerIDCategory(name: String(parts[1])), kind != .unspecified else {
            throw .usage("--identity-category takes CATEGORY=person or CATEGORY=business, not '\(pair)'", command: command)
        }
        let name = String(parts[0]).lowercased()
        guard (try? Category.named(name)) != nil else {
            throw .usage("--identity-category: '\(parts[0])' is not a category name", command: command)
        }
        options.identityCategories[name] = kind
    }
    options.iconDirectory = args.value("--icons")
    if options.output == .text, options.iconDirectory != nil {
        throw .usage("--text writes no icons: give the icon folder to ConstructDatabase (--icon-directory)", command: command)
    }
    return options
}

/// What the export left out or could not place, one sentence each.
private func exportWarnings(_ report: LiveCallerIDExportReport) -> [String] {
    var warnings: [String] = []
    if !report.unknownCategories.isEmpty {
        warnings.append("no database has the categor\(report.unknownCategories.count == 1 ? "y" : "ies") \(report.unknownCategories.joined(separator: ", ")) (--identity-category)")
    }
    if report.unusedIcons > 0 {
        warnings.append("\(report.unusedIcons) icon(s) of numbers no database holds were not exported")
    }
    if let first = report.firstIgnoredIconFile {
        warnings.append("\(report.ignoredIconFiles) .heic file(s) not named +NUMBER.heic were ignored (first: \(first))")
    }
    if let first = report.firstOversizedNumber {
        warnings.append("\(report.oversizedIdentities) identit\(report.oversizedIdentities == 1 ? "y is" : "ies are") over \(LiveCallerIDExport.identityValueLimit) bytes (first: +\(first)); the example server takes values up to that size")
    }
    return warnings
}

private func exportJSON(_ report: LiveCallerIDExportReport, _ options: LiveCallerIDExportOptions) -> String {
    let sizes = report.identitySizes
    let files = report.files.map { "{\"path\":\(jsonQuote($0.path)),\"rows\":\($0.rows),\"bytes\":\($0.bytes)}" }
    var identitySizes = ""
    if options.output == .datasets {
        let classes = sizes.classes.indices.filter { sizes.classes[$0] > 0 }.map { k in
            "{\"up_to\":\(LiveCallerIDValueSizes.classLimit(k).map(String.init) ?? "null"),\"rows\":\(sizes.classes[k])}"
        }
        identitySizes = ",\"identity_sizes\":{\"rows\":\(sizes.rows),\"largest\":\(sizes.largest),"
            + "\"largest_number\":\(sizes.largestNumber.map { "\"+\($0)\"" } ?? "null"),\"classes\":[\(classes.joined(separator: ","))],"
            + "\"default_bucket_size\":\(sizes.defaultBucketSize),\"recommended_bucket_size\":\(sizes.recommendedBucketSize),"
            + "\"shards\":\(sizes.shards),\"largest_shard_bytes\":\(sizes.largestShardBytes),\"bucket_count\":\(sizes.recommendedBucketCount)},"
            + "\"configurations\":\(jsonStrings(report.configurations))"
    }
    return "{\"files\":[\(files.joined(separator: ","))],\"numbers\":\(report.numbers),\"blocked\":\(report.blocked),"
        + "\"identities\":\(report.identities),\"icons\":\(report.icons)\(identitySizes),\"warnings\":\(jsonStrings(exportWarnings(report)))}"
}

private func writeExportText(_ report: LiveCallerIDExportReport, _ options: LiveCallerIDExportOptions) {
    let sizes = report.identitySizes
    for f in report.files {
        print("wrote \(escapedForDisplay(f.path)): \(f.rows) rows, \(f.bytes) bytes")
    }
    print("\(report.numbers) numbers, \(report.blocked) blocked, \(report.identities) identities, \(report.icons) icons")
    if options.output == .datasets, sizes.rows > 0 {
        let classes = sizes.classes.indices.filter { sizes.classes[$0] > 0 }.map { k in
            "\(LiveCallerIDValueSizes.classLimit(k).map { "<= \($0)" } ?? "> 65536") B: \(sizes.classes[k])"
        }
        print("identity values: \(classes.joined(separator: ", ")); largest \(sizes.largest) B (+\(sizes.largestNumber ?? 0))")
    }
    if options.output == .datasets {
        for c in report.configurations { print("wrote \(escapedForDisplay(c)): PIRProcessDatabase's configuration") }
        print("identity-config.json: \"maxSerializedBucketSize\": \(sizes.recommendedBucketSize), a fixed \(sizes.recommendedBucketCount) buckets"
              + " per shard (\(sizes.shards) shard\(sizes.shards == 1 ? "" : "s")): every row is placed or PIRProcessDatabase stops with an error;"
              + " its defaults (\(sizes.defaultBucketSize)-byte buckets, a growing table) can drop rows silently (docs/LIVE-CALLER-ID.md)")
    }
    for w in exportWarnings(report) { printError("warning: \(escapedForDisplay(w))") }
}
