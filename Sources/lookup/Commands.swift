import Foundation
import CallerID
import CallerIDQuery
import CallerIDDirectory
import CallerIDPipeline

func openDatabase(_ path: String) throws(ToolError) -> Database {
    do {
        return try Database(path: path)
    } catch {
        throw toolError(error)
    }
}

func databasePath(_ args: Arguments) throws(ToolError) -> String {
    if let p = args.value("--db") { return p }
    if let p = environmentValue("LOOKUP_DB"), !p.isEmpty { return p }
    throw .usage("no database: pass --db FILE or set LOOKUP_DB", command: args.command)
}

// MARK: lookup NUMBER / lookup -

let lookupHelp = """
usage: lookup NUMBER [--db FILE|DIR]... [--country XX] [--json]
       lookup - [--db FILE|DIR]... [--country XX] [--json]

Prints NUMBER<TAB>LABEL<TAB>CATEGORY for a number in the database, or NUMBER<TAB>- when
it is absent. A number without an entry that lies in a range of the database (a numbering
plan whose range rows were kept as ranges by lookup build) is answered by the range, with a
4th column:
NUMBER<TAB>LABEL<TAB>CATEGORY<TAB>range:FIRST-LAST. NUMBER is E.164 digits; spaces, dashes, dots, parentheses and a leading +
are ignored. With '-', reads numbers from stdin (one per line) and answers each on its own
line; lines that are not numbers are answered RAW<TAB>- and reported on stderr, lines over
4096 bytes are skipped (answered with their first 64 bytes, '…' and <TAB>-). Answers are
flushed whenever input pauses, so the tool can run as a co-process. Each database file is
checked before its first lookup after input arrives and every 1024 of its lookups. A file
modified in place (not replaced by rename), or cut short between two checks (a read past its
new end reads zeros instead of killing the process; the answer is discarded), is not read
again: each number that needs it is answered NUMBER<TAB>- ({"number":…,"found":false,
"error":…} with --json) and reported on stderr, the others as usual, and the batch ends
with exit 74.

A LABEL holding control characters or hidden ones (bidirectional controls such as U+202E,
invisible characters; only in a file that fails 'lookup verify') is escaped as in JSON:
\\n, \\r, \\t, \\u001b, \\u202e; invalid UTF-8 becomes U+FFFD.

  --db FILE   the database (default: $LOOKUP_DB); a build directory (manifest.json) or an
              installed store (its current generation) looks up in all of its databases and
              answers as the phone treats the number: blocked when the first blocking entry
              (manifest order, higher priority first) blocks it under the store's settings
              (allow list, category choice, rules; a rule answers with a 4th column
              rule:FIRST-LAST), shown with the first identifying entry's label where one
              identifies it; identified by the first identifying entry otherwise.
              Only the databases whose manifest bounds can hold the number are opened (when
              first needed, then kept open); one never opened is never checked (see verify)
              Repeatable: an entry in any database wins over every range; among entries, and
              then among ranges, the earlier --db wins (a directory, then a national plan)
  --country XX  read NUMBER (and each batch line) as written in country XX (ISO 3166
              alpha-2): national forms such as '8 (913) 123-45-67' with RU, parsed by
              libphonenumber when it is installed (libcallerid-phonenumber.so), by the built-in
              table otherwise (said on stderr), with the rules a build uses: a number a build
              would refuse is refused (exit 65); without it NUMBER must be international digits
  --json      one JSON object per answer: {"number":…,"found":true,"label":…,"category":…,"action":…,
              "match":"entry"}, with "match":"range","range":[FIRST,LAST] for a range answer,
              or {"number":…,"found":false}; a batch line that is not a number gives
              {"input":…,"found":false,"error":…}

Exit: 0 found (batch: 0 at the end of input), 1 not found, 64 usage, 65 bad number or damaged file,
66 missing file, 74 I/O error or database file modified in place or cut short.

"""

func lookupCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(lookupHelp, terminator: "")
        return Exit.ok
    }
    let args = try Arguments(raw, command: "", valued: ["--db", "--country"], flags: ["--json"])
    guard args.positionals.count == 1 else {
        throw .usage(args.positionals.isEmpty ? "no number given" : "give one number, or '-' to read numbers from stdin", command: "")
    }
    let json = args.flag("--json")
    let numbers = try query { () throws(QueryError) in try QueryNumbers(country: args.value("--country")) }
    noteNumberRules(numbers.numberRulesFallback)
    // A malformed number is reported before any file is opened.
    var single: UInt64? = nil
    if args.positionals[0] != "-" {
        switch numbers.read(args.positionals[0]) {
        case .success(let n): single = n
        case .failure(let error):
            throw ToolError(code: Exit.dataError, message: "'\(args.positionals[0])' is not a phone number: \(error.message)")
        }
    }
    // A database file, or every database of a build directory or store (first one that
    // holds the number answers, in precedence order), each opened when a number needs it.
    // Several --db: exact entries of any of them first, then ranges, earlier --db first.
    var sets: [DatabasePaths] = []
    let paths = args.values("--db")
    for path in paths.isEmpty ? [try databasePath(args)] : paths {
        sets.append(try query { () throws(QueryError) in try DatabasePaths.resolve(path, manifestFields: .lookup) })
    }
    // A file cut short under its mapping is a withdrawn file (exit 74), never a SIGBUS.
    try? MappingGuard.install()
    let packs = try query { () throws(QueryError) in try PackSet(sets) }
    var out = Output()
    defer { out.flush() }
    let answers = QueryAnswers(packs: packs, format: json ? .json : .text)
    if let single {
        var found = QueryAnswers.Answers()
        try query { () throws(QueryError) in try answers.answer([single], into: &found) }
        guard answers.write(0, of: [single], from: found, to: &out) else {
            // Not found, read as E.164: say so when the number was probably written nationally.
            if let hint = numbers.nationalHint(args.positionals[0]) { printError("note: \(hint)") }
            return Exit.notFound
        }
        // Found: an area code in parentheses still says the digits were meant nationally
        // (`(495) 123-45-67` is found as +49 5123 4567); nothing is loaded to tell.
        if let hint = numbers.nationalHint(args.positionals[0], shapeOnly: true) { printError("note: \(hint)") }
        return Exit.ok
    }
    try answerBatch(answers, numbers: numbers, to: &out)
    return Exit.ok
}

/// `lookup -`: one answer per line of standard input.
func answerBatch(_ answers: QueryAnswers, numbers: QueryNumbers, to out: inout Output) throws(ToolError) {
    // Each database file is checked for an in-place change (one stat) before its first lookup
    // after input arrived and every 1,024 of its lookups (`PackSet`), and one cut short between
    // two checks faults into zeros (`MappingGuard`, installed by `lookupCommand`) instead of
    // SIGBUS: either way the file is withdrawn, the numbers that need it are answered with an
    // error, the others as usual, and the batch ends with exit 74.
    var batch = BatchAnswers(answers: answers, numbers: numbers) { lineNumber, message in
        printError("stdin:\(lineNumber): \(message)")
    }
    try query { () throws(QueryError) in try batch.answerLines(of: "-", to: &out) }
}

// MARK: build

let buildHelp = """
usage: lookup build -o OUT INPUT.tsv... [--skip-bad-rows] [--block-size N] [--raw-labels]
                    [--labels auto|lz4|symbols] [--hidden-characters remove|refuse]
                    [--memory SIZE] [--json]
       lookup build -o OUT|DIR INPUT... [pipeline options below]

Builds a database from TSV lines NUMBER<TAB>LABEL[<TAB>CATEGORY] (UTF-8; '-' reads stdin).
CATEGORY defaults to identify; spam, scam, fraud, collector, survey, telemarketing,
robocall and pyramid block; other names identify. Empty lines and lines starting with #
are skipped. When a number repeats, the last row wins and the summary counts the merge.

Bad rows are reported on stderr as FILE:LINE: REASON. Any bad row fails the build (exit 65,
nothing written) unless --skip-bad-rows is given. The output is written to a temporary file,
synced and renamed: a failed build never replaces an existing OUT.

  -o, --output OUT   the database to write
  --skip-bad-rows    build from the good rows and report the bad ones
  --block-size N     entries per block record, 1...1024 (default 512)
  --memory SIZE      memory for rows (default 1G; 512M, 4G…): beyond it rows are sorted in
                     runs spilled to a temporary folder beside OUT and merged when OUT is
                     written; the same bytes either way (docs/SCALE.md)
  --raw-labels       store every label raw (bigger file, no decoding)
  --labels CODING    how the labels that are not stored raw are coded: lz4 (groups against
                     the raw labels as dictionary; a file of version 3.1), symbols (one by
                     one with a table of frequent strings; version 2.0 or 3.0, which older
                     readers read), or auto (the default: both are made, the smaller kept)
  --hidden-characters remove|refuse
                     labels are shown on a phone's call screen: hidden characters (Unicode's
                     Default_Ignorable_Code_Point: bidirectional controls such as U+202E,
                     invisible ones such as U+200B, U+00AD, U+FEFF, Hangul fillers, tag
                     characters; ZWJ and ZWNJ where no script needs them, variation selectors
                     that follow no character) are removed and counted as warnings (remove,
                     the default), or make the row bad (refuse)
  --json             print the summary as JSON

"""

func buildCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(buildHelp + pipelineBuildHelp, terminator: "")
        return Exit.ok
    }
    let args = try Arguments(raw, command: "build", valued: ["-o", "--output", "--block-size", "--hidden-characters", "--memory", "--labels"] + pipelineValued,
                             flags: ["--skip-bad-rows", "--raw-labels", "--json"] + pipelineFlags)
    guard let output = args.value("-o", "--output") else { throw .usage("missing -o OUT", command: "build") }
    guard !args.positionals.isEmpty else { throw .usage("no input files", command: "build") }
    // A folder is not an input (a usage error, said before anything is read): its files are.
    for input in args.positionals where input != "-" {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: input, isDirectory: &isDirectory), isDirectory.boolValue {
            throw .usage("input \(input) is a directory; give the files in it (\(OutputPath.withoutTrailingSlashes(input))/*.tsv)", command: "build")
        }
    }
    return try pipelineBuild(args, output: output)
}

/// `--hidden-characters remove|refuse` of `lookup build`.
func hiddenCharactersOption(_ args: Arguments) throws(ToolError) -> LabelText.HiddenCharacters {
    guard let v = args.value("--hidden-characters") else { return .remove }
    guard let rule = LabelText.HiddenCharacters(rawValue: v) else {
        throw .usage("--hidden-characters takes remove or refuse", command: "build")
    }
    return rule
}

// MARK: dump

let dumpHelp = """
usage: lookup dump [--db FILE] [--from NUMBER] [--category NAME[,NAME...]] [--action identify|block] [--json]

Prints every entry in ascending order as NUMBER<TAB>LABEL<TAB>CATEGORY (or JSON lines).
Streams with bounded memory whatever the file size. A build directory or an installed store
prints what the phone gets: its two merged lists (each number once, highest precedence first,
the store's allow list, category choice and rules applied, as 'lookup feed' loads them), every
number as 'lookup NUMBER --db' answers it: blocked numbers with the blocking entry's category
("block" for a rule) and the identifying label where one identifies them. Control and hidden characters in a label
(only in a file that fails verify) are escaped as in JSON: \\n, \\r, \\t, \\u001b, \\u202e.

  --from NUMBER   start at the first number >= NUMBER
  --category      only these categories (comma-separated names, case-insensitive; a name
                  the database does not have is a usage error that lists its categories)
  --action        only categories that identify, or that block; for a directory or store:
                  only the identification list, or only the blocking list

"""

func dumpCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(dumpHelp, terminator: "")
        return Exit.ok
    }
    let args = try Arguments(raw, command: "dump", valued: ["--db", "--from", "--category", "--action"], flags: ["--json"])
    guard args.positionals.isEmpty else { throw .usage("unexpected argument '\(args.positionals[0])'", command: "dump") }
    var from: UInt64 = 0
    if let f = args.value("--from") {
        if !f.isEmpty && f.allSatisfy({ $0 == "0" }) {
            from = 0  // "--from 0": from the start
        } else {
            do { from = try PhoneNumber.parse(f) } catch { throw .usage("--from: \(error.message)", command: "dump") }
        }
    }
    var filter = DumpFilter.all
    if let c = args.value("--category") {
        let names = c.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard !names.contains("") else { throw .usage("--category: empty category name in '\(c)'", command: "dump") }
        filter = .categories(Set(names))
    }
    if let a = args.value("--action") {
        guard case .all = filter else { throw .usage("give --category or --action, not both", command: "dump") }
        switch a {
        case "identify": filter = .action(.identify)
        case "block": filter = .action(.block)
        default: throw .usage("--action must be identify or block", command: "dump")
        }
    }
    let dbPath = try databasePath(args)
    var out = Output()
    defer { out.flush() }
    try query { () throws(QueryError) in
        try DatabasePaths.resolve(dbPath).dump(from: from, filter: filter, json: args.flag("--json"), to: &out)
    }
    return Exit.ok
}

// MARK: verify

