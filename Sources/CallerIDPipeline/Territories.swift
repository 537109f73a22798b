/// libphonenumber's territories — each country, and `001` for every non-geographic calling code —
/// with what the normalizer needs of them: the calling code, the trunk (national) prefix, and the
/// pattern every national number of the territory matches (its `general_desc`), compiled into a
/// ``DigitPattern`` per calling code when the code is first met.
///
/// The pattern is what tells a number that could belong to a country from digits that only have
/// the right length: no Bangladeshi number starts with 0 (`880 0…` is the Russian `8 800…` written
/// with its trunk prefix), no Korean number is `00000000`. It is broader than `IsValidNumber`,
/// which also checks each number type's allocated ranges (`--validity valid`).
struct Territories: Sendable {
    /// One territory as libphonenumber's metadata gives it.
    struct Metadata: Sendable {
        var id: String
        var callingCode: Int
        var nationalPrefix: String
        var pattern: String
    }

    /// One territory.
    struct Territory: Sendable {
        let id: String
        let callingCode: Int
        /// The trunk prefix's digits (`[8]` in Russia, `[0]` in Korea), empty when there is none.
        let nationalPrefix: [UInt8]
        /// The pattern as libphonenumber writes it.
        let source: String
    }

    let list: [Territory]
    /// By digit 1...9: the territories (indices in ``list``) whose trunk prefix starts with it,
    /// and their calling codes. Only such a prefix, not 0, can begin an E.164 number: 8 in
    /// Russia, Belarus, Kazakhstan…, 1 in the NANP.
    private let trunkStarts: [(territories: [Int], callingCodes: [Int])]
    /// Each territory's pattern, by its index in ``list``, compiled on first use.
    private let territoryPatterns: LazyPatterns
    /// By calling code (1...999): the union of its territories' patterns, compiled on first use.
    private let codePatterns: LazyPatterns

    init(_ metadata: [Metadata]) {
        var sources = [[String]](repeating: [], count: 1000)
        list = metadata.map { m in
            if (1..<1000).contains(m.callingCode) { sources[m.callingCode].append(m.pattern) }
            return Territory(id: m.id, callingCode: m.callingCode,
                             nationalPrefix: m.nationalPrefix.utf8.compactMap { $0 >= 0x30 && $0 <= 0x39 ? $0 - 0x30 : nil },
                             source: m.pattern)
        }
        territoryPatterns = LazyPatterns(list.map(\.source))
        var starts = [(territories: [Int], callingCodes: [Int])](repeating: ([], []), count: 10)
        for (i, t) in list.enumerated() where t.id != "001" {
            guard let first = t.nationalPrefix.first, first != 0 else { continue }
            starts[Int(first)].territories.append(i)
            if !starts[Int(first)].callingCodes.contains(t.callingCode) { starts[Int(first)].callingCodes.append(t.callingCode) }
        }
        trunkStarts = starts
        codePatterns = LazyPatterns(sources.map { patterns in
            let distinct = Set(patterns).sorted()
            return distinct.isEmpty ? nil : distinct.count == 1 ? distinct[0] : distinct.map { "(?:\($0))" }.joined(separator: "|")
        })
    }

    /// The trunk prefixes of the territories of `callingCode` (`[[8]]` for +7, `[[0]]` for +82).
    func nationalPrefixes(callingCode: Int) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for t in list where t.callingCode == callingCode && !t.nationalPrefix.isEmpty && !out.contains(t.nationalPrefix) {
            out.append(t.nationalPrefix)
        }
        return out
    }

    /// The compiled pattern of territory `index` of ``list`` (nil when it cannot be read).
    func pattern(ofTerritory index: Int) -> DigitPattern? { territoryPatterns.pattern(index) }

    /// True when some territory of `callingCode` has national numbers like `national` (digits
    /// 0...9, leading zeros kept); true as well when libphonenumber has no pattern for the code.
    func isPlausible(callingCode: Int, national: some Sequence<UInt8>) -> Bool {
        guard (1..<1000).contains(callingCode), let pattern = codePatterns.pattern(callingCode) else { return true }
        return pattern.matches(national)
    }

    /// ``isPlausible(callingCode:national:)`` for the last `nationalLength` digits of `number`.
    func isPlausible(callingCode: Int, nationalLength: Int, of number: UInt64) -> Bool {
        guard (1..<1000).contains(callingCode), let pattern = codePatterns.pattern(callingCode) else { return true }
        return pattern.matches(lastDigits: nationalLength, of: number)
    }

    /// True when `digits`, which start with `lead`, may be a national number of a territory other
    /// than those of `callingCode`, written with its trunk prefix: one comparison for most numbers.
    func mayBeNational(lead: Int, besides callingCode: Int) -> Bool {
        (1...9).contains(lead) && trunkStarts[lead].callingCodes.contains { $0 != callingCode }
    }

    /// The territories in which `digits` read as a national number written with the territory's
    /// trunk prefix are plausible (`88005553535`: Russia, `8 800 555-35-35`), other than those of
    /// `callingCode` (the reading already taken): what a refused or doubtful row probably was.
    func nationalReadings(of digits: [UInt8], besides callingCode: Int) -> [Territory] {
        guard let lead = digits.first, mayBeNational(lead: Int(lead), besides: callingCode) else { return [] }
        return trunkStarts[Int(lead)].territories.compactMap { i in
            let t = list[i]
            guard t.callingCode != callingCode, digits.count > t.nationalPrefix.count, digits.starts(with: t.nationalPrefix),
                  let pattern = pattern(ofTerritory: i), pattern.matches(digits.dropFirst(t.nationalPrefix.count)) else { return nil }
            return t
        }
    }
}
