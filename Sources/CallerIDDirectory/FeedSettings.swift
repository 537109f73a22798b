package import CallerID
public import Foundation

/// A blocking rule CallKit cannot express: every number with a prefix
/// (`+33 6 12 ## ## ##`: 33612000000 … 33612999999) or every number of a range
/// (`33612000000..33612999999`, also written with `–` or ` - `). It is expanded into exact
/// numbers lazily, while the blocking list is streamed, and counts against the budget.
public struct BlockingRule: Sendable, Hashable, CustomStringConvertible {
    /// The rule as written.
    public let text: String
    /// The first and last numbers it blocks.
    public let first: UInt64
    public let last: UInt64

    /// Numbers the rule blocks.
    public var count: UInt64 { last - first + 1 }

    public var description: String { text }

    /// Reads a rule: digits (with spaces, dots, dashes, parentheses and a leading `+`) followed
    /// by `#` (or `X`) wildcards, at most 15 digits in all; or two numbers separated by `..`,
    /// `–`, `—` or ` - `.
    public init(_ text: String) throws(DirectoryError) {
        let t = text.trimmingCharacters(in: .whitespaces)
        func bad(_ why: String) -> DirectoryError {
            DirectoryError(.invalidRule, "blocking rule '\(text)': \(why)")
        }
        var sides: [String]? = nil
        for sep in ["..", "–", "—", " - "] where t.contains(sep) {
            sides = t.components(separatedBy: sep)
            break
        }
        if let sides {
            guard sides.count == 2 else { throw bad("a range is START..END") }
            let a: UInt64, b: UInt64
            do {
                a = try PhoneNumber.parse(sides[0].trimmingCharacters(in: .whitespaces))
                b = try PhoneNumber.parse(sides[1].trimmingCharacters(in: .whitespaces))
            } catch {
                throw bad(error.message)
            }
            guard a <= b else { throw bad("the range ends (\(b)) before it starts (\(a))") }
            self.text = text
            first = a
            last = b
            return
        }
        var digits: [UInt8] = []
        var wildcards = 0
        for (i, u) in t.utf8.enumerated() {
            switch u {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard wildcards == 0 else { throw bad("wildcards (#) must come after all the digits") }
                digits.append(u - UInt8(ascii: "0"))
            case UInt8(ascii: "#"), UInt8(ascii: "X"), UInt8(ascii: "x"):
                wildcards += 1
            case UInt8(ascii: "+") where i == 0:
                continue
            case UInt8(ascii: " "), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "("), UInt8(ascii: ")"), 0xC2, 0xA0:
                continue   // formatting (0xC2 0xA0: a no-break space)
            default:
                throw bad("unexpected character; write digits then # wildcards (+33 6 12 ## ## ##) or START..END")
            }
        }
        guard !digits.isEmpty else { throw bad("no digits: a rule needs at least the country code") }
        guard digits[0] != 0 else { throw bad("starts with 0: write the number with its country code") }
        guard digits.count + wildcards <= 15 else {
            throw bad("\(digits.count + wildcards) digits and wildcards; an E.164 number has at most 15")
        }
        var prefix: UInt64 = 0
        for d in digits { prefix = prefix * 10 + UInt64(d) }
        var scale: UInt64 = 1
        for _ in 0..<wildcards { scale *= 10 }
        self.text = text
        first = prefix * scale
        last = first + scale - 1
    }

    /// A rule over `first...last`.
    public init(first: UInt64, last: UInt64) throws(DirectoryError) {
        try self.init("\(first)..\(last)")
    }
}

extension BlockingRule: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        try self.init(text)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }
}

/// What the user and the app chose about feeding the extensions; stored as `settings.json` in
/// each installed generation, so that the previous choice is known when computing a delta.
///
/// - ``allowList``: numbers never blocked, whatever a database or a rule says (sorted).
/// - ``blockCategories``: block only entries of these categories (nil: every blocking
///   category). Applied after precedence: the entry that wins for a number decides.
/// - ``rules``: prefix and range rules added to the blocking list.
/// - ``slots`` × ``maxEntries``: how many extensions the app ships and their cap.
public struct FeedSettings: Sendable, Equatable {
    public var allowList: [UInt64] = [] { didSet { allowList = Self.normalized(allowList) } }
    public var blockCategories: [String]? = nil
    public var rules: [BlockingRule] = []
    /// Feed the identification list (labels).
    public var identification = true
    /// Feed the blocking list.
    public var blocking = true
    /// Extensions (slots) the entries are split across.
    public var slots = 1
    /// Entries per extension, both lists together (CallKit's cap,
    /// ``CallDirectorySimulator/callKitMaximumEntries``, is 1,999,999; an install refuses more).
    public var maxEntries = CallDirectorySimulator.callKitMaximumEntries

    public init(allowList: [UInt64] = [], blockCategories: [String]? = nil, rules: [BlockingRule] = [],
                slots: Int = 1, maxEntries: Int = 1_999_999) {
        self.allowList = Self.normalized(allowList)
        self.blockCategories = blockCategories
        self.rules = rules
        self.slots = slots
        self.maxEntries = maxEntries
    }

