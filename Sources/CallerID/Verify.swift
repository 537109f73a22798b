extension Database {
    /// Checks the whole file: every section checksum, zero padding between sections, and a
    /// full decode (the summary against the index, every block record — keys strictly
    /// ascending across the file, every value code, canonical encoding — every category, every
    /// label decoded and held to the label rule, ``LabelText``: strict UTF-8 without control or
    /// hidden characters).
    ///
    /// Its cost is linear in the file's size: a file holds at most 51.2 entries per byte (every
    /// block costs at least 20 bytes of index and record header and holds at most 1,024
    /// entries), each entry's key and value code is decoded once, and each distinct label is
    /// held to the label rule once (a cold label's codes through the rule's automaton, and
    /// decoded — at most 65,535 bytes, from at least one coded byte per 8 — only when it
    /// does not pass): labels are not read per entry.
    ///
    /// Runs on two threads: the calling one checks the checksums, the labels, the index and
    /// the first blocks; a second thread, joined before this returns, decodes the other
    /// blocks at the same time. A damaged file reports the damage the one-thread order would
    /// meet first (checksums, labels, index, then the blocks in order).
    ///
    /// Ends with ``checkFile()``: a file modified in place during (or before) the check is
    /// reported as such rather than as damage or success.
    ///
    /// - Throws: ``CallerIDError`` (`corrupt`) naming the damaged section or block;
    ///   (`fileChanged`) when the mapped file was modified in place.
    public func verify() throws(CallerIDError) {
        try checkFile()
        do {
            try verifyAll(split: verifySplit)
        } catch {
            try checkFile()  // damage seen because the file changed under us: say so
            throw error
        }
        try checkFile()
    }

    /// Every section's XXH3-64 and the zero padding between sections (so every byte of the
    /// file is covered by a check). Runs before structural validation when opening with
    /// `verify: true`, so a damaged byte is reported as the section it lies in.
    static func verifyChecksums(_ b: ByteView, sections: [(kind: UInt32, offset: Int, length: Int, checksum: UInt64)],
                                tableOffset: Int, path: String) throws(CallerIDError) {
        for s in sections where Codec.xxh3(b.bytes(s.offset, s.length)) != s.checksum {
            throw CallerIDError.corrupt(path, "section '\(Format.sectionName(s.kind))' (offset \(s.offset), \(s.length) bytes) fails its XXH3-64 checksum")
        }
        var covered = Format.headerSize
        for s in sections.sorted(by: { ($0.offset, $0.length) < ($1.offset, $1.length) }) {
            guard b.isZero(covered, s.offset - covered) else {
                throw CallerIDError.corrupt(path, "non-zero padding between offsets \(covered) and \(s.offset)")
            }
            covered = s.offset + s.length
        }
        guard b.isZero(covered, tableOffset - covered) else {
            throw CallerIDError.corrupt(path, "non-zero padding between offsets \(covered) and \(tableOffset)")
        }
    }

    /// The first block the second thread of ``verify()`` decodes: the calling thread's share
    /// (checksums, labels, blocks before it) and the second thread's (blocks from it on) cost
    /// about the same. Timed on the study profile (4M entries; each thread's share of a
    /// verify, both running): a block entry took about 100 units of time to decode and
    /// check, a byte of cold labels about 20 (held to the label rule by the symbol table's
    /// automaton; most labels are never decoded), any other byte about 1 (its checksum). In a
    /// file of major version 3 a block entry cost about 140 (default profile: key codec 2's
    /// decode, and the canonical check's pass over the gaps and the bitmap). Since verify
    /// only measures value codes, a block entry costs 15 % fewer instructions (callgrind):
    /// 85 and 125. A byte of LZ4 cold labels (3.1) cost about 110 (perf, study profile: its
    /// group decoded, every decoded label byte run through the rule's automaton; 2.2 decoded
    /// bytes per stored byte).
    /// Below 65,536 entries the file is checked on the calling thread alone (a thread costs
    /// more than it saves there).
    var verifySplit: Int {
        guard blockCount > 1, count >= 1 << 16 else { return blockCount }
        let entryWork = maxKeyCodec == Format.keyCodecRunBitmap ? 125 : 85, otherByteWork = 1
        let coldByteWork = labels.lz4 == nil ? 20 : 110
        let labelWork = coldByteWork * labels.coldByteCount + otherByteWork * (file.bytes.count - labels.coldByteCount)
        let blockWork = entryWork * count
        // The calling thread takes (labelWork + blockWork) / 2 − labelWork of the blocks' work.
        let share = max(0, (blockWork - labelWork) / 2)
        guard blockWork > 0 else { return blockCount }
        return min(blockCount - 1, max(1, Int((Double(share) / Double(blockWork) * Double(blockCount)).rounded())))
    }

    /// Everything ``verify()`` checks (the checksums unless `checksums` is false: an open with
    /// `verify: true` checked them first), the blocks from `split` on in a second thread (none
    /// when `split` is `blockCount`). Throws the error the one-thread order (checksums, labels,
    /// index, blocks 0, 1, …) meets first, whatever the split.
    func verifyAll(split: Int, checksums: Bool = true) throws(CallerIDError) {
        let split = min(max(split, 0), blockCount)
        let head = { [self] () -> Result<BlockTally, CallerIDError> in
            do throws(CallerIDError) {
                if checksums { try Database.verifyChecksums(file.bytes, sections: sections, tableOffset: tableOffset, path: path) }
                try verifyLabelsAndIndex()
            } catch {
                return .failure(error)
            }
            return .success(verifyBlocks(0..<split, after: 0))
        }
        let (first, tail) = split < blockCount
            ? runConcurrently(head, { [self] in verifyBlocks(split..<blockCount, after: 0) })
            : (head(), BlockTally())
        let front = try first.get()
        if let failure = front.failure { throw failure }
        if split < blockCount {
            // The second part started without the key before it: the one-thread order decodes
            // block `split` after the first part's last key, and stops there if that fails.
            if split > 0, firstKey(split) <= front.lastKey {
                var keys = FixedBuffer<UInt64>(repeating: 0, count: blockSize)
                _ = try checkBlock(split, after: front.lastKey, keys: &keys)
            }
            // In one thread the count check runs after every block: it stops first when the
            // blocks before the second part's damage already hold too many entries.
            if front.entries + tail.entries > count { throw tooManyEntries }
            if let failure = tail.failure { throw failure }
        }
        let total = front.entries + tail.entries
        guard total == count else { throw CallerIDError.corrupt(path, "blocks hold \(total) entries; the header says \(count)") }
        try ranges?.verify(categoryCount: categories.count)
        try verifyEntriesInsideBits()
    }

    private var tooManyEntries: CallerIDError { CallerIDError.corrupt(path, "blocks hold more entries than the header's \(count)") }

    /// Labels (sections 7–11), every value's category, and the block index.
    private func verifyLabelsAndIndex() throws(CallerIDError) {
        // Labels (sections 7–11): hot offsets ascend; every label (hot and cold) is valid text;
        // each cold group is consumed exactly by its labels — the checks of the ranges section's
        // label parts, through the same table type. Then every value's category.
        try labels.verify()
        for v in 0..<valueCount { _ = try categoryCode(v) }
        try blockIndex.verify(path: path)
    }

    /// What one part of the blocks held: the entries and the last key of its blocks up to the
    /// first damaged one, and that damage.
    struct BlockTally {
        var entries = 0
        var lastKey: UInt64 = 0
        var failure: CallerIDError?
    }

    /// Every block of `range` (the first after key `after`), keys and value codes only (each
    /// label was checked once by the label check): first key as the index says, keys strictly
    /// ascending, value codes of the code, canonical encoding; never more entries than the
    /// header's count. Stops at the first damaged block.
    private func verifyBlocks(_ range: Range<Int>, after: UInt64) -> BlockTally {
        var tally = BlockTally(lastKey: after)
        guard !range.isEmpty else { return tally }
        var keys = FixedBuffer<UInt64>(repeating: 0, count: blockSize)
        do throws(CallerIDError) {
            for b in range {
                let (r, bits) = try checkBlock(b, after: tally.lastKey, keys: &keys)
                guard r.isCanonical(keys: keys, codeBits: bits, runBitmap: maxKeyCodec == Format.keyCodecRunBitmap) else {
                    throw CallerIDError.corrupt(path, "block \(b): record has unused bits or bytes, or a key codec or width the writer would not choose")
                }
                tally.lastKey = keys[r.entryCount - 1]
                tally.entries += r.entryCount
                guard tally.entries <= count else { throw tooManyEntries }
            }
        } catch {
            tally.failure = error
        }
        return tally
    }

    /// The "entries inside" bit of every range block (FORMAT.md 5.12), recomputed from the
    /// entries: a bit cleared in a damaged file would let a range answer hide an entry.
    private func verifyEntriesInsideBits() throws(CallerIDError) {
        guard let table = ranges, table.blockCount > 0 else { return }
        var entries = cursor(from: 0)
        var nextEntry: UInt64? = try entries.next { $0.number }
        var rangeCursor = rangeCursor(from: 0)
        var index = 0
        var inside = false
        func check(_ block: Int) throws(CallerIDError) {
            guard table.blockHasEntries(block) == inside else {
                throw CallerIDError.corrupt(path, "ranges: block \(block)'s entries-inside bit is \(inside ? "clear" : "set"); "
                                            + "an entry \(inside ? "lies" : "does not lie") inside its ranges")
            }
        }
        while let r = try rangeCursor.next() {
            while let e = nextEntry, e < r.first { nextEntry = try entries.next { $0.number } }
            if let e = nextEntry, e <= r.last { inside = true }
            index += 1
            if index % table.blockSize == 0 {
                try check(index / table.blockSize - 1)
                inside = false
            }
        }
        if index % table.blockSize != 0 { try check(index / table.blockSize) }
    }

    /// Facts about the file: version, counts, section sizes.
    public var info: DatabaseInfo {
        let b = file.bytes
        var info = DatabaseInfo(
            path: path,
            formatVersion: Header.version(b),
            entries: count,
            distinctLabels: valueCount,
            blockSize: blockSize,
            blocks: blockCount,
            hotLabels: labels.hotCount,
            labelSymbols: labels.symbols.symbolCount,
            fileBytes: b.count,
            sections: sections.map { SectionInfo(name: Format.sectionName($0.kind), offset: $0.offset, bytes: $0.length, checksum: $0.checksum) },
            categories: categories,
            ranges: rangeCount
        )
        if let lz4 = labels.lz4 {
            info.labelCoding = .lz4
            info.lz4SingleLabels = lz4.singles
            info.lz4GroupLabels = 1 << lz4.groupShift
        }
        return info
    }
}
