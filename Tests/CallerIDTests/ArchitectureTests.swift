import Foundation
import Testing

/// docs/ARCHITECTURE.md describes the package as it is: its table names every target of
/// Package.swift, and no other, and its count says how many there are.
@Suite struct ArchitectureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Targets declared in Package.swift (`.target`, `.executableTarget`, `.systemLibrary`; not tests).
    static func packageTargets() throws -> Set<String> {
        let text = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #"\.(target|executableTarget|systemLibrary)\(\s*name:\s*"([^"]+)""#)
        let range = NSRange(text.startIndex..., in: text)
        return Set(pattern.matches(in: text, range: range).compactMap { Range($0.range(at: 2), in: text).map { String(text[$0]) } })
    }

    /// Targets named in the first column of ARCHITECTURE.md's table (`a`, `b` in one cell).
    static func documentedTargets() throws -> (names: Set<String>, countWord: String) {
        let text = try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        var names = Set<String>()
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cell = line.dropFirst(2).prefix { $0 != "|" }
            for part in cell.split(separator: "`") where !part.trimmingCharacters(in: .whitespaces).hasPrefix(",") && !part.trimmingCharacters(in: .whitespaces).isEmpty {
                names.insert(String(part))
            }
        }
        let first = text.split(separator: "\n").first { $0.contains("targets besides the tests") } ?? ""
        return (names, String(first.prefix { $0 != " " }))
    }

    @Test func theTableOfTargetsMatchesThePackage() throws {
        let declared = try Self.packageTargets()
        let documented = try Self.documentedTargets()
        #expect(declared.count >= 10, "Package.swift was not read: \(declared)")
        #expect(documented.names == declared,
                "documented, not declared: \(documented.names.subtracting(declared).sorted()); declared, not documented: \(declared.subtracting(documented.names).sorted())")
        let words = ["Ten", "Eleven", "Twelve", "Thirteen", "Fourteen", "Fifteen", "Sixteen", "Seventeen", "Eighteen", "Nineteen", "Twenty"]
        #expect(words.firstIndex(of: documented.countWord).map { $0 + 10 } == declared.count,
                "ARCHITECTURE.md says '\(documented.countWord) targets', Package.swift declares \(declared.count)")
    }
}
