package import CallerID
package import CallerIDDirectory

/// What the phone does with a number, for the packs of a query: the rule by which the Call
/// Directory feed makes its two lists (``MergedStream``), applied to one number, so that
/// `lookup`, `lookup serve` and the phone give a number one answer (docs/CALL-DIRECTORY.md,
/// "One answer for a number").
///
/// - The identification list: the entry of the first pack (precedence order) whose entry for
///   the number identifies, among the sets whose settings feed identification.
/// - The blocking list: the entry of the first pack whose entry blocks, among the sets whose
///   settings feed blocking; it blocks when its set's category choice takes its category (a
///   winner not chosen is dropped, a later entry does not take its place). A number inside a
///   blocking rule is blocked too. A number on an allow list is never blocked.
///
/// Each set (`--db`) brings its own settings (`settings.json` of a store's generation or of a
/// build directory; the defaults for a file): identification, blocking and the category
/// choice apply to its own packs; the allow lists and the rules of every set apply to the
/// whole query.
package struct AnswerRule: Sendable {
    /// Per pack (precedence order): the index of its set's settings in ``settings``.
    private let packSet: [Int]
    private let settings: [FeedSettings]
    /// What applies to the whole query: every set's allow list, and the rules of every set
    /// that feeds blocking, joined (``FeedSettings/allowList`` sorts them, ``FeedSettings/ruleRanges``
    /// joins them, as for one set).
    private let whole: FeedSettings
    private let rules: [ClosedRange<UInt64>]
    /// Every set takes the default settings: a number's answer is the first pack's entry
    /// that holds it, as a lone file gives it.
    package let isDefault: Bool

    /// - Parameters:
    ///   - packSet: the set each pack (precedence order) belongs to.
    ///   - settings: each set's settings.
    package init(packSet: [Int], settings: [FeedSettings]) {
        self.packSet = packSet
        self.settings = settings
        var whole = FeedSettings()
        whole.allowList = settings.flatMap(\.allowList)
        whole.rules = settings.filter(\.blocking).flatMap(\.rules)
        self.whole = whole
        rules = whole.ruleRanges
        isDefault = settings.allSatisfy(\.answersAsDefaults)
    }

    /// Pack `p`'s identifying entries take part (its set feeds identification).
    package func identifies(_ p: Int) -> Bool { settings[packSet[p]].identification }

    /// Pack `p`'s blocking entries take part (its set feeds blocking).
    package func blocks(_ p: Int) -> Bool { settings[packSet[p]].blocking }

    /// Whether pack `p`'s entry of `category`, the first blocking entry of a number, blocks it.
    package func blocks(_ p: Int, category: Category) -> Bool { settings[packSet[p]].blocks(category: category) }

    /// Whether `number` is on an allow list.
    package func allows(_ number: UInt64) -> Bool { whole.allows(number) }

    /// The blocking rule that holds `number`, nil when none does.
    package func rule(holding number: UInt64) -> ClosedRange<UInt64>? {
        var lo = 0, hi = rules.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if rules[mid].upperBound < number { lo = mid + 1 } else { hi = mid }
        }
        return lo < rules.count && rules[lo].contains(number) ? rules[lo] : nil
    }
}

extension FeedSettings {
    /// Both lists fed, nothing allowed, chosen or added by a rule: what decides an answer is
    /// as with the defaults (slots and the entry cap only split the lists).
    fileprivate var answersAsDefaults: Bool {
        identification && blocking && allowList.isEmpty && blockCategories == nil && rules.isEmpty
    }
}
