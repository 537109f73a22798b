import Foundation
import CallerID
import CallerIDDirectory
import CallerIDPipeline
import CallerIDQuery

/// sysexits(3) codes used by the tool.
enum Exit {
    static let ok: Int32 = 0
    static let notFound: Int32 = 1
    static let usage: Int32 = 64
    static let dataError: Int32 = 65
    static let noInput: Int32 = 66
    /// A server could not be reached or answered with an error status.
    static let unavailable: Int32 = 69
    /// A failure the tool has no code for: a bug, reported as such.
    static let software: Int32 = 70
    static let ioError: Int32 = 74
}

/// The one map from a library error to the tool's exit code (sysexits), for the errors of
/// every layer: ``CallerIDError``, `DirectoryError`, `PipelineError` and `QueryError` spell the codes they
/// share the same way (the core's), so one table keyed by the code's name covers all three.
/// Every code is listed (a test holds the table to the layers' `Code.all`): a code added
/// without an entry is reported as the bug it is (70), never silently as bad data.
let exitCodes: [String: Int32] = {
    var table: [String: Int32] = [:]
    func map(_ exit: Int32, _ names: [String]) { for name in names { table[name] = exit } }
    map(Exit.noInput, [CallerIDError.Code.fileNotFound.rawValue, PipelineError.Code.unreadableInput.rawValue])
    map(Exit.ioError, [CallerIDError.Code.io.rawValue, CallerIDError.Code.fileChanged.rawValue])
    map(Exit.unavailable, [DirectoryError.Code.unreachable.rawValue, QueryError.Code.cannotServe.rawValue])
    map(Exit.usage, [DirectoryError.Code.invalidArgument.rawValue, DirectoryError.Code.invalidRule.rawValue,
                     PipelineError.Code.invalidConfiguration.rawValue, QueryError.Code.invalidRequest.rawValue])
    map(Exit.dataError, [CallerIDError.Code.corrupt, .unsupportedVersion, .invalidNumber, .invalidInput, .limitExceeded].map(\.rawValue)
        + [DirectoryError.Code.badManifest, .budgetExceeded, .badSignature, .downgrade].map(\.rawValue)
        + [PipelineError.Code.tooManyBadRows.rawValue])
    return table
}()

func exitCode(for error: some CallerIDFailure) -> Int32 {
    exitCodes[error.codeName] ?? Exit.software
}

/// Any error as the tool reports it: a ``ToolError`` as it is, a library error under its exit
/// code (``exitCode(for:)``), anything else as an internal error (70: a bug, never bad data).
func toolError(_ error: any Error) -> ToolError {
    if let e = error as? ToolError { return e }
    if let e = error as? QueryError { return ToolError(code: exitCode(for: e), message: e.message, changedFile: e.changedFile) }
    if let e = error as? any CallerIDFailure { return ToolError(code: exitCode(for: e), message: e.message) }
    return ToolError(code: Exit.software, message: "internal error: \(error)")
}

/// A call into the query engine or the server, its error as the tool reports it.
func query<T>(_ body: () throws(QueryError) -> T) throws(ToolError) -> T {
    do { return try body() } catch { throw toolError(error) }
}

/// A failure that ends the program with a message on stderr and an exit code.
struct ToolError: Error {
    var code: Int32
    var message: String
    var hint: String? = nil
    /// The database file whose change this error reports (modified in place, or cut short under
    /// its mapping: ``PackSet/withdraw(_:because:)``), nil for any other error. Only the numbers
    /// that need that file fail: a batch answers the others, a server answers 503 for these.
    var changedFile: String? = nil

    static func usage(_ message: String, command: String) -> ToolError {
        ToolError(code: Exit.usage, message: message, hint: "see 'lookup \(command.isEmpty ? "" : command + " ")--help'")
    }
}

