import Foundation
import Testing

/// The shape the sources keep (docs/ARCHITECTURE.md): no function, initializer or closure-free
/// body over ``maxFunctionLines`` lines, so each reads on a screen or two. The test reads the
/// package's own sources and names every body that is longer.
@Suite struct SourceShapeTests {
    static let maxFunctionLines = 100

    /// The line with string literals emptied and a trailing comment cut, so that braces inside
    /// them do not count.
    static func code(_ line: Substring) -> String {
        var out = ""
        var inString = false
        var interpolation = 0
        var escaped = false
        var previous: Character = " "
        for c in line {
            if inString {
                if escaped {
                    escaped = false
                    if c == "(" { interpolation += 1 }
                } else if c == "\\" {
                    escaped = true
                } else if c == ")" && interpolation > 0 {
                    interpolation -= 1
                } else if c == "\"" && interpolation == 0 {
                    inString = false
                    out.append("\"")
                }
                continue
            }
            if c == "/" && previous == "/" { out.removeLast(); break }
            if c == "\"" { inString = true }
            out.append(c)
            previous = c
        }
        return out
    }

    /// Bodies of `func`/`init` longer than the limit: (lines, where, name).
    static func longBodies(in text: String) -> [(Int, Int, String)] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var depth = 0
        var open: [(depth: Int, line: Int, name: String)] = []
        var long: [(Int, Int, String)] = []
        var inMultiline = false
        for (n, line) in lines.enumerated() {
            if inMultiline {
                if line.contains("\"\"\"") { inMultiline = false }
                continue
            }
            let code = Self.code(line)
            if code.components(separatedBy: "\"\"\"").count % 2 == 0 {
                inMultiline = true
            }
            let words = code.split(whereSeparator: { $0 == " " || $0 == "(" || $0 == "<" })
            if code.contains("{"), let i = words.firstIndex(where: { $0 == "func" || $0.hasPrefix("init") && ($0 == "init" || $0 == "init?" || $0 == "init!") }) {
                let name = words[i] == "func" && i + 1 < words.count ? String(words[i + 1]) : String(words[i])
                open.append((depth, n, name))
            }
            for c in code {
                if c == "{" { depth += 1 }
                if c == "}" {
                    depth -= 1
                    if let last = open.last, last.depth == depth {
                        open.removeLast()
                        if n - last.line + 1 > maxFunctionLines { long.append((n - last.line + 1, last.line + 1, last.name)) }
                    }
                }
            }
        }
        return long
    }

    @Test func noFunctionIsLongerThanTheLimit() throws {
        let sources = UnsafeCodePlacementTests.sources
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count > 20, "the sources were not found at \(sources.path)")
        var offences: [String] = []
        for file in files.sorted() {
            let text = try String(contentsOfFile: sources.appendingPathComponent(file).path, encoding: .utf8)
            for (lines, line, name) in Self.longBodies(in: text) {
                offences.append("\(file):\(line): \(name) is \(lines) lines")
            }
        }
        #expect(offences.isEmpty, "functions over \(Self.maxFunctionLines) lines:\n\(offences.joined(separator: "\n"))")
    }

    @Test func theMeasureCountsBodiesNotStringsOrComments() {
        let body = (0..<101).map { _ in "    x += 1" }.joined(separator: "\n")
        let long = "func f() {\n" + body + "\n}\n"
        #expect(Self.longBodies(in: long).map(\.2) == ["f"])
        #expect(Self.longBodies(in: "func g() {\n    let s = \"}}\" // }\n    h()\n}\n").isEmpty)
        // A brace in a string does not end the body early, so the long one is still found.
        #expect(Self.longBodies(in: "func k() {\n    let s = \"}\"\n" + body + "\n}\n").map(\.0) == [104])
    }
}
