import Testing
import Foundation
import Dispatch

// The man page (docs/man/lookup.1) and the completion scripts (completions/lookup.bash,
// completions/_lookup) against what the built `lookup` prints with --help, so that they cannot
// drift: every option a command's help prints is documented in that command's section of the
// man page and offered by both completion scripts for that command, and every option the page
// and the scripts name exists in some --help.

/// Files and tools the tests read.
private enum ManPageFiles {
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let manPage = packageRoot.appendingPathComponent("docs/man/lookup.1").path
    static let bashScript = packageRoot.appendingPathComponent("completions/lookup.bash").path
    static let zshScript = packageRoot.appendingPathComponent("completions/_lookup").path

    /// An executable on PATH (or in the usual places), or nil.
    static func executable(_ name: String) -> String? {
        var dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        dirs += ["/usr/bin", "/bin", "/usr/local/bin", "/opt/homebrew/bin"]
        return dirs.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static let man = executable("man")
    static let bash = executable("bash")
    static let zsh = executable("zsh")
}

/// Every `--option` token in a text (`--[a-z-]+`, trailing dashes dropped).
private func optionTokens(_ text: String) -> Set<String> {
    var result: Set<String> = []
    let chars = Array(text.unicodeScalars)
    func isOptionChar(_ c: Unicode.Scalar) -> Bool { (c >= "a" && c <= "z") || c == "-" }
    var i = 0
    while i + 2 < chars.count {
        if chars[i] == "-" && chars[i + 1] == "-" && (i == 0 || !isOptionChar(chars[i - 1]))
            && chars[i + 2] >= "a" && chars[i + 2] <= "z" {
            var j = i + 2
            while j < chars.count && isOptionChar(chars[j]) { j += 1 }
            var token = String(String.UnicodeScalarView(chars[i..<j]))
            while token.hasSuffix("-") { token.removeLast() }
            result.insert(token)
            i = j
        } else {
            i += 1
        }
    }
    return result
}

/// True when `text` holds `option` as a whole token (not as the start of a longer option).
private func containsOption(_ text: String, _ option: String) -> Bool { optionTokens(text).contains(option) }

/// The man page source with roff escapes removed: `\-` is `-`, fonts and zero-width marks go.
private func manText(_ source: String) -> String {
    var s = source.replacingOccurrences(of: "\\-", with: "-")
    for escape in ["\\fB", "\\fI", "\\fR", "\\fP", "\\&", "\\:", "\\%"] {
        s = s.replacingOccurrences(of: escape, with: "")
    }
    return s
}

/// The `.SS` section of the man page whose title starts with `title`, up to the next `.SS`/`.SH`.
private func manSection(_ text: String, title: String) -> String? {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    guard let start = lines.firstIndex(where: { $0.hasPrefix(".SS \"\(title)") || $0.hasPrefix(".SS \(title)") }) else {
        return nil
    }
    var end = start + 1
    while end < lines.count && !lines[end].hasPrefix(".SS") && !lines[end].hasPrefix(".SH") { end += 1 }
    return lines[start..<end].joined(separator: "\n")
}

/// The body of a shell function `name() {` up to the `}` that starts a line.
private func shellFunction(_ script: String, name: String) -> String? {
    guard let start = script.range(of: "\n\(name)() {") else { return nil }
    guard let end = script.range(of: "\n}", range: start.upperBound..<script.endIndex) else { return nil }
    return String(script[start.lowerBound..<end.upperBound])
}

@Suite struct ManPageTests {
    /// The commands the top-level usage lists (`lookup build …`, `lookup dump …`), read from
    /// `lookup --help`, so a new command must be documented too.
    func commands() throws -> [String] {
        let help = try lookup(["--help"])
        #expect(help.status == 0)
        var found: [String] = []
        for line in help.lines {
            let words = line.split(separator: " ").map(String.init)
            guard let at = words.firstIndex(of: "lookup"), at + 1 < words.count, at <= 1 else { continue }
            let word = words[at + 1]
            if word.allSatisfy({ $0 >= "a" && $0 <= "z" }) && !found.contains(word) { found.append(word) }
        }
        return found
    }

