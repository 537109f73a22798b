/// What a build saw of national numbers written with a trunk prefix in digits it reads as E.164
/// (no `+`, no country): the countries its refused rows probably belong to
/// (``NumberProblem/nationalReadings``: valid national numbers there), and the accepted rows
/// that also have the shape of a national number of such a country
/// (``NumberNormalizer/otherNationalReading(of:)``).
///
/// Many valid numbers read both ways — Korea's `82 1666 …` is also a Belarusian number with its
/// trunk 8, Vietnam's `84 9…` a Russian one — so an accepted row is told of only when refused
/// rows of the same input show national numbers of that country: then the file most likely
/// holds national numbers, and the rows taken as foreign ones are most likely wrong.
public struct NationalFormEvidence: Sendable {
    /// An accepted row that reads both ways.
    public struct Row: Sendable, Equatable {
        /// Where the row is, when the reader knows its line.
        public var place: (file: String, line: Int)?
        public var reading: NationalReading

        public static func == (a: Row, b: Row) -> Bool {
            a.place?.file == b.place?.file && a.place?.line == b.place?.line && a.reading == b.reading
        }
    }

    /// A country both refused rows and accepted rows point to.
    public struct Finding: Sendable, Equatable {
        public var country: String
        /// Refused rows that are valid national numbers of the country.
        public var refused: Int
        /// Accepted rows that also have the shape of its national numbers, and the first of them.
        public var accepted: Int
        public var rows: [Row]

        /// What a person reads of it: the counts, an example and what to do.
        public var message: String {
            let first = rows.first.map { row in ", the first " + (row.place.map { "\($0.file):\($0.line): " } ?? "") + row.reading.message } ?? ""
            return "\(accepted) row\(accepted == 1 ? "" : "s") read as E.164 \(accepted == 1 ? "is" : "are") also national numbers of \(country), "
                + "as \(refused) refused row\(refused == 1 ? " is" : "s are")\(first); if the input holds national numbers, give --country \(country)"
        }
    }

    /// Rows kept per country for reports; the rest are counted.
    public static let rowsKept = 100

    private var refused: [String: Int] = [:]
    private var accepted: [String: (count: Int, rows: [Row])] = [:]

    public init() {}

    /// Accepted rows noted, of every country (told of or not).
    public var acceptedRows: Int { accepted.values.reduce(0) { $0 + $1.count } }

    /// Notes a refused number's probable countries.
    public mutating func noteRefused(_ problem: NumberProblem) {
        for country in problem.nationalReadings { refused[country, default: 0] += 1 }
    }

    /// Notes an accepted row that reads both ways.
    public mutating func noteAccepted(_ reading: NationalReading, place: (file: String, line: Int)?) {
        var entry = accepted[reading.country] ?? (0, [])
        entry.count += 1
        if entry.rows.count < Self.rowsKept { entry.rows.append(Row(place: place, reading: reading)) }
        accepted[reading.country] = entry
    }

    /// The countries both refused and accepted rows point to, by country.
    public var findings: [Finding] {
        accepted.keys.sorted().compactMap { country in
            guard let r = refused[country], r > 0, let a = accepted[country] else { return nil }
            return Finding(country: country, refused: r, accepted: a.count, rows: a.rows)
        }
    }
}

extension NumberNormalizer {
    /// Why `text`, a number given without a country (a query read as E.164 digits), looks like a
    /// national number; nil when it does not. Such a number is read as E.164 all the same (the
    /// answer does not change): this says what to do when nothing is found.
    ///
    /// - an area code in parentheses, with or without a trunk prefix before it
    ///   (`8 (843) 277-19-98`, `(843) 277-19-98`): international numbers are not written so;
    /// - digits the build would refuse as E.164 that are a valid national number of a country
    ///   written with its trunk prefix (`88432771998`: no calling code +884; Russia's 8 843…), the
    ///   reason a build gives for such a row (``NumberProblem/nationalReadings``). Without
    ///   libphonenumber, the built-in table's countries whose trunk prefix does not start with 0.
    ///
    /// `shapeOnly`: only the first reason (no digits are read, no library is loaded): for a number
    /// that was found, whose digits the build took as E.164.
    public func nationalFormHint(_ text: String, shapeOnly: Bool = false) -> String? {
        guard let (digits, plus) = try? Self.digits(of: text), !plus, digits.first != 0 else { return nil }
        var lead = Self.digitsBeforeParenthesis(text)
        // A calling code before the parentheses (`7 (913) …`, `375 (17) …`) is an international
        // number written without its `+`, not a trunk prefix.
        if let l = lead, plan.callingCode(prefixOf: l[...]) == l.map(String.init).joined() { lead = nil }
        let parenthesised = lead != nil || text.unicodeScalars.first(where: { !$0.properties.isWhitespace }).map { $0 == "(" || $0 == "（" } == true
        if shapeOnly {
            guard parenthesised else { return nil }
            return lead.map { "\($0.map(String.init).joined()) before an area code in parentheses is a trunk prefix" } ?? "an area code in parentheses"
        }
        var refusedAsE164 = false
        var countries: [String] = []
        do throws(NumberProblem) {
            _ = try normalize(String(decoding: digits.map { $0 + 0x30 }, as: UTF8.self), country: nil)
        } catch {
            refusedAsE164 = true
            countries = error.nationalReadings
        }
        if countries.isEmpty && library == nil { countries = tableNationalReadings(digits) }
        if parenthesised, countries.isEmpty, let lead, library != nil { countries = tableNationalReadings(digits, trunk: lead) }
        var why: String
        if parenthesised {
            why = lead.map { "\($0.map(String.init).joined()) before an area code in parentheses is a trunk prefix" } ?? "an area code in parentheses"
        } else if refusedAsE164 && !countries.isEmpty {
            why = "it is no E.164 number"
        } else {
            return nil
        }
        if !countries.isEmpty {
            why += "; it reads as a national number of " + countries.prefix(3).joined(separator: " or ")
        }
        return why
    }

    /// The built-in table's countries in which `digits` are a national number written with a
    /// trunk prefix (`trunk`, or any that does not start with 0 and is not the start of the
    /// country's calling code).
    private func tableNationalReadings(_ digits: [UInt8], trunk: [UInt8]? = nil) -> [String] {
        var out: [String] = []
        for iso in plan.countriesWithRules {
            guard let r = plan.rule(country: iso) else { continue }
            let cc = r.callingCode.utf8.map { $0 - 0x30 }
            for t in r.trunkPrefixes {
                let td = t.utf8.map { $0 - 0x30 }
                guard trunk.map({ $0 == td }) ?? (td.first != 0 && !cc.starts(with: td)), digits.starts(with: td) else { continue }
                let nsn = digits.dropFirst(td.count)
                if let f = nsn.first, r.allowsLength(nsn.count), r.allowsFirst(f), !out.contains(iso) { out.append(iso) }
            }
        }
        return out
    }
}
