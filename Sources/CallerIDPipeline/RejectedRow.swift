import CallerID

/// Why a row (or part of one) was rejected: a stable code for summaries and programs.
public struct RejectReason: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String
    private init(_ rawValue: String) { self.rawValue = rawValue }

    // Numbers
    /// The number field is empty or has no digits.
    public static let noNumber = RejectReason("no-number")
    /// Letters in the number (`n/a`, `+7 913 CALL-ME`, a name in the phone column).
    public static let letters = RejectReason("letters")
    /// A character that is neither a digit, `+`, nor formatting.
    public static let invalidCharacter = RejectReason("invalid-character")
    /// A spreadsheet turned the number into `4.93E+12`: its digits are lost.
    public static let scientificNotation = RejectReason("scientific-notation")
    /// Fewer digits than the country's numbers (or than any E.164 number) have.
    public static let tooShort = RejectReason("too-short")
    /// More digits than the country's numbers have, or more than E.164's 15.
    public static let tooLong = RejectReason("too-long")
    /// The number starts with a digit its country's numbers cannot start with.
    public static let invalidLeadingDigit = RejectReason("invalid-leading-digit")
    /// A length libphonenumber allows only for local dialling (no area code): not a complete number.
    public static let localOnly = RejectReason("local-only")
    /// A length between the shortest and the longest of the country's numbers that none of them has.
    public static let invalidLength = RejectReason("invalid-length")
    /// A possible length, but no number of the country has that shape (libphonenumber's number
    /// pattern of the country): `880 0…` (the Russian `8 800…` with its trunk prefix), `+82 00000000`.
    public static let notPlausible = RejectReason("not-plausible")
    /// `--validity valid`: a possible length, but not in a range libphonenumber knows as allocated.
    public static let notAllocated = RejectReason("not-allocated")
    /// `+999…`: no country has that calling code.
    public static let unknownCountryCode = RejectReason("unknown-country-code")
    /// A national form (`8 913…`, `02-758…`) with no country to read it in.
    public static let nationalWithoutCountry = RejectReason("national-without-country")
    /// The country field holds no ISO 3166 alpha-2 code the numbering plan knows.
    public static let unknownCountry = RejectReason("unknown-country")
    // Rows
    /// Bytes that are not valid in the input's encoding.
    public static let invalidEncoding = RejectReason("invalid-encoding")
    /// A CSV or JSON Lines syntax error in this record.
    public static let syntax = RejectReason("syntax")
    /// A line or record longer than ``PipelineOptions/maxRecordBytes`` (skipped unread).
    public static let recordTooLong = RejectReason("record-too-long")
    /// A field longer than ``PipelineOptions/maxFieldBytes``.
    public static let fieldTooLong = RejectReason("field-too-long")
    /// A row of a plain TSV file (no header, no field chosen) with more than NUMBER, LABEL and
    /// CATEGORY: a TAB inside a label, most likely.
    public static let extraFields = RejectReason("extra-fields")
    /// A selected field is missing from the row (too few columns, no such JSON key) or is a
    /// nested JSON object or array.
    public static let missingField = RejectReason("missing-field")
    /// The category is not a valid name, or the category map refuses it.
    public static let badCategory = RejectReason("bad-category")
    /// The label cannot be stored (a control character, over 65,535 bytes).
    public static let badLabel = RejectReason("bad-label")
    /// The weight is not a non-negative integer.
    public static let badWeight = RejectReason("bad-weight")
    /// A range row whose end is before its start, or whose ends differ in length or country.
    public static let badRange = RejectReason("bad-range")
    /// A range row with more numbers than `--max-range-expansion` allows.
    public static let rangeTooLarge = RejectReason("range-too-large")
    /// `--split-by prefix`: no prefix of the region map matches the number.
    public static let noRegion = RejectReason("no-region")
    // Reports (`lookup reports`)
    /// The reporter field of a report is empty, or reads as a phone number (reporters are
    /// opaque ids: a hash, never the reporter's number).
    public static let badReporter = RejectReason("bad-reporter")
    /// The time field of a report is not RFC 3339 or Unix seconds, or names no real moment.
    public static let badTime = RejectReason("bad-time")

    public var description: String { rawValue }
    public static func < (a: RejectReason, b: RejectReason) -> Bool { a.rawValue < b.rawValue }
}

