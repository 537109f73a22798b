import CallerID

// The common report, read on two threads: a CSV line without quotes whose number is plain
// E.164, whose reporter, time, category and region are ASCII and already known. Such a line is
// read into its record by ``PlainReportLines/parse(_:in:)`` on either thread; every other line
// (the header, a quote, a byte past ASCII in a field that counts, a national number, a
// category or region not seen yet, anything the general reading would refuse or warn about)
// is left to the general reading, on the reading thread, in the file's order. A line read here
// gives exactly the record the general reading gives it, so the two paths write the same bytes.

/// What reads plain report lines: the fields' places and the names known so far. A value the
/// threads copy; the reading thread makes a new one when it learns a category or a region.
struct PlainReportLines {
    let delimiter: UInt8
    let number: Int
    let reporter: Int
    let time: Int
    let category: Int?
    let region: Int?
    /// Fields a line must have at least.
    let fieldCount: Int
    /// The code of every report when `--category` gives one.
    let fixedCode: UInt8?
    /// `--country`: numbers without `+` are then national, for the general reading.
    let countryGiven: Bool
    let normalizer: NumberNormalizer
    /// Lines longer are left to the general reading (which applies the record and field limits).
    let maxLineBytes: Int
    /// Category values seen (trimmed bytes, by their hash) and their codes.
    var categories: [UInt64: (bytes: [UInt8], code: UInt8)] = [:]
    /// Region names seen and their ids.
    var regions: [UInt64: (bytes: [UInt8], id: UInt16)] = [:]

    /// nil when a field is found by a JSON key (the fast reading is for CSV) or a country field
    /// gives each number's country.
    init?(delimiter: UInt8, fields: ReportFields, fixedCode: UInt8?, countryGiven: Bool,
          normalizer: NumberNormalizer, limits: ReadLimits) {
        func index(_ slot: FieldSlots.Slot?) -> Int?? {
            guard let slot else { return .some(nil) }
            switch slot.place {
            case .index(let i), .position(let i): return .some(i)
            case .key: return nil
            }
        }
        guard fields.country == nil,
              let number = index(fields.number) ?? nil, let reporter = index(fields.reporter) ?? nil,
              let time = index(fields.time) ?? nil, let category = index(fields.category), let region = index(fields.region)
        else { return nil }
        self.delimiter = delimiter
        self.number = number
        self.reporter = reporter
        self.time = time
        self.category = fixedCode == nil ? category : nil
        self.region = region
        fieldCount = 1 + [number, reporter, time, self.category ?? 0, region ?? 0].max()!
        self.fixedCode = fixedCode
        self.countryGiven = countryGiven
        self.normalizer = normalizer
        maxLineBytes = min(4096, limits.fieldBytes, (limits.recordBytes - 1) / 2)
        if fixedCode == nil && self.category == nil { return nil }
    }

    static func key(_ bytes: some Collection<UInt8>) -> UInt64 {
        Array(bytes).withUnsafeBytes { Checksum.xxh3(bytes: $0) }
    }

    /// What one part of a batch held: the records of its plain lines in order, and where the
    /// other lines go among them.
    struct Parsed {
        var records: [Triple] = []
        /// A line for the general reading: it comes before `records[before]`; `line` counts
        /// from the part's first line (0); its bytes are `start..<end` of the batch.
        var others: [(before: Int, line: Int, start: Int, end: Int)] = []
        /// Lines in the part (line feeds, and a last line without one).
        var lines = 0
        /// The newest time among `records` (-1: none).
        var newest: Int64 = -1
    }

    /// Reads the lines of `range` of `batch` (whole lines: it starts after a line feed and ends
    /// with one, or at the input's end).
    func parse(_ batch: UnsafeRawBufferPointer, in range: Range<Int>) -> Parsed {
        var out = Parsed()
        out.records.reserveCapacity(range.count / 40)
        let memo = PatternMemo()
        var start = range.lowerBound
        var fields = [Range<Int>](repeating: 0..<0, count: fieldCount)
        while start < range.upperBound {
            var end = start
            while end < range.upperBound && batch[end] != 0x0A { end += 1 }
            let next = end + 1
            if let record = read(batch, start..<end, fields: &fields, memo: memo) {
                out.records.append(record)
                let t = ReportKey.time(record.c)
                if t > out.newest { out.newest = t }
            } else {
                out.others.append((out.records.count, out.lines, start, end))
            }
            out.lines += 1
            start = next
        }
        return out
    }

