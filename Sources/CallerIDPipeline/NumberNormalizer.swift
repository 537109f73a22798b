import CallerID
import Foundation

/// Why a number was refused.
public struct NumberProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: RejectReason
    public var message: String
    /// The countries (ISO 3166 alpha-2) in which the refused digits are a valid national number
    /// written with the trunk prefix: what the row probably was (the message says it too).
    public var nationalReadings: [String] = []
    /// The number as read, when only its shape was refused (`not-plausible`): a number of the
    /// row's own country may be newer than libphonenumber's metadata.
    var shapeRefused: UInt64? = nil
    /// Set when the number is kept all the same, with ``message`` as its warning
    /// (``NumberNormalizer/keptIfOnlyItsShape(_:callingCode:)``).
    var keptAs: UInt64? = nil
    public var description: String { message }

    public init(reason: RejectReason, message: String, nationalReadings: [String] = []) {
        self.reason = reason
        self.message = message
        self.nationalReadings = nationalReadings
    }
}

/// Digits read as E.164 that also have the shape of a national number of another country
/// written with its trunk prefix (``NumberNormalizer/otherNationalReading(of:)``).
public struct NationalReading: Sendable, Equatable {
    /// The digits, as E.164.
    public var number: UInt64
    public var callingCode: Int
    public var nationalLength: Int
    /// The other country (ISO 3166 alpha-2) and its trunk prefix.
    public var country: String
    public var trunkPrefix: String

    /// A sentence for people: both readings (made when asked: most readings are never shown).
    public var message: String {
        let digits = String(number)
        return "\(InputQuote.quoted(digits)) is read as +\(callingCode) \(digits.suffix(nationalLength)); "
            + "it is also a number of \(country) written with its trunk prefix \(trunkPrefix)"
    }
}

/// What one number cell gave: one or more E.164 numbers, and what was changed on the way.
public struct NormalizedNumbers: Sendable, Equatable {
    public var numbers: [UInt64]
    public var warnings: [Warning]

    public struct Warning: Sendable, Equatable {
        public var kind: WarningKind
        public var message: String
    }
}

/// How strictly the pipeline checks a number (`--validity`).
public enum NumberValidity: String, Sendable, CaseIterable {
    /// The default: the length fits the country's numbers and the national number has the shape
    /// some number of the country has (libphonenumber's general number pattern of the country).
    /// `880 0…` is refused (no Bangladeshi number starts with 0: it is the Russian `8 800…`
    /// written with its trunk prefix), as is `+82 00000000`. Directories hold old and new
    /// numbers, so the allocation of each number type's ranges is not checked (that is `valid`).
    case plausible
    /// The length fits the country's numbers (libphonenumber's "possible"), nothing more.
    case possible
    /// In a range libphonenumber knows as allocated ("valid"); needs libphonenumber.
    case valid
    /// Any number of at most 15 digits with an assigned calling code.
    case any
}

/// Which rules read numbers.
public enum NumberRules: Sendable, Equatable {
    /// libphonenumber when it can be loaded, the built-in table otherwise.
    case automatic
    /// libphonenumber; creating the normalizer fails when it cannot be loaded.
    case libphonenumber
    /// The built-in table and a `--numbering-plan` file only.
    case builtInTable
}

/// Turns numbers as people write them into E.164 digits.
///
/// With libphonenumber (loaded when available, see ``NumberRules``) every number that is not
/// plain international digits is parsed by it (national forms, trunk and international
/// prefixes, the country's rules), and every number's length is checked against its metadata
/// (``NumberValidity``); plain E.164 digits take a fast path: a table of the possible lengths
/// per calling code, read from libphonenumber once. Countries a `--numbering-plan` file adds or
/// replaces are read with that file's rules. Without libphonenumber the built-in
/// ``NumberingPlan`` reads everything:
///
/// - formatting is ignored: spaces, NBSP, dashes, dots, parentheses, slashes;
///   Arabic-Indic and full-width digits count as digits;
/// - `+CC…` is international; so is an international prefix (`00`, `011`, `810`…) of the
///   row's country;
/// - in a country, a national number with its trunk prefix (`8 913…` in Russia, `02-758…` in
///   Korea, `01454 …` in the UK), without it (`403-945-3444`), or with the calling code but no
///   `+` (`44 1619 …`, also `886 02 …`) is accepted when its length fits the country's rules;
/// - an extension (`ext. 12`, `x12`, `;ext=12`, `доб. 5`) is cut with a warning;
/// - several numbers in one cell (`045 2030367 / 6345-985-0418`, `…, …`) are all returned.
public struct NumberNormalizer: Sendable {
    public let plan: NumberingPlan
    public let validity: NumberValidity
    /// libphonenumber, its length table and its territories, when numbers are read with it.
    let library: PhoneNumberLibrary?
    let lengths: PossibleLengths?
    let territories: Territories?
    /// What reads the numbers, for summaries: "libphonenumber" or "built-in table" (and why).
    public let rulesDescription: String
    /// Why numbers are read with the built-in table although libphonenumber was wanted
    /// (``NumberRules/automatic`` could not load it); nil otherwise. Programs say it once per run:
    /// the table refuses some valid numbers libphonenumber takes.
    public let fallbackReason: String?
    /// Where this process loaded libphonenumber from (the file `CALLERID_PHONENUMBER_LIBRARY`
    /// names, `libcallerid-phonenumber.so` beside the executable or in its `../lib`, or the one
    /// on the loader's path), or nil when it cannot be loaded: then ``NumberRules/automatic``
    /// reads numbers with the built-in table (``fallbackReason`` says why).
    public static var libphonenumberPath: String? { try? PhoneNumberLibrary.shared.get().path }
    /// Calling codes (1...999) a `--numbering-plan` file rules, by code.
    let userCodeTable: [Bool]

