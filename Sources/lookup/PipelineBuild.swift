import Foundation
import CallerID
import CallerIDPipeline

/// Options of `lookup build` that take a value and turn on the pipeline.
let pipelineValued: [String] = [
    "--preset", "--format", "--delimiter", "--encoding", "--header",
    "--number-field", "--label-field", "--category-field", "--region-field", "--weight-field", "--country-field",
    "--range-end-field", "--number-prefix-field", "--pad-number",
    "--country", "--numbering-plan", "--validity", "--number-rules", "--label-replace", "--max-label-bytes", "--category-map", "--category",
    "--max-range-expansion", "--max-expanded-total", "--split-by", "--region-map", "--region-after", "--max-entries", "--top", "--max-bad-rows", "--errors",
    "--dataset-version", "--block-list",
]
let pipelineFlags: [String] = ["--progress", "--no-progress", "--keep-ranges"]

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
  --validity possible|valid|any possible (default): the length fits the country's numbers;
                                valid: also in a range libphonenumber knows as allocated;
                                any: any number of at most 15 digits with a calling code
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
Outputs (-o names a directory when there are several)
  --split-by field|prefix       one database per region: by --region-field, or by the number
                                prefixes of --region-map (lines PREFIX<TAB>REGION, '*' = the rest)
  --region-map FILE             with --split-by field, lines VALUE<TAB>REGION rename regions
  --region-after SEP            with --split-by field, keep the text after the last SEP
                                ('Абакан |Республика Хакасия' → 'Республика Хакасия' with '|')
  --block-list combined|separate  separate: blocking entries in REGION-block.cid files
  --max-entries N               entries per database at most (default 1999999, the CallKit cap);
                                larger outputs become shards REGION-1.cid, REGION-2.cid…
  --top N                       also write top.cid with the N heaviest entries (needs --weight-field)
  --dataset-version V           stamped in manifest.json (default: a hash of the files)
Errors
  --errors FILE                 every rejected row as TSV: file, line, raw value, reason, message
  --max-bad-rows N|P%           abort (exit 65, nothing written) beyond N rejected rows or P% of
                                rows (default 0; --skip-bad-rows: no limit)
  --progress / --no-progress    progress on stderr (default: only when stderr is a terminal)

