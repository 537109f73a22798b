import Foundation
import CallerID
import CallerIDQuery
import CallerIDPipeline

// MARK: reports

let reportsHelp = """
usage: lookup reports -o OUT REPORTS... [options]

Turns a log of people's reports ("this number is a debt collector", "this caller is fine")
into a block pack: each number scored from its reports, the numbers that pass written as
lookup build writes a build (a database file, or a build directory with --split-by,
--max-entries or -o DIR/), ready for lookup sign, install, fetch, serve and export. The
model, with a worked example: docs/REPORTS.md. The same log gives the same bytes.

Input (JSON Lines, CSV or TSV; one report a row)
  number      the number called about, read as lookup build reads numbers (--country,
              --country-field, --validity, libphonenumber)
  reporter    an opaque id of who reported (a hash); a value that reads as a phone
              number is refused
  time        RFC 3339 (2026-12-05T09:30:00Z, with an offset) or Unix seconds
  category    a blocking category (block, collector, fraud, pyramid, robocall, scam,
              spam, survey, telemarketing, or one a --category-map names) or the verdict
              safe ("this caller is fine"); other fields (a comment) are ignored
  Defaults: by header name (number|phone…, reporter|user_id|device_id…, time|timestamp|
  created_at…, category|verdict|type…), or columns 1-4 without a header.
  --format tsv|csv|json|jsonl  --delimiter C  --encoding E  --header auto|yes|no
  --number-field F  --reporter-field F  --time-field F  --category-field F
  --country-field F  --region-field F   a column name / JSON key, or a 1-based position
  --country XX  --numbering-plan FILE  --validity V  --number-rules R   as lookup build
  --category-map FILE           rename your verdicts ('collection = collector block')
  --category NAME               every report is this blocking category (a log of
                                complaints without a category field)

The score (each an option; defaults from what community block lists do)
  --half-life D                 a report weighs half as much after D (default 90d;
                                D is days, or a number with d, w or h)
  --max-age D                   reports older than D are left out (default 365d)
  --now TIME                    score as of TIME (default: the newest report read)
  --reporter-daily-cap N        a reporter's reports of one UTC day weigh N at most
                                together (default 5)
  --safe-weight W               a 'safe' verdict weighs W complaints (default 1)
  --block-score S               a number is blocked at score S (default 3)...
  --min-reporters N             ...with at least N distinct complaining reporters (default 3)
  --protect FILE|DB|DIR         never block these numbers (an allow list: a number per line,
                                optionally ',' or TAB and a name; a database; a build
                                directory): past the threshold they are written as
                                identification entries naming the complaints (repeatable)

Labels
  --label TEMPLATE              a blocked number's label (default '{category} · {reporters}'):
                                {category} the category's name, {reporters} the count with its
                                noun ('10+ reports'), {count} the count alone; counts are 1-4,
                                then 5+, 10+, 20+, 50+, 100+…, so a count moving 37 → 38 changes
                                nothing on the phones
  --protected-label TEMPLATE    a protected number's label (default '{name} · {reporters}')
  --label-language en|ru        category names and nouns ('Debt collector · 10+ reports',
                                'Коллекторы · 10+ жалоб'); default en

Outputs (as lookup build)
  -o, --output OUT              a database file, or a build directory (OUT/ or --split-by,
                                --max-entries)
  --split-by field|prefix       by --region-field (the latest complaint's region), or by
                                the number prefixes of --region-map
  --region-map FILE  --region-after SEP  --max-entries N  --dataset-version V
  --previous OLD                an earlier pack: count the numbers added, removed and
                                relabelled, per category
  --memory SIZE                 records beyond SIZE are sorted in runs on disk (default 1G)

Errors and output
  --errors FILE                 every rejected report as TSV: file, line, raw value, reason,
                                message
  --max-bad-rows N|P%           abort (exit 65, nothing written) beyond N bad rows or P%
                                (default 0); --skip-bad-rows: no limit
  --progress / --no-progress    progress on stderr (default: when stderr is a terminal)
  --json                        the summary as one JSON line
  --records FILE                write the reports as read (TSV: line, number, reporter hash,
                                time, verdict, region) instead of scoring them; the Spark job's
                                executors read their parts of a log with it (docs/SCALE.md)

Exit: 0 written, 64 usage, 65 bad rows past the limit, 66 missing input, 74 I/O error.

"""