    /// The record of one line, or nil for the general reading.
    @inline(__always)
    private func read(_ b: UnsafeRawBufferPointer, _ line: Range<Int>, fields: inout [Range<Int>], memo: PatternMemo) -> Triple? {
        var end = line.upperBound
        if end > line.lowerBound && b[end - 1] == 0x0D { end -= 1 }
        guard end > line.lowerBound, end - line.lowerBound <= maxLineBytes else { return nil }
        // The fields; a quote, a CR or too few fields: the general reading.
        var field = 0, fieldStart = line.lowerBound, i = line.lowerBound
        while i < end {
            let c = b[i]
            if c == delimiter {
                if field < fieldCount { fields[field] = fieldStart..<i }
                field += 1
                fieldStart = i + 1
            } else if c == 0x22 || c == 0x0D {
                return nil
            }
            i += 1
        }
        if field < fieldCount { fields[field] = fieldStart..<end }
        guard field + 1 >= fieldCount else { return nil }

        // The number: plain E.164 that the normalizer's common path takes as it is.
        let numberBytes = trimmed(b, fields[number])
        guard let plain = Self.plainDigits(b, numberBytes, countryGiven: countryGiven),
              normalizer.quickE164(plain, memo: memo) == plain else { return nil }
        // The reporter: ASCII, not empty, not a phone number.
        let who = trimmed(b, fields[reporter])
        guard !who.isEmpty, isASCII(b, who) else { return nil }
        let whoBytes = UnsafeRawBufferPointer(rebasing: b[who])
        guard !ReportBuild.looksLikePhoneNumber(whoBytes) else { return nil }
        // The time: Unix seconds read here, RFC 3339 by the shared parser.
        let when = trimmed(b, fields[time])
        guard !when.isEmpty, isASCII(b, when) else { return nil }
        var seconds: Int64 = 0
        var digitsOnly = when.count <= 11
        if digitsOnly {
            for j in when {
                let c = b[j]
                guard c >= 0x30 && c <= 0x39 else { digitsOnly = false; break }
                seconds = seconds * 10 + Int64(c - 0x30)
            }
        }
        if !digitsOnly || seconds >= 100_000_000_000 {
            guard let t = try? ReportTime.parse(UnsafeRawBufferPointer(rebasing: b[when])) else { return nil }
            seconds = t
        }
        guard seconds < ReportTime.limit else { return nil }
        // The verdict and the region: values already known.
        let code: UInt8
        if let fixedCode {
            code = fixedCode
        } else {
            let value = UnsafeRawBufferPointer(rebasing: b[trimmed(b, fields[category!])])
            guard let known = categories[Checksum.xxh3(bytes: value)], known.bytes.elementsEqual(value) else { return nil }
            code = known.code
        }
        var regionID: UInt16 = 0
        if let region {
            let value = UnsafeRawBufferPointer(rebasing: b[trimmed(b, fields[region])])
            guard let known = regions[Checksum.xxh3(bytes: value)], known.bytes.elementsEqual(value) else { return nil }
            regionID = known.id
        }
        return Triple.report(number: plain, reporter: Checksum.xxh3(bytes: whoBytes), key: ReportKey.pack(time: seconds, verdict: code, region: regionID))
    }

    @inline(__always)
    private func trimmed(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) -> Range<Int> {
        var lo = r.lowerBound, hi = r.upperBound
        while lo < hi && (b[lo] == 0x20 || b[lo] == 0x09) { lo += 1 }
        while hi > lo && (b[hi - 1] == 0x20 || b[hi - 1] == 0x09) { hi -= 1 }
        return lo..<hi
    }

    @inline(__always)
    private func isASCII(_ b: UnsafeRawBufferPointer, _ r: Range<Int>) -> Bool {
        for i in r where b[i] >= 0x80 { return false }
        return true
    }

    /// ``ReportBuild/plainE164(_:country:)`` over trimmed bytes in hand.
    @inline(__always)
    static func plainDigits(_ b: UnsafeRawBufferPointer, _ r: Range<Int>, countryGiven: Bool) -> UInt64? {
        var lo = r.lowerBound
        var plus = false
        if lo < r.upperBound && b[lo] == 0x2B {
            plus = true
            lo += 1
        }
        let count = r.upperBound - lo
        guard plus || !countryGiven, (8...15).contains(count), b[lo] != 0x30 else { return nil }
        var v: UInt64 = 0
        for i in lo..<r.upperBound {
            let c = b[i]
            guard c >= 0x30 && c <= 0x39 else { return nil }
            v = v * 10 + UInt64(c - 0x30)
        }
        return v
    }
}
