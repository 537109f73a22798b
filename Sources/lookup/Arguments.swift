import Foundation
import CallerIDPipeline

/// sysexits(3) codes used by the tool.
enum Exit {
    static let ok: Int32 = 0
    static let notFound: Int32 = 1
    static let usage: Int32 = 64
    static let dataError: Int32 = 65
    static let noInput: Int32 = 66
    static let ioError: Int32 = 74
}

/// A failure that ends the program with a message on stderr and an exit code.
struct ToolError: Error {
    var code: Int32
    var message: String
    var hint: String? = nil

    static func usage(_ message: String, command: String) -> ToolError {
        ToolError(code: Exit.usage, message: message, hint: "see 'lookup \(command.isEmpty ? "" : command + " ")--help'")
    }
}

/// A minimal parser: `--opt value`, `--opt=value`, flags and positionals; `--` ends options.
struct Arguments {
    private(set) var positionals: [String] = []
    private var values: [String: String] = [:]
    private var repeated: [String: [String]] = [:]
    private var flags: Set<String> = []
    let command: String

    /// - Parameters:
    ///   - valued: option names that take a value (with aliases such as `-o`).
    ///   - flags: option names that take none.
    init(_ args: [String], command: String, valued: Set<String>, flags allowed: Set<String>) throws(ToolError) {
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
                    values[name] = inline
                } else {
                    guard i < args.count else { throw .usage("option \(name) needs a value", command: command) }
                    values[name] = args[i]
                    i += 1
                }
                repeated[name, default: []].append(values[name]!)
            } else if allowed.contains(name), inline == nil {
                flags.insert(name)
            } else {
                throw .usage("unknown option '\(a)'", command: command)
            }
        }
    }

    /// "-7 913…" is never an option: a leading '-' followed by a digit or '+' is a number.
    static func looksLikeNumber(_ s: String) -> Bool {
        guard s.count > 1, s.hasPrefix("-") else { return false }
        let second = s[s.index(after: s.startIndex)]
        return second.isNumber
    }

    func value(_ names: String...) -> String? {
        for n in names { if let v = values[n] { return v } }
        return nil
    }

    func flag(_ names: String...) -> Bool { names.contains { flags.contains($0) } }

    /// Every value given for a repeatable option, in order.
    func values(_ name: String) -> [String] { repeated[name] ?? [] }

    /// Names of the options given (valued and flags).
    var given: Set<String> { Set(values.keys).union(flags) }
}

/// Buffered standard output: scripts read a lot of lines, one write per line is too slow.
struct Output {
    private var buffer: [UInt8] = []

    init() { buffer.reserveCapacity(1 << 16) }

    mutating func write(_ s: String) {
        buffer.append(contentsOf: s.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    mutating func write(bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 16 { flush() }
    }

    mutating func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// JSON string literal with the escapes RFC 8259 requires (one implementation, the pipeline's).
func jsonString(_ s: String) -> String { jsonQuote(s) }

/// True when standard error is a terminal (progress is shown only then).
let stderrIsTTY: Bool = isatty(2) == 1
