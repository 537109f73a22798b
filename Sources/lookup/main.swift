import Foundation
import CallerID
import CallerIDQuery

let usage = """
usage: lookup NUMBER [--db FILE|DIR]... [--country XX] [--json]   look up one number (exit 0 found, 1 not found)
       lookup - [--db FILE|DIR]... [--country XX] [--json]        look up numbers from stdin, one per line
       lookup build -o OUT INPUT.tsv...        build a database from TSV files
       lookup join -o OUT PART_DIR...          join build directories built apart (one per region) into one
       lookup reports -o OUT REPORTS...        a block pack from a log of people's reports (scored)
       lookup dump [--db FILE] [--from N] [--category NAMES] [--action A] [--json]
       lookup verify FILE|DIR...               check every checksum and decode everything
       lookup info FILE|DIR [--json]           format version, counts, section sizes
       lookup install --store DIR [BUILD_DIR]  verify and install a build into a store (Call Directory)
       lookup keygen -o NAME                   a signing key pair: NAME (secret) and NAME.pub
       lookup sign --key NAME BUILD_DIR        sign a build directory (manifest.json.sig)
       lookup fetch URL --store DIR --trust NAME.pub   update a store from a signed set on a web server
                                               (--source NAME --regions A,B: regions of one source)
       lookup store list|remove --store DIR    a store's sources and regions; drop a region or a source
       lookup feed --store DIR [--slot i/M] [--chunk K] [--simulate]   load a slot as an extension would
       lookup diff OLD NEW [--json]            the incremental change set between two sets
       lookup export --live-caller-id OUTDIR --db FILE|DIR...   datasets for iOS Live Caller ID Lookup
       lookup serve --db FILE|DIR... | --store DIR [--listen 127.0.0.1:8080]   answer lookups over HTTP
       lookup --version

NUMBER may be written +7 913 123-45-67, 79131234567 or +79131234567; with --country RU
also 8 (913) 123-45-67 (national forms, read by libphonenumber when it is installed).
Set LOOKUP_DB instead of passing --db. DIR is a build directory (manifest.json) or an
installed store: all of its databases, the first holding a number answers.
'lookup COMMAND --help' describes a command.
Exit codes: 0 ok/found, 1 not found, 64 usage, 65 bad data or damaged file, 66 missing input,
69 server unreachable, 74 I/O error.

"""

func unknownCommand(_ word: String) throws(ToolError) -> Int32 {
    throw .usage("unknown command '\(word)'; commands: build, join, reports, dump, verify, info, install, keygen, sign, fetch, store, feed, diff, export, serve, or a NUMBER, or '-'",
                 command: "")
}

let arguments = Array(CommandLine.arguments.dropFirst())
setDiskFullSimulation()
let status: Int32
do {
    switch arguments.first {
    case nil:
        printError("error: no number or command given\n" + usage)
        status = Exit.usage
    case "--help", "-h", "help":
        print(usage, terminator: "")
        status = Exit.ok
    case "--version":
        print("lookup (CallerID) \(CallerIDVersion.library), database format \(CallerIDVersion.format)")
        print("number rules: \(numberRulesInUse())")
        status = Exit.ok
    case "build":
        status = try buildCommand(Array(arguments.dropFirst()))
    case "join":
        status = try joinCommand(Array(arguments.dropFirst()))
    case "reports":
        status = try reportsCommand(Array(arguments.dropFirst()))
    case "dump":
        status = try dumpCommand(Array(arguments.dropFirst()))
    case "verify":
        status = try verifyCommand(Array(arguments.dropFirst()))
    case "info":
        status = try infoCommand(Array(arguments.dropFirst()))
    case "install":
        status = try installCommand(Array(arguments.dropFirst()))
    case "keygen":
        status = try keygenCommand(Array(arguments.dropFirst()))
    case "sign":
        status = try signCommand(Array(arguments.dropFirst()))
    case "fetch":
        status = try fetchCommand(Array(arguments.dropFirst()))
    case "store":
        status = try storeCommand(Array(arguments.dropFirst()))
    case "feed":
        status = try feedCommand(Array(arguments.dropFirst()))
    case "diff":
        status = try diffCommand(Array(arguments.dropFirst()))
    case "export":
        status = try exportCommand(Array(arguments.dropFirst()))
    case "serve":
        status = try serveCommand(Array(arguments.dropFirst()))
    case let word? where word.first.map({ $0.isLetter }) == true:
        // Not a number (those start with a digit, '+', '(' or a space) and not a command.
        status = try unknownCommand(word)
    default:
        status = try lookupCommand(arguments)
    }
} catch {
    // Messages quote file names, paths and text from files and servers: nothing in them may
    // drive the terminal or reorder the line.
    printError("error: \(escapedForDisplay(error.message))" + (error.hint.map { "\n\($0)" } ?? ""))
    status = error.code
}
exit(status)