/// A minimal parser: `--opt value`, `--opt=value`, flags and positionals; `--` ends options.
///
/// Plain arrays, no `Set` or `Dictionary`: a command line holds a handful of options, and the
/// first use of a hashed collection of `String` makes the Swift runtime search every protocol
/// conformance in the binary (Foundation's included) for `String: Hashable`, page by page —
/// a measurable part of a one-number lookup's start-up.
struct Arguments {
    private(set) var positionals: [String] = []
    /// Every valued option given, in command-line order (a repeated option appears repeatedly).
    private var values: [(name: String, value: String)] = []
    private var flags: [String] = []
    let command: String

    /// - Parameters:
    ///   - valued: option names that take a value (with aliases such as `-o`).
    ///   - flags: option names that take none.
    init(_ args: [String], command: String, valued: [String], flags allowed: [String]) throws(ToolError) {
        self.command = command
        var i = 0
        var onlyPositionals = false
        while i < args.count {
            let a = args[i]
            i += 1
            if onlyPositionals || a == "-" || !a.hasPrefix("-") || Arguments.looksLikeNumber(a) {
                positionals.append(a)
                continue
            }
            if a == "--" { onlyPositionals = true; continue }
            var name = a
            var inline: String? = nil
            if let eq = a.firstIndex(of: "="), a.hasPrefix("--") {
                name = String(a[..<eq])
                inline = String(a[a.index(after: eq)...])
            }
            if valued.contains(name) {
                if let inline {
                    values.append((name, inline))
                } else {
                    guard i < args.count else { throw .usage("option \(name) needs a value", command: command) }
                    values.append((name, args[i]))
                    i += 1
                }
            } else if allowed.contains(name), inline == nil {
                if !flags.contains(name) { flags.append(name) }
            } else {
                let near = Arguments.nearest(to: name, among: valued + allowed).map { " (did you mean \($0)?)" } ?? ""
                throw .usage("unknown option '\(a)'\(near)", command: command)
            }
        }
    }

    /// The option of `options` nearest to the unknown `name` (`--region` → `--regions`): the one
    /// fewest edits away (insertions, deletions, substitutions, a swap of two neighbours), when
    /// that is at most 2 and under a third of its length; nil when none is that near.
    static func nearest(to name: String, among options: [String]) -> String? {
        let a = Array(name.utf8)
        var best: (option: String, distance: Int)? = nil
        for option in options where option.hasPrefix("--") && option != name {
            let b = Array(option.utf8)
            let d = editDistance(a, b)
            if d <= 2, d * 3 < b.count, d < (best?.distance ?? Int.max) { best = (option, d) }
        }
        return best?.option
    }

    /// Optimal string alignment distance between two byte strings.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var d = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d = min(d, rows[i - 2][j - 2] + 1) }
                rows[i][j] = d
            }
        }
        return rows[a.count][b.count]
    }

    /// "-7 913…" is never an option: a leading '-' followed by a digit or '+' is a number.
    static func looksLikeNumber(_ s: String) -> Bool {
        guard s.count > 1, s.hasPrefix("-") else { return false }
        let second = s[s.index(after: s.startIndex)]
        return second.isNumber
    }

    /// The value of the first of `names` that was given (its last occurrence wins).
    func value(_ names: String...) -> String? {
        for n in names {
            if let v = values.last(where: { $0.name == n }) { return v.value }
        }
        return nil
    }

    func flag(_ names: String...) -> Bool { names.contains { flags.contains($0) } }

    /// Every value given for a repeatable option, in order.
    func values(_ name: String) -> [String] { values.filter { $0.name == name }.map(\.value) }

    /// Names of the options given (valued and flags), each once.
    var given: [String] {
        var names: [String] = []
        for n in values.map(\.name) + flags where !names.contains(n) { names.append(n) }
        return names
    }
}

func printError(_ message: String) {
    StandardStream.error.write(message + "\n")
}

/// True when standard error is a terminal (progress is shown only then).
let stderrIsTTY: Bool = StandardStream.error.isTerminal
