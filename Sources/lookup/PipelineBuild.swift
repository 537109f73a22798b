import Foundation
import CallerID
import CallerIDQuery
import CallerIDPipeline
import CallerIDDirectory

/// Options of `lookup build` that take a value and turn on the pipeline.
let pipelineValued: [String] = [
    "--preset", "--format", "--delimiter", "--encoding", "--header",
    "--number-field", "--label-field", "--category-field", "--region-field", "--weight-field", "--country-field",
    "--range-end-field", "--number-prefix-field", "--pad-number",
    "--country", "--numbering-plan", "--validity", "--number-rules", "--label-replace", "--max-label-bytes", "--category-map", "--category",
    "--max-range-expansion", "--max-expanded-total", "--split-by", "--region-map", "--region-after", "--max-entries", "--top", "--max-bad-rows", "--errors",
    "--dataset-version", "--block-list",
]
let pipelineFlags: [String] = ["--progress", "--no-progress", "--keep-ranges", "--top-only"]

let pipelineBuildHelp = """

Directory pipeline (any of these options, or a .csv/.json/.jsonl input, turns it on):

Presets (the options given with one override it)
  --preset rossvyaz             the Russian numbering plan (Rossvyaz Kody_*.csv: windows-1251, ';',
                                code + 7-digit range, operator, region) as ranges in one database,
                                labelled 'operator, region'
  --preset rossvyaz-regions     the same files expanded into entries labelled with the operator, one
                                database per region (the text after '|'); ranges over
                                --max-range-expansion are bad rows (--skip-bad-rows or a higher limit)
Input
  --format tsv|csv|json|jsonl   default: from the file name (.csv .json .jsonl/.ndjson, else tsv)
  --delimiter C                 CSV field separator (default ','; 'tab' or '\\t' for a tab)
  --encoding E                  utf-8 (default; UTF-16 detected by BOM), utf-16, utf-16le, utf-16be,
                                windows-1251, windows-1252, iso-8859-1, koi8-r
  --header auto|yes|no          TSV/CSV header row (auto: yes when the number field has no digit)
  --number-field F  --label-field F  --category-field F  --weight-field F  --region-field F
  --country-field F             a column name / JSON key, or a 1-based position
                                (defaults: number|phone|…, label|name|…, category|type|…;
                                without a header: columns 1, 2, 3)
  --label-field F …             repeated: the label is the non-empty values joined with ', '
                                (--label-field 5 --label-field 6: 'operator, region')
  --range-end-field F           range rows: the number field is the first number, F the last
  --number-prefix-field F       digits put before the number and range end (an area code column)
  --pad-number N                left-pad the number and range end with zeros to N digits
Numbers
  --country XX                  ISO 3166 country for national forms (8 913…, 02-758…, 01454 …)
  --numbering-plan FILE.json    add or override country rules (see docs/PIPELINE.md); these
                                countries are read with the file's rules, not libphonenumber's
  --validity plausible|possible|valid|any
                                plausible (default): the length fits the country's numbers and
                                the national number has the shape of the country's numbers
                                (libphonenumber's number pattern: no +880 number starts with 0);
                                possible: the length only; valid: also in a range libphonenumber
                                knows as allocated; any: at most 15 digits with a calling code
  --number-rules auto|libphonenumber|table   what reads numbers: libphonenumber when it can
                                be loaded (auto, the default), or the built-in table only
  --keep-ranges                 store range rows as ranges (no expansion, no expansion limits; a
                                one-number row stays an entry); where ranges overlap, the narrowest
                                wins, then the later row; numbers without an entry answer the range
  --max-range-expansion N       largest range row expanded (default 1000); larger ones are rejected
  --max-expanded-total N        numbers all range rows may expand to (default 100000000, about
                                21-23 bytes of memory each); the row that passes it stops the build
Labels and categories
  --label-replace FROM=TO       replace text in labels (repeatable), e.g. '_= '
  --max-label-bytes N           cut longer labels on a character boundary (counted as warnings)
  --category-map FILE           lines 'VALUE = [NAME] identify|block'
  --category NAME               every row gets this category (e.g. spam for a block list)
Outputs (--split-by, --block-list separate, --max-entries and --top make -o a build directory)
  --split-by field|prefix       one database per region: by --region-field, or by the number
                                prefixes of --region-map (lines PREFIX<TAB>REGION, '*' = the rest)
  --region-map FILE             with --split-by field, lines VALUE<TAB>REGION rename regions
  --region-after SEP            with --split-by field, keep the text after the last SEP
                                ('Абакан |Республика Хакасия' → 'Республика Хакасия' with '|')
  --block-list combined|separate  separate: blocking entries in REGION-block.cid files
  --max-entries N               entries per database of a build directory at most (default 1999999,
                                the CallKit cap); larger lists become shards REGION-1.cid,
                                REGION-2.cid… Given, it makes -o a build directory; without it
                                (and without the options above), -o is one database file,
                                whatever its size
  --top N                       also write top.cid with the N heaviest entries (needs --weight-field)
  --top-only                    write only the top set: top.cid, or with --split-by one file per
                                region, the region's N heaviest under its own region name (a
                                starter set that a subscribed region replaces whole)
  --dataset-version V           stamped in manifest.json (default: a hash of the files)
Errors
  --errors FILE                 every rejected row as TSV: file, line, raw value, reason, message
  --max-bad-rows N|P%           abort (exit 65, nothing written) beyond N rejected rows or P% of
                                rows (default 0; --skip-bad-rows: no limit)
  --progress / --no-progress    progress on stderr (default: only when stderr is a terminal)

"""