    /// A normalizer with the built-in table only (no libphonenumber), `possible` validity.
    public init(plan: NumberingPlan = .builtIn) {
        self.plan = plan
        validity = .possible
        library = nil
        lengths = nil
        territories = nil
        rulesDescription = "built-in table"
        fallbackReason = nil
        userCodeTable = NumberNormalizer.codeTable(plan.userCodes)
    }

    /// A normalizer with the rules and the validity asked for.
    /// - Throws: `rules: .libphonenumber` or `validity: .valid` when libphonenumber cannot be loaded.
    public init(plan: NumberingPlan = .builtIn, validity: NumberValidity = .plausible, rules: NumberRules) throws(PipelineError) {
        self.plan = plan
        self.validity = validity
        var loaded: PhoneNumberLibrary? = nil
        var why: String? = nil
        if rules != .builtInTable {
            switch PhoneNumberLibrary.shared {
            case .success(let l): loaded = l
            case .failure(let e):
                if rules == .libphonenumber || validity == .valid {
                    throw PipelineError(e.code, validity == .valid ? "--validity valid needs libphonenumber: \(e.message)" : e.message)
                }
                why = e.message
            }
        }
        library = loaded
        lengths = loaded?.possibleLengths
        territories = loaded?.territories
        userCodeTable = NumberNormalizer.codeTable(plan.userCodes)
        rulesDescription = loaded == nil ? "built-in table" + (why.map { " (\($0))" } ?? "") : "libphonenumber"
        fallbackReason = why
    }

    /// Loads now what reading numbers otherwise loads when first needed — libphonenumber's
    /// metadata and the number pattern of every calling code — so that a server's first request
    /// for a country costs what the others do.
    public func prepareEveryCountry() {
        territories?.compileAll()
        _ = library?.parse("2025550123", region: "US")
        _ = try? normalize("8 (913) 123-45-67", country: "RU")
    }

    /// Normalizes `text` as written in `country` (ISO 3166 alpha-2; nil: E.164 digits, with or
    /// without `+`, are required).
    public func normalize(_ text: String, country: String? = nil) throws(NumberProblem) -> NormalizedNumbers {
        if let library, let country, !plan.userCountries.contains(country.uppercased()) {
            // libphonenumber reads national forms; the country must be one it knows.
            let region = country.uppercased()
            guard library.countryCode(region: region) != nil else {
                _ = try ruleFor(country: country)   // an unknown code gets the built-in message
                return try normalize(text, rule: nil, ccOnly: plan.callingCode(country: country))
            }
            let callingCode = library.countryCode(region: region) ?? 0
            return try normalize(text) { (digits, plus, shown, lead) throws(NumberProblem) in
                do throws(NumberProblem) {
                    return try resolveWithLibrary(library, digits, plus: plus, region: region, shown: shown, beforeParenthesis: lead)
                } catch {
                    throw keptIfOnlyItsShape(error, callingCode: callingCode, region: region)
                }
            }
        }
        guard let country else {
            do throws(NumberProblem) {
                return try normalize(text, rule: nil, ccOnly: nil)
            } catch {
                // What the digits probably were, as for a plain TSV row.
                guard let (digits, plus) = try? Self.digits(of: text), !plus, digits.first != 0, digits.count <= 17 else { throw error }
                throw withNationalHint(error, digits: digits)
            }
        }
        guard let rule = try ruleFor(country: country) else {
            return try normalize(text, rule: nil, ccOnly: plan.callingCode(country: country))
        }
        return try normalize(text, rule: rule, ccOnly: nil)
    }

    /// When `number`, read as E.164 digits, also has the shape of a national number of another
    /// country written with that country's trunk prefix (its number pattern) — `84951234567` is
    /// +84 951 234 567 in Vietnam and 8 495 123-45-67 in Moscow — that reading; nil otherwise (and
    /// always without libphonenumber). Only a trunk prefix that does not start with 0 can begin
    /// an E.164 number (8 in Russia, Belarus, Kazakhstan…), so most numbers cost one comparison,
    /// and the others a table step per digit.
    /// Many valid numbers read both ways (Korea's `82 1666 …` is also Belarusian with its 8), so
    /// a build tells of them only when its refused rows show national numbers of that country
    /// (``NationalFormEvidence``).
    public func otherNationalReading(of number: UInt64) -> NationalReading? {
        guard let split = lengths?.possibleSplit(number, userCodes: userCodeTable) else { return nil }
        return otherNationalReading(of: number, callingCode: split.callingCode, nationalLength: split.nationalLength)
    }

    /// ``otherNationalReading(of:)`` of a number whose calling code and national length are known.
    func otherNationalReading(of number: UInt64, callingCode: Int, nationalLength: Int) -> NationalReading? {
        guard let territories else { return nil }
        // The number's first digit is its calling code's.
        let lead = callingCode < 10 ? callingCode : callingCode < 100 ? callingCode / 10 : callingCode / 100
        let count = (callingCode < 10 ? 1 : callingCode < 100 ? 2 : 3) + nationalLength
        guard let c = territories.firstNationalReading(of: number, digitCount: count, lead: lead, besides: callingCode) else {
            return nil
        }
        return NationalReading(number: number, callingCode: callingCode, nationalLength: nationalLength,
                               country: c.id, trunkPrefix: c.prefixText)
    }

    /// The territories in which `digits` are a valid national number written with the territory's
    /// trunk prefix (libphonenumber's `IsValidNumber`, and the number is the territory's own),
    /// other than those of `callingCode`.
    private func validNationalReadings(_ digits: [UInt8], library: PhoneNumberLibrary, territories: Territories,
                                       besides callingCode: Int) -> [Territories.Territory] {
        territories.nationalReadings(of: digits, besides: callingCode).filter { t in
            let info = library.check(countryCode: t.callingCode, national: digits.dropFirst(t.nationalPrefix.count))
            return info.isValid && info.region == t.id
        }
    }

