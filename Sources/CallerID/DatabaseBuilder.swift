/// Collects records in any order and writes a database file.
///
/// Numbers may repeat: the last record added for a number wins, and
/// ``BuildSummary/duplicatesMerged`` counts the others. Memory use is about 12 bytes per
/// record plus the distinct labels.
///
/// ```swift
/// var builder = DatabaseBuilder()
/// try builder.add(79131234567, label: "Pizza Hut")
/// try builder.add(79990000000, label: "", category: .block)
/// let summary = try builder.write(to: "city.cid")
/// ```
public struct DatabaseBuilder {
    public var options: BuildOptions
    private var numbers: [UInt64] = []
    private var values: [UInt32] = []
    private var interner = LabelInterner()
    private var categories: [Category] = [.identify, .block]
    private var categoryCodes: [String: UInt8] = ["identify": 0, "block": 1]
    private var lastCategory: (category: Category, code: UInt8)?
    private var rangeFirst: [UInt64] = []
    private var rangeLast: [UInt64] = []
    private var rangeValues: [UInt32] = []
    /// Records whose label had hidden characters removed.
    private var hiddenRemoved = 0
    /// The runs spilled so far (``BuildOptions/memoryLimit``); nil: everything stays in memory.
    private var runs: SpilledRuns? = nil

    public init(options: BuildOptions = BuildOptions()) {
        self.options = options
    }

    /// A builder that keeps its records within ``BuildOptions/memoryLimit`` (when set): beyond
    /// it they are sorted in runs and spilled to a temporary folder beside `target` (the
    /// output the builder will write), removed when the builder goes. Copies of such a
    /// builder share its runs: use one.
    package init(options: BuildOptions, spillingNextTo target: String) {
        self.options = options
        if let limit = options.memoryLimit { runs = SpilledRuns(nextTo: target, memoryLimit: limit) }
    }

    /// Records added so far (duplicates included).
    public var count: Int { numbers.count + spilledRows }

    /// Runs spilled to disk so far (0 when everything fit in memory).
    package private(set) var runsSpilled = 0
    /// Rows written again by the merges of spilled runs (``SpilledRuns/rowsMerged``).
    package var rowsMerged: Int { runs?.rowsMerged ?? 0 }
    /// Records handed over to runs.
    private var spilledRows = 0

    /// Bytes the records in memory need until the file is written: 12 per record, twice that
    /// while sorting, the file image, and the distinct labels.
    private var memoryInUse: Int { numbers.count &* 40 &+ interner.memoryBytes }

    /// Adds a record. Throws for an invalid number, a label over 65,535 UTF-8 bytes or with a
    /// control character (U+0000–U+001F, U+007F–U+009F), a category name used with two
    /// different actions, or a 257th category. Hidden characters in the label (bidirectional
    /// controls, invisible characters: ``LabelText``) are removed and counted in
    /// ``BuildSummary/hiddenCharactersRemoved``, or refused with
    /// ``BuildOptions/hiddenCharacters`` `.refuse`.
    public mutating func add(_ number: UInt64, label: String, category: Category = .identify) throws(CallerIDError) {
        var label = label
        let result = label.withUTF8 { bytes in
            Result { () throws(CallerIDError) in try add(number, utf8Label: UnsafeRawBufferPointer(bytes), category: category) }
        }
        try result.get()
    }

    /// Adds a record whose label is given as UTF-8 bytes (validated): the build pipeline's
    /// row loop hands its rows over this way, without a `String` per row.
    package mutating func add(_ number: UInt64, utf8Label: UnsafeRawBufferPointer, category: Category) throws(CallerIDError) {
        guard PhoneNumber.isValid(number) else {
            throw CallerIDError(.invalidNumber, "number \(number) is outside 1...\(PhoneNumber.maximum)")
        }
        try append(number, try internValue(utf8Label: utf8Label, category: category))
    }

