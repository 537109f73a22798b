public import CallerID
import Foundation

/// Maps the category values found in the data to categories and their actions.
///
/// Without a map, a value is lowercased and resolved by ``CallerID/Category/named(_:)``:
/// `spam`, `scam`, `fraud`, `collector`, `survey`, `telemarketing`, `robocall`, `pyramid`
/// and `block` block; any other valid name identifies; an empty value is `identify`.
/// A map file adds or overrides values, one per line (`#` starts a comment):
///
/// ```
/// spam = block                      # value = action (the name is the value, lowercased)
/// Коллектор = collector block       # value = name action
/// VIP = vip identify
/// Опрос населения = survey          # value = name (action from the name)
/// ```
public struct CategoryMap: Sendable {
    public private(set) var entries: [String: Category] = [:]

    public init() {}

    /// Reads a map file.
    public init(contentsOf path: String) throws(PipelineError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PipelineError(.fileNotFound, "\(path): cannot read the category map")
        }
        let text = String(decoding: data, as: UTF8.self)
        for (i, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = Substring(rawLine)
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { continue }
            guard let eq = trimmed.firstIndex(of: "=") else {
                throw PipelineError(.invalidConfiguration, "\(path):\(i + 1): expected VALUE = [NAME] ACTION")
            }
            let value = trimmed[..<eq].trimmingCharacters(in: .whitespaces)
            let words = trimmed[trimmed.index(after: eq)...].split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard !value.isEmpty, (1...2).contains(words.count) else {
                throw PipelineError(.invalidConfiguration, "\(path):\(i + 1): expected VALUE = [NAME] ACTION")
            }
            do throws(CallerIDError) {
                let category: Category
                if words.count == 2 {
                    category = try Category(words[0].lowercased(), action: try CategoryMap.action(words[1]))
                } else if let action = try? CategoryMap.action(words[0]) {
                    let name = value.lowercased()
                    category = name == "identify" && action == .identify ? .identify
                        : name == "block" && action == .block ? .block
                        : try Category(name, action: action)
                } else {
                    category = try Category.named(words[0])
                }
                entries[CategoryMap.key(value)] = category
            } catch {
                throw PipelineError(.invalidConfiguration, "\(path):\(i + 1): \(error.message)")
            }
        }
    }

    /// Adds one mapping.
    public mutating func set(_ value: String, to category: Category) { entries[CategoryMap.key(value)] = category }

    static func action(_ word: String) throws(CallerIDError) -> CategoryAction {
        switch word.lowercased() {
        case "identify": return .identify
        case "block": return .block
        default: throw CallerIDError(.invalidInput, "unknown action \(InputQuote.quoted(word)): use identify or block")
        }
    }

    static func key(_ value: String) -> String { value.lowercased() }

    /// The category of a field value.
    public func category(for value: String) throws(CallerIDError) -> Category {
        if value.isEmpty { return entries[""] ?? .identify }
        if let c = entries[CategoryMap.key(value)] { return c }
        return try Category.named(value)
    }
}

/// How entries are split into regional databases.
public enum RegionSplit: Sendable, Equatable {
    /// One output for everything.
    case none
    /// By the value of ``PipelineOptions/regionField`` (renamed through the region map, if any).
    case field
    /// By the longest number prefix of the region map (`7495	moscow`).
    case prefix
}

/// A region map file: `KEY<TAB>REGION` per line (`#` comments). With ``RegionSplit/prefix``
/// KEY is a number prefix (E.164 digits; `*` matches any number no other prefix matches);
/// with ``RegionSplit/field`` KEY is a value of the region field, so that several spellings
/// can name one region.
public struct RegionMap: Sendable {
    public private(set) var byValue: [String: String] = [:]
    /// Prefix → region, for longest-prefix matching.
    public private(set) var byPrefix: [UInt64: [Int: String]] = [:]
    public private(set) var prefixLengths: [Int] = []
    public private(set) var fallback: String? = nil

    public init() {}

    public init(contentsOf path: String) throws(PipelineError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PipelineError(.fileNotFound, "\(path): cannot read the region map")
        }
        let text = String(decoding: data, as: UTF8.self)
        var lengths = Set<Int>()
        for (i, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
            if line.trimmingCharacters(in: .whitespaces).isEmpty || line.hasPrefix("#") { continue }
            let parts = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                throw PipelineError(.invalidConfiguration, "\(path):\(i + 1): expected KEY<TAB>REGION")
            }
            let key = parts[0].trimmingCharacters(in: .whitespaces)
            let region = parts[1].trimmingCharacters(in: .whitespaces)
            guard !region.isEmpty else { throw PipelineError(.invalidConfiguration, "\(path):\(i + 1): empty region name") }
            byValue[RegionMap.valueKey(key)] = region
            if key == "*" {
                fallback = region
            } else if !key.isEmpty, key.count <= 15, key.allSatisfy({ $0.isASCII && $0.isNumber }), let v = UInt64(key) {
                byPrefix[v, default: [:]][key.count] = region
                lengths.insert(key.count)
            }
        }
        prefixLengths = lengths.sorted(by: >)
    }

    static func valueKey(_ s: String) -> String {
        s.lowercased().split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    /// Region of a number by its longest listed prefix.
    public func region(forNumber number: UInt64) -> String? {
        let digits = String(number)
        for n in prefixLengths where n <= digits.count {
            if let v = UInt64(digits.prefix(n)), let r = byPrefix[v]?[n] { return r }
        }
        return fallback
    }

    /// Region named by a field value (the value itself when the map does not list it).
    public func region(forValue value: String) -> String {
        byValue[RegionMap.valueKey(value)] ?? value
    }

    public var isEmpty: Bool { byValue.isEmpty }
}
