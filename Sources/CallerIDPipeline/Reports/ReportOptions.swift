public import CallerID
import Foundation

/// The language of the labels a report build writes (``ReportOptions/language``).
public enum ReportLanguage: String, Sendable, CaseIterable {
    case en
    case ru
}

/// Everything `lookup reports` is told: how the log is read, the score, the labels and the
/// outputs. docs/REPORTS.md describes the model with a worked example.
public struct ReportOptions: Sendable {
    /// How the log is read and the block pack written: the input format, encoding and header,
    /// `numberField`, `categoryField` (the verdict), `countryField`, `regionField`, `country`,
    /// the numbering plan, validity and number rules, the category map, the bad-row limit, and
    /// the outputs (`split`, `regionMap`, `maxEntries`, `datasetVersion`, `buildTime`,
    /// `buildOptions` with its `memoryLimit`), exactly as ``Pipeline`` takes them.
    public var input = PipelineOptions()
    /// The reporter's field (default names `reporter`, `reporter_id`, `user_id`, `device_id`…;
    /// without a header: column 2). An opaque id: a value that reads as a phone number is refused.
    public var reporterField: FieldSelector? = nil
    /// The time's field (RFC 3339 or Unix seconds; default names `time`, `timestamp`, `date`,
    /// `created_at`…; without a header: column 3).
    public var timeField: FieldSelector? = nil

    /// Days after which a report weighs half as much (`--half-life`, default 90).
    public var halfLifeDays: Double = 90
    /// Reports older than this many days before ``now`` are left out (`--max-age`, default
    /// 365): a number reassigned to someone else stops answering for its last owner.
    public var maxAgeDays: Int = 365
    /// The moment the score is computed for, in Unix seconds; nil: the newest report read
    /// (so a rebuild of the same log writes the same bytes). Reports after it are left out.
    public var now: Int64? = nil
    /// The weight one reporter's reports of one UTC day share at most (`--reporter-daily-cap`,
    /// default 5): a reporter with more reports that day has each weigh cap/n.
    public var reporterDailyCap: Int = 5
    /// How much a `safe` verdict weighs against a complaint of the same age (default 1).
    public var safeWeight: Double = 1
    /// The score a number must reach to be blocked (`--block-score`, default 3).
    public var blockScore: Double = 3
    /// Distinct reporters whose latest verdict is a complaint that a blocked number needs at
    /// least (`--min-reporters`, default 3).
    public var minReporters: Int = 3
    /// The label of a blocked number: `{category}` (its display name), `{reporters}` (the
    /// rounded count with its noun: "10+ reports"), `{count}` (the rounded count alone).
    public var labelTemplate = "{category} · {reporters}"
    /// The label of a protected number that passed the threshold: `{name}` (the protecting
    /// entry's label, or the number when it has none) and the fields of ``labelTemplate``.
    public var protectedLabelTemplate = "{name} · {reporters}"
    /// The language of category names and the noun in labels (`--label-language`).
    public var language: ReportLanguage = .en
    /// Allow lists and directories whose numbers are never blocked (`--protect`): TSV/CSV files
    /// of numbers (an optional second column is the name), database files or build directories.
    public var protect: [String] = []

    public init() {
        input.header = .auto
    }

    /// The options' limits, checked before anything is read.
    func check() throws(PipelineError) {
        func bad(_ m: String) -> PipelineError { PipelineError(.invalidConfiguration, m) }
        guard halfLifeDays > 0, halfLifeDays.isFinite else { throw bad("the half-life must be more than 0 days") }
        guard maxAgeDays >= 1, maxAgeDays <= 36_500 else { throw bad("the maximum age must be 1...36500 days") }
        guard reporterDailyCap >= 1 else { throw bad("the reporter daily cap must be at least 1") }
        guard safeWeight >= 0, safeWeight <= 1_000, safeWeight.isFinite else { throw bad("the safe weight must be 0...1000") }
        guard blockScore > 0, blockScore <= 1e9, blockScore.isFinite else { throw bad("the block score must be more than 0") }
        guard minReporters >= 1 else { throw bad("the minimum of reporters must be at least 1") }
        if let now { guard now >= 0, now < ReportTime.limit else { throw bad("--now is outside 1970...36812") } }
        for template in [labelTemplate, protectedLabelTemplate] {
            if let unknown = ReportLabels.unknownField(in: template) {
                throw bad("unknown field {\(unknown)} in the label template \(InputQuote.quoted(template)): use {category}, {reporters}, {count}, {name}")
            }
        }
        guard input.keepRanges == false, input.top == nil, input.rangeEndField == nil else {
            throw bad("reports name single numbers: ranges and top sets do not apply")
        }
    }
}

/// Fixed-point weights of the score: one fresh report of a reporter under the daily cap weighs
/// ``one``. Integers keep the sums exact in any order, so the single machine and the Spark job
/// compute the same score.
enum ReportWeight {
    static let one: Int64 = 1 << 16

    /// The weight of a report `ageDays` whole days old: 0.5^(age / half-life), rounded to
    /// the fixed point (the rounding absorbs any last-bit difference between the C library's
    /// `pow` and another runtime's).
    static func decay(ageDays: Int64, halfLifeDays: Double) -> Int64 {
        (Double(one) * pow(0.5, Double(ageDays) / halfLifeDays)).rounded().int64
    }

    /// A value of the options in fixed point, rounded.
    static func fixed(_ value: Double) -> Int64 { (value * Double(one)).rounded().int64 }
}

extension Double {
    fileprivate var int64: Int64 { self >= 9.2e18 ? Int64.max : Int64(self) }
}
