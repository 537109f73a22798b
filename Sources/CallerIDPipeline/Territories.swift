/// The calling codes' patterns one reader has met (a build's row loop; never shared between
/// threads), so that its rows skip the shared table's lock. The slots are read and written by
/// that one thread only, so the dynamic exclusivity check of every access is left out.
final class PatternMemo {
    /// By calling code: 0 not looked up yet, 1 looked up (``patterns`` holds the answer).
    @exclusivity(unchecked) private var known = [UInt8](repeating: 0, count: 1000)
    @exclusivity(unchecked) private var patterns = [DigitPattern?](repeating: nil, count: 1000)

    /// The pattern of `callingCode` (1...999), from `table` on the first call.
    func pattern(_ callingCode: Int, from table: LazyPatterns) -> DigitPattern? {
        if known[callingCode] == 0 {
            patterns[callingCode] = table.pattern(callingCode)
            known[callingCode] = 1
        }
        return patterns[callingCode]
    }
}

/// libphonenumber's territories — each country, and `001` for every non-geographic calling code —
/// with what the normalizer needs of them: the calling code, the trunk (national) prefix, and the
/// pattern every national number of the territory matches (its `general_desc`), compiled into a
/// ``DigitPattern`` per calling code when the code is first met.
///
/// The pattern is what tells a number that could belong to a country from digits that only have
/// the right length: no Bangladeshi number starts with 0 (`880 0…` is the Russian `8 800…` written
/// with its trunk prefix), no Korean number is `00000000`. It is broader than `IsValidNumber`,
/// which also checks each number type's allocated ranges (`--validity valid`).
final class Territories: Sendable {
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
    /// A territory whose national numbers, written with its trunk prefix, can look like an E.164
    /// number of another country: the prefix does not start with 0 (no E.164 number does) and is
    /// not the start of the territory's own calling code (the NANP's trunk 1 is its code 1).
    /// Russia, Belarus, Kazakhstan, Lithuania, Turkmenistan, Uzbekistan (8) and the Marshall
    /// Islands (1). Their patterns are compiled when the library is loaded (a handful), so the
    /// check of every row that starts with 8 or 1 takes no lock.
    struct TrunkCandidate: Sendable {
        let territory: Int
        let id: String
        let callingCode: Int
        let prefix: [UInt8]
        /// ``prefix`` as text.
        let prefixText: String
        let pattern: DigitPattern
        /// Bit n: a national number of n digits is possible in the territory's calling code.
        let lengths: UInt32
    }

    /// By digit 1...9: the candidates whose trunk prefix starts with it.
    private let trunkCandidates: [[TrunkCandidate]]
    /// By digit 1...9: bit n set when some candidate of that digit takes a number of n digits
    /// (its prefix and a possible national length), so most numbers are passed over at once.
    private let trunkDigitCounts: [UInt32]
    /// Each territory's pattern, by its index in ``list``, compiled on first use.
    private let territoryPatterns: LazyPatterns
    /// By calling code (1...999): the union of its territories' patterns, compiled on first use.
    private let codePatterns: LazyPatterns