/// A row the build did not take, or took with a change worth reporting.
public struct RejectedRow: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    /// Line where the record starts (1-based).
    public var line: Int
    /// The offending value as read (the number field for number problems, else the row).
    public var raw: String
    public var reason: RejectReason
    /// A sentence for people: what is wrong and, where it helps, what to do.
    public var message: String

    public init(file: String, line: Int, raw: String, reason: RejectReason, message: String) {
        self.file = file
        self.line = line
        self.raw = raw
        self.reason = reason
        self.message = message
    }

    /// The row as reported: every path quotes input with InputQuote, and this is the last
    /// guard for the report and the --errors file: no control character, no unbounded text.
    var displaySafe: RejectedRow {
        var row = self
        row.raw = InputQuote.safeMessage(raw, limit: 120)
        row.message = InputQuote.safeMessage(message)
        row.file = InputQuote.safeMessage(file)
        return row
    }

    /// `file:line: message`, the form compilers use.
    public var description: String { "\(file):\(line): \(message)" }

    /// The first line of an errors file (`lookup build --errors`).
    package static let errorsFileHeader = "file\tline\traw\treason\tmessage\n"

    /// This row as a line of an errors file: file, line, raw, reason, message, TAB-separated.
    /// Every cell is written as stderr shows it: control characters (a TAB or a line break of
    /// the input among them) escaped once as `\u{9}` by ``InputQuote``, nothing else changed,
    /// so a cell can hold no TAB or line break and reads the same as the message on stderr.
    package var errorsFileLine: String {
        "\(InputQuote.safeMessage(file))\t\(line)\t\(InputQuote.safeMessage(raw))\t\(reason)\t\(InputQuote.safeMessage(message))\n"
    }
}

/// A change made to an accepted row.
public struct WarningKind: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String
    private init(_ rawValue: String) { self.rawValue = rawValue }

    /// An extension (`ext. 12`, `;ext=12`, `доб. 5`) was cut from the number.
    public static let extensionCut = WarningKind("extension-cut")
    /// One of several numbers in a cell was rejected; the others were kept.
    public static let numberPartIgnored = WarningKind("number-part-ignored")
    /// Digits without `+` and without a country, read as E.164, also have the shape of a national
    /// number of another country written with its trunk prefix (`84951234567`: Vietnam, or
    /// Moscow's 8 495…), a country refused rows of the same input belong to
    /// (``NationalFormEvidence``).
    public static let ambiguousNationalForm = WarningKind("ambiguous-national-form")
    /// A number of the row's own country (`--country`, a country field) has a possible length
    /// but no shape libphonenumber's metadata knows: kept, since the metadata may be older than
    /// the number (``NumberNormalizer/keptIfOnlyItsShape(_:callingCode:)``).
    public static let notPlausibleKept = WarningKind("not-plausible-kept")
    /// The label was cut to `--max-label-bytes`.
    public static let labelTruncated = WarningKind("label-truncated")
    /// Hidden characters (bidirectional controls, invisible characters: `LabelText`) were
    /// removed from the label.
    public static let hiddenCharactersRemoved = WarningKind("hidden-characters-removed")

    public var description: String { rawValue }
    public static func < (a: WarningKind, b: WarningKind) -> Bool { a.rawValue < b.rawValue }
}

/// The one way input is quoted in messages and in the `raw` of a ``RejectedRow``: at most 40
/// characters (then `…` and the length in bytes), control and hidden characters escaped as `\u{1B}`,
/// invalid UTF-8 as U+FFFD, so a 50 MB field or a terminal escape sequence can neither flood
/// nor drive a report or an `--errors` file. The same rule as the core's TSV import.
enum InputQuote {
    /// `'text'`, shortened and escaped.
    static func quoted(_ s: some StringProtocol) -> String { quotedInput(s.utf8) }
    static func quoted(bytes: some Collection<UInt8>) -> String { quotedInput(bytes) }

    /// The same without the quotes, for the raw column.
    static func excerpt(_ s: some StringProtocol) -> String { unquote(quotedInput(s.utf8)) }
    static func excerpt(bytes: some Collection<UInt8>) -> String { unquote(quotedInput(bytes)) }

    private static func unquote(_ q: String) -> String { String(q.dropFirst().dropLast()) }

    /// A message built elsewhere made safe: what labels may not hold (control and hidden
    /// characters, ``LabelText``) escaped, at most `limit` characters.
    static func safeMessage(_ s: String, limit: Int = 1_000) -> String { escapedForDisplay(s, limit: limit) }
}