    /// Reads a number already in E.164 digits (a plain TSV row) as ``normalize(_:country:)``
    /// reads `+` digits: calling code, length (and allocation with `--validity valid`), a trunk
    /// prefix after the calling code dropped (`+44 0 20…` is `+44 20…`).
    /// - Returns: the number to store.
    public func normalize(e164 number: UInt64) throws(NumberProblem) -> UInt64 {
        try normalize(e164: number, memo: nil, noting: false).number
    }

    /// ``normalize(e164:)``'s common path alone, safe on any thread with that thread's `memo`:
    /// the number when a possible length (and, for `plausible`, the country's pattern) takes it
    /// as it is; nil when the full reading must decide (it may still accept the number).
    func quickE164(_ number: UInt64, memo: PatternMemo) -> UInt64? {
        guard let lengths, validity == .possible || validity == .plausible,
              let (cc, length) = lengths.possibleSplit(number, userCodes: userCodeTable),
              validity == .possible || territories?.isPlausible(callingCode: cc, nationalLength: length, of: number, memo: memo) != false
        else { return nil }
        return number
    }

    /// ``normalize(e164:)`` with one reader's memo of the last calling code's pattern; `noting`:
    /// with ``otherNationalReading(of:)`` of the number taken (one split of the digits for both).
    func normalize(e164 number: UInt64, memo: PatternMemo?, noting: Bool) throws(NumberProblem) -> (number: UInt64, reading: NationalReading?) {
        // The common case without a String: a possible length for an assigned calling code (and
        // the shape of the country's numbers, one table step per digit).
        if let lengths, validity == .possible || validity == .plausible,
           let (cc, length) = lengths.possibleSplit(number, userCodes: userCodeTable),
           validity == .possible || territories?.isPlausible(callingCode: cc, nationalLength: length, of: number, memo: memo) != false {
            return (number, noting ? otherNationalReading(of: number, callingCode: cc, nationalLength: length) : nil)
        }
        let digits = String(number).utf8.map { $0 - 0x30 }
        do throws(NumberProblem) {
            let n = try international(digits[...], shown: String(number))
            return (n, noting ? otherNationalReading(of: n) : nil)
        } catch {
            throw withNationalHint(error, digits: digits)
        }
    }

    /// `problem`, its message extended with what `digits` (read as E.164 and refused) probably
    /// were: a national number of another country written with its trunk prefix
    /// (`88005553535`: "looks like a national number of RU written with its trunk prefix 8").
    private func withNationalHint(_ problem: NumberProblem, digits: [UInt8]) -> NumberProblem {
        guard let territories, let library else { return problem }
        let readings = validNationalReadings(digits, library: library, territories: territories, besides: 0)
        guard let first = readings.first else { return problem }
        var countries: [String] = []
        for t in readings where !countries.contains(t.id) { countries.append(t.id) }
        let prefix = first.nationalPrefix.map(String.init).joined()
        var out = problem
        out.message += "; it looks like a national number written with the trunk prefix \(prefix) in "
            + countries.prefix(3).joined(separator: " or ") + ": give --country (or a country field) to read it as one"
        out.nationalReadings = countries
        return out
    }

    /// The rule for an ISO code; nil when the country is known but has no detailed rule.
    func ruleFor(country: String) throws(NumberProblem) -> CountryRule? {
        if let r = plan.rule(country: country) { return r }
        guard plan.callingCode(country: country) != nil else {
            throw NumberProblem(reason: .unknownCountry, message: "unknown country \(InputQuote.quoted(country)) (expected an ISO 3166 alpha-2 code such as RU, US, KR)")
        }
        return nil
    }

    /// - Parameter ccOnly: the calling code of a country without detailed rules.
    func normalize(_ text: String, rule: CountryRule?, ccOnly: String?) throws(NumberProblem) -> NormalizedNumbers {
        try normalize(text) { (digits, plus, shown, lead) throws(NumberProblem) in
            try resolve(digits, plus: plus, rule: rule, ccOnly: ccOnly, shown: shown, beforeParenthesis: lead)
        }
    }

    /// The text handling every reading shares (plain digits fast, scientific notation, an
    /// extension cut, several numbers in a cell); `resolve` turns one number's digits (and
    /// whether a `+` came first, and the digits written before an opening parenthesis:
    /// ``digitsBeforeParenthesis(_:)``) into E.164.
    private func normalize(_ text: String,
                           resolve: ([UInt8], Bool, String, [UInt8]?) throws(NumberProblem) -> UInt64) throws(NumberProblem) -> NormalizedNumbers {
        // Fast path: plain digits, optionally after one '+'.
        let utf8 = text.utf8
        if let first = utf8.first, utf8.count <= 20 {
            var digits: [UInt8] = []
            digits.reserveCapacity(utf8.count)
            var plain = true
            for (i, b) in utf8.enumerated() {
                if b >= 0x30 && b <= 0x39 { digits.append(b - 0x30) } else if !(i == 0 && b == 0x2B) { plain = false; break }
            }
            if plain && !digits.isEmpty {
                do throws(NumberProblem) {
                    let n = try resolve(digits, first == 0x2B, text, nil)
                    return NormalizedNumbers(numbers: [n], warnings: [])
                } catch {
                    guard let n = error.keptAs else { throw error }
                    return NormalizedNumbers(numbers: [n], warnings: [.init(kind: .notPlausibleKept, message: error.message)])
                }
            }
        }
        var s = trimmed(text)
        guard !s.isEmpty else { throw NumberProblem(reason: .noNumber, message: "no number (empty field)") }
        if NumberNormalizer.isScientific(s) {
            throw NumberProblem(reason: .scientificNotation,
                                message: "\(InputQuote.quoted(s)) is in scientific notation (a spreadsheet rounded the number; its digits are lost)")
        }
        var warnings: [NormalizedNumbers.Warning] = []
        if let (kept, ext) = NumberNormalizer.cutExtension(s) {
            warnings.append(.init(kind: .extensionCut, message: "extension \(InputQuote.quoted(ext)) cut from \(InputQuote.quoted(s))"))
            s = kept
        }
        var numbers: [UInt64] = []
        var firstProblem: NumberProblem? = nil
        let parts = NumberNormalizer.splitNumbers(s)
        for part in parts {
            do throws(NumberProblem) {
                let (digits, plus) = try NumberNormalizer.digits(of: part)
                numbers.append(try resolve(digits, plus, part, NumberNormalizer.digitsBeforeParenthesis(part)))
            } catch {
                if let n = error.keptAs {
                    numbers.append(n)
                    warnings.append(.init(kind: .notPlausibleKept, message: error.message))
                    continue
                }
                if parts.count > 1 {
                    warnings.append(.init(kind: .numberPartIgnored, message: "\(InputQuote.quoted(part)) ignored: \(error.message)"))
                }
                if firstProblem == nil { firstProblem = error }
            }
        }
        if numbers.isEmpty, let firstProblem {
            if parts.count > 1 {
                throw NumberProblem(reason: firstProblem.reason, message: "none of the \(parts.count) numbers in \(InputQuote.quoted(s)) is valid: \(firstProblem.message)")
            }
            throw firstProblem
        }
        guard !numbers.isEmpty else { throw NumberProblem(reason: .noNumber, message: "no digits in \(InputQuote.quoted(s))") }
        return NormalizedNumbers(numbers: numbers, warnings: warnings)
    }

