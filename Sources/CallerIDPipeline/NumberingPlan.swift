import CallerID
import Foundation

/// How one country writes its numbers: calling code, trunk prefix(es) used in national form,
/// international prefix(es) dialled before a foreign calling code, the allowed lengths of the
/// national significant number (NSN) and the digits an NSN may start with.
public struct CountryRule: Sendable, Hashable {
    /// ISO 3166 alpha-2, upper case.
    public var iso: String
    /// Calling code digits (`7`, `44`, `380`).
    public var callingCode: String
    public var trunkPrefixes: [String]
    public var internationalPrefixes: [String]
    /// Bit n set: an NSN of n digits is allowed.
    public var lengths: UInt32
    /// Bit d set: an NSN may start with digit d.
    public var firstDigits: UInt16

    /// - Parameters:
    ///   - lengths: NSN lengths, like `"10"`, `"8-10"` or `"6,8-9"`.
    ///   - first: allowed first digits of an NSN, like `"2-9"`; default `1-9` when a trunk
    ///     prefix starts with 0 (the NSN cannot), any digit otherwise.
    public init(_ iso: String, _ callingCode: String, trunk: [String] = [], international: [String] = ["00"],
                lengths: String, first: String? = nil) {
        self.iso = iso.uppercased()
        self.callingCode = callingCode
        self.trunkPrefixes = trunk
        self.internationalPrefixes = international.sorted { $0.count > $1.count }
        self.lengths = (try? CountryRule.parseSpec(lengths, max: 17)).map { UInt32(truncatingIfNeeded: $0) } ?? 0
        let defaultFirst = trunk.contains { $0.hasPrefix("0") } ? "1-9" : "0-9"
        self.firstDigits = (try? CountryRule.parseSpec(first ?? defaultFirst, max: 9)).map { UInt16(truncatingIfNeeded: $0) } ?? 0x3FF
    }

    /// Parses `"8-10,12"` into a bit set; throws a message for a malformed spec.
    static func parseSpec(_ spec: String, max: Int) throws(PipelineError) -> UInt64 {
        var mask: UInt64 = 0
        for part in spec.split(separator: ",") {
            let bounds = part.split(separator: "-", omittingEmptySubsequences: false).map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard (1...2).contains(bounds.count), let lo = bounds.first ?? nil, let hi = bounds.last ?? nil,
                  lo >= 0, lo <= hi, hi <= max else {
                throw PipelineError(.invalidConfiguration, (part == spec[...] ? "bad value \(InputQuote.quoted(spec))" : "bad range \(InputQuote.quoted(part)) in \(InputQuote.quoted(spec))")
                                    + " (expected numbers or ranges like 8-10,12, each at most \(max))")
            }
            for v in lo...hi { mask |= 1 << UInt64(v) }
        }
        guard mask != 0 else { throw PipelineError(.invalidConfiguration, "empty spec \(InputQuote.quoted(spec)) (expected numbers or ranges like 8-10,12)") }
        return mask
    }

    func allowsLength(_ n: Int) -> Bool { n >= 0 && n < 32 && lengths & (1 << UInt32(n)) != 0 }
    func allowsFirst(_ d: UInt8) -> Bool { firstDigits & (1 << UInt16(d)) != 0 }

    /// "8-10" back from the bit set, for messages.
    var lengthsText: String { CountryRule.describe(UInt64(lengths)) }

    static func describe(_ mask: UInt64) -> String {
        var parts: [String] = []
        var v = 0
        while v < 64 {
            if mask & (1 << UInt64(v)) != 0 {
                var end = v
                while end + 1 < 64 && mask & (1 << UInt64(end + 1)) != 0 { end += 1 }
                parts.append(end == v ? "\(v)" : "\(v)-\(end)")
                v = end + 1
            } else {
                v += 1
            }
        }
        return parts.joined(separator: ",")
    }
}