    /// - Parameter lengths: the possible national lengths of a calling code (bit n: n digits).
    init(_ metadata: [Metadata], lengths: (Int) -> UInt32 = { _ in UInt32.max }) {
        var sources = [[String]](repeating: [], count: 1000)
        list = metadata.map { m in
            if (1..<1000).contains(m.callingCode) { sources[m.callingCode].append(m.pattern) }
            return Territory(id: m.id, callingCode: m.callingCode,
                             nationalPrefix: m.nationalPrefix.utf8.compactMap { $0 >= 0x30 && $0 <= 0x39 ? $0 - 0x30 : nil },
                             source: m.pattern)
        }
        territoryPatterns = LazyPatterns(list.map(\.source))
        var candidates = [[TrunkCandidate]](repeating: [], count: 10)
        for (i, t) in list.enumerated() where t.id != "001" {
            guard let first = t.nationalPrefix.first, first != 0,
                  !String(t.callingCode).utf8.map({ $0 - 0x30 }).starts(with: t.nationalPrefix),
                  let pattern = territoryPatterns.pattern(i) else { continue }
            candidates[Int(first)].append(TrunkCandidate(territory: i, id: t.id, callingCode: t.callingCode, prefix: t.nationalPrefix,
                                                         prefixText: t.nationalPrefix.map(String.init).joined(),
                                                         pattern: pattern, lengths: lengths(t.callingCode)))
        }
        trunkCandidates = candidates
        trunkDigitCounts = candidates.map { list in
            list.reduce(UInt32(0)) { mask, c in mask | (c.prefix.count < 31 ? c.lengths << UInt32(c.prefix.count) : 0) }
        }
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

    /// Compiles every pattern now (a server, before its first request: about 10–20 ms, ten
    /// times that in a debug build), so that no reader waits for one later.
    func compileAll() {
        for i in list.indices { _ = territoryPatterns.pattern(i) }
        for cc in 1..<1000 { _ = codePatterns.pattern(cc) }
    }

    /// Patterns not compiled yet (none after ``compileAll()``).
    var patternsNotCompiled: Int { territoryPatterns.untried + codePatterns.untried }

    /// The trunk prefix of territory `region` (ISO 3166 alpha-2), nil when it has none.
    func nationalPrefix(region: String) -> [UInt8]? {
        guard let t = list.first(where: { $0.id == region }), !t.nationalPrefix.isEmpty else { return nil }
        return t.nationalPrefix
    }

    /// The compiled pattern of territory `index` of ``list`` (nil when it cannot be read).
    func pattern(ofTerritory index: Int) -> DigitPattern? { territoryPatterns.pattern(index) }

    /// True when some territory of `callingCode` has national numbers like `national` (digits
    /// 0...9, leading zeros kept); true as well when libphonenumber has no pattern for the code.
    func isPlausible(callingCode: Int, national: some BidirectionalCollection<UInt8>) -> Bool {
        guard (1..<1000).contains(callingCode), let pattern = codePatterns.pattern(callingCode) else { return true }
        return pattern.matches(national)
    }

    /// ``isPlausible(callingCode:national:)`` for the last `nationalLength` digits of `number`;
    /// `memo` (one reader's) keeps the last calling code's pattern, so that rows in runs of one
    /// country skip the shared table's lock.
    func isPlausible(callingCode: Int, nationalLength: Int, of number: UInt64, memo: PatternMemo? = nil) -> Bool {
        guard (1..<1000).contains(callingCode) else { return true }
        guard let pattern = memo?.pattern(callingCode, from: codePatterns) ?? codePatterns.pattern(callingCode) else { return true }
        return pattern.matches(lastDigits: nationalLength, of: number)
    }

    /// ``nationalReadings(of:besides:)`` for a number of `digitCount` digits whose first is
    /// `lead`, without an allocation: the first territory whose pattern the national part fits.
    func firstNationalReading(of number: UInt64, digitCount: Int, lead: Int, besides callingCode: Int) -> TrunkCandidate? {
        guard (1...9).contains(lead), digitCount < 32, trunkDigitCounts[lead] & (1 << UInt32(digitCount)) != 0 else { return nil }
        var scale: UInt64 = 1
        for _ in 1..<digitCount { scale &*= 10 }
        for c in trunkCandidates[lead] where digitCount > c.prefix.count && c.lengths & (1 << UInt32(min(digitCount - c.prefix.count, 31))) != 0
            && c.callingCode != callingCode {
            // The number's first digits are the prefix (one digit: `lead` already is).
            if c.prefix.count > 1 {
                var head = number, s = scale
                var fits = true
                for d in c.prefix { if head / s != UInt64(d) { fits = false; break }; head %= s; s /= 10 }
                if !fits { continue }
            }
            if c.pattern.matches(lastDigits: digitCount - c.prefix.count, of: number) { return c }
        }
        return nil
    }

    /// The territories in which `digits` read as a national number written with the territory's
    /// trunk prefix are plausible (`88005553535`: Russia, `8 800 555-35-35`), other than those of
    /// `callingCode` (the reading already taken): what a refused or doubtful row probably was.
    func nationalReadings(of digits: [UInt8], besides callingCode: Int) -> [Territory] {
        guard let lead = digits.first, (1...9).contains(lead) else { return [] }
        return trunkCandidates[Int(lead)].compactMap { c in
            let t = list[c.territory]
            guard t.callingCode != callingCode, digits.count > c.prefix.count, digits.starts(with: c.prefix),
                  c.pattern.matches(digits.dropFirst(c.prefix.count)) else { return nil }
            return t
        }
    }
}