    // MARK: Resolution

    private func resolve(_ d: [UInt8], plus: Bool, rule: CountryRule?, ccOnly: String?, shown: String,
                         beforeParenthesis: [UInt8]?) throws(NumberProblem) -> UInt64 {
        if plus { return try international(d[...], shown: shown) }
        guard let r = rule else {
            if let cc = ccOnly {
                // A country without detailed rules: E.164 with its code, or a national form.
                let ccDigits = cc.utf8.map { $0 - 0x30 }
                if d.starts(with: [0, 0]) { return try international(d.dropFirst(2), shown: shown) }
                if d.starts(with: ccDigits) && d.count - ccDigits.count >= 4 { return try international(d[...], shown: shown) }
                let nsn = d.first == 0 ? d.dropFirst() : d[...]
                return try international(ArraySlice(ccDigits) + nsn, shown: shown)
            }
            if d.first == 0 {
                throw NumberProblem(reason: .nationalWithoutCountry,
                                    message: "\(InputQuote.quoted(shown)) is a national or 00-prefixed form: give --country or --country-field to read it")
            }
            return try international(d[...], shown: shown)
        }
        let cc = r.callingCode.utf8.map { $0 - 0x30 }
        for p in r.internationalPrefixes {
            let pd = p.utf8.map { $0 - 0x30 }
            if d.starts(with: pd) && d.count > pd.count { return try international(d.dropFirst(pd.count), shown: shown) }
        }
        if let lead = beforeParenthesis, let t = r.trunkPrefixes.first(where: { $0.utf8.map { $0 - 0x30 } == lead }) {
            // `8 (913) 123-45-6`: the trunk prefix is in sight, so the rest is the national
            // number, whatever its length; never the digits read again with the 8 kept. A longer
            // trunk prefix that starts with it may go on inside the parentheses (Belarus's 80:
            // `8 (017) 123-45-67`).
            for longer in r.trunkPrefixes.sorted(by: { $0.count > $1.count }) where longer.count > t.count && longer.hasPrefix(t) {
                let td = longer.utf8.map { $0 - 0x30 }
                if d.starts(with: td), let n = compose(cc, d.dropFirst(td.count), r) { return n }
            }
            let nsn = d.dropFirst(lead.count)
            if let n = compose(cc, nsn, r) { return n }
            throw Self.readAsNational(explain(nsn, r, where: r.iso, shown: shown), trunk: t)
        }
        for t in r.trunkPrefixes {
            let td = t.utf8.map { $0 - 0x30 }
            if d.starts(with: td), let n = compose(cc, d.dropFirst(td.count), r) { return n }
        }
        if d.starts(with: cc) {
            let nsn = d.dropFirst(cc.count)
            if let n = compose(cc, nsn, r) { return n }
            for t in r.trunkPrefixes {
                let td = t.utf8.map { $0 - 0x30 }
                if nsn.starts(with: td), let n = compose(cc, nsn.dropFirst(td.count), r) { return n }
            }
        }
        if let n = compose(cc, d[...], r) { return n }
        // Explain with the likeliest reading: without the trunk prefix if it has one.
        var nsn = d[...]
        for t in r.trunkPrefixes {
            let td = t.utf8.map { $0 - 0x30 }
            if d.starts(with: td) { nsn = d.dropFirst(td.count); break }
        }
        throw explain(nsn, r, where: r.iso, shown: shown)
    }

    private func international(_ x: ArraySlice<UInt8>, shown: String) throws(NumberProblem) -> UInt64 {
        guard x.count <= 15 else {
            throw NumberProblem(reason: .tooLong, message: "\(InputQuote.quoted(shown)) has \(x.count) digits with its country code; E.164 allows 15")
        }
        if let library, let lengths, let territories, let cc = lengths.callingCode(prefixOf: x), !plan.userCodes.contains(String(cc)) {
            return try checked(library, lengths, territories, cc: cc, x, shown: shown)
        }
        guard let code = plan.callingCode(prefixOf: x) else {
            if x.count < 4 { throw NumberProblem(reason: .tooShort, message: "\(InputQuote.quoted(shown)) is too short for a phone number") }
            let shownCode = x.prefix(3).map { String($0) }.joined()
            throw NumberProblem(reason: .unknownCountryCode, message: "\(InputQuote.quoted(shown)): no country has a calling code starting +\(shownCode)")
        }
        let cc = code.utf8.map { $0 - 0x30 }
        let nsn = x.dropFirst(cc.count)
        if let r = plan.rulesByCode[code] {
            if let n = compose(cc, nsn, r) { return n }
            for t in r.trunkPrefixes {   // "+44 (0)20 …"
                let td = t.utf8.map { $0 - 0x30 }
                if nsn.starts(with: td), let n = compose(cc, nsn.dropFirst(td.count), r) { return n }
            }
            throw explain(nsn, r, where: "+\(code)", shown: shown)
        }
        guard nsn.count >= 4 else {
            throw NumberProblem(reason: .tooShort, message: "\(InputQuote.quoted(shown)) is too short: \(nsn.count) digits after +\(code)")
        }
        return value(cc, nsn)
    }