/// The numbering plan used to normalize numbers: calling codes of every country and the
/// detailed ``CountryRule``s. ``builtIn`` covers RU/KZ, the NANP, KR, GB, DE, FR, CN, JP, IN,
/// UA, BY and the 73 countries of the store directory; ``adding(contentsOf:)`` extends or
/// overrides it from a JSON file.
public struct NumberingPlan: Sendable {
    /// Calling code of each ISO country.
    private(set) var codeOfCountry: [String: String] = [:]
    /// Every assigned calling code (they are prefix-free).
    private(set) var codes: Set<String> = []
    private(set) var rules: [String: CountryRule] = [:]
    /// The rules of all countries sharing a calling code, merged (for `+CC…` numbers).
    private(set) var rulesByCode: [String: CountryRule] = [:]
    /// Countries and calling codes a `--numbering-plan` file added or replaced: the normalizer
    /// reads their numbers with these rules, never with libphonenumber (private ranges, test
    /// numbers, a plan newer than the library's metadata).
    private(set) var userCountries: Set<String> = []
    private(set) var userCodes: Set<String> = []

    public static let builtIn: NumberingPlan = {
        var plan = NumberingPlan()
        for token in callingCodes.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            let iso = String(token.prefix(2)), code = String(token.dropFirst(2))
            plan.codeOfCountry[iso] = code
            plan.codes.insert(code)
        }
        for r in builtInRules { plan.add(r) }
        return plan
    }()

    /// The rule for an ISO country, if the plan has one.
    public func rule(country iso: String) -> CountryRule? { rules[iso.uppercased()] }

    /// The calling code of an ISO country.
    public func callingCode(country iso: String) -> String? { codeOfCountry[iso.uppercased()] }

    /// Countries with detailed rules.
    public var countriesWithRules: [String] { rules.keys.sorted() }

    mutating func add(_ rule: CountryRule) {
        rules[rule.iso] = rule
        codeOfCountry[rule.iso] = rule.callingCode
        codes.insert(rule.callingCode)
        let shared = rules.values.filter { $0.callingCode == rule.callingCode }.sorted { $0.iso < $1.iso }
        var merged = shared[0]
        for r in shared.dropFirst() {
            merged.lengths |= r.lengths
            merged.firstDigits |= r.firstDigits
            for t in r.trunkPrefixes where !merged.trunkPrefixes.contains(t) { merged.trunkPrefixes.append(t) }
        }
        rulesByCode[rule.callingCode] = merged
    }

    /// This plan with the countries of a JSON file added or replaced:
    ///
    /// ```json
    /// {"countries": [{"iso": "RU", "code": "7", "trunk": ["8"], "international": ["810", "00"],
    ///                 "lengths": "10", "first": "3-9"}]}
    /// ```
    /// `trunk`, `international` (default `["00"]`) and `first` are optional.
    public func adding(contentsOf path: String) throws(PipelineError) -> NumberingPlan {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PipelineError(.fileNotFound, "\(path): cannot read the numbering plan")
        }
        let file: PlanFile
        do { file = try JSONDecoder().decode(PlanFile.self, from: data) } catch {
            throw PlanFile.problem(error, data: data, path: path)
        }
        var plan = self
        for (i, c) in file.countries.enumerated() {
            var at = "\(path): countries[\(i)]"
            guard let iso = c.iso, iso.count == 2, iso.allSatisfy({ $0.isASCII && $0.isLetter }) else {
                throw PipelineError(.invalidConfiguration, "\(at): \(PlanFile.Country.expected(.iso))")
            }
            at += " (\(iso.uppercased()))"
            guard let code = c.code, (1...3).contains(code.count), code.allSatisfy({ $0.isASCII && $0.isNumber }), code.first != "0" else {
                throw PipelineError(.invalidConfiguration, "\(at): \(PlanFile.Country.expected(.code))")
            }
            guard let lengths = c.lengths else {
                throw PipelineError(.invalidConfiguration, "\(at): \(PlanFile.Country.expected(.lengths))")
            }
            func spec(_ text: String, _ key: String, max: Int) throws(PipelineError) {
                do throws(PipelineError) { _ = try CountryRule.parseSpec(text, max: max) } catch {
                    throw PipelineError(.invalidConfiguration, "\(at): \"\(key)\": \(error.message)")
                }
            }
            try spec(lengths, "lengths", max: 17)
            if let first = c.first { try spec(first, "first", max: 9) }
            for (key, list) in [("trunk", c.trunk), ("international", c.international)] {
                guard let list, !list.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }) else { continue }
                throw PipelineError(.invalidConfiguration, "\(at): \"\(key)\" must be a list of digit strings")
            }
            let rule = CountryRule(iso, code, trunk: c.trunk ?? [], international: c.international ?? ["00"],
                                   lengths: lengths, first: c.first)
            for other in plan.codes where other != code && (other.hasPrefix(code) || code.hasPrefix(other)) {
                throw PipelineError(.invalidConfiguration, "\(at): calling code \(code) overlaps the existing code \(other)")
            }
            plan.add(rule)
            plan.userCountries.insert(rule.iso)
            plan.userCodes.insert(rule.callingCode)
        }
        return plan
    }

    /// The calling code `digits` starts with, if any.
    func callingCode(prefixOf digits: ArraySlice<UInt8>) -> String? {
        var s = ""
        for d in digits.prefix(3) {
            s.append(Character(Unicode.Scalar(d + 0x30)))
            if codes.contains(s) { return s }
        }
        return nil
    }
}