    /// Appends a record of an interned value, spilling the records in memory when they reach
    /// the memory limit.
    private mutating func append(_ number: UInt64, _ value: UInt32) throws(CallerIDError) {
        numbers.append(number)
        values.append(value)
        // Half the limit: the run before is being sorted and written meanwhile, and takes as much.
        if let runs, memoryInUse >= runs.memoryLimit / 2, rangeFirst.isEmpty { try spillRun(runs) }
    }

    /// Adds a record whose (label, category) pair an earlier record already brought in, and
    /// returns true; returns false and adds nothing when the pair is new to the builder (or
    /// the number or category would be refused): the caller then checks the label and calls
    /// ``add(_:utf8Label:category:)``. The build pipeline's rows mostly repeat a label, and a
    /// label the builder holds has passed the pipeline's checks once already.
    package mutating func addRepeated(_ number: UInt64, utf8Label: UnsafeRawBufferPointer, category: Category) throws(CallerIDError) -> Bool {
        guard let code = try? categoryCode(category) else { return false }
        return try addRepeated(number, utf8Label: utf8Label, categoryCode: code)
    }

    /// ``addRepeated(_:utf8Label:category:)`` with the category's code (``code(of:)``), for a
    /// caller that keeps the codes of its categories.
    package mutating func addRepeated(_ number: UInt64, utf8Label: UnsafeRawBufferPointer, categoryCode code: UInt8) throws(CallerIDError) -> Bool {
        guard PhoneNumber.isValid(number), let value = interner.find(category: code, bytes: utf8Label) else { return false }
        try append(number, value)
        return true
    }

    /// Hands the records in memory over to be sorted and written as the next run on another
    /// core while reading goes on; memory starts over (the categories stay: their codes are
    /// the builder's). The run before is waited for first, so two runs at most are in memory.
    private mutating func spillRun(_ runs: SpilledRuns) throws(CallerIDError) {
        var keys = numbers
        var vals = values
        let interner = self.interner
        numbers = []
        values = []
        self.interner = LabelInterner()
        runsSpilled += 1
        spilledRows += keys.count
        runs.uniqueNumbers = true
        try runs.background.startHandingOver { () throws(CallerIDError) in
            radixSortPairs(keys: &keys, values: &vals)
            _ = keepLastOfEachKey(keys: &keys, values: &vals)
            try runs.write(count: keys.count) { i, payload in
                let v = Int(vals[i])
                RunPayload.append(group: 0, category: Int(interner.categories[v]), label: interner.bytes(v), to: &payload)
                return keys[i]
            }
        }
    }

    /// Waits for a run still being written on the other core, its error dropped: for a builder
    /// given up (a build that failed), so that the run's folder is removed when the builder
    /// goes, not left behind by a process that exits while the run is written.
    package func finishSpilling() {
        try? runs?.background.wait()
    }

    /// Hands the records still in memory over as a run when runs were spilled already, and
    /// waits for it: writing then needs memory for the merge and the file's labels only, not
    /// the last run's rows and labels besides. The records are kept (the next write reads the
    /// same rows). The pipeline calls it before it writes; nothing to do for a builder whose
    /// records all stayed in memory.
    package mutating func spillRemainder() throws(CallerIDError) {
        guard let runs, runsSpilled > 0, !numbers.isEmpty else { return }
        try spillRun(runs)
        try runs.background.wait()
    }

    /// Ranges added so far (before overlaps are resolved).
    public var rangeCount: Int { rangeFirst.count }