    /// An allow list file: numbers (E.164 digits, `+` and separators allowed), one per line;
    /// blank lines and `#` comments skipped. A line that is not a number is refused with its
    /// line number.
    package static func readAllowList(_ path: String) throws(DirectoryError) -> [UInt64] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DirectoryError(FileManager.default.fileExists(atPath: path) ? .io : .fileNotFound, "\(path): cannot read")
        }
        var numbers: [UInt64] = []
        for (i, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            if text.isEmpty { continue }
            do {
                numbers.append(try PhoneNumber.parse(text))
            } catch {
                throw DirectoryError(.invalidNumber, "\(path):\(i + 1): \(error.message)")
            }
        }
        return numbers
    }

    /// Sorted, without duplicates (returned as is when it already is).
    static func normalized(_ list: [UInt64]) -> [UInt64] {
        if zip(list, list.dropFirst()).allSatisfy({ $0 < $1 }) { return list }
        var out: [UInt64] = []
        out.reserveCapacity(list.count)
        for n in list.sorted() where out.last != n { out.append(n) }
        return out
    }

    /// Checks ranges: slots ≥ 1 (at most 64), 1 ≤ max entries, every rule within the budget of
    /// one extension (`invalidRule` for a rule larger than CallKit's cap, which no budget can
    /// hold; `budgetExceeded` for one larger than ``maxEntries``), allow-list numbers valid.
    public func validate() throws(DirectoryError) {
        guard (1...64).contains(slots) else {
            throw DirectoryError(.invalidArgument, "slots: \(slots); give 1 to 64 extensions")
        }
        guard maxEntries >= 1 else { throw DirectoryError(.invalidArgument, "max entries: \(maxEntries); give at least 1") }
        let cap = CallDirectorySimulator.callKitMaximumEntries
        for rule in rules where rule.count > UInt64(maxEntries) {
            // A rule no extension can ever hold is a bad rule, not a budget to raise.
            if rule.count > UInt64(cap) {
                throw DirectoryError(.invalidRule, "blocking rule '\(rule.text)' expands to \(grouped(rule.count)) numbers, more than any extension holds (CallKit's cap: \(grouped(cap))); narrow it")
            }
            throw DirectoryError(.budgetExceeded, "blocking rule '\(rule.text)' expands to \(grouped(rule.count)) numbers, more than one extension holds (\(grouped(maxEntries)))")
        }
        if let bad = allowList.first(where: { !PhoneNumber.isValid($0) }) {
            throw DirectoryError(.invalidArgument, "allow list: \(bad) is not a phone number")
        }
    }

    // The blocking list's rule for one number, shared by the feed (``MergedStream``) and the
    // point answers of `lookup` and `lookup serve`, so that a number gets one answer everywhere.

    /// Whether an entry of `category` that wins a number's place in the blocking list (the
    /// highest-precedence blocking entry) blocks it: every blocking category when
    /// ``blockCategories`` is nil, else only those named (case-insensitive). A winner not
    /// chosen is dropped; a lower-precedence entry does not take its place.
    package func blocks(category: Category) -> Bool {
        guard category.action == .block else { return false }
        guard let names = blockCategories else { return true }
        return names.contains { $0.lowercased() == category.name }
    }

    /// Whether `number` is on the allow list (never blocked).
    package func allows(_ number: UInt64) -> Bool { allowList.sortedIndex(of: number) != nil }

    /// The rules as sorted, disjoint ranges (overlapping or touching rules joined).
    package var ruleRanges: [ClosedRange<UInt64>] {
        var out: [ClosedRange<UInt64>] = []
        for r in rules.sorted(by: { $0.first < $1.first }) {
            if let last = out.last, r.first <= last.upperBound &+ 1 {
                out[out.count - 1] = last.lowerBound...max(last.upperBound, r.last)
            } else {
                out.append(r.first...r.last)
            }
        }
        return out
    }

    /// JSON, keys sorted (stable bytes for the same settings).
    public func jsonData() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return (try? encoder.encode(self)) ?? Data()
    }

    /// The settings stored in `directory` (`settings.json`: an installed generation has one, a
    /// build directory may), nil when there are none.
    /// - Throws: ``DirectoryError`` `badManifest` for a file that cannot be read or decoded.
    static func stored(in directory: String) throws(DirectoryError) -> FeedSettings? {
        let path = joinPath(directory, "settings.json")
        guard FileSystem.exists(path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DirectoryError(.badManifest, "\(path): cannot be read")
        }
        return try decode(data, path: path)
    }

    /// Reads settings JSON; missing keys take their defaults.
    public static func decode(_ data: Data, path: String) throws(DirectoryError) -> FeedSettings {
        do {
            return try JSONDecoder().decode(FeedSettings.self, from: data)
        } catch let error as DirectoryError {
            throw DirectoryError(error.code, "\(path): \(error.message)")
        } catch {
            throw DirectoryError(.badManifest, "\(path): not valid settings: \(error)")
        }
    }
}

extension FeedSettings: Codable {
    enum CodingKeys: String, CodingKey {
        case allowList = "allow", blockCategories = "block_categories", rules
        case identification = "identify", blocking = "block", slots, maxEntries = "max_entries"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        allowList = Self.normalized(try c.decodeIfPresent([UInt64].self, forKey: .allowList) ?? [])
        blockCategories = try c.decodeIfPresent([String].self, forKey: .blockCategories)
        rules = try c.decodeIfPresent([BlockingRule].self, forKey: .rules) ?? []
        identification = try c.decodeIfPresent(Bool.self, forKey: .identification) ?? true
        blocking = try c.decodeIfPresent(Bool.self, forKey: .blocking) ?? true
        slots = try c.decodeIfPresent(Int.self, forKey: .slots) ?? 1
        maxEntries = try c.decodeIfPresent(Int.self, forKey: .maxEntries) ?? 1_999_999
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(allowList, forKey: .allowList)
        try c.encodeIfPresent(blockCategories, forKey: .blockCategories)
        try c.encode(rules, forKey: .rules)
        try c.encode(identification, forKey: .identification)
        try c.encode(blocking, forKey: .blocking)
        try c.encode(slots, forKey: .slots)
        try c.encode(maxEntries, forKey: .maxEntries)
    }
}