    /// The options `lookup COMMAND --help` prints ("" is `lookup NUMBER` / `lookup -`).
    func helpOptions(_ command: String) throws -> Set<String> {
        let result = try lookup(command.isEmpty ? ["-", "--help"] : [command, "--help"])
        #expect(result.status == 0, "lookup \(command) --help exited \(result.status)")
        return optionTokens(result.stdout)
    }

    /// Every option any help prints: the top-level usage, each command's, the plain lookup's.
    func allHelpOptions() throws -> Set<String> {
        var all = optionTokens(try lookup(["--help"]).stdout)
        for command in try commands() + [""] { all.formUnion(try helpOptions(command)) }
        return all
    }

    @Test func theCommandListIsTheOneTheScriptsKnow() throws {
        let commands = try commands()
        #expect(commands == ["build", "join", "reports", "dump", "verify", "info", "install", "keygen", "sign", "fetch", "store", "feed", "diff", "export", "serve"])
        let bash = try String(contentsOfFile: ManPageFiles.bashScript, encoding: .utf8)
        let zsh = try String(contentsOfFile: ManPageFiles.zshScript, encoding: .utf8)
        for command in commands {
            #expect(bash.contains("\n        \(command))"), "completions/lookup.bash has no options case for \(command)")
            #expect(shellFunction(zsh, name: "_lookup_cmd_\(command)") != nil, "completions/_lookup has no _lookup_cmd_\(command)")
            #expect(zsh.contains("'\(command):"), "zsh: \(command) is not described")
        }
    }

    @Test func everyHelpOptionIsInTheManPageSectionOfItsCommand() throws {
        let page = manText(try String(contentsOfFile: ManPageFiles.manPage, encoding: .utf8))
        for command in try commands() {
            let section = try #require(manSection(page, title: "lookup \(command)"), "no .SS \"lookup \(command)\" in lookup.1")
            for option in try helpOptions(command).sorted() {
                #expect(containsOption(section, option), "lookup \(command) \(option) is not in its man page section")
            }
        }
        let plain = try #require(manSection(page, title: "lookup NUMBER"), "no .SS \"lookup NUMBER…\" in lookup.1")
        for option in try helpOptions("").sorted() {
            #expect(containsOption(plain, option), "lookup NUMBER \(option) is not in its man page section")
        }
        for option in optionTokens(try lookup(["--help"]).stdout).sorted() {
            #expect(containsOption(page, option), "\(option) (lookup --help) is not in the man page")
        }
    }

    @Test func everyManPageOptionExistsInSomeHelp() throws {
        let page = manText(try String(contentsOfFile: ManPageFiles.manPage, encoding: .utf8))
        let documented = optionTokens(page)
        #expect(documented.count > 50)
        let unknown = documented.subtracting(try allHelpOptions())
        #expect(unknown.isEmpty, "options in lookup.1 that no --help prints: \(unknown.sorted())")
    }

    @Test func theManPageHasTheUsualSectionsAndTheToolsExitCodes() throws {
        let source = try String(contentsOfFile: ManPageFiles.manPage, encoding: .utf8)
        let headings = source.split(separator: "\n").filter { $0.hasPrefix(".SH ") }
            .map { $0.dropFirst(4).trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
        for heading in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "ENVIRONMENT", "EXIT STATUS", "FILES", "EXAMPLES", "SEE ALSO"] {
            #expect(headings.contains(heading), "lookup.1 has no .SH \(heading)")
        }
        #expect(source.hasPrefix(".\\\"") || source.hasPrefix(".TH"))
        #expect(source.contains(".TH LOOKUP 1 "))
        let text = manText(source)
        let environment = try #require(text.components(separatedBy: ".SH ENVIRONMENT").last?.components(separatedBy: ".SH ").first)
        #expect(environment.contains("LOOKUP_DB"))

        // The codes of "Exit codes: 0 ok/found, 1 not found, 64 usage, …" in `lookup --help`.
        let help = try lookup(["--help"]).stdout
        let exitLine = try #require(help.split(separator: "\n").first { $0.hasPrefix("Exit codes:") })
        let codes = exitLine.split(whereSeparator: { !$0.isNumber }).map(String.init)
        #expect(codes.count >= 5, "parsed \(codes) from \(exitLine)")
        let exitStatus = try #require(text.components(separatedBy: ".SH EXIT STATUS").last?.components(separatedBy: ".SH ").first)
        for code in codes {
            #expect(exitStatus.contains(".TP\n.B \(code)\n"), "exit code \(code) is not in EXIT STATUS")
        }
    }