    /// Adds a range: every number in `first...last` that has no entry answers `label` and
    /// `category` (a lookup reports it as a range match). Stored as a range, never expanded.
    ///
    /// Ranges may overlap. When the file is written, at every number the **narrowest** range
    /// holding it wins; among ranges of equal width, the one added **last**. A wide range cut by
    /// a narrower one is stored as the pieces it still wins, each reported as its own range.
    /// Entries (``add(_:label:category:)``) win over ranges at lookup.
    ///
    /// Throws for `first > last`, `last` above 999,999,999,999,999, or a label or category that
    /// ``add(_:label:category:)`` would refuse.
    public mutating func addRange(_ first: UInt64, _ last: UInt64, label: String, category: Category = .identify) throws(CallerIDError) {
        guard runsSpilled == 0 else {
            throw CallerIDError(.invalidInput, "ranges need every record in memory: add them before the records pass the memory limit")
        }
        guard first <= last, last <= Format.maxNumber else {
            throw CallerIDError(.invalidNumber, "range \(first)...\(last) is empty or goes past \(Format.maxNumber)")
        }
        var label = label
        let result = label.withUTF8 { bytes in
            Result { () throws(CallerIDError) in try internValue(utf8Label: UnsafeRawBufferPointer(bytes), category: category) }
        }
        let value = try result.get()
        rangeFirst.append(first)
        rangeLast.append(last)
        rangeValues.append(value)
    }

    private mutating func internValue(utf8Label: UnsafeRawBufferPointer, category: Category) throws(CallerIDError) -> UInt32 {
        let code = try categoryCode(category)
        // The interner holds each new label to the label rule (LabelText).
        let problem: LabelText.Problem
        switch try interner.intern(category: code, bytes: utf8Label) {
        case .id(let id): return id
        case .refused(let p): problem = p
        }
        guard problem.kind == .hidden, options.hiddenCharacters == .remove else {
            throw CallerIDError(.invalidInput, problem.description)
        }
        var cleaned = LabelText.removingHiddenCharacters(String(decoding: utf8Label, as: UTF8.self)).text
        let result = cleaned.withUTF8 { bytes in
            Result { () throws(CallerIDError) -> UInt32 in
                switch try interner.intern(category: code, bytes: UnsafeRawBufferPointer(bytes)) {
                case .id(let id): return id
                case .refused(let other): throw CallerIDError(.invalidInput, other.description)
                }
            }
        }
        let value = try result.get()
        hiddenRemoved += 1
        return value
    }

    /// Gives `category` its code (as ``add(_:label:category:)`` does), or throws as it would:
    /// a category name used with both actions, or a 257th category. The build pipeline asks
    /// before it adds a row, so that a row refused for its category is told from one refused
    /// for its label.
    package mutating func admit(_ category: Category) throws(CallerIDError) {
        _ = try categoryCode(category)
    }

    /// The code of `category` in this builder's file, given on first use; throws when the file
    /// would hold more than 256 categories or the name has another action.
    package mutating func code(of category: Category) throws(CallerIDError) -> UInt8 {
        try categoryCode(category)
    }

    private mutating func categoryCode(_ category: Category) throws(CallerIDError) -> UInt8 {
        // Consecutive records mostly share a category: skip the dictionary then. A file mixes
        // a few categories row by row: the first codes are compared before the name is hashed
        // (a match there has the same name and action, so the dictionary could add nothing).
        if let last = lastCategory, last.category == category { return last.code }
        for code in 0..<min(categories.count, 8) where categories[code] == category {
            lastCategory = (category, UInt8(code))
            return UInt8(code)
        }
        let code = try lookUpCategoryCode(category)
        lastCategory = (category, code)
        return code
    }

    private mutating func lookUpCategoryCode(_ category: Category) throws(CallerIDError) -> UInt8 {
        if let code = categoryCodes[category.name] {
            guard categories[Int(code)].action == category.action else {
                throw CallerIDError(.invalidInput, "category '\(category.name)' used with both actions identify and block")
            }
            return code
        }
        guard categories.count < 256 else {
            throw CallerIDError(.limitExceeded, "more than 256 categories")
        }
        let code = UInt8(categories.count)
        categories.append(category)
        categoryCodes[category.name] = code
        return code
    }

    /// Writes the database to `path` atomically (temporary file, fsync, rename).
    /// The builder keeps its records: calling it again writes the same bytes.
    ///
    /// A symbolic link is followed: its target gets the database and the link stays. A FIFO or
    /// a device (not a regular file) is written to in place, never replaced.
    public func write(to path: String) throws(CallerIDError) -> BuildSummary {
        try writeHashing(to: path).summary
    }

