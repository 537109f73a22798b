extension Database {
    /// Checks the whole file: every section checksum, zero padding between sections, and a
    /// full decode (keys strictly ascending, every value, category and label valid UTF-8).
    ///
    /// Ends with ``checkFile()``: a file modified in place during (or before) the check is
    /// reported as such rather than as damage or success.
    ///
    /// - Throws: ``CallerIDError`` (`corrupt`) naming the damaged section or block;
    ///   (`fileChanged`) when the mapped file was modified in place.
    public func verify() throws(CallerIDError) {
        try checkFile()
        do {
            try Database.verifyChecksums(file.bytes, sections: sections, tableOffset: tableOffset, path: path)
            try verifyContent()
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
        let names = Dictionary(uniqueKeysWithValues: Format.Section.allCases.map { ($0.rawValue, $0.description) })
        for s in sections where Codec.xxh3(b.bytes(s.offset, s.length)) != s.checksum {
            throw CallerIDError.corrupt(path, "section '\(names[s.kind] ?? "kind \(s.kind)")' (offset \(s.offset), \(s.length) bytes) fails its XXH3-64 checksum")
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

    /// A full decode: labels, categories, every block.
    func verifyContent() throws(CallerIDError) {
        // Every label chunk decodes; offsets ascend and fill the chunk; labels are UTF-8.
        let scratch = ScratchBuffer()
        for c in 0..<chunkCount {
            let e = c * Format.chunkEntrySize
            let offset = Int(chunkTable.u32(e)), stored = Int(chunkTable.u32(e + 4)), raw = Int(chunkTable.u32(e + 8))
            let source = labelData.bytes(offset, stored)
            let chunk: ByteView
            if chunkTable.u32(e + 12) == 0 {
                chunk = ByteView(source)
            } else {
                guard let d = scratch.decode(source, raw: raw, dictionary: labelDictionary.buffer) else {
                    throw CallerIDError.corrupt(path, "label chunk \(c) does not decompress to \(raw) bytes")
                }
                chunk = d
            }
            let labels = labelsIn(chunk: c)
            var last = 0
            for j in 0..<labels {
                let end = Int(chunk.u32(j * 4))
                guard end >= last, end <= chunk.count - labels * 4 else {
                    throw CallerIDError.corrupt(path, "label chunk \(c): label \(j) ends at \(end), outside the chunk")
                }
                let label = chunk.bytes(labels * 4 + last, end - last)
                guard label.count <= Format.maxLabelBytes, validUTF8(label),
                      !label.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
                    throw CallerIDError.corrupt(path, "label chunk \(c): label \(j) is too long, not UTF-8 or has a control byte")
                }
                last = end
            }
            guard last == chunk.count - labels * 4 else {
                throw CallerIDError.corrupt(path, "label chunk \(c): \(chunk.count - labels * 4 - last) unused bytes")
            }
        }
        for v in 0..<valueCount { _ = try categoryCode(v) }

        // Every block decodes to strictly ascending keys with valid values and labels.
        var cursor = self.cursor()
        try cursor.forEach { _ in true }
    }

    /// Facts about the file: version, counts, section sizes.
    public var info: DatabaseInfo {
        let names = Dictionary(uniqueKeysWithValues: Format.Section.allCases.map { ($0.rawValue, $0.description) })
        var compressed = 0, rawBytes = 0
        for c in 0..<chunkCount {
            let e = c * Format.chunkEntrySize
            if chunkTable.u32(e + 12) != 0 { compressed += 1 }
            rawBytes += Int(chunkTable.u32(e + 8))
        }
        let b = file.bytes
        return DatabaseInfo(
            path: path,
            formatVersion: "\(b.u16(8)).\(b.u16(10))",
            entries: count,
            distinctLabels: valueCount,
            blockSize: blockSize,
            blocks: blockCount,
            labelChunks: chunkCount,
            compressedLabelChunks: compressed,
            labelBytesRaw: rawBytes,
            fileBytes: b.count,
            sections: sections.map { SectionInfo(name: names[$0.kind] ?? "kind \($0.kind)", offset: $0.offset, bytes: $0.length, checksum: $0.checksum) },
            categories: categories
        )
    }
}
