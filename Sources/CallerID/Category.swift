/// What an entry's category asks of a caller-ID system: show a label, or block the call.
///
/// Every category maps to one action; CallKit keeps separate identification and blocking lists.
public enum CategoryAction: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case identify = 0
    case block = 1

    public var description: String { self == .identify ? "identify" : "block" }
}

/// A named category of entries, such as `identify`, `block`, `spam` or `collector`.
///
/// A database stores up to 256 categories; each has a name (1–64 bytes of lowercase ASCII
/// letters, digits, `-` and `_`) and an ``CategoryAction``.
public struct Category: Hashable, Sendable, CustomStringConvertible {
    public let name: String
    public let action: CategoryAction

    /// Creates a category; throws ``CallerIDError/Code-swift.struct/invalidInput`` for a bad name.
    public init(_ name: String, action: CategoryAction) throws(CallerIDError) {
        guard Category.isValidName(name) else {
            throw CallerIDError(.invalidInput, "invalid category name \(quotedInput(name.utf8)): use 1-64 characters a-z, 0-9, '-' or '_'")
        }
        self.name = name
        self.action = action
    }

    private init(unchecked name: String, action: CategoryAction) {
        self.name = name
        self.action = action
    }

    /// Shows the label on an incoming call.
    public static let identify = Category(unchecked: "identify", action: .identify)
    /// Blocks the call.
    public static let block = Category(unchecked: "block", action: .block)

    /// Names that block by default when given without an explicit action.
    public static let blockingNames: Set<String> = [
        "block", "spam", "scam", "fraud", "collector", "survey", "telemarketing", "robocall", "pyramid",
    ]

    /// The category called `name`, with the action its name implies: one of
    /// ``blockingNames`` blocks, anything else identifies. Names are lowercased.
    public static func named(_ name: String) throws(CallerIDError) -> Category {
        let lower = name.lowercased()
        if lower == "identify" { return .identify }
        if lower == "block" { return .block }
        return try Category(lower, action: blockingNames.contains(lower) ? .block : .identify)
    }

    public var description: String { name }

    static func isValidName(_ name: String) -> Bool {
        let u = Array(name.utf8)
        guard (1...64).contains(u.count) else { return false }
        return u.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F }
    }
}

/// Selects entries by category during enumeration.
public struct CategoryFilter: Sendable, Hashable {
    enum Rule: Sendable, Hashable {
        case actions(Set<CategoryAction>)
        case names(Set<String>)
    }

    let rule: Rule

    /// Entries whose category has this action (all blocking categories, for example).
    public static func action(_ action: CategoryAction) -> CategoryFilter { CategoryFilter(rule: .actions([action])) }

    /// Entries whose category name is one of `names`.
    public static func names(_ names: Set<String>) -> CategoryFilter { CategoryFilter(rule: .names(names)) }

    /// Entries of exactly these categories.
    public static func categories(_ categories: [Category]) -> CategoryFilter {
        CategoryFilter(rule: .names(Set(categories.map(\.name))))
    }

    func matches(_ category: Category) -> Bool {
        switch rule {
        case .actions(let a): a.contains(category.action)
        case .names(let n): n.contains(category.name)
        }
    }
}