/// True when `lookup build` is given more than plain TSV files: a pipeline option, a file of
/// another format, or a build directory to write. Without any, a bad row does not stop the
/// reading: every one is listed, then the build fails unless `--skip-bad-rows` is given.
func givesPipelineOptions(_ args: Arguments) -> Bool {
    if args.given.contains(where: { pipelineValued.contains($0) || pipelineFlags.contains($0) }) { return true }
    // `-o DIR/` or an existing directory asks for a build directory (manifest.json), which only
    // the pipeline writes.
    if let output = args.value("-o", "--output") {
        if output.hasSuffix("/") { return true }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory), isDirectory.boolValue { return true }
    }
    return args.positionals.contains { InputFormat.guess(path: $0) != .tsv }
}

func pipelineOptions(_ args: Arguments) throws(ToolError) -> PipelineOptions {
    var reader = try PipelineOptionReader(args)
    // The groups of --help, in its order (which also decides which of two bad options is named).
    try reader.readInput()
    try reader.readFields()
    try reader.readNumbers()
    try reader.readLabels()
    try reader.readOutputs()
    try reader.readBadRowsAndBuild()
    return reader.options
}

/// Turns `lookup build`'s options into ``PipelineOptions``: the preset's (or the defaults),
/// then each option given, group by group.
struct PipelineOptionReader {
    let args: Arguments
    /// The command whose options these are, named in usage errors.
    let command: String
    private(set) var options: PipelineOptions

    init(_ args: Arguments, command: String = "build") throws(ToolError) {
        self.args = args
        self.command = command
        options = PipelineOptions()
        if let name = args.value("--preset") {
            guard let preset = PipelinePreset(rawValue: name) else {
                throw usage("unknown preset '\(name)': use \(PipelinePreset.allCases.map(\.rawValue).joined(separator: " or "))")
            }
            options = preset.options
        }
    }

    private func usage(_ m: String) -> ToolError { .usage(m, command: command) }

    private func int(_ name: String, min: Int = 0) throws(ToolError) -> Int? {
        guard let v = args.value(name) else { return nil }
        guard let n = Int(v.replacingOccurrences(of: "_", with: "")), n >= min else { throw usage("\(name) must be an integer >= \(min)") }
        return n
    }