private let reportsValued = [
    "-o", "--output", "--format", "--delimiter", "--encoding", "--header",
    "--number-field", "--reporter-field", "--time-field", "--category-field", "--country-field", "--region-field",
    "--country", "--numbering-plan", "--validity", "--number-rules", "--category-map", "--category",
    "--half-life", "--max-age", "--now", "--reporter-daily-cap", "--safe-weight", "--block-score", "--min-reporters",
    "--protect", "--label", "--protected-label", "--label-language",
    "--split-by", "--region-map", "--region-after", "--max-entries", "--dataset-version", "--previous", "--memory", "--block-size",
    "--errors", "--max-bad-rows", "--hidden-characters", "--records",
]
private let reportsFlags = ["--skip-bad-rows", "--json", "--progress", "--no-progress", "--raw-labels"]

func reportsCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(reportsHelp, terminator: "")
        return Exit.ok
    }
    let args = try Arguments(raw, command: "reports", valued: reportsValued, flags: reportsFlags)
    if let records = args.value("--records") { return try readRecords(args, to: records) }
    guard let output = args.value("-o", "--output") else { throw .usage("missing -o OUT", command: "reports") }
    guard !args.positionals.isEmpty else { throw .usage("no report logs given", command: "reports") }
    for input in args.positionals where input != "-" {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: input, isDirectory: &isDirectory), isDirectory.boolValue {
            throw .usage("input \(input) is a directory; give the files in it (\(OutputPath.withoutTrailingSlashes(input))/*.jsonl)", command: "reports")
        }
    }
    let options = try reportOptions(args)
    let started = Date()
    let build: ReportBuild
    do { build = try ReportBuild(options: options) } catch { throw toolError(error) }
    noteNumberRules(build.numberRulesFallback)
    let report = BuildReport(args: args, started: started, rows: "reports") { "scoring \($0) reports" }
    report.attach(to: build)
    let summary: ReportSummary
    do throws(PipelineError) {
        try build.checkOutput(output)
        build.prepare(output: output)
        for input in args.positionals { try build.add(file: input) }
        summary = try build.write(to: output, previous: args.value("--previous"))
    } catch {
        report.finish(build)
        throw toolError(error)
    }
    report.finish(build)
    let seconds = Date().timeIntervalSince(started)
    var out = Output()
    out.write(args.flag("--json") ? reportsJSON(summary, output: output, seconds: seconds) : reportsText(summary, output: output, seconds: seconds))
    out.flush()
    return Exit.ok
}

/// `lookup reports --records FILE LOGS...`: the reports read as `lookup reports` reads them (the
/// same fields, normalizer, reporter hash, times and verdicts; bad rows reported and counted as
/// always), written to FILE as TSV — line, number, reporter hash, time, verdict, region — instead
/// of scored. The Spark job's executors run it on their parts of a log (tools/spark,
/// docs/SCALE.md) and score the records in Spark. stdout: one JSON line of counts.
private func readRecords(_ args: Arguments, to path: String) throws(ToolError) -> Int32 {
    guard !args.positionals.isEmpty else { throw .usage("no report logs given", command: "reports") }
    let options = try reportOptions(args)
    let build: ReportBuild
    do { build = try ReportBuild(options: options) } catch { throw toolError(error) }
    noteNumberRules(build.numberRulesFallback)
    var records: [UInt8] = []
    build.onRecord = { r in
        records.append(contentsOf: "\(r.line)\t\(r.number)\t\(r.reporter)\t\(r.time)\t\(r.verdict)\t\(r.region)\n".utf8)
    }
    var shown = 0, warnings = 0
    build.onRejected = { row in
        shown += 1
        if shown <= 1000 { printError(row.description) }
    }
    build.onWarning = { w in
        warnings += 1
        if warnings <= 100 { printError(w.description) }
    }
    do throws(PipelineError) {
        for input in args.positionals { try build.add(file: input) }
    } catch {
        throw toolError(error)
    }
    do { try AtomicFileWriter.write(records, to: path) } catch {
        throw toolError(PipelineError(error))
    }
    let reasons = build.rejectedByReason.keys.sorted().map { "\(jsonQuote($0.rawValue)):\(build.rejectedByReason[$0]!)" }
    var out = Output()
    out.write("{\"reports\":\(build.rowsRead),\"bad_rows\":\(build.rowsRejected),\"rejected_by_reason\":{\(reasons.joined(separator: ","))}}\n")
    out.flush()
    return Exit.ok
}

