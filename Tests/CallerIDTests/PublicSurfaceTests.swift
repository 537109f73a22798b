import Foundation
import Testing

/// The public API is what docs/ARCHITECTURE.md ("Public API") says it is: for each library
/// module, the public types declared in its sources are the ones the page lists (by their last
/// name: `DirectoryError.Code` counts as a `Code`), and as many as its count says.
@Suite struct PublicSurfaceTests {
    static let modules = ["CallerID", "CallerIDDirectory", "CallerIDPipeline", "CallerIDURLSession", "CallerIDQuery"]

    /// The names of the public (or open) types each module's sources declare, sorted, repeats kept.
    static func declared(_ module: String) throws -> [String] {
        let folder = UnsafeCodePlacementTests.sources.appendingPathComponent(module)
        let files = try #require(FileManager.default.enumerator(atPath: folder.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        let declaration = /^\s*(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:public|open)\s+(?:(?:final|indirect)\s+)*(?:class|struct|enum|protocol|actor|typealias)\s+([A-Za-z_][A-Za-z0-9_]*)/
        var names: [String] = []
        for file in files {
            let text = try String(contentsOfFile: folder.appendingPathComponent(file).path, encoding: .utf8)
            for line in text.split(separator: "\n") {
                if let match = line.firstMatch(of: declaration) { names.append(String(match.1)) }
            }
        }
        return names.sorted()
    }

    /// Each module's list on the page: (the count it states, the last names of the types it lists).
    static func documented() throws -> [String: (count: Int, names: [String])] {
        let text = try String(contentsOf: ArchitectureTests.root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let start = try #require(text.range(of: "\n## Public API\n"), "ARCHITECTURE.md has no Public API section")
        let section = text[start.upperBound...].prefix { _ in true }
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        // One item a module: "- `Module` (N): what it is for. Types: `A`, `B.C`." over several lines.
        var result: [String: (Int, [String])] = [:]
        for item in section[..<end].components(separatedBy: "\n- ").dropFirst() {
            let flat = item.replacingOccurrences(of: "\n  ", with: " ")
            guard let head = flat.firstMatch(of: /^`([A-Za-z]+)` \((\d+)\):/), let types = flat.range(of: "Types: ") else { continue }
            let names = flat[types.upperBound...].matches(of: /`([A-Za-z0-9_.]+)`/).map { String($0.1.split(separator: ".").last!) }
            result[String(head.1)] = (Int(head.2)!, names.sorted())
        }
        return result
    }

    @Test func theDocumentedPublicTypesAreTheDeclaredOnes() throws {
        let documented = try Self.documented()
        #expect(Set(documented.keys) == Set(Self.modules), "modules listed: \(documented.keys.sorted())")
        for module in Self.modules {
            let declared = try Self.declared(module)
            guard let listed = documented[module] else { continue }
            #expect(listed.names == declared, """
                \(module): public, not listed: \(declared.filter { !listed.names.contains($0) }); \
                listed, not public: \(listed.names.filter { !declared.contains($0) })
                """)
            #expect(listed.count == declared.count, "\(module): the page says \(listed.count) types, the sources declare \(declared.count)")
        }
    }

    /// The app's module stays small: an app subscribes, fetches, feeds, reloads and looks up.
    @Test func theCallDirectoryModuleKeepsItsSurfaceSmall() throws {
        #expect(try Self.declared("CallerIDDirectory").count <= 41)
    }
}
