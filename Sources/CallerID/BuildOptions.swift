// What a build is told (BuildOptions) and what it reports (BuildSummary).
/// Options for writing a database file (format 2.0, docs/FORMAT.md).
public struct BuildOptions: Sendable {
    /// Entries per block record (1…1024). Smaller blocks look up a little faster and cost
    /// more index and header bytes per entry: 512 (the default) saves 0.04 B/entry against 256
    /// (20 bytes of index and record header a block) for a few tens of nanoseconds a lookup.
    public var blockSize: Int = 512
    /// A value sync point every 2^`syncShift` entries of a block (0…10): a lookup decodes at
    /// most 2^`syncShift` − 1 value codes before its own; each sync point costs 2 bytes.
    public var syncShift: Int = 5
    /// Text bytes of the most frequent labels stored raw ("hot": read with no decoding).
    /// The other ("cold") labels are coded one by one with a symbol table of frequent byte
    /// strings and decoded on access.
    public var hotLabelBytes: Int = 64 * 1024
    /// When false, every label is stored raw (hot): larger files, no decoding on access.
    public var compressLabels: Bool = true
    /// How the cold labels are coded: ``LabelCoding/auto`` (the default) writes both codings
    /// and keeps the smaller file.
    public var labelCoding: LabelCoding = .auto
    /// Ranges per block of the ranges section (1…1024): a lookup that falls back to a range
    /// decodes at most this many ranges; each block costs 6 bytes of index (10 with first
    /// numbers more than 2^32 apart in a group of 16 blocks), plus 12 per 16 blocks.
    public var rangeBlockSize: Int = Format.defaultRangeBlockSize
    /// What ``DatabaseBuilder`` does with a label holding hidden characters (bidirectional
    /// controls, invisible characters; ``LabelText``): removes them and counts the records in
    /// ``BuildSummary/hiddenCharactersRemoved`` (the default), or refuses the record.
    public var hiddenCharacters: LabelText.HiddenCharacters = .remove
    /// Bytes of memory the records may take before they are sorted in runs and spilled to
    /// files beside the output, to be merged when the file is written (docs/SCALE.md); nil:
    /// every record stays in memory. Applies to a builder made with
    /// `DatabaseBuilder(options:spillingNextTo:)` (the `lookup` tool's `--memory`); a builder
    /// holding ranges keeps its records in memory. The file written is the same either way.
    public var memoryLimit: Int? = nil

    /// The largest ``blockSize``.
    public static let maxBlockSize = Format.maxBlockEntries

    public init() {}
}

/// How a database codes its cold labels (docs/FORMAT.md 5.9–5.14).
public enum LabelCoding: String, Sendable, CaseIterable {
    /// Both codings are made, the smaller kept (on a tie, the symbol table, whose file older
    /// readers read). Builds that cannot compress LZ4 (the `PortableCodecs` trait, Apple
    /// platforms) write the symbol table.
    case auto
    /// Cold labels in LZ4 groups against the hot labels as dictionary: a file of version 3.1.
    /// Smaller on most data; a lookup of a cold label decodes its group of up to 8 labels.
    case lz4
    /// Cold labels coded one by one with a table of frequent byte strings: version 2.0 (or 3.0
    /// with key codec 2), readable by older readers.
    case symbols
}

/// What a build wrote.
public struct BuildSummary: Sendable, Equatable {
    /// Entries written (distinct numbers).
    public var entries: Int
    /// Records dropped because a later record had the same number.
    public var duplicatesMerged: Int
    /// Distinct (label, category) values in the dictionary.
    public var distinctLabels: Int
    /// Size of the file written.
    public var fileBytes: Int
    /// Ranges written (after overlaps were resolved; see ``DatabaseBuilder/addRange(_:_:label:category:)``).
    public var ranges: Int
    /// Records (entries and ranges, duplicates included) whose label had hidden characters
    /// removed (``BuildOptions/hiddenCharacters``): a warning worth reading, since the input
    /// tried to change what a phone shows.
    public var hiddenCharactersRemoved: Int

    public init(entries: Int, duplicatesMerged: Int, distinctLabels: Int, fileBytes: Int, ranges: Int = 0,
                hiddenCharactersRemoved: Int = 0) {
        self.entries = entries
        self.duplicatesMerged = duplicatesMerged
        self.distinctLabels = distinctLabels
        self.fileBytes = fileBytes
        self.ranges = ranges
        self.hiddenCharactersRemoved = hiddenCharactersRemoved
    }

    /// File bytes per entry (0 for an empty database).
    public var bytesPerEntry: Double { entries == 0 ? 0 : Double(fileBytes) / Double(entries) }
}
