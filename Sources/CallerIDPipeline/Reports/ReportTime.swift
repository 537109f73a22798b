// The time of a report: RFC 3339 (`2026-12-05T09:30:00Z`, `2026-12-05 12:30:00.250+03:00`) or
// Unix seconds (`1796549400`, `1796549400.25`), read to whole seconds since 1970 (UTC).

enum ReportTime {
    /// Times are kept in 40 bits of a sort key: 2^40 seconds is the year 36812.
    static let limit: Int64 = 1 << 40
    static let secondsPerDay: Int64 = 86_400

    /// Why a time field was refused.
    struct Problem: Error {
        var message: String
    }

    /// Seconds since 1970-01-01T00:00:00Z, or the reason the text is not a time.
    static func parse(_ text: some Collection<UInt8>) throws(Problem) -> Int64 {
        let b = Array(text.trimmingSpaces)
        guard !b.isEmpty else { throw Problem(message: "the time is empty") }
        if b.allSatisfy({ isDigit($0) || $0 == 0x2E }) { return try unixSeconds(b) }
        return try rfc3339(b)
    }

    private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    private static func unixSeconds(_ b: [UInt8]) throws(Problem) -> Int64 {
        let whole = b.split(separator: 0x2E, maxSplits: 1, omittingEmptySubsequences: false)
        guard let digits = whole.first, !digits.isEmpty, digits.count <= 15, whole.count <= 2,
              whole.count == 1 || whole[1].allSatisfy(isDigit) else {
            throw Problem(message: "the time is neither RFC 3339 nor Unix seconds")
        }
        var v: Int64 = 0
        for c in digits { v = v * 10 + Int64(c - 0x30) }
        // 10^11 seconds is the year 5138: such a value is milliseconds (or microseconds).
        guard v < 100_000_000_000 else {
            throw Problem(message: "the time \(v) looks like milliseconds since 1970: give seconds (or RFC 3339)")
        }
        return v
    }

    private static func rfc3339(_ b: [UInt8]) throws(Problem) -> Int64 {
        let bad = Problem(message: "the time is not RFC 3339 (2026-12-05T09:30:00Z) or Unix seconds")
        var i = 0
        func number(_ width: Int) throws(Problem) -> Int64 {
            guard i + width <= b.count else { throw bad }
            var v: Int64 = 0
            for k in i..<(i + width) {
                guard isDigit(b[k]) else { throw bad }
                v = v * 10 + Int64(b[k] - 0x30)
            }
            i += width
            return v
        }
        func expect(_ c: UInt8) throws(Problem) {
            guard i < b.count, b[i] == c else { throw bad }
            i += 1
        }
        let year = try number(4)
        try expect(0x2D)
        let month = try number(2)
        try expect(0x2D)
        let day = try number(2)
        guard i < b.count, b[i] == 0x54 || b[i] == 0x74 || b[i] == 0x20 else { throw bad }
        i += 1
        let hour = try number(2)
        try expect(0x3A)
        let minute = try number(2)
        try expect(0x3A)
        let second = try number(2)
        if i < b.count, b[i] == 0x2E {
            i += 1
            let start = i
            while i < b.count, isDigit(b[i]) { i += 1 }
            guard i > start else { throw bad }
        }
        guard i < b.count else { throw Problem(message: "the time has no offset: end it with Z or ±HH:MM") }
        var offset: Int64 = 0
        switch b[i] {
        case 0x5A, 0x7A: i += 1
        case 0x2B, 0x2D:
            let sign: Int64 = b[i] == 0x2D ? -1 : 1
            i += 1
            let h = try number(2)
            try expect(0x3A)
            let m = try number(2)
            guard h <= 23, m <= 59 else { throw bad }
            offset = sign * (h * 3600 + m * 60)
        default: throw bad
        }
        guard i == b.count else { throw bad }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              hour <= 23, minute <= 59, second <= 60 else {
            throw Problem(message: "the time names no real moment (month, day, hour, minute or second out of range)")
        }
        let seconds = daysFromCivil(year, month, day) * secondsPerDay + hour * 3600 + minute * 60 + second - offset
        guard seconds >= 0 else { throw Problem(message: "the time is before 1970") }
        return seconds
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    static func daysFromCivil(_ year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// `2026-12-05T09:30:00Z` for a time in seconds since 1970.
    static func format(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / secondsPerDay : (seconds - secondsPerDay + 1) / secondsPerDay
        let rest = seconds - days * secondsPerDay
        // civil_from_days
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(y)-\(two(m))-\(two(d))T\(two(rest / 3600)):\(two(rest % 3600 / 60)):\(two(rest % 60))Z"
    }
}

extension Collection where Element == UInt8 {
    /// Without leading and trailing ASCII spaces, tabs and CRs.
    var trimmingSpaces: SubSequence {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return self[endIndex...] }
        var end = start
        var i = start
        while i != endIndex {
            if !isSpace(self[i]) { end = index(after: i) }
            i = index(after: i)
        }
        return self[start..<end]
    }
}