let verifyHelp = """
usage: lookup verify FILE|DIR... [--json]

Checks each file completely: header, section table, every XXH3-64 section checksum,
padding, and a full decode of keys, values and labels. Prints one line per file, then, for
several files or a directory, a last line with the counts ("3 files verified: all intact").
A build directory or an installed store stands for all of its databases (the store's current
set), and what its manifest says of each file's numbers (first_number, last_number, ranges) is
checked against the file: lookups rely on it to leave files unopened.
Exit: 0 all intact, 65 a file is damaged, 66 a file is missing.

"""

func verifyCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(verifyHelp, terminator: "")
        return Exit.ok
    }
    let args = try Arguments(raw, command: "verify", valued: [], flags: ["--json"])
    guard !args.positionals.isEmpty else { throw .usage("no files given", command: "verify") }
    var status = Exit.ok
    var out = Output()
    let json = args.flag("--json")
    var checked = 0, intact = 0, damaged = 0, unread = 0, directories = 0
    func report(_ path: String, code: String, exit: Int32, message: String) {
        if status == Exit.ok || exit == Exit.dataError { status = exit }
        checked += 1
        if exit == Exit.dataError { damaged += 1 } else { unread += 1 }
        if json {
            out.write("{\"file\":\(jsonQuote(path)),\"ok\":false,\"code\":\(jsonQuote(code)),\"error\":\(jsonQuote(message))}\n")
        } else {
            out.flush()
            printError("error: \(message)")
        }
    }
    for argument in args.positionals {
        let isDirectory = Verification.verify(argument) { file in
            switch file.outcome {
            case .refused(let error):
                report(file.path, code: error.codeName, exit: exitCode(for: error), message: error.message)
            case .intact(let entries, let ranges):
                checked += 1
                intact += 1
                let path = jsonQuote(file.path)
                if ranges > 0 {
                    out.write(json ? "{\"file\":\(path),\"ok\":true,\"entries\":\(entries),\"ranges\":\(ranges)}\n" : "\(file.path): OK (\(entries) entries, \(ranges) ranges)\n")
                } else {
                    out.write(json ? "{\"file\":\(path),\"ok\":true,\"entries\":\(entries)}\n" : "\(file.path): OK (\(entries) entries)\n")
                }
            }
        }
        if isDirectory { directories += 1 }
    }
    // Several files, or a directory's: one closing line that says how it went.
    if !json && (checked > 1 || directories > 0) {
        let problems = [damaged > 0 ? "\(damaged) damaged" : nil, unread > 0 ? "\(unread) not read" : nil].compactMap { $0 }
        out.write("\(checked) file\(checked == 1 ? "" : "s") verified: " + (problems.isEmpty ? "all intact\n" : "\(intact) intact, \(problems.joined(separator: ", "))\n"))
    }
    out.flush()
    return status
}

// MARK: info

let infoHelp = """
usage: lookup info FILE|DIR [--json]

Prints the format version, entry and label counts, categories, the size of every section
and bytes per entry. Validates the file's structure (not its checksums: see verify).
For a build directory or an installed store: the same for each of its databases, in
precedence order (text: blocks separated by a blank line; --json: one object per line).

"""

func infoCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(infoHelp, terminator: "")
        return Exit.ok
    }
    let args = try Arguments(raw, command: "info", valued: ["--db"], flags: ["--json"])
    guard args.positionals.count <= 1 else { throw .usage("give one file", command: "info") }
    let path: String
    if let first = args.positionals.first { path = first } else { path = try databasePath(args) }
    let databases = try query { () throws(QueryError) in try DatabasePaths.resolve(path).open() }
    var out = Output()
    for (i, db) in databases.enumerated() {
        if i > 0 && !args.flag("--json") { out.write("\n") }
        writeInfo(db.info, json: args.flag("--json"), to: &out)
    }
    out.flush()
    return Exit.ok
}

/// How `lookup info` says the cold labels are coded.
func coldLabelCoding(_ info: DatabaseInfo) -> String {
    switch info.labelCoding {
    case .lz4: "in LZ4 groups (\(info.lz4SingleLabels) alone, the others \(info.lz4GroupLabels) a group)"
    default: "coded with \(info.labelSymbols) symbols"
    }
}