    private func compose(_ cc: [UInt8], _ nsn: ArraySlice<UInt8>, _ r: CountryRule) -> UInt64? {
        guard let f = nsn.first, r.allowsLength(nsn.count), r.allowsFirst(f), cc.count + nsn.count <= 15 else { return nil }
        return value(cc, nsn)
    }

    private func value(_ cc: [UInt8], _ nsn: ArraySlice<UInt8>) -> UInt64 {
        var v: UInt64 = 0
        for d in cc { v = v * 10 + UInt64(d) }
        for d in nsn { v = v * 10 + UInt64(d) }
        return v
    }

    private func explain(_ nsn: ArraySlice<UInt8>, _ r: CountryRule, where place: String, shown: String) -> NumberProblem {
        let maxLength = 31 - r.lengths.leadingZeroBitCount
        let lengthsText = "national numbers of \(place) have \(r.lengthsText) digits"
        if !r.allowsLength(nsn.count) {
            if nsn.count < maxLength {
                return NumberProblem(reason: .tooShort, message: "\(InputQuote.quoted(shown)) is too short: \(nsn.count) digits, \(lengthsText)")
            }
            return NumberProblem(reason: .tooLong, message: "\(InputQuote.quoted(shown)) is too long: \(nsn.count) digits, \(lengthsText)")
        }
        let first = nsn.first.map(String.init) ?? ""
        return NumberProblem(reason: .invalidLeadingDigit,
                             message: "\(InputQuote.quoted(shown)): national numbers of \(place) cannot start with \(first) (allowed: \(CountryRule.describe(UInt64(r.firstDigits))))")
    }

    /// With the default validity (`plausible`), a number of the row's own country (`callingCode`)
    /// refused only for its shape is kept: the country was given and the length is possible, and
    /// libphonenumber's metadata may be older than the number (Debian's of 2022 has no shape for
    /// Nigeria's 10-digit fixed lines). `problem` then carries the number and a warning naming the
    /// metadata; any other problem is returned as it is, and so is a national number that starts
    /// with the country's trunk prefix (`010-12` in Korea, +82 01012: the prefix was never taken
    /// off, the digits are no number).
    func keptIfOnlyItsShape(_ problem: NumberProblem, callingCode: Int, region: String) -> NumberProblem {
        guard validity == .plausible, problem.reason == .notPlausible, let n = problem.shapeRefused, callingCode > 0 else { return problem }
        let digits = String(n), code = String(callingCode)
        guard digits.hasPrefix(code) else { return problem }
        if let trunk = territories?.nationalPrefix(region: region),
           digits.utf8.dropFirst(code.utf8.count).starts(with: trunk.map { $0 + 0x30 }) {
            return problem
        }
        var kept = problem
        kept.keptAs = n
        kept.message += "; kept, as its country was given and its length is possible: the number may be newer than "
            + "the metadata (\(library?.metadataDescription ?? "libphonenumber"))"
        return kept
    }

    /// `problem` saying that the number was read as a national one because its trunk prefix was
    /// written before an area code in parentheses.
    static func readAsNational(_ problem: NumberProblem, trunk: String) -> NumberProblem {
        var out = problem
        out.message += " (read as a national number: \(trunk) before the area code in parentheses is the trunk prefix)"
        return out
    }

    // MARK: With libphonenumber

    /// One number in `region`'s national or international form, read by libphonenumber. When its
    /// reading is refused, two other readings are tried, and the first that is accepted is taken:
    /// digits starting with `00`, the ITU's international prefix, as `+` and the rest
    /// (`00 82 2 866 0791` in Korea, whose own prefixes are `001`, `002`, `008`…: libphonenumber
    /// takes `008` and finds +228); digits starting with the country's own calling code as an
    /// international number without its `+` (`632-893-6714` in the Philippines: +63 2 893 6714).
    ///
    /// A trunk prefix written before an area code in parentheses (`8 (913) 123-45-6`) makes the
    /// number a national one: the digits after the prefix are read as the national number. When
    /// that reading is refused, the number is refused, unless the digits are a number of another
    /// calling code dialled with an international prefix (`8 (10) 49 30 1234567`, Russia's 8~10);
    /// the digits are never read again as a number of the country with the prefix kept
    /// (libphonenumber keeps it when the rest is too short: +7 891 312-34-56).
    private func resolveWithLibrary(_ library: PhoneNumberLibrary, _ d: [UInt8], plus: Bool, region: String,
                                    shown: String, beforeParenthesis: [UInt8]?) throws(NumberProblem) -> UInt64 {
        if plus { return try international(d[...], shown: shown) }
        if let lead = beforeParenthesis, !lead.isEmpty, d.count > lead.count,
           let trunk = territories?.nationalPrefix(region: region), trunk == lead,
           let cc = library.countryCode(region: region) {
            do throws(NumberProblem) {
                return try parsedWithLibrary(library, Array(d.dropFirst(lead.count)), region: region, shown: shown)
            } catch {
                if let other = try? resolveWithLibrary(library, d, plus: false, region: region, shown: shown, beforeParenthesis: nil),
                   !String(other).hasPrefix(String(cc)) {
                    return other
                }
                throw Self.readAsNational(error, trunk: lead.map(String.init).joined())
            }
        }
        do throws(NumberProblem) {
            return try parsedWithLibrary(library, d, region: region, shown: shown)
        } catch {
            if d.count > 2, d[0] == 0, d[1] == 0, let n = try? international(d.dropFirst(2), shown: shown) { return n }
            if let cc = library.countryCode(region: region), d.starts(with: digits(of: UInt64(cc))),
               let n = try? international(d[...], shown: shown) {
                return n
            }
            throw error
        }
    }

