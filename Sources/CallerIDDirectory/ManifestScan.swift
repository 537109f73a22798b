import Foundation
import CallerID

/// The fast reading behind ``DirectoryManifest/Fields/lookup``: one pass over the bytes of
/// `manifest.json` that keeps, of each file, only what a lookup needs (the model's own fields
/// and keys, ``DirectoryManifest/File/CodingKeys``) and checks the JSON syntax of everything it
/// skips. The full decode (`JSONDecoder`) took 43.5 million instructions of a query's 80 on a
/// manifest of 217 files, this scan 4.5 (BENCHMARKS.md, "Queries over many packs").
///
/// It gives up (nil) on anything it does not read plainly: a key or a kept string with an
/// escape, a kept number with a fraction, exponent or sign where none belongs, a duplicate
/// kept key, a missing `file`, `bytes` or `xxh3`, nesting deeper than 64, invalid UTF-8 in a
/// string (the only place other bytes than ASCII may stand), bytes after the top-level object. The caller then decodes in full, which accepts the
/// manifest or says what is wrong with it.
enum ManifestScan {
    private typealias Key = DirectoryManifest.File.CodingKeys

    /// The files with their lookup fields, or nil when the full decode must decide.
    static func lookupFields(_ data: Data) -> [DirectoryManifest.File]? {
        var scanner = Scanner(bytes: [UInt8](data))
        return try? scanner.manifest()
    }

    /// Gives up: the full decode decides.
    private struct Unreadable: Error {}

    private struct Scanner {
        let bytes: [UInt8]
        var pos = 0
        var depth = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        // Keys compared as bytes (the model's coding keys: plain ASCII).
        static let files = Array("files".utf8)
        static let keptKeys: [Key] = [.file, .bytes, .xxh3, .priority, .firstNumber, .lastNumber, .ranges]
        static let keptNames: [[UInt8]] = keptKeys.map { Array($0.stringValue.utf8) }

        /// True when the raw key `key` is `name`.
        static func same(_ key: ArraySlice<UInt8>, _ name: [UInt8]) -> Bool {
            guard key.count == name.count else { return false }
            var i = key.startIndex
            for b in name {
                if key[i] != b { return false }
                i += 1
            }
            return true
        }

        mutating func manifest() throws(Unreadable) -> [DirectoryManifest.File] {
            var files: [DirectoryManifest.File]? = nil
            try object { (scanner, key) throws(Unreadable) in
                if Self.same(key, Self.files) {
                    guard files == nil else { throw Unreadable() }
                    files = try scanner.fileList()
                } else {
                    try scanner.skipValue()
                }
            }
            skipWhitespace()
            guard pos == bytes.count, let files else { throw Unreadable() }
            return files
        }

        mutating func fileList() throws(Unreadable) -> [DirectoryManifest.File] {
            var files: [DirectoryManifest.File] = []
            try array { (scanner) throws(Unreadable) in files.append(try scanner.file()) }
            return files
        }

        mutating func file() throws(Unreadable) -> DirectoryManifest.File {
            var name: String? = nil, size: Int? = nil, hash: UInt64? = nil
            var priority: Int? = nil, first: UInt64? = nil, last: UInt64? = nil, ranges: Int? = nil
            var seen = 0  // one bit per kept key
            let keys = Self.keptKeys, names = Self.keptNames
            try object { (scanner, key) throws(Unreadable) in
                var k = 0
                while k < names.count && !Self.same(key, names[k]) { k += 1 }
                guard k < names.count else {
                    try scanner.skipValue()
                    return
                }
                guard seen & (1 << k) == 0 else { throw Unreadable() }
                seen |= 1 << k
                switch keys[k] {
                case .file: name = try scanner.plainString()
                case .bytes: size = try scanner.integer(Int.self)
                case .xxh3:
                    guard let hex = try scanner.plainString(), hex.utf8.count == 16, let h = UInt64(hex, radix: 16) else { throw Unreadable() }
                    hash = h
                case .priority: priority = try scanner.integer(Int.self)
                case .firstNumber: first = try scanner.integer(UInt64.self)
                case .lastNumber: last = try scanner.integer(UInt64.self)
                case .ranges: ranges = try scanner.integer(Int.self)
                default: throw Unreadable()
                }
            }
            guard let name, let size, let hash else { throw Unreadable() }
            var f = DirectoryManifest.File(file: name, bytes: size, xxh3: hash, priority: priority)
            f.firstNumber = first
            f.lastNumber = last
            f.ranges = ranges
            return f
        }

        // MARK: JSON syntax

        mutating func skipWhitespace() {
            while pos < bytes.count, bytes[pos] == 0x20 || bytes[pos] == 0x0A || bytes[pos] == 0x0D || bytes[pos] == 0x09 { pos += 1 }
        }

        /// The next byte after whitespace, not consumed.
        mutating func peek() throws(Unreadable) -> UInt8 {
            skipWhitespace()
            guard pos < bytes.count else { throw Unreadable() }
            return bytes[pos]
        }

        mutating func expect(_ b: UInt8) throws(Unreadable) {
            guard try peek() == b else { throw Unreadable() }
            pos += 1
        }

        /// `{ "key": value, ... }`: `member` reads each value.
        mutating func object(_ member: (inout Scanner, ArraySlice<UInt8>) throws(Unreadable) -> Void) throws(Unreadable) {
            try sequence(open: 0x7B, close: 0x7D) { (s) throws(Unreadable) in
                guard try s.peek() == 0x22 else { throw Unreadable() }
                let key = try s.stringBytes()
                guard !key.contains(0x5C) else { throw Unreadable() }  // an escaped key
                try s.expect(0x3A)
                try member(&s, key)
            }
        }