func writeInfo(_ info: DatabaseInfo, json: Bool, to out: inout Output) {
    if json {
        let sections = info.sections.map { "{\"name\":\(jsonQuote($0.name)),\"offset\":\($0.offset),\"bytes\":\($0.bytes),\"xxh3\":\"\(String(format: "%016llx", $0.checksum))\"}" }
        let categories = info.categories.map { "{\"name\":\(jsonQuote($0.name)),\"action\":\"\($0.action)\"}" }
        out.write("{\"file\":\(jsonQuote(info.path)),\"format_version\":\"\(info.formatVersion)\",\"entries\":\(info.entries),\"distinct_labels\":\(info.distinctLabels),\"block_size\":\(info.blockSize),\"blocks\":\(info.blocks),\"hot_labels\":\(info.hotLabels),\"label_symbols\":\(info.labelSymbols),\"label_coding\":\"\(info.labelCoding.rawValue)\",\"bytes\":\(info.fileBytes),\"bytes_per_entry\":\(String(format: "%.3f", info.bytesPerEntry)),\"ranges\":\(info.ranges),\"categories\":[\(categories.joined(separator: ","))],\"sections\":[\(sections.joined(separator: ","))]}\n")
    } else {
        out.write("""
        file              \(escapedForDisplay(info.path))
        format version    \(info.formatVersion)
        entries           \(info.entries)
        distinct labels   \(info.distinctLabels)
        blocks            \(info.blocks) × \(info.blockSize) entries
        hot labels        \(info.hotLabels) raw, \(info.distinctLabels - info.hotLabels) \(coldLabelCoding(info))
        categories        \(info.categories.map { "\($0.name) (\($0.action))" }.joined(separator: ", "))
        bytes             \(info.fileBytes)
        bytes/entry       \(String(format: "%.3f", info.bytesPerEntry))

        """)
        if info.ranges > 0 {
            let bytes = info.sections.filter { $0.name == "ranges" }.reduce(0) { $0 + $1.bytes }
            out.write("ranges            \(info.ranges) in \(bytes) bytes (\(String(format: "%.3f", Double(bytes) / Double(info.ranges))) B/range)\n")
        }
        out.write("sections:\n")
        let width = info.sections.map(\.name.count).max().map { max($0, 18) } ?? 18
        for s in info.sections {
            let share = info.entries == 0 ? 0 : Double(s.bytes) / Double(info.entries)
            out.write("  \(s.name.padding(toLength: width, withPad: " ", startingAt: 0)) \(String(s.bytes).leftPad(10)) bytes  \(String(format: "%6.3f", share)) B/entry  at \(s.offset)\n")
        }
    }
}

extension String {
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}

/// `--block-size N` of `lookup build`: 1…1024 entries per block record.
func parseBlockSize(_ text: String) -> Int? {
    guard let n = Int(text), (1...BuildOptions.maxBlockSize).contains(n) else { return nil }
    return n
}

let blockSizeUsage = "--block-size must be 1...\(BuildOptions.maxBlockSize)"

/// `lookup build`'s memory for rows when `--memory` is not given: fits a small CI runner, and
/// keeps every build of a few million rows in memory (docs/SCALE.md).
let defaultBuildMemory = 1 << 30

/// `--memory SIZE` of `lookup build`: bytes, or a number with K, M, G or T
/// (powers of 1,024; `512M`, `1.5G`); the default when not given.
func buildMemory(_ args: Arguments) throws(ToolError) -> Int {
    guard let text = args.value("--memory") else { return defaultBuildMemory }
    var digits = Substring(text.uppercased())
    if digits.hasSuffix("IB") { digits = digits.dropLast(2) } else if digits.hasSuffix("B") { digits = digits.dropLast() }
    var scale = 1.0
    if let unit = digits.last, let power = ["K": 1, "M": 2, "G": 3, "T": 4][String(unit)] {
        scale = Double(1 << (10 * power))
        digits = digits.dropLast()
    }
    guard let value = Double(digits), value.isFinite, value >= 1, value * scale >= 4096, value * scale < 9e18 else {
        throw .usage("--memory takes a size of at least 4K: bytes, or a number with K, M, G or T (512M, 1.5G)", command: "build")
    }
    return Int(value * scale)
}

/// Test seam of every command (`LOOKUP_TEST_DISK_FULL_AFTER=BYTES`): the disk fills up after
/// that many bytes written to files — a build's spilled runs and output, a fetch's downloads,
/// an install, the server's access log (`write(2)` fails with ENOSPC).
func setDiskFullSimulation() {
    if let text = ProcessInfo.processInfo.environment["LOOKUP_TEST_DISK_FULL_AFTER"], let n = Int(text) {
        DiskFullSimulation.fail(afterBytes: n)
    }
}