    @Test func theBashScriptParsesAndCompletesEveryOptionOfEveryCommand() throws {
        let bash = try #require(ManPageFiles.bash, "bash is not installed")
        let syntax = try runTool(bash, ["-n", ManPageFiles.bashScript])
        #expect(syntax.status == 0, "bash -n: \(syntax.stderr)")

        // What the completion function offers after `lookup WORDS --`, run in a real bash.
        func completions(_ words: [String]) throws -> Set<String> {
            let script = """
                source "$1" || exit 3
                shift
                COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
                _lookup
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            let run = try runTool(bash, ["-c", script, "bash", ManPageFiles.bashScript] + words)
            #expect(run.status == 0, "completion of \(words) failed: \(run.stderr)")
            return Set(run.stdout.split(separator: "\n").map(String.init))
        }

        var offered: Set<String> = []
        for command in try commands() {
            let got = try completions(["lookup", command, "--"])
            offered.formUnion(got)
            for option in try helpOptions(command).sorted() {
                #expect(got.contains(option), "bash does not complete lookup \(command) \(option)")
            }
        }
        for words in [["lookup", "79131234567", "--"], ["lookup", "-", "--"]] {
            let got = try completions(words)
            offered.formUnion(got)
            for option in try helpOptions("").sorted() {
                #expect(got.contains(option), "bash does not complete \(words.dropLast().joined(separator: " ")) \(option)")
            }
        }
        let first = try completions(["lookup", "--"])
        offered.formUnion(first)
        #expect(first.contains("--version") && first.contains("--help"))
        let commandWords = try completions(["lookup", ""])
        #expect(commandWords == Set(try commands()))
        for option in optionTokens(try lookup(["--help"]).stdout) {
            #expect(offered.contains(option), "bash never completes \(option) (lookup --help)")
        }
        // Values and files: --action's two values; -o completes file names.
        #expect(try completions(["lookup", "dump", "--action", ""]) == ["identify", "block"])
        let root = ManPageFiles.packageRoot.path
        #expect(try completions(["lookup", "build", "-o", root + "/Package.sw"]).contains(root + "/Package.swift"))
        #expect(try completions(["lookup", "build", "--format", "=", "j"]) == ["json", "jsonl"])
        #expect(try completions(["lookup", "build", "--format=j"]) == ["json", "jsonl"])

        // Nothing offered that no help prints.
        let script = try String(contentsOfFile: ManPageFiles.bashScript, encoding: .utf8)
        let unknown = optionTokens(script).subtracting(try allHelpOptions())
        #expect(unknown.isEmpty, "options in lookup.bash that no --help prints: \(unknown.sorted())")
    }

    @Test func theZshScriptHasEveryOptionOfEveryCommandInItsFunction() throws {
        let script = try String(contentsOfFile: ManPageFiles.zshScript, encoding: .utf8)
        #expect(script.hasPrefix("#compdef lookup\n"))
        for command in try commands() {
            let body = try #require(shellFunction(script, name: "_lookup_cmd_\(command)"), "no _lookup_cmd_\(command) in _lookup")
            for option in try helpOptions(command).sorted() {
                #expect(containsOption(body, option), "zsh does not complete lookup \(command) \(option)")
            }
        }
        let number = try #require(shellFunction(script, name: "_lookup_cmd_number"))
        for option in try helpOptions("").sorted() {
            #expect(containsOption(number, option), "zsh does not complete lookup NUMBER \(option)")
        }
        let top = try #require(shellFunction(script, name: "_lookup"))
        #expect(containsOption(top, "--version") && containsOption(top, "--help"))
        let unknown = optionTokens(script).subtracting(try allHelpOptions())
        #expect(unknown.isEmpty, "options in _lookup that no --help prints: \(unknown.sorted())")
    }

    @Test(.enabled(if: ManPageFiles.zsh != nil, "zsh is not installed: the zsh script's syntax is not checked"))
    func theZshScriptParses() throws {
        let run = try runTool(try #require(ManPageFiles.zsh), ["-n", ManPageFiles.zshScript])
        #expect(run.status == 0 && run.stderr.isEmpty, "zsh -n: \(run.stderr)")
    }

    @Test(.enabled(if: ManPageFiles.man != nil, "man is not installed: 'man -l docs/man/lookup.1' is not checked"))
    func manRendersThePageWithoutWarnings() throws {
        let run = try runTool(try #require(ManPageFiles.man), ["--warnings", "-l", ManPageFiles.manPage],
                              environment: ["MANWIDTH": "80", "MANPAGER": "cat", "PAGER": "cat"])
        #expect(run.status == 0)
        #expect(run.stderr.isEmpty, "man --warnings -l lookup.1:\n\(run.stderr)")
        // man strips the overstrikes when its output is not a terminal; drop any left anyway.
        let plain = run.stdout.replacingOccurrences(of: "\u{8}.", with: "", options: .regularExpression)
        for heading in ["NAME", "SYNOPSIS", "EXIT STATUS", "EXAMPLES", "SEE ALSO"] {
            #expect(plain.contains("\n\(heading)\n"), "the rendered page has no \(heading) heading")
        }
        #expect(plain.contains("lookup build -o city.cid directory.tsv"))
        #expect(plain.split(separator: "\n").allSatisfy { $0.count <= 80 }, "a rendered line is wider than MANWIDTH=80")
    }
}

// What an installed user gets: the documents the man page names, and a package whose control
// data holds no made-up values. (tools/check-deb.sh checks a built .deb; building one takes
// minutes, so these tests read the scripts and run what is quick.)
@Suite struct PackagingTests {
    private static let root = BuiltProducts.packageRoot

    // Before: lookup(1) sent readers to docs/FORMAT.md and four other files of the sources,
    // which neither tools/install.sh nor the .deb installed.
    @Test func everyDocumentTheManPageNamesIsInstalled() throws {
        let page = try String(contentsOfFile: ManPageFiles.manPage, encoding: .utf8)
        let named = Set(page.replacingOccurrences(of: "\\-", with: "-")
            .matches(of: /[A-Z][A-Z-]*\.md/).map { String($0.output) })
        #expect(named == ["FORMAT.md", "PIPELINE.md", "CALL-DIRECTORY.md", "LIVE-CALLER-ID.md", "C-ABI.md", "SERVE.md", "SCALE.md", "REPORTS.md"])
        #expect(!page.contains("docs/FORMAT.md") && !page.contains("docs/PIPELINE.md"))
        let install = try String(contentsOfFile: Self.root.appendingPathComponent("tools/install.sh").path, encoding: .utf8)
        let line = try #require(install.split(separator: "\n").first { $0.hasPrefix("for doc in ") })
        let installed = Set(line.dropFirst("for doc in ".count).split(separator: ";")[0].split(separator: " ").map { "\($0).md" })
        #expect(installed == named)
        #expect(install.contains(#"install -m 0644 "docs/$doc.md" "$root/share/doc/callerid/$doc.md""#))
        for doc in named { #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent("docs/\(doc)").path)) }
    }

    // Before: the .deb said 'Maintainer: CallerID maintainers <callerid@localhost>' and
    // 'Homepage: https://github.com/callerid/callerid', both made up. Debian policy 5.6.2 wants
    // a name and an email address; the project has no address, so the packager gives theirs.
    @Test(arguments: [
        (["--maintainer", "CallerID developers"], "is not 'Name <email>'"),
        (["--maintainer", "<ops@example.org>"], "is not 'Name <email>'"),
        ([String](), "needs a maintainer with an email address"),
    ])
    func packageRefusesAMaintainerWithoutAnAddressBeforeBuilding(_ args: [String], _ says: String) throws {
        let dir = TempDir()
        let r = try runTool("bash", [Self.root.appendingPathComponent("tools/package-deb.sh").path, "--out", dir.path("out")] + args,
                            environment: ["DEBFULLNAME": "", "DEBEMAIL": ""], timeout: 30)
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.contains(says) && r.stderr.contains("5.6.2"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("out")))
        let script = try String(contentsOfFile: Self.root.appendingPathComponent("tools/package-deb.sh").path, encoding: .utf8)
        #expect(!script.contains("Homepage:") && !script.contains("@localhost"))
    }
}