/// `lookup reports`' options: the pipeline's (input, numbers, outputs, bad rows, memory), then the score's and the labels'.
private func reportOptions(_ args: Arguments) throws(ToolError) -> ReportOptions {
    func usage(_ m: String) -> ToolError { .usage(m, command: "reports") }
    var reader = try PipelineOptionReader(args, command: "reports")
    try reader.readInput()
    try reader.readFields()
    try reader.readNumbers()
    try reader.readLabels()
    try reader.readOutputs()
    try reader.readBadRowsAndBuild()
    var o = ReportOptions()
    o.input = reader.options
    if let f = args.value("--reporter-field") { o.reporterField = FieldSelector(f) }
    if let f = args.value("--time-field") { o.timeField = FieldSelector(f) }
    func days(_ name: String) throws(ToolError) -> Double? {
        guard let text = args.value(name) else { return nil }
        guard let d = parseDays(text) else { throw usage("\(name) takes a duration: days (90), or a number with d, w or h (90d, 12w, 36h)") }
        return d
    }
    func int(_ name: String, min: Int) throws(ToolError) -> Int? {
        guard let text = args.value(name) else { return nil }
        guard let n = Int(text), n >= min else { throw usage("\(name) must be an integer >= \(min)") }
        return n
    }
    func number(_ name: String) throws(ToolError) -> Double? {
        guard let text = args.value(name) else { return nil }
        guard let v = Double(text), v.isFinite, v >= 0 else { throw usage("\(name) must be a number >= 0") }
        return v
    }
    if let d = try days("--half-life") {
        guard d > 0 else { throw usage("--half-life must be more than 0") }
        o.halfLifeDays = d
    }
    if let d = try days("--max-age") {
        guard d >= 1, d <= 36_500 else { throw usage("--max-age must be 1 to 36500 days") }
        o.maxAgeDays = Int(d.rounded(.up))
    }
    if let text = args.value("--now") {
        guard let t = ReportBuild.parseTime(text) else { throw usage("--now takes RFC 3339 (2026-12-05T00:00:00Z) or Unix seconds") }
        o.now = t
    }
    if let n = try int("--reporter-daily-cap", min: 1) { o.reporterDailyCap = n }
    if let w = try number("--safe-weight") { o.safeWeight = w }
    if let s = try number("--block-score") {
        guard s > 0 else { throw usage("--block-score must be more than 0") }
        o.blockScore = s
    }
    if let n = try int("--min-reporters", min: 1) { o.minReporters = n }
    if let t = args.value("--label") { o.labelTemplate = t }
    if let t = args.value("--protected-label") { o.protectedLabelTemplate = t }
    if let l = args.value("--label-language") {
        guard let language = ReportLanguage(rawValue: l) else { throw usage("--label-language takes en or ru") }
        o.language = language
    }
    o.protect = args.values("--protect")
    return o
}

/// `90`, `90d`, `12w`, `36h` as days.
private func parseDays(_ text: String) -> Double? {
    var t = Substring(text.lowercased())
    var scale = 1.0
    if let unit = t.last, let s = ["d": 1.0, "w": 7.0, "h": 1.0 / 24][String(unit)] {
        scale = s
        t = t.dropLast()
    }
    guard let v = Double(t), v.isFinite, v >= 0 else { return nil }
    return v * scale
}