"""

/// True when `lookup build` should run the pipeline rather than the plain TSV import.
func wantsPipeline(_ args: Arguments) -> Bool {
    if args.given.contains(where: { pipelineValued.contains($0) || pipelineFlags.contains($0) }) { return true }
    // `-o DIR/` asks for a build directory (manifest.json), which only the pipeline writes.
    if let output = args.value("-o", "--output"), output.hasSuffix("/") { return true }
    return args.positionals.contains { InputFormat.guess(path: $0) != .tsv }
}

func pipelineExitCode(_ error: PipelineError) -> Int32 {
    switch error.code {
    case .fileNotFound: Exit.noInput
    case .io, .fileChanged: Exit.ioError
    case .invalidConfiguration: Exit.usage
    default: Exit.dataError
    }
}

func pipelineOptions(_ args: Arguments) throws(ToolError) -> PipelineOptions {
    func usage(_ m: String) -> ToolError { .usage(m, command: "build") }
    var o = PipelineOptions()
    if let name = args.value("--preset") {
        guard let preset = PipelinePreset(rawValue: name) else {
            throw usage("unknown preset '\(name)': use \(PipelinePreset.allCases.map(\.rawValue).joined(separator: " or "))")
        }
        o = preset.options
    }
    func int(_ name: String, min: Int = 0) throws(ToolError) -> Int? {
        guard let v = args.value(name) else { return nil }
        guard let n = Int(v.replacingOccurrences(of: "_", with: "")), n >= min else { throw usage("\(name) must be an integer >= \(min)") }
        return n
    }
    if let f = args.value("--format") {
        switch f.lowercased() {
        case "tsv": o.format = .tsv
        case "csv": o.format = .csv(delimiter: UInt8(ascii: ","))
        case "json": o.format = .json
        case "jsonl", "ndjson", "json-lines": o.format = .jsonLines
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
        switch o.format {
        case nil, .csv?: o.format = .csv(delimiter: byte)
        default: throw usage("--delimiter applies to CSV input")
        }
    }
    if let e = args.value("--encoding") {
        guard let enc = TextEncoding.named(e) else {
            throw usage("unknown encoding '\(e)': use one of \(TextEncoding.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        o.encoding = enc
    }
    if let h = args.value("--header") {
        switch h.lowercased() {
        case "auto": o.header = .auto
        case "yes", "true", "1": o.header = .present
        case "no", "false", "0": o.header = .absent
        default: throw usage("--header must be auto, yes or no")
        }
    }
    // A field given replaces the preset's (the label fields all together).
    func field(_ name: String, _ slot: inout FieldSelector?) {
        if let v = args.value(name) { slot = FieldSelector(v) }
    }
    field("--number-field", &o.numberField)
    let labelFields = args.values("--label-field").map(FieldSelector.init)
    if !labelFields.isEmpty {
        o.labelField = labelFields.first
        o.additionalLabelFields = Array(labelFields.dropFirst())
    }
    if args.flag("--keep-ranges") { o.keepRanges = true }
    field("--category-field", &o.categoryField)
    field("--region-field", &o.regionField)
    field("--weight-field", &o.weightField)
    field("--country-field", &o.countryField)
    field("--range-end-field", &o.rangeEndField)
    field("--number-prefix-field", &o.numberPrefixField)
    if let n = try int("--pad-number", min: 1) { o.padNumber = n }
    do throws(PipelineError) {
        if let plan = args.value("--numbering-plan") { o.numberingPlan = try o.numberingPlan.adding(contentsOf: plan) }
        if let map = args.value("--category-map") { o.categories = try CategoryMap(contentsOf: map) }
        if let map = args.value("--region-map") { o.regionMap = try RegionMap(contentsOf: map) }
    } catch {
        throw ToolError(code: pipelineExitCode(error), message: error.message)
    }
    if let v = args.value("--validity") {
        guard let validity = NumberValidity(rawValue: v) else { throw usage("--validity takes possible, valid or any, not '\(v)'") }
        o.validity = validity
    }
    switch args.value("--number-rules") {
    case nil: break
    case "auto": o.numberRules = .automatic
    case "libphonenumber": o.numberRules = .libphonenumber
    case "table": o.numberRules = .builtInTable
    case let other?: throw usage("--number-rules takes auto, libphonenumber or table, not '\(other)'")
    }
    if let c = args.value("--country") {
        guard o.numberingPlan.callingCode(country: c) != nil else {
            throw usage("--country: unknown country '\(c)' (use an ISO 3166 alpha-2 code such as RU, US, KR)")
        }
        o.country = c.uppercased()
    }
    for r in args.values("--label-replace") {
        guard let pair = LabelCleaner.parseReplacement(r) else { throw usage("--label-replace takes FROM=TO, like '_= '") }
        o.labels.replacements.append(pair)
    }
    if let n = try int("--max-label-bytes", min: 1) { o.labels.maxBytes = n }
    if let c = args.value("--category") {
        do { o.fixedCategory = try o.categories.category(for: c) } catch { throw usage("--category: \(error.message)") }
    }
    if let n = try int("--max-range-expansion", min: 1) { o.maxRangeExpansion = n }
    if let n = try int("--max-expanded-total", min: 1) { o.maxExpandedTotal = n }
    if let s = args.value("--split-by") {
        switch s {
        case "field", "region-field", "region": o.split = .field
        case "prefix": o.split = .prefix
        default: throw usage("--split-by must be field or prefix")
        }
        if o.split == .field && o.regionField == nil { throw usage("--split-by field needs --region-field") }
        if o.split == .prefix && args.value("--region-map") == nil { throw usage("--split-by prefix needs --region-map FILE") }
    }
    if let sep = args.value("--region-after") { o.regionAfter = sep }
    if let b = args.value("--block-list") {
        switch b {
        case "combined": o.blockList = .combined
        case "separate": o.blockList = .separate
        default: throw usage("--block-list must be combined or separate")
        }
    }
    if let n = try int("--max-entries", min: 1) { o.maxEntries = n }
    if let n = try int("--top", min: 1) {
        guard o.weightField != nil else { throw usage("--top needs --weight-field") }
        guard n <= o.maxEntries else { throw usage("--top \(n) is more than --max-entries \(o.maxEntries)") }
        o.top = n
    }
    if args.flag("--skip-bad-rows") { o.maxBadRows = .unlimited }
    if let m = args.value("--max-bad-rows") {
        guard let limit = BadRowLimit(m) else { throw usage("--max-bad-rows takes a count (100) or a percentage (0.5%)") }
        if args.flag("--skip-bad-rows") { throw usage("give --skip-bad-rows or --max-bad-rows, not both") }
        o.maxBadRows = limit
    }
    o.datasetVersion = args.value("--dataset-version")
    if let bs = args.value("--block-size") {
        guard let n = parseBlockSize(bs) else { throw usage(blockSizeUsage) }
        o.buildOptions.blockSize = n
    }
    o.buildOptions.compressLabels = !args.flag("--raw-labels")
    return o
}

/// Escapes a value for one TSV cell.
func tsvCell(_ s: String) -> String {
    var out = ""
    for c in s.unicodeScalars {
        switch c {
        case "\t": out += "\\t"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\\": out += "\\\\"
        default: out.unicodeScalars.append(c)
        }
    }
    return out
}

func pipelineBuild(_ args: Arguments, output: String) throws(ToolError) -> Int32 {
    let options = try pipelineOptions(args)
    let started = Date()
    let pipeline: Pipeline
    do { pipeline = try Pipeline(options: options) } catch { throw ToolError(code: pipelineExitCode(error), message: error.message) }
    // A build killed while switching directories: the previous output back first, so that even
    // a run that fails leaves one in place.
    Pipeline.recoverInterruptedOutput(at: output)
    let environment = ProcessInfo.processInfo.environment
    if let step = environment["LOOKUP_TEST_KILL_AT"] {
        // Test seam (crash safety tests): die as SIGKILL would at this step of the switch.
        pipeline.switchHook = { if $0 == step { killCurrentProcessForTesting() } }
    }
    if environment["LOOKUP_TEST_NO_EXCHANGE"] != nil { pipeline.allowDirectoryExchange = false }

    let progress = ProgressLine(enabled: args.flag("--progress") || (stderrIsTTY && !args.flag("--no-progress")))
    let shown = 1000
    var errorsOut: [UInt8] = Array("file\tline\traw\treason\tmessage\n".utf8)
    let errorsPath = args.value("--errors")
    // The callbacks count for themselves: capturing `pipeline` here would be a retain cycle.
    var rejected = 0
    pipeline.onRejected = { row in
        rejected += 1
        if rejected <= shown { progress.printLine(row.description) }
        if errorsPath != nil {
            errorsOut.append(contentsOf: "\(tsvCell(row.file))\t\(row.line)\t\(tsvCell(row.raw))\t\(row.reason)\t\(tsvCell(row.message))\n".utf8)
        }
    }
    var warningsShown = 0
    pipeline.onWarning = { w in
        warningsShown += 1
        if warningsShown <= 100 { progress.printLine(w.description) }
    }
    if progress.enabled {
        var lastFile: String? = nil
        pipeline.onProgress = { p in
            switch p.phase {
            case .reading:
                let seconds = max(Date().timeIntervalSince(started), 0.001)
                let percent = p.totalBytes.map { $0 > 0 ? String(format: "%3.0f%%", Double(p.bytesRead) * 100 / Double($0)) : "100%" } ?? "    "
                let text = "\(p.file): \(percent)  \(p.rowsRead) rows  \(Int(Double(p.rowsRead) / seconds)) rows/s"
                if p.file != lastFile { progress.phase(text) } else { progress.update(text) }
                lastFile = p.file
            case .sorting:
                progress.phase("sorting \(p.count) numbers")
            case .writing:
                progress.phase("writing \(p.file) (\(p.fileIndex) of \(p.fileCount))")
            }
        }
    }
    func writeErrorsFile() {
        guard let errorsPath else { return }
        // The core's writer: through a symlink to its target, in place to a FIFO or device.
        do {
            try AtomicFileWriter.write(errorsOut, to: errorsPath)
        } catch {
            printError("error: \(errorsPath): cannot write the errors file: \(error.message)")
        }
    }
    func reportReasons(stoppedEarly: Bool = false) {
        if pipeline.rowsRejected > shown { printError("(\(pipeline.rowsRejected - shown) more rejected rows not shown\(errorsPath == nil ? "; --errors FILE lists them all" : ""))") }
        if warningsShown > 100 { printError("(\(warningsShown - 100) more warnings not shown)") }
        if pipeline.rowsRejected > 0 {
            printError("rejected rows by reason:")
            for (reason, n) in pipeline.rejectedByReason.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }) {
                printError("  \(String(n).leftPad(8))  \(reason)")
            }
            // A build stopped by --max-bad-rows read only part of its input: say so rather than
            // give a share of a total it never counted.
            let rows = "\(pipeline.rowsRejected) bad row\(pipeline.rowsRejected == 1 ? "" : "s")"
            printError(stoppedEarly
                ? "\(rows) in the first \(pipeline.rowsRead) row\(pipeline.rowsRead == 1 ? "" : "s") read (stopped at the --max-bad-rows limit; the rest was not read)"
                : "\(rows) of \(pipeline.rowsRead)")
        }
        if !pipeline.warningsByKind.isEmpty {
            printError("warnings: " + pipeline.warningsByKind.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))
        }
    }

    let summary: PipelineSummary
    do {
        for input in args.positionals { try pipeline.add(file: input) }
        summary = try pipeline.write(to: output)
        progress.clear()
    } catch {
        progress.clear()
        // The count limit throws while reading; the percentage limit only after every row is read.
        var stoppedEarly = false
        if error.code == .tooManyBadRows, case .count = options.maxBadRows { stoppedEarly = true }
        reportReasons(stoppedEarly: stoppedEarly)
        writeErrorsFile()
        throw ToolError(code: pipelineExitCode(error), message: error.message)
    }
    reportReasons()
    writeErrorsFile()

    let seconds = Date().timeIntervalSince(started)
    let bytesPerEntry = summary.entries == 0 ? 0 : Double(summary.files.filter { $0.kind != "top" }.reduce(0) { $0 + $1.bytes }) / Double(summary.entries)
    var out = Output()
    if args.flag("--json") {
        let reasons = summary.rejectedByReason.keys.sorted().map { "\(jsonString($0.rawValue)):\(summary.rejectedByReason[$0]!)" }.joined(separator: ",")
        let warnings = summary.warningsByKind.keys.sorted().map { "\(jsonString($0.rawValue)):\(summary.warningsByKind[$0]!)" }.joined(separator: ",")
        let files = summary.files.map { f in
            "{\"file\":\(jsonString(f.file)),\"region\":\(jsonString(f.region)),\"kind\":\(jsonString(f.kind)),\"shard\":\(f.shard),\"entries\":\(f.entries),\"bytes\":\(f.bytes),\"xxh3\":\"\(String(format: "%016llx", f.xxh3))\"}"
        }.joined(separator: ",")
        out.write("{\"output\":\(jsonString(output)),\"directory\":\(summary.isDirectory),\"rows\":\(summary.rowsRead),\"entries\":\(summary.entries),\"duplicates_merged\":\(summary.duplicatesMerged),\"bad_rows\":\(summary.rowsRejected),\"distinct_labels\":\(summary.distinctLabels),\"bytes\":\(summary.bytes),\"bytes_per_entry\":\(String(format: "%.3f", bytesPerEntry)),\"range_rows\":\(summary.rangeRows),\"range_numbers\":\(summary.rangeNumbers),\"ranges_kept\":\(summary.rangesKept),\"rejected_by_reason\":{\(reasons)},\"warnings\":{\(warnings)},\"dataset_version\":\(jsonString(summary.datasetVersion)),\"files\":[\(files)],\"seconds\":\(String(format: "%.3f", seconds))}\n")
    } else {
        out.write("""
        wrote \(output)\(summary.isDirectory ? "\(output.hasSuffix("/") ? "" : "/") (\(summary.files.count) database\(summary.files.count == 1 ? "" : "s") and manifest.json)" : "")
          rows read          \(summary.rowsRead)
          entries            \(summary.entries)
          duplicates merged  \(summary.duplicatesMerged)
          bad rows skipped   \(summary.rowsRejected)
          distinct labels    \(summary.distinctLabels)
          bytes              \(summary.bytes)
          bytes/entry        \(String(format: "%.2f", bytesPerEntry))
          seconds            \(String(format: "%.2f", seconds))

        """)
        if summary.rangeRows > 0 { out.write("  range rows         \(summary.rangeRows) (\(summary.rangeNumbers) numbers)\n") }
        if summary.rangesKept > 0 { out.write("  ranges kept        \(summary.rangesKept)\n") }
        if summary.isDirectory {
            for f in summary.files {
                out.write("  \(column(f.file, width: 28)) \(String(f.entries).leftPad(9)) entries \(String(f.bytes).leftPad(10)) bytes  \(String(format: "%016llx", f.xxh3))\n")
            }
        }
    }
    out.flush()
    return Exit.ok
}