    /// What ``writeHashing(to:)`` wrote, beyond the ``BuildSummary``, for callers that cannot
    /// read the output back (a pipe) and list it in a manifest.
    package struct Written {
        /// XXH3-64 (seed 0) of the bytes written.
        package var xxh3: UInt64
        package var firstNumber: UInt64?
        package var lastNumber: UInt64?
        /// Entries (not ranges) per category.
        package var entriesByCategory: [Category: Int]
        /// The file's format version, as its header says ("2.0", "3.0" with key codec 2, "3.1"
        /// with LZ4 cold labels).
        package var formatVersion = ""
        /// A spilled build's label dictionary: the most bytes it held at once, the share of
        /// the memory limit it keeps to, and whether its labels were sorted on disk
        /// (``StreamedFile``); zero and false for a build written in memory.
        package var labelDictionaryPeakBytes = 0
        package var labelDictionaryShare = 0
        package var labelDictionarySpilled = false
    }

    /// ``write(to:)``, also returning what the file holds (``Written``).
    package func writeHashing(to path: String) throws(CallerIDError) -> (summary: BuildSummary, file: Written) {
        try DatabaseBuilder.check(options)
        if let runs, runsSpilled > 0 { return try writeMerged(runs, to: path) }
        var written = Written(xxh3: 0, entriesByCategory: [:])
        let (image, summary) = try encode(describing: &written)
        var out = try AtomicFileWriter(path: path)
        try out.write(image)
        try out.commit()
        written.xxh3 = Codec.xxh3(image)
        return (summary, written)
    }

    /// The records of the spilled runs and those still in memory, merged (the last record of a
    /// number wins) and streamed to the file.
    private func writeMerged(_ runs: SpilledRuns, to path: String) throws(CallerIDError) -> (summary: BuildSummary, file: Written) {
        try runs.background.wait()
        var keys = numbers
        var vals = values
        radixSortPairs(keys: &keys, values: &vals)
        _ = keepLastOfEachKey(keys: &keys, values: &vals)
        let interner = self.interner
        let all = try runs.withTail(count: keys.count, added: numbers.count) { i, payload in
            let v = Int(vals[i])
            RunPayload.append(group: 0, category: Int(interner.categories[v]), label: interner.bytes(v), to: &payload)
            return keys[i]
        }
        keys = []
        vals = []
        let merged = LastRowOfEachNumber(runs: all, bufferBytes: runs.mergeBuffer(files: all.count))
        let file = try StreamedFileWriter.write(merged, categories: categories, options: options, scratch: runs.area(), to: path)
        let summary = BuildSummary(entries: file.entries, duplicatesMerged: count - file.entries, distinctLabels: file.distinctLabels,
                                   fileBytes: file.bytes, ranges: 0, hiddenCharactersRemoved: hiddenRemoved)
        var byCategory: [Category: Int] = [:]
        for (c, n) in file.entriesByCategory { byCategory[categories[c], default: 0] += n }
        return (summary, Written(xxh3: file.xxh3, firstNumber: file.firstNumber, lastNumber: file.lastNumber, entriesByCategory: byCategory,
                                 formatVersion: file.formatVersion, labelDictionaryPeakBytes: file.labelDictionaryPeakBytes,
                                 labelDictionaryShare: file.labelDictionaryShare, labelDictionarySpilled: file.labelDictionarySpilled))
    }

    /// The options' limits, checked before anything is written.
    static func check(_ options: BuildOptions) throws(CallerIDError) {
        guard (1...Format.maxBlockEntries).contains(options.blockSize) else {
            throw CallerIDError(.invalidInput, "blockSize must be 1...\(Format.maxBlockEntries)")
        }
        guard (0...Format.maxSyncShift).contains(options.syncShift) else {
            throw CallerIDError(.invalidInput, "syncShift must be 0...\(Format.maxSyncShift)")
        }
        guard options.hotLabelBytes >= 0 else { throw CallerIDError(.invalidInput, "hotLabelBytes must not be negative") }
        guard (1...Format.maxBlockEntries).contains(options.rangeBlockSize) else {
            throw CallerIDError(.invalidInput, "rangeBlockSize must be 1...\(Format.maxBlockEntries)")
        }
    }