    private func parsedWithLibrary(_ library: PhoneNumberLibrary, _ d: [UInt8], region: String, shown: String) throws(NumberProblem) -> UInt64 {
        let text = String(decoding: d.map { $0 + 0x30 }, as: UTF8.self)
        switch library.parse(text, region: region) {
        case .failure(let failure):
            switch failure {
            case .invalidCountryCode:
                throw NumberProblem(reason: .unknownCountryCode, message: "\(InputQuote.quoted(shown)): no country has the calling code it starts with")
            case .tooShortAfterIDD, .tooShortNSN:
                throw NumberProblem(reason: .tooShort, message: "\(InputQuote.quoted(shown)) is too short for a phone number of \(region)")
            case .tooLongNSN:
                throw NumberProblem(reason: .tooLong, message: "\(InputQuote.quoted(shown)) is too long for a phone number")
            case .notANumber:
                // The digits were there (an empty cell never gets here): too few to be a number.
                throw NumberProblem(reason: .tooShort, message: "\(InputQuote.quoted(shown)) is too short for a phone number")
            }
        case .success(let info):
            guard info.e164 != 0 else {
                throw NumberProblem(reason: .tooLong, message: "\(InputQuote.quoted(shown)) has more than 15 digits with its country code")
            }
            if plan.userCodes.contains(String(info.countryCode)) {
                // A calling code the user's plan rules: read the digits with it.
                return try international(digits(of: info.e164)[...], shown: shown)
            }
            let plausible = territories?.isPlausible(callingCode: info.countryCode, nationalLength: info.nationalDigits, of: info.e164) != false
            try judge(info.possibility, plausible: plausible, isValid: { info.isValid }, cc: info.countryCode,
                      national: lastDigits(info.nationalDigits, of: info.e164), shown: shown, region: info.region)
            return info.e164
        }
    }

    /// `+CC…` digits: the length table and the country's number pattern (no call into the library
    /// unless `--validity valid`). A trunk prefix written after the calling code is dropped when
    /// the number's length is not possible with it (`+44 0 20 …`: 11 digits). A number of a
    /// possible length is never cut: `880 05553535` is no Bangladeshi `880 5553535` but the Russian
    /// `8 800 555-35-35`.
    private func checked(_ library: PhoneNumberLibrary, _ lengths: PossibleLengths, _ territories: Territories, cc: Int,
                         _ x: ArraySlice<UInt8>, shown: String) throws(NumberProblem) -> UInt64 {
        let ccDigits = cc < 10 ? 1 : cc < 100 ? 2 : 3
        let nsn = x.dropFirst(ccDigits)
        func fits(_ national: ArraySlice<UInt8>) -> Bool {
            validity != .plausible && validity != .valid || territories.isPlausible(callingCode: cc, national: national)
        }
        var possibility = lengths.possibility(cc: cc, length: nsn.count)
        var national = nsn
        var plausible = fits(nsn)
        if possibility != .possible {
            for trunk in territories.nationalPrefixes(callingCode: cc) where nsn.count > trunk.count && nsn.starts(with: trunk) {
                let rest = nsn.dropFirst(trunk.count)
                if lengths.possibility(cc: cc, length: rest.count) == .possible, fits(rest) {
                    (national, possibility, plausible) = (rest, .possible, true)
                    break
                }
            }
        }
        try judge(possibility, plausible: plausible, isValid: { library.check(countryCode: cc, national: national).isValid }, cc: cc,
                  national: national, shown: shown, region: nil)
        return value(digits(of: UInt64(cc)), national)
    }

    /// Applies ``validity`` to libphonenumber's verdict; throws the reason a number is refused.
    private func judge(_ possibility: PhoneNumberInfo.Possibility, plausible: Bool, isValid: () -> Bool, cc: Int,
                       national: ArraySlice<UInt8>, shown: String, region: String?) throws(NumberProblem) {
        // libphonenumber names no region "ZZ" (a number no region of the calling code claims).
        let place = region.flatMap { $0.isEmpty || $0 == "ZZ" ? nil : "\($0) (+\(cc))" } ?? "+\(cc)"
        let nationalLength = national.count
        switch (possibility, validity) {
        case (_, .any) where possibility != .invalidCountryCode && nationalLength > 0:
            return
        case (.possible, .possible):
            return
        case (.possible, .plausible) where plausible:
            return
        case (.possible, .plausible), (.possible, .valid) where !plausible:
            let nsn = national.map { String($0) }.joined()
            var problem = NumberProblem(reason: .notPlausible,
                                        message: "\(InputQuote.quoted(shown)): no number of \(place) looks like \(nsn) (a possible length, but not the shape of the country's numbers)")
            problem.shapeRefused = value(digits(of: UInt64(cc)), national)
            throw problem
        case (.possible, .valid):
            guard isValid() else {
                throw NumberProblem(reason: .notAllocated,
                                    message: "\(InputQuote.quoted(shown)) is not in a number range of \(place) that libphonenumber knows as allocated (--validity valid)")
            }
            return
        case (.localOnly, _):
            throw NumberProblem(reason: .localOnly,
                                message: "\(InputQuote.quoted(shown)): \(nationalLength) digits is a local number of \(place) (no area code); give the full number")
        case (.invalidCountryCode, _):
            throw NumberProblem(reason: .unknownCountryCode, message: "\(InputQuote.quoted(shown)): no country has the calling code +\(cc)")
        case (.tooShort, _):
            throw NumberProblem(reason: .tooShort, message: "\(InputQuote.quoted(shown)) is too short: \(nationalLength) digits after \(place)\(lengthsNote(cc))")
        case (.tooLong, _):
            throw NumberProblem(reason: .tooLong, message: "\(InputQuote.quoted(shown)) is too long: \(nationalLength) digits after \(place)\(lengthsNote(cc))")
        default:
            throw NumberProblem(reason: .invalidLength,
                                message: "\(InputQuote.quoted(shown)): no number of \(place) has \(nationalLength) digits\(lengthsNote(cc))")
        }
    }

