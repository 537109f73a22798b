public import CallerID

/// Whether the first record of a TSV or CSV file names the columns.
public enum HeaderMode: Sendable, Equatable {
    /// A header when the first record's number field has no digit (fields chosen by name
    /// always need a header).
    case auto
    case present
    case absent
}

/// How many rejected rows a build tolerates before it aborts and writes nothing.
public enum BadRowLimit: Sendable, Equatable {
    /// At most this many rejected rows.
    case count(Int)
    /// At most this percentage of the rows read (checked when all input has been read).
    case percent(Double)
    case unlimited

    /// `"100"`, `"0.5%"`.
    public init?(_ text: String) {
        if text.hasSuffix("%") {
            guard let p = Double(text.dropLast()), p >= 0, p <= 100 else { return nil }
            self = .percent(p)
        } else {
            guard let n = Int(text), n >= 0 else { return nil }
            self = .count(n)
        }
    }
}

extension BadRowLimit {
    /// Throws `tooManyBadRows` once `rejected` rows (`what`: "row", "report") pass a
    /// ``count(_:)`` limit; the percentage is checked when all input has been read.
    func check(rejected: Int, what: String) throws(PipelineError) {
        if case .count(let n) = self, rejected > n {
            throw PipelineError(.tooManyBadRows, n == 0
                ? "a \(what) was rejected and no bad rows are allowed; nothing written (allow some with --max-bad-rows N or N%, or --skip-bad-rows)"
                : "more than \(n) \(what)s rejected; nothing written")
        }
    }
}

/// Where blocking entries go.
public enum BlockListMode: Sendable, Equatable {
    /// Identification and blocking entries share each database; a number keeps its last row.
    case combined
    /// Blocking entries go to their own databases (`REGION-block.cid`), so a number may be
    /// both identified and blocked.
    case separate
}

/// Everything a pipeline build is told.
public struct PipelineOptions: Sendable {
    /// The input layout; nil: guessed from each file's name (`.csv`, `.json`, `.jsonl`, else TSV).
    public var format: InputFormat? = nil
    /// Nil: UTF-8, or UTF-16 when the file starts with its byte-order mark.
    public var encoding: TextEncoding? = nil
    public var header: HeaderMode = .auto
    /// The longest line (TSV, JSON Lines) or record (CSV, an object of a JSON array) read, in
    /// bytes after conversion to UTF-8: a longer one is a rejected row (`record-too-long`),
    /// skipped without being held in memory. Default 1 MiB.
    public var maxRecordBytes: Int = 1 << 20
    /// The longest field (a JSON key or value) read, in UTF-8 bytes: a row with a longer one
    /// is rejected (`field-too-long`). Default 64 KiB, just above the 65,535-byte label limit.
    public var maxFieldBytes: Int = 1 << 16

    /// Fields; nil means the default: by header name (`number`/`phone`…, `label`/`name`…,
    /// `category`/`type`…) or, without a header, columns 1, 2 and 3.
    public var numberField: FieldSelector? = nil
    public var labelField: FieldSelector? = nil
    /// More label fields (`--label-field` repeated): the label is the non-empty values of
    /// ``labelField`` and these, in order, joined with ", " (operator and region).
    public var additionalLabelFields: [FieldSelector] = []
    public var categoryField: FieldSelector? = nil
    public var regionField: FieldSelector? = nil
    public var weightField: FieldSelector? = nil
    public var countryField: FieldSelector? = nil
    /// A range row's last number (the number field holds the first).
    public var rangeEndField: FieldSelector? = nil
    /// A field whose digits go before the number (and the range end): an area code column.
    public var numberPrefixField: FieldSelector? = nil
    /// Left-pads the number (and range end) field with zeros to this many digits.
    public var padNumber: Int? = nil

    /// Country of numbers in national form (ISO 3166 alpha-2), unless a country field says otherwise.
    public var country: String? = nil
    public var numberingPlan: NumberingPlan = .builtIn
    /// How strictly numbers are checked (`--validity`); the default, `plausible`, checks lengths
    /// and the shape of the country's numbers.
    public var validity: NumberValidity = .plausible
    /// Which rules read numbers: libphonenumber when it can be loaded (the default), or the
    /// built-in table only (`.builtInTable`: reproducible without the library).
    public var numberRules: NumberRules = .automatic
    public var labels = LabelCleaner()
    public var categories = CategoryMap()
    /// Every row gets this category (the category field is ignored).
    public var fixedCategory: Category? = nil
    /// Store range rows (``rangeEndField``) as ranges, never expanded: no ``maxRangeExpansion``
    /// or ``maxExpandedTotal`` limit; a row whose range holds one number stays an entry. Overlaps
    /// resolve as ``DatabaseBuilder/addRange(_:_:label:category:)`` says (the narrowest range
    /// wins, then the later row). The ranges go into the first database written; splitting
    /// (``split``, ``top``, separate block lists) is refused with them.
    public var keepRanges: Bool = false
    /// Largest range row expanded into entries; a bigger range is a rejected row.
    public var maxRangeExpansion: Int = 1_000
    /// Numbers all range rows together may expand to (each costs about 21 bytes of memory at
    /// the build's peak, 23 when split; the default allows about 2.3 GB): the row that would
    /// pass it stops the build with
    /// ``PipelineError/Code/limitExceeded``, before the memory is taken.
    public var maxExpandedTotal: Int = 100_000_000

    public var split: RegionSplit = .none
    public var regionMap = RegionMap()
    /// With ``RegionSplit/field``: keep only the text after the last occurrence of this
    /// separator (`Абакан |Республика Хакасия` → `Республика Хакасия` with `|`).
    public var regionAfter: String? = nil
    public var blockList: BlockListMode = .combined
    /// Entries per database of a build directory at most (the CallKit cap, 1,999,999, when
    /// nil): larger lists become shards of contiguous ranges. Setting it asks for a build
    /// directory, as a split does. A single database file has no entry cap: it is not a Call
    /// Directory extension (the installed store plans those, ``SlotPlan``).
    public var maxEntries: Int? = nil
    /// ``maxEntries`` when set, else the CallKit cap.
    public var entriesPerDatabase: Int { maxEntries ?? PipelineOptions.defaultMaxEntries }
    /// Entries per database of a build directory when ``maxEntries`` is nil: CallKit's cap.
    public static let defaultMaxEntries = 1_999_999
    /// Also write `top.cid` with the N heaviest entries (by ``weightField``).
    public var top: Int? = nil
    /// Write only the top-N set (``top``), and with a ``split`` one per region, each under its
    /// region's name (a starter set whose regions a subscribed region replaces whole).
    public var topOnly = false
    public var maxBadRows: BadRowLimit = .count(0)
    /// Written into the manifest; default: a hash of all output files.
    public var datasetVersion: String? = nil
    /// Seconds since 1970 stamped into the manifest; default: now (or $SOURCE_DATE_EPOCH).
    public var buildTime: Double? = nil
    public var buildOptions = BuildOptions()

    public init() {}
}