    /// The complete file image.
    func encode() throws(CallerIDError) -> ([UInt8], BuildSummary) {
        var written = Written(xxh3: 0, entriesByCategory: [:])
        return try encode(describing: &written)
    }

    /// The complete file image; `written` gets its first and last numbers and its entries
    /// per category.
    private func encode(describing written: inout Written) throws(CallerIDError) -> ([UInt8], BuildSummary) {
        // 1. Sort by number (stable: the last record for a number stays last), then dedupe.
        var keys = numbers
        var vals = values
        radixSortPairs(keys: &keys, values: &vals)
        let duplicates = keepLastOfEachKey(keys: &keys, values: &vals)

        // 2. The file image (ids, blocks, labels, sections).
        let layout = options.layout
        let interner = self.interner
        // The category table in a canonical order — identify and block, then the categories the
        // kept entries and ranges use, by name — so that the same entries give the same file
        // whatever order the rows came in (a plain TSV build and a pipeline build of one file
        // are identical).
        let pieces = RangeWriter.resolve(first: rangeFirst, last: rangeLast, value: rangeValues)
        var entriesOf = [Int](repeating: 0, count: categories.count)
        for v in vals { entriesOf[Int(interner.categories[Int(v)])] &+= 1 }
        var used = entriesOf.map { $0 > 0 }
        for p in pieces { used[Int(interner.categories[Int(p.value)])] = true }
        written.firstNumber = keys.first
        written.lastNumber = keys.last
        for (code, n) in entriesOf.enumerated() where n > 0 { written.entriesByCategory[categories[code]] = n }
        let order = [0, 1] + (2..<categories.count).filter { used[$0] }.sorted { categories[$0].name < categories[$1].name }
        var newCode = [UInt8](repeating: 0, count: categories.count)
        for (new, old) in order.enumerated() { newCode[old] = UInt8(new) }
        let table = order.map { categories[$0] }
        // 3. Ranges (an optional section: a file without ranges has none).
        var extra: [(kind: UInt32, bytes: [UInt8])] = []
        if !pieces.isEmpty {
            let section = try RangeWriter.encode(pieces, entryKeys: keys, labelCount: interner.count, label: { interner.bytes($0) },
                                                 valueCategory: { newCode[Int(interner.categories[$0])] }, blockSize: options.rangeBlockSize,
                                                 hotLabelBytes: options.compressLabels ? min(options.hotLabelBytes, Format.rangeHotLabelBytes) : Int.max)
            extra.append((Format.rangesKind, section))
        }
        let encoded = try FileWriter.encode(keys: keys, values: vals, labelCount: interner.count,
                                            label: { interner.bytes($0) }, valueCategory: { newCode[Int(interner.categories[$0])] },
                                            categories: table, options: layout, extraSections: extra)
        let summary = BuildSummary(entries: keys.count, duplicatesMerged: duplicates,
                                   distinctLabels: encoded.distinctValues, fileBytes: encoded.image.count, ranges: pieces.count,
                                   hiddenCharactersRemoved: hiddenRemoved)
        written.formatVersion = Header.version(major: encoded.version.major, minor: encoded.version.minor)
        return (encoded.image, summary)
    }
}

extension BuildOptions {
    /// The writer's settings.
    var layout: LayoutOptions {
        var layout = LayoutOptions()
        layout.blockSize = blockSize
        layout.syncShift = syncShift
        layout.hotLabelBytes = compressLabels ? hotLabelBytes : Int.max
        layout.labelCoding = labelCoding
        return layout
    }
}