    /// "; numbers of +CC have 9 or 10 digits" from the length table.
    private func lengthsNote(_ cc: Int) -> String {
        guard let mask = lengths?.possible(cc: cc), mask != 0 else { return "" }
        let list = (0..<32).filter { mask & (1 << $0) != 0 }.map(String.init)
        let text = list.count == 1 ? list[0] : list.dropLast().joined(separator: ", ") + " or " + list.last!
        return "; national numbers of +\(cc) have \(text) digits"
    }

    private func digits(of n: UInt64) -> [UInt8] { String(n).utf8.map { $0 - 0x30 } }

    /// The last `count` decimal digits of `n`, leading zeros kept.
    private func lastDigits(_ count: Int, of n: UInt64) -> ArraySlice<UInt8> {
        let all = digits(of: n)
        return all.count >= count ? all.suffix(count) : ArraySlice(repeatElement(0, count: count - all.count) + all)
    }

    private static func codeTable(_ codes: Set<String>) -> [Bool] {
        var table = [Bool](repeating: false, count: 1000)
        for c in codes { if let n = Int(c), (1..<1000).contains(n) { table[n] = true } }
        return table
    }

    // MARK: Text

    private func trimmed(_ s: String) -> String {
        let scalars = s.unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[start...end])
    }

    /// `4.93E+12`, `9.94E+11`, `4,93E12`.
    static func isScientific(_ s: String) -> Bool {
        var sawE = false, sawDigitBefore = false, sawDigitAfter = false, sawSign = false, sawDot = false
        for c in s.unicodeScalars {
            switch c {
            case "0"..."9":
                if sawE { sawDigitAfter = true } else { sawDigitBefore = true }
            case ".", ",":
                if sawE || sawDot { return false }
                sawDot = true
            case "e", "E":
                if sawE || !sawDigitBefore { return false }
                sawE = true
            case "+", "-":
                if !sawE || sawDigitAfter || sawSign { return false }
                sawSign = true
            default:
                return false
            }
        }
        return sawE && sawDigitBefore && sawDigitAfter
    }

    /// Splits `s` into its number and a trailing extension (`ext. 12`, `x12`, `;ext=12`,
    /// `доб. 5`, `#12`); nil when there is none.
    static func cutExtension(_ s: String) -> (String, String)? {
        let chars = Array(s)
        var end = chars.count
        while end > 0 && chars[end - 1].isWhitespace { end -= 1 }
        var digitsStart = end
        while digitsStart > 0 && chars[digitsStart - 1].isASCII && chars[digitsStart - 1].isNumber { digitsStart -= 1 }
        let extDigits = end - digitsStart
        guard (1...6).contains(extDigits) else { return nil }
        var i = digitsStart
        while i > 0 && (chars[i - 1].isWhitespace || chars[i - 1] == "." || chars[i - 1] == ":" || chars[i - 1] == "=") { i -= 1 }
        let before = String(chars[0..<i]).lowercased()
        for marker in [";ext", "extension", "ext", "доб", "x", "#"] where before.hasSuffix(marker) {
            let cut = before.count - marker.count
            let head = chars[0..<cut]
            // "x" must follow a digit or a space, and the number must have some digits.
            if marker == "x", let last = head.last, !(last.isNumber || last.isWhitespace) { continue }
            guard head.filter({ $0.isNumber }).count >= 4 else { return nil }
            var number = String(head)
            while let l = number.last, l.isWhitespace || l == "," || l == ";" { number.removeLast() }
            return (number, String(chars[cut..<end]))
        }
        return nil
    }

    /// Several numbers in one cell: split on `,` `;` `|` line breaks and " or "; a `/` splits
    /// only when every side is long enough to be a number (`973/364-9555` is one number).
    static func splitNumbers(_ s: String) -> [String] {
        var parts: [String] = []
        let hard = s.replacingOccurrences(of: " or ", with: "|").replacingOccurrences(of: " или ", with: "|")
        for piece in hard.split(whereSeparator: { $0 == "," || $0 == ";" || $0 == "|" || $0 == "\n" || $0 == "\r" }) {
            let p = String(piece)
            if p.allSatisfy({ $0.isWhitespace }) { continue }
            let slashParts = p.split(separator: "/")
            if slashParts.count > 1 && slashParts.allSatisfy({ $0.filter(\.isNumber).count >= 7 }) {
                parts.append(contentsOf: slashParts.map(String.init))
            } else {
                parts.append(p)
            }
        }
        return parts.isEmpty ? [s] : parts
    }

    /// The digits written before the first opening parenthesis of `part` when some are and a
    /// digit follows it (`8 (913) 123-45-67`: `[8]`); nil otherwise (no parenthesis, nothing before
    /// it, or a `+`). A trunk prefix written so makes the number a national one.
    static func digitsBeforeParenthesis(_ part: String) -> [UInt8]? {
        var lead: [UInt8] = []
        var open = false
        for u in part.unicodeScalars {
            let v = u.value
            if open {
                // The first character inside the parentheses must be a digit.
                return (0x30...0x39).contains(v) || (0xFF10...0xFF19).contains(v) ? lead : nil
            }
            switch v {
            case 0x30...0x39: lead.append(UInt8(v - 0x30))
            case 0xFF10...0xFF19: lead.append(UInt8(v - 0xFF10))
            case 0x28, 0xFF08:
                guard !lead.isEmpty else { return nil }
                open = true
            case 0x2B, 0xFF0B: return nil
            case 0x20, 0x09, 0xA0, 0x2D, 0x2010...0x2015, 0x2E: continue
            default: return nil
            }
        }
        return nil
    }

    /// The digits of one number, and whether it starts with `+`. A `(0)` after the calling code of
    /// an international number (`+44 (0)20 …`, `0044 (0)20 …`) is the trunk prefix people write for
    /// callers inside the country: it is dropped.
    static func digits(of part: String) throws(NumberProblem) -> ([UInt8], Bool) {
        var digits: [UInt8] = []
        var plus = false
        let scalars = Array(part.unicodeScalars)
        var skip = 0
        for (i, u) in scalars.enumerated() {
            if skip > 0 { skip -= 1; continue }
            if u == "(", i + 2 < scalars.count, scalars[i + 1] == "0", scalars[i + 2] == ")",
               !digits.isEmpty, plus || digits.starts(with: [0, 0]) {
                skip = 2
                continue
            }
            let v = u.value
            switch v {
            case 0x30...0x39: digits.append(UInt8(v - 0x30))
            case 0x660...0x669: digits.append(UInt8(v - 0x660))     // Arabic-Indic
            case 0x6F0...0x6F9: digits.append(UInt8(v - 0x6F0))     // Extended Arabic-Indic (Persian)
            case 0xFF10...0xFF19: digits.append(UInt8(v - 0xFF10))  // full-width
            case 0x2B, 0xFF0B:
                guard digits.isEmpty && !plus else {
                    throw NumberProblem(reason: .invalidCharacter, message: "\(InputQuote.quoted(part)): '+' in the middle of a number")
                }
                plus = true
            case 0x20, 0x09, 0xA0, 0x2007, 0x2009, 0x202F, 0x3000,                 // spaces
                 0x2D, 0x2010...0x2015, 0x2212, 0xFF0D, 0x2E, 0xB7, 0x5F, 0x27,       // dashes, dots, '_', "'"
                 0x28, 0x29, 0x5B, 0x5D, 0xFF08, 0xFF09, 0x2F, 0x22, 0x200E, 0x200F,  // brackets, '/', quotes, direction marks
                 0x7E:  // '~': "wait for the dial tone", as in the former USSR's 8~10 international prefix
                continue
            default:
                if u.properties.isAlphabetic {
                    throw NumberProblem(reason: .letters, message: "letters in the number \(InputQuote.quoted(part))")
                }
                throw NumberProblem(reason: .invalidCharacter, message: "unexpected character \(InputQuote.quoted(String(Character(u)))) in the number \(InputQuote.quoted(part))")
            }
        }
        guard !digits.isEmpty else { throw NumberProblem(reason: .noNumber, message: "no digits in \(InputQuote.quoted(part))") }
        return (digits, plus)
    }
}