/// A numbering plan file as JSON (``NumberingPlan/adding(contentsOf:)``), read with the
/// package's one decoder of its own documents (`JSONDecoder`; input rows have the streaming
/// reader). A field of the wrong type is reported as the field's rule says it.
private struct PlanFile: Decodable {
    struct Country: Decodable {
        enum CodingKeys: String, CodingKey { case iso, code, trunk, international, lengths, first }
        var iso: String?
        var code: String?
        var trunk: [String]?
        var international: [String]?
        var lengths: String?
        var first: String?

        /// What field `key` must hold.
        static func expected(_ key: CodingKeys) -> String {
            switch key {
            case .iso: "\"iso\" must be an ISO 3166 alpha-2 code such as \"PK\""
            case .code: "\"code\" must be a calling code of 1-3 digits, as a string"
            case .lengths: "\"lengths\" (like \"9-10\") is required, as a string"
            case .first: "\"first\" must be a string of digits like \"2-9\""
            case .trunk, .international: "\"\(key.rawValue)\" must be a list of digit strings"
            }
        }
    }

    var countries: [Country]

    static let shape = "expected {\"countries\": [{\"iso\": …, \"code\": …, \"lengths\": …}, …]}"

    /// The error of a file `JSONDecoder` refused: where the JSON breaks (Foundation says only
    /// "The data is not in the correct format"), or which field has the wrong type.
    static func problem(_ error: any Error, data: Data, path: String) -> PipelineError {
        let context: DecodingError.Context?
        switch error as? DecodingError {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c): context = c
        case .dataCorrupted(let c):
            if let problem = [UInt8](data).withUnsafeBytes({ JSONSyntaxCheck.firstError(in: $0) }) {
                return PipelineError(.invalidConfiguration, "\(path):\(problem.line):\(problem.column): not valid JSON: \(problem.message)")
            }
            context = c
        default: context = nil
        }
        let keys = context?.codingPath ?? []
        if keys.count == 3, let index = keys[1].intValue, let key = Country.CodingKeys(stringValue: keys[2].stringValue) {
            return PipelineError(.invalidConfiguration, "\(path): countries[\(index)]: \(Country.expected(key))")
        }
        return PipelineError(.invalidConfiguration, "\(path): \(shape)")
    }
}