    /// `--format`, `--delimiter`, `--encoding`, `--header`.
    mutating func readInput() throws(ToolError) {
        if let f = args.value("--format") {
            switch f.lowercased() {
            case "tsv": options.format = .tsv
            case "csv": options.format = .csv(delimiter: UInt8(ascii: ","))
            case "json": options.format = .json
            case "jsonl", "ndjson", "json-lines": options.format = .jsonLines
            default: throw usage("--format must be tsv, csv, json or jsonl")
            }
        }
        if let d = args.value("--delimiter") {
            let byte: UInt8
            switch d {
            case "tab", "\\t", "\t": byte = 0x09
            default:
                guard d.utf8.count == 1, let b = d.utf8.first, b != 0x22, b != 0x0A, b != 0x0D else {
                    throw usage("--delimiter must be one ASCII character (or 'tab')")
                }
                byte = b
            }
            // CSV from --format csv (always ',' until here) or from a preset.
            switch options.format {
            case nil, .csv?: options.format = .csv(delimiter: byte)
            default: throw usage("--delimiter applies to CSV input")
            }
        }
        if let e = args.value("--encoding") {
            guard let enc = TextEncoding.named(e) else {
                throw usage("unknown encoding '\(e)': use one of \(TextEncoding.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            options.encoding = enc
        }
        if let h = args.value("--header") {
            switch h.lowercased() {
            case "auto": options.header = .auto
            case "yes", "true", "1": options.header = .present
            case "no", "false", "0": options.header = .absent
            default: throw usage("--header must be auto, yes or no")
            }
        }
    }

    /// The fields, `--keep-ranges` and `--pad-number`. A field given replaces the preset's (the
    /// label fields all together).
    mutating func readFields() throws(ToolError) {
        func field(_ name: String, _ slot: inout FieldSelector?) {
            if let v = args.value(name) { slot = FieldSelector(v) }
        }
        field("--number-field", &options.numberField)
        let labelFields = args.values("--label-field").map(FieldSelector.init)
        if !labelFields.isEmpty {
            options.labelField = labelFields.first
            options.additionalLabelFields = Array(labelFields.dropFirst())
        }
        if args.flag("--keep-ranges") { options.keepRanges = true }
        field("--category-field", &options.categoryField)
        field("--region-field", &options.regionField)
        field("--weight-field", &options.weightField)
        field("--country-field", &options.countryField)
        field("--range-end-field", &options.rangeEndField)
        field("--number-prefix-field", &options.numberPrefixField)
        if let n = try int("--pad-number", min: 1) { options.padNumber = n }
    }

    /// The files read with the options (numbering plan, category map, region map), then
    /// `--validity`, `--number-rules` and `--country` (checked against the plan).
    mutating func readNumbers() throws(ToolError) {
        do throws(PipelineError) {
            if let plan = args.value("--numbering-plan") { options.numberingPlan = try options.numberingPlan.adding(contentsOf: plan) }
            if let map = args.value("--category-map") { options.categories = try CategoryMap(contentsOf: map) }
            if let map = args.value("--region-map") { options.regionMap = try RegionMap(contentsOf: map) }
        } catch {
            throw toolError(error)
        }
        if let v = args.value("--validity") {
            guard let validity = NumberValidity(rawValue: v) else { throw usage("--validity takes plausible, possible, valid or any, not '\(v)'") }
            options.validity = validity
        }
        switch args.value("--number-rules") {
        case nil: break
        case "auto": options.numberRules = .automatic
        case "libphonenumber": options.numberRules = .libphonenumber
        case "table": options.numberRules = .builtInTable
        case let other?: throw usage("--number-rules takes auto, libphonenumber or table, not '\(other)'")
        }
        if let c = args.value("--country") {
            guard options.numberingPlan.callingCode(country: c) != nil else {
                throw usage("--country: unknown country '\(c)' (use an ISO 3166 alpha-2 code such as RU, US, KR)")
            }
            options.country = c.uppercased()
        }
    }

    /// `--label-replace`, `--max-label-bytes`, `--hidden-characters`, `--category` (through the
    /// category map).
    mutating func readLabels() throws(ToolError) {
        for r in args.values("--label-replace") {
            guard let pair = LabelCleaner.parseReplacement(r) else { throw usage("--label-replace takes FROM=TO, like '_= '") }
            options.labels.replacements.append(pair)
        }
        if let n = try int("--max-label-bytes", min: 1) { options.labels.maxBytes = n }
        options.labels.hiddenCharacters = try hiddenCharactersOption(args)
        options.buildOptions.hiddenCharacters = options.labels.hiddenCharacters
        if let c = args.value("--category") {
            do { options.fixedCategory = try options.categories.category(for: c) } catch { throw usage("--category: \(error.message)") }
        }
    }

    /// The range limits and what is written: `--split-by`, `--region-after`, `--block-list`,
    /// `--max-entries`, `--top`.
    mutating func readOutputs() throws(ToolError) {
        if let n = try int("--max-range-expansion", min: 1) { options.maxRangeExpansion = n }
        if let n = try int("--max-expanded-total", min: 1) { options.maxExpandedTotal = n }
        if let s = args.value("--split-by") {
            switch s {
            case "field", "region-field", "region": options.split = .field
            case "prefix": options.split = .prefix
            default: throw usage("--split-by must be field or prefix")
            }
            if options.split == .field && options.regionField == nil { throw usage("--split-by field needs --region-field") }
            if options.split == .prefix && args.value("--region-map") == nil { throw usage("--split-by prefix needs --region-map FILE") }
        }
        if let sep = args.value("--region-after") { options.regionAfter = sep }
        if let b = args.value("--block-list") {
            switch b {
            case "combined": options.blockList = .combined
            case "separate": options.blockList = .separate
            default: throw usage("--block-list must be combined or separate")
            }
        }
        if let n = try int("--max-entries", min: 1) { options.maxEntries = n }
        if let n = try int("--top", min: 1) {
            guard options.weightField != nil else { throw usage("--top needs --weight-field") }
            guard n <= options.entriesPerDatabase else { throw usage("--top \(n) is more than --max-entries \(options.entriesPerDatabase)") }
            options.top = n
        }
        if args.flag("--top-only") {
            guard options.top != nil else { throw usage("--top-only needs --top N") }
            options.topOnly = true
        }
    }

    /// The bad-row limit, `--dataset-version` and the database's own options.
    mutating func readBadRowsAndBuild() throws(ToolError) {
        if args.flag("--skip-bad-rows") { options.maxBadRows = .unlimited }
        if let m = args.value("--max-bad-rows") {
            guard let limit = BadRowLimit(m) else { throw usage("--max-bad-rows takes a count (100) or a percentage (0.5%)") }
            if args.flag("--skip-bad-rows") { throw usage("give --skip-bad-rows or --max-bad-rows, not both") }
            options.maxBadRows = limit
        }
        options.datasetVersion = args.value("--dataset-version")
        if let bs = args.value("--block-size") {
            guard let n = parseBlockSize(bs) else { throw usage(blockSizeUsage) }
            options.buildOptions.blockSize = n
        }
        options.buildOptions.compressLabels = !args.flag("--raw-labels")
        if let coding = args.value("--labels") {
            guard let c = LabelCoding(rawValue: coding) else { throw usage("--labels takes auto, lz4 or symbols") }
            options.buildOptions.labelCoding = c
        }
        options.buildOptions.memoryLimit = try buildMemory(args)
    }
}

/// The summary of a build's bad rows on stderr: a count per reason, most
/// frequent first, then the total against the rows read.
func printRejectedRows(byReason counts: [(reason: String, count: Int)], rejected: Int, rows: Int, stoppedEarly: Bool = false) {
    printError("rejected rows by reason:")
    for (reason, n) in counts.sorted(by: { $0.count != $1.count ? $0.count > $1.count : $0.reason < $1.reason }) {
        printError("  \(String(n).leftPad(8))  \(reason)")
    }
    // A build stopped by --max-bad-rows read only part of its input: say so rather than
    // give a share of a total it never counted.
    let bad = "\(rejected) bad row\(rejected == 1 ? "" : "s")"
    printError(stoppedEarly
        ? "\(bad) in the first \(rows) row\(rows == 1 ? "" : "s") read (stopped at the --max-bad-rows limit; the rest was not read)"
        : "\(bad) of \(rows)")
}

func pipelineBuild(_ args: Arguments, output: String) throws(ToolError) -> Int32 {
    var options = try pipelineOptions(args)
    // Plain TSV files and no pipeline option: every line is a row (no header), and every bad
    // row is listed before the build fails.
    let plain = !givesPipelineOptions(args)
    if plain { options.header = .absent }
    let listsEveryBadRow = plain && !args.flag("--skip-bad-rows")
    if listsEveryBadRow { options.maxBadRows = .unlimited }
    let started = Date()
    let pipeline = try makePipeline(options, output: output)
    noteNumberRules(pipeline.numberRulesFallback)
    let report = BuildReport(args: args, started: started)
    report.attach(to: pipeline)
    let summary: PipelineSummary
    // What -o must be (a directory for a build directory, else not one) is known before reading.
    do { try pipeline.checkOutput(output) } catch { throw toolError(error) }
    pipeline.prepare(output: output)
    do throws(PipelineError) {
        for input in args.positionals { try pipeline.add(file: input) }
        if listsEveryBadRow && pipeline.rowsRejected > 0 {
            let n = pipeline.rowsRejected
            throw PipelineError(.tooManyBadRows, "\(n) bad row\(n == 1 ? "" : "s"); nothing written (use --skip-bad-rows to build from the good rows)")
        }
        summary = try pipeline.write(to: output)
    } catch {
        report.progress.clear()
        pipeline.reportNationalForms()
        // The count limit throws while reading; the percentage limit only after every row is read.
        var stoppedEarly = false
        if error.code == .tooManyBadRows, case .count = options.maxBadRows { stoppedEarly = true }
        report.finish(pipeline, stoppedEarly: stoppedEarly)
        throw toolError(error)
    }
    report.finish(pipeline)

    let seconds = Date().timeIntervalSince(started)
    var out = Output()
    out.write(args.flag("--json") ? summaryJSON(summary, output: output, seconds: seconds)
                                  : summaryText(summary, output: output, seconds: seconds))
    out.flush()
    return Exit.ok
}

/// Says on stderr, once per run, that numbers are read with the built-in table because
/// libphonenumber could not be loaded: the table refuses some valid numbers libphonenumber takes.
func noteNumberRules(_ fallback: String?) {
    guard let fallback else { return }
    printError("note: numbers are read with the built-in table, not libphonenumber, which refuses some valid numbers: \(fallback)")
}

/// The pipeline of a build, with the test seams of the environment, after putting back the
/// output a killed build may have left switched out.
private func makePipeline(_ options: PipelineOptions, output: String) throws(ToolError) -> Pipeline {
    let pipeline: Pipeline
    do { pipeline = try Pipeline(options: options) } catch { throw toolError(error) }
    // A build killed while switching directories: the previous output back first, so that even
    // a run that fails leaves one in place.
    Pipeline.recoverInterruptedOutput(at: output)
    let environment = ProcessInfo.processInfo.environment
    if let step = environment["LOOKUP_TEST_KILL_AT"] {
        // Test seam (crash safety tests): die as SIGKILL would at this step of the switch.
        pipeline.switchHook = { if $0 == step { killCurrentProcessForTesting() } }
    }
    if environment["LOOKUP_TEST_NO_EXCHANGE"] != nil { pipeline.allowDirectoryExchange = false }
    return pipeline
}

/// A run that reads rows and reports them as it goes: `lookup build`'s pipeline and `lookup
/// reports`' build.
protocol RowRun: AnyObject {
    var onRejected: (RejectedRow) -> Void { get set }
    var onWarning: (RowWarning) -> Void { get set }
    var onProgress: (PipelineProgress) -> Void { get set }
    var rowsRead: Int { get }
    var rowsRejected: Int { get }
    var rejectedByReason: [RejectReason: Int] { get }
    var warningsByKind: [WarningKind: Int] { get }
}

extension RowRun {
    var warningsByKind: [WarningKind: Int] { [:] }
}

extension Pipeline: RowRun {}
extension ReportBuild: RowRun {}

/// What a build tells its user while it runs and when it ends: rejected rows and warnings on
/// stderr (the first 1,000 and 100), all rejected rows in the `--errors` file, progress.
/// The run's callbacks hold this object, never the run (that would be a cycle).
final class BuildReport {
    let progress: ProgressLine
    let started: Date
    let errorsPath: String?
    /// What a row is called ("rows", "reports") and what the sort does ("sorting", "scoring").
    private let rows: String, sorting: (Int) -> String
    static let rejectedShown = 1000, warningsShown = 100
    private var errorsOut: [UInt8] = Array(RejectedRow.errorsFileHeader.utf8)
    private var rejected = 0
    private var warnings = 0
    private var lastFile: String? = nil

    init(args: Arguments, started: Date, rows: String = "rows", sorting: @escaping (Int) -> String = { "sorting \($0) numbers" }) {
        progress = ProgressLine(enabled: args.flag("--progress") || (stderrIsTTY && !args.flag("--no-progress")))
        self.started = started
        errorsPath = args.value("--errors")
        (self.rows, self.sorting) = (rows, sorting)
    }

    func attach(to run: some RowRun) {
        run.onRejected = { [self] row in
            rejected += 1
            if rejected <= Self.rejectedShown { progress.printLine(row.description) }
            if errorsPath != nil {
                errorsOut.append(contentsOf: row.errorsFileLine.utf8)
            }
        }
        run.onWarning = { [self] w in
            warnings += 1
            if warnings <= Self.warningsShown { progress.printLine(w.description) }
        }
        if progress.enabled { run.onProgress = { [self] in show($0) } }
    }

    private func show(_ p: PipelineProgress) {
        switch p.phase {
        case .reading:
            let seconds = max(Date().timeIntervalSince(started), 0.001)
            let percent = p.totalBytes.map { $0 > 0 ? String(format: "%3.0f%%", Double(p.bytesRead) * 100 / Double($0)) : "100%" } ?? "    "
            let text = "\(p.file): \(percent)  \(p.rowsRead) \(rows)  \(Int(Double(p.rowsRead) / seconds)) \(rows)/s"
            if p.file != lastFile { progress.phase(text) } else { progress.update(text) }
            lastFile = p.file
        case .sorting:
            progress.phase(sorting(p.count))
        case .writing:
            progress.phase("writing \(p.file) (\(p.fileIndex) of \(p.fileCount))")
        }
    }

    /// The end of a run, failed or not: progress cleared, what was not shown counted, the bad
    /// rows by reason and the warnings by kind, the errors file written.
    func finish(_ run: some RowRun, stoppedEarly: Bool = false) {
        progress.clear()
        let shown = Self.rejectedShown
        if run.rowsRejected > shown { printError("(\(run.rowsRejected - shown) more rejected \(rows) not shown\(errorsPath == nil ? "; --errors FILE lists them all" : ""))") }
        if warnings > Self.warningsShown { printError("(\(warnings - Self.warningsShown) more warnings not shown)") }
        if run.rowsRejected > 0 {
            printRejectedRows(byReason: run.rejectedByReason.map { ($0.key.rawValue, $0.value) }, rejected: run.rowsRejected,
                              rows: run.rowsRead, stoppedEarly: stoppedEarly)
        }
        if !run.warningsByKind.isEmpty {
            printError("warnings: " + run.warningsByKind.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))
        }
        guard let errorsPath else { return }
        // The core's writer: through a symlink to its target, in place to a FIFO or device.
        do {
            try AtomicFileWriter.write(errorsOut, to: errorsPath)
        } catch {
            printError("error: \(errorsPath): cannot write the errors file: \(error.message)")
        }
    }
}

/// Bytes per entry of the databases written (top.cid left out: its entries are counted twice).
private func bytesPerEntry(_ summary: PipelineSummary) -> Double {
    summary.entries == 0 ? 0 : Double(summary.files.filter { $0.kind != "top" }.reduce(0) { $0 + $1.bytes }) / Double(summary.entries)
}

/// The summary of a build for `--json`: one line.
private func summaryJSON(_ summary: PipelineSummary, output: String, seconds: Double) -> String {
    let reasons = summary.rejectedByReason.keys.sorted().map { "\(jsonQuote($0.rawValue)):\(summary.rejectedByReason[$0]!)" }.joined(separator: ",")
    let warnings = summary.warningsByKind.keys.sorted().map { "\(jsonQuote($0.rawValue)):\(summary.warningsByKind[$0]!)" }.joined(separator: ",")
    let files = summary.files.map { f in
        "{\"file\":\(jsonQuote(f.file)),\"region\":\(jsonQuote(f.region)),\"kind\":\(jsonQuote(f.kind)),\"shard\":\(f.shard),\"entries\":\(f.entries),\"bytes\":\(f.bytes),\"xxh3\":\"\(String(format: "%016llx", f.xxh3))\"}"
    }.joined(separator: ",")
    return "{\"output\":\(jsonQuote(output)),\"directory\":\(summary.isDirectory),\"rows\":\(summary.rowsRead),\"entries\":\(summary.entries),\"duplicates_merged\":\(summary.duplicatesMerged),\"bad_rows\":\(summary.rowsRejected),\"distinct_labels\":\(summary.distinctLabels),\"bytes\":\(summary.bytes),\"bytes_per_entry\":\(String(format: "%.3f", bytesPerEntry(summary))),\"range_rows\":\(summary.rangeRows),\"range_numbers\":\(summary.rangeNumbers),\"ranges_kept\":\(summary.rangesKept),\"rejected_by_reason\":{\(reasons)},\"warnings\":{\(warnings)},\"dataset_version\":\(jsonQuote(summary.datasetVersion)),\"files\":[\(files)],\"seconds\":\(String(format: "%.3f", seconds))}\n"
}

/// The summary of a build for people.
private func summaryText(_ summary: PipelineSummary, output: String, seconds: Double) -> String {
    var text = """
    wrote \(output)\(summary.isDirectory ? "\(output.hasSuffix("/") ? "" : "/") (\(summary.files.count) database\(summary.files.count == 1 ? "" : "s") and manifest.json)" : "")
      rows read          \(summary.rowsRead)
      entries            \(summary.entries)
      duplicates merged  \(summary.duplicatesMerged)
      bad rows skipped   \(summary.rowsRejected)
      distinct labels    \(summary.distinctLabels)
      bytes              \(summary.bytes)
      bytes/entry        \(String(format: "%.2f", bytesPerEntry(summary)))
      seconds            \(String(format: "%.2f", seconds))

    """
    if summary.rangeRows > 0 { text += "  range rows         \(summary.rangeRows) (\(summary.rangeNumbers) numbers)\n" }
    if summary.rangesKept > 0 { text += "  ranges kept        \(summary.rangesKept)\n" }
    if summary.isDirectory {
        for f in summary.files {
            text += "  \(column(f.file, width: 28)) \(String(f.entries).leftPad(9)) entries \(String(f.bytes).leftPad(10)) bytes  \(String(format: "%016llx", f.xxh3))\n"
        }
    }
    return text
}

/// What reads numbers in this process, for `lookup --version`: libphonenumber and the file it
/// was loaded from, or the built-in table and why libphonenumber could not be loaded.
func numberRulesInUse() -> String {
    switch PhoneNumberLibrary.shared {
    case .success(let library): "libphonenumber (\(library.path))"
    case .failure(let error): "built-in table (\(error.message))"
    }
}

// MARK: join

let joinHelp = """
usage: lookup join -o OUT PART_DIR... [--dataset-version V] [--json]

Joins build directories written apart, one or more regions each (lookup build of one
region's rows into PART/, run once per region on the machines of a cluster: tools/spark/),
into the build directory OUT: their databases side by side and one manifest.json, the one a
single lookup build of all their rows writes (files in region order; dataset_version a hash
of the files unless given; build_time honours SOURCE_DATE_EPOCH). Each database is checked
against its part's manifest (size, XXH3, SHA-256) as it is copied. OUT is switched in whole,
as lookup build switches a build directory: a failed join leaves it as it was. Sign the
result with lookup sign. Exit 65 when two parts hold the same file or a file is not its
manifest's, 66 when a part is missing, 74 on an I/O error.

  -o, --output OUT       the build directory to write
  --dataset-version V    stamped in manifest.json (default: a hash of the files)
  --json                 print the summary as JSON

"""

func joinCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(joinHelp, terminator: "")
        return Exit.ok
    }
    let args = try Arguments(raw, command: "join", valued: ["-o", "--output", "--dataset-version"], flags: ["--json"])
    guard let output = args.value("-o", "--output") else { throw .usage("missing -o OUT", command: "join") }
    guard !args.positionals.isEmpty else { throw .usage("no build directories to join", command: "join") }
    let manifest: DirectoryManifest
    do {
        Pipeline.recoverInterruptedOutput(at: output)
        manifest = try Pipeline.join(args.positionals, to: output, datasetVersion: args.value("--dataset-version"))
    } catch {
        throw toolError(error)
    }
    var out = Output()
    let entries = manifest.files.reduce(0) { $0 + ($1.entries ?? 0) }
    if args.flag("--json") {
        out.write("{\"output\":\(jsonQuote(output)),\"files\":\(manifest.files.count),\"entries\":\(entries),\"dataset_version\":\(jsonQuote(manifest.datasetVersion ?? ""))}\n")
    } else {
        out.write("joined \(args.positionals.count) build director\(args.positionals.count == 1 ? "y" : "ies") into \(output) (\(manifest.files.count) databases, \(entries) entries, manifest.json)\n")
    }
    out.flush()
    return Exit.ok
}