/// libphonenumber's possible lengths for every calling code, read once: what
/// `IsPossibleNumberWithReason` answers for a number depends only on its calling code and the
/// length of its national number, so the fast path of plain E.164 digits is a table lookup.
struct PossibleLengths: Sendable {
    /// Indexed by calling code (1...999): possible lengths, local-only lengths (bit n: n digits).
    private let possibleMasks: [UInt32]
    private let localMasks: [UInt32]
    private let assigned: [Bool]

    /// Read with `lengthsOf` (libphonenumber's, about 17,000 calls: once per process, when the
    /// library is loaded).
    init(_ lengthsOf: (Int) -> (possible: UInt32, localOnly: UInt32)?) {
        var possible = [UInt32](repeating: 0, count: 1000), local = possible
        var assigned = [Bool](repeating: false, count: 1000)
        for cc in 1..<1000 {
            if let m = lengthsOf(cc) {
                (possible[cc], local[cc], assigned[cc]) = (m.possible, m.localOnly, true)
            }
        }
        possibleMasks = possible
        localMasks = local
        self.assigned = assigned
    }

    /// The calling code `digits` starts with (calling codes are prefix-free).
    func callingCode(prefixOf digits: ArraySlice<UInt8>) -> Int? {
        var cc = 0
        for d in digits.prefix(3) {
            cc = cc * 10 + Int(d)
            if cc > 0 && assigned[cc] { return cc }
        }
        return nil
    }

    func possible(cc: Int) -> UInt32 { possibleMasks[cc] }

    /// The calling code and national length of `number` (E.164 digits as an integer) when it has
    /// an assigned calling code that no user plan rules and a national length libphonenumber
    /// calls possible; nil otherwise. The check of a plain TSV row, without a String.
    @inline(__always)
    func possibleSplit(_ number: UInt64, userCodes: [Bool]) -> (callingCode: Int, nationalLength: Int)? {
        guard number >= 10 else { return nil }
        var digits = 1
        var p: UInt64 = 10
        while digits < 20 && number >= p { digits += 1; p = p &* 10 }
        guard digits <= 15 else { return nil }
        var scale: UInt64 = 1
        for _ in 0..<(digits - 1) { scale &*= 10 }
        var cc = 0
        for k in 1...3 where k < digits {
            cc = Int(number / scale)
            scale /= 10
            if assigned[cc] {
                let length = digits - k
                return !userCodes[cc] && possibleMasks[cc] & (1 << UInt32(length)) != 0 ? (cc, length) : nil
            }
        }
        return nil
    }

    func possibility(cc: Int, length: Int) -> PhoneNumberInfo.Possibility {
        guard assigned[cc] else { return .invalidCountryCode }
        guard (0..<32).contains(length) else { return .tooLong }
        let bit: UInt32 = 1 << UInt32(length)
        if possibleMasks[cc] & bit != 0 { return .possible }
        if localMasks[cc] & bit != 0 { return .localOnly }
        let mask = possibleMasks[cc]
        guard mask != 0 else { return .invalidLength }
        let shortest = mask.trailingZeroBitCount, longest = 31 - mask.leadingZeroBitCount
        return length < shortest ? .tooShort : length > longest ? .tooLong : .invalidLength
    }
}