        /// `[ value, ... ]`: `element` reads each value.
        mutating func array(_ element: (inout Scanner) throws(Unreadable) -> Void) throws(Unreadable) {
            try sequence(open: 0x5B, close: 0x5D, element)
        }

        /// `open` item, item, ... `close`, one level deeper (at most 64).
        private mutating func sequence(open: UInt8, close: UInt8, _ item: (inout Scanner) throws(Unreadable) -> Void) throws(Unreadable) {
            try expect(open)
            depth += 1
            guard depth <= 64 else { throw Unreadable() }
            if try peek() == close {
                pos += 1
            } else {
                while true {
                    try item(&self)
                    let b = try peek()
                    pos += 1
                    if b == close { break }
                    guard b == 0x2C else { throw Unreadable() }
                }
            }
            depth -= 1
        }

        /// The raw bytes of a string (escapes checked, not decoded; UTF-8 checked when it has
        /// other bytes than ASCII); `pos` at its opening quote.
        mutating func stringBytes() throws(Unreadable) -> ArraySlice<UInt8> {
            pos += 1
            let start = pos
            var ascii = true
            while pos < bytes.count {
                let b = bytes[pos]
                if b == 0x22 {
                    pos += 1
                    let raw = bytes[start..<(pos - 1)]
                    guard ascii || raw.withUnsafeBytes({ isValidUTF8($0) }) else { throw Unreadable() }
                    return raw
                }
                if b >= 0x80 { ascii = false }
                guard b >= 0x20 else { throw Unreadable() }
                if b == 0x5C {
                    guard pos + 1 < bytes.count else { throw Unreadable() }
                    switch bytes[pos + 1] {
                    case 0x22, 0x5C, 0x2F, 0x62, 0x66, 0x6E, 0x72, 0x74: pos += 2
                    case 0x75:
                        guard pos + 6 <= bytes.count, bytes[(pos + 2)..<(pos + 6)].allSatisfy(Self.isHexDigit) else { throw Unreadable() }
                        pos += 6
                    default: throw Unreadable()
                    }
                } else {
                    pos += 1
                }
            }
            throw Unreadable()
        }

        static func isHexDigit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b) }

        /// A string without escapes, or nil for `null`.
        mutating func plainString() throws(Unreadable) -> String? {
            if try literal(Self.null) { return nil }
            guard try peek() == 0x22 else { throw Unreadable() }
            let raw = try stringBytes()
            guard !raw.contains(0x5C) else { throw Unreadable() }
            return String(decoding: raw, as: UTF8.self)
        }

        /// An integer written as digits (a `-` for a signed type), or nil for `null`.
        mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws(Unreadable) -> T? {
            if try literal(Self.null) { return nil }
            let start = pos
            try skipNumber()
            var text = bytes[start..<pos]
            let negative = text.first == 0x2D
            if negative {
                guard T.isSigned else { throw Unreadable() }
                text = text.dropFirst()
            }
            guard text.allSatisfy({ (0x30...0x39).contains($0) }) else { throw Unreadable() }  // no fraction, no exponent
            var value: T = 0
            for d in text {
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let digit = T(d - 0x30)
                let (next, o2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
                guard !o1 && !o2 else { throw Unreadable() }
                value = next
            }
            return value
        }

        static let null = Array("null".utf8), true_ = Array("true".utf8), false_ = Array("false".utf8)

        /// Consumes `word` (``null``, ``true_``, ``false_``) when it comes next.
        mutating func literal(_ word: [UInt8]) throws(Unreadable) -> Bool {
            guard try peek() == word[0] else { return false }
            guard pos + word.count <= bytes.count, bytes[pos..<(pos + word.count)].elementsEqual(word) else { throw Unreadable() }
            pos += word.count
            return true
        }

        /// A JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
        mutating func skipNumber() throws(Unreadable) {
            _ = try peek()
            if bytes[pos] == 0x2D { pos += 1 }
            func digits(_ s: inout Scanner) throws(Unreadable) -> Int {
                let start = s.pos
                while s.pos < s.bytes.count, (0x30...0x39).contains(s.bytes[s.pos]) { s.pos += 1 }
                guard s.pos > start else { throw Unreadable() }
                return s.pos - start
            }
            let intStart = pos
            let n = try digits(&self)
            guard n == 1 || bytes[intStart] != 0x30 else { throw Unreadable() }  // no leading zero
            if pos < bytes.count, bytes[pos] == 0x2E {
                pos += 1
                _ = try digits(&self)
            }
            if pos < bytes.count, bytes[pos] == 0x65 || bytes[pos] == 0x45 {
                pos += 1
                if pos < bytes.count, bytes[pos] == 0x2B || bytes[pos] == 0x2D { pos += 1 }
                _ = try digits(&self)
            }
        }

        /// Any value, its syntax checked.
        mutating func skipValue() throws(Unreadable) {
            switch try peek() {
            case 0x7B: try object { (s, _) throws(Unreadable) in try s.skipValue() }
            case 0x5B: try array { (s) throws(Unreadable) in try s.skipValue() }
            case 0x22: _ = try stringBytes()
            case 0x2D, 0x30...0x39: try skipNumber()
            default:
                if try literal(Self.null) { return }
                if try literal(Self.true_) { return }
                guard try literal(Self.false_) else { throw Unreadable() }
            }
        }
    }
}