private func reportsJSON(_ s: ReportSummary, output: String, seconds: Double) -> String {
    func object(_ d: [String: Int]) -> String { "{" + d.keys.sorted().map { "\(jsonQuote($0)):\(d[$0]!)" }.joined(separator: ",") + "}" }
    let reasons = object(Dictionary(uniqueKeysWithValues: s.rejectedByReason.map { ($0.key.rawValue, $0.value) }))
    let files = s.pack.files.map { f in
        "{\"file\":\(jsonQuote(f.file)),\"region\":\(jsonQuote(f.region)),\"entries\":\(f.entries),\"bytes\":\(f.bytes),\"xxh3\":\"\(String(format: "%016llx", f.xxh3))\"}"
    }.joined(separator: ",")
    var previous = ""
    if let p = s.previous {
        previous = ",\"previous\":{\"added\":\(object(p.added)),\"removed\":\(object(p.removed)),\"relabelled\":\(object(p.relabelled)),\"unchanged\":\(p.unchanged)}"
    }
    return "{\"output\":\(jsonQuote(output)),\"directory\":\(s.pack.isDirectory),\"reports\":\(s.rowsRead),\"bad_rows\":\(s.rowsRejected),\"rejected_by_reason\":\(reasons),"
        + "\"now\":\(jsonQuote(ReportBuild.formatTime(s.now))),\"too_old\":\(s.reportsTooOld),\"in_future\":\(s.reportsInFuture),\"superseded\":\(s.reportsSuperseded),"
        + "\"capped_reporter_days\":\(s.cappedReporterDays),\"capped_reporters\":\(s.cappedReporters),\"numbers_scored\":\(s.numbersScored),"
        + "\"blocked\":\(s.blocked),\"blocked_by_category\":\(object(s.blockedByCategory)),\"protected_passed\":\(s.protectedPassed),"
        + "\"entries\":\(s.pack.entries),\"bytes\":\(s.pack.bytes),\"dataset_version\":\(jsonQuote(s.pack.datasetVersion)),\"files\":[\(files)]\(previous),"
        + "\"seconds\":\(String(format: "%.3f", seconds))}\n"
}

private func reportsText(_ s: ReportSummary, output: String, seconds: Double) -> String {
    var text = """
    wrote \(output)\(s.pack.isDirectory ? "\(output.hasSuffix("/") ? "" : "/") (\(s.pack.files.count) database\(s.pack.files.count == 1 ? "" : "s") and manifest.json)" : "")
      reports read        \(s.rowsRead)
      bad rows skipped    \(s.rowsRejected)
      scored as of        \(ReportBuild.formatTime(s.now))
      too old / future    \(s.reportsTooOld) / \(s.reportsInFuture)
      superseded          \(s.reportsSuperseded) (a later report of the same reporter and number)
      capped reporters    \(s.cappedReporters) (\(s.cappedReporterDays) reporter-days over the daily cap)
      numbers scored      \(s.numbersScored)
      numbers blocked     \(s.blocked)

    """
    for (category, n) in s.blockedByCategory.sorted(by: { $0.key < $1.key }) {
        text += "    \(column(category, width: 20)) \(String(n).leftPad(9))\n"
    }
    text += "  protected, passed   \(s.protectedPassed) (written as identification entries)\n"
    if let p = s.previous {
        func line(_ d: [String: Int]) -> String {
            let total = d.values.reduce(0, +)
            return d.isEmpty ? "0" : "\(total) (" + d.keys.sorted().map { "\($0) \(d[$0]!)" }.joined(separator: ", ") + ")"
        }
        text += "  against previous    added \(line(p.added)), removed \(line(p.removed)), relabelled \(line(p.relabelled)), unchanged \(p.unchanged)\n"
    }
    text += "  entries             \(s.pack.entries)\n  bytes               \(s.pack.bytes)\n  seconds             \(String(format: "%.2f", seconds))\n"
    return text
}
