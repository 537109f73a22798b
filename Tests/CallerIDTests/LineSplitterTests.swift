import Testing
@testable import CallerID

/// The package's one line splitter against a plain model: any text cut into chunks of any
/// sizes (one byte, a CRLF split between chunks, chunks larger than the text) gives the same
/// lines, line numbers and overlong reports as splitting the whole text at once.
@Suite struct LineSplitterTests {
    enum Piece: Equatable {
        case line([UInt8], Int)
        case overlong(Int, Int, [UInt8])
    }

    /// The model: split at LF, drop one trailing CR per line, no line after a final LF.
    func model(_ text: [UInt8], limit: Int, prefix: Int) -> [Piece] {
        var lines = text.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        if text.last == 0x0A || text.isEmpty { lines.removeLast() }
        return lines.enumerated().map { i, raw in
            let line = raw.last == 0x0D ? Array(raw.dropLast()) : raw
            return line.count > limit ? .overlong(i + 1, line.count, Array(line.prefix(prefix))) : .line(line, i + 1)
        }
    }

    func split(_ text: [UInt8], chunks: [Int], limit: Int, prefix: Int) -> [Piece] {
        var splitter = LineSplitter(maxLineBytes: limit, overlongPrefix: prefix)
        var out: [Piece] = []
        var at = 0
        var sizes = chunks.makeIterator()
        text.withUnsafeBytes { raw in
            while at < text.count {
                let size = min(sizes.next() ?? text.count, text.count - at)
                splitter.feed(UnsafeRawBufferPointer(rebasing: raw[at..<(at + size)]), final: false,
                              overlong: { out.append(.overlong($0, $1, $2)) }) { out.append(.line(Array($0), $1)) }
                at += size
            }
            splitter.feed(UnsafeRawBufferPointer(rebasing: raw[at..<at]), final: true,
                          overlong: { out.append(.overlong($0, $1, $2)) }) { out.append(.line(Array($0), $1)) }
        }
        return out
    }

    @Test(arguments: Array(1...40) as [UInt64])
    func anyChunkingGivesTheModelsLines(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let alphabet: [UInt8] = [0x0A, 0x0D, 0x0D, 0x0A, 0x41, 0x42, 0x09, 0x20, 0xC3, 0xA9]
        let text = (0..<Int.random(in: 0...400, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
        let chunks = (0..<200).map { _ in Int.random(in: 0...2, using: &rng) == 0 ? 1 : Int.random(in: 1...64, using: &rng) }
        let limit = [Int.max, 0, 3, 17][Int(seed % 4)]
        let prefix = Int.random(in: 0...5, using: &rng)
        let got = split(text, chunks: chunks, limit: limit, prefix: prefix), want = model(text, limit: limit, prefix: prefix)
        let first = (0..<min(got.count, want.count)).first { got[$0] != want[$0] } ?? min(got.count, want.count)
        #expect(got == want, "first difference at piece \(first): \(got.dropFirst(first).first.map { "\($0)" } ?? "none") instead of \(want.dropFirst(first).first.map { "\($0)" } ?? "none"); limit \(limit), prefix \(prefix)")
    }

    /// The splitter's owned form (for a reader on another thread): each chunk's lines as places
    /// in the bytes it returns, a line that crossed chunks copied after the chunk; a chunk
    /// handed over in parts of at most a few lines each (cut by `end(ofLines:in:_:)`); lines
    /// starting with `A` skipped for odd seeds, their numbers counted all the same.
    @Test(arguments: Array(1...24) as [UInt64])
    func placedLinesAreTheModelsLines(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let alphabet: [UInt8] = [0x0A, 0x0D, 0x0A, 0x41, 0x42, 0x09, 0xC3, 0xA9]
        let text = (0..<Int.random(in: 0...400, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
        let limit = [Int.max, 0, 3, 17][Int(seed % 4)]
        let partLines = seed % 3 == 0 ? Int.max : Int.random(in: 1...3, using: &rng)
        let skipsA = seed % 2 == 1
        var splitter = LineSplitter(maxLineBytes: limit)
        var got: [Piece] = []
        var at = 0
        while true {
            let size = min(Int.random(in: 0...2, using: &rng) == 0 ? 1 : Int.random(in: 1...64, using: &rng), text.count - at)
            let final = size == 0
            var chunk = Array(text[at..<(at + size)])
            var next = 0
            repeat {
                let cut = final ? size : LineSplitter.end(ofLines: partLines, in: chunk, next..<size) ?? size
                if cut < size { #expect(chunk[cut - 1] == 0x0A, "a part ends after a line feed") }
                let (bytes, places) = splitter.lines(of: chunk, in: next..<cut, final: final, skipping: { skipsA && $0.first == 0x41 })
                #expect(bytes.starts(with: text[at..<(at + size)]), "the chunk comes first")
                #expect(places.count <= partLines || cut == size, "at most \(partLines) lines in a part")
                for place in places {
                    switch place {
                    case .line(let start, let count, let number): got.append(.line(Array(bytes[start..<(start + count)]), number))
                    case .overlong(let number, let length): got.append(.overlong(number, length, []))
                    }
                }
                chunk = bytes
                next = cut
            } while next < size
            at += size
            if final { break }
        }
        let want = model(text, limit: limit, prefix: 0).filter {
            if skipsA, case .line(let bytes, _) = $0, bytes.first == 0x41 { return false }
            return true
        }
        #expect(got == want, "limit \(limit), parts of \(partLines) lines, skipping A: \(skipsA)")
    }

    @Test func edgeCases() {
        let cases: [[UInt8]] = [[], [0x0A], [0x0D], [0x0D, 0x0A], [0x41], [0x41, 0x0D, 0x0A, 0x0D, 0x0A], [0x0A, 0x0A, 0x41]]
        for text in cases {
            for chunk in [1, 2, 100] {
                #expect(split(text, chunks: Array(repeating: chunk, count: 10), limit: Int.max, prefix: 0)
                        == model(text, limit: Int.max, prefix: 0), "\(text) in chunks of \(chunk)")
            }
        }
        // A CRLF split between chunks after an overlong line: the CR is not counted.
        let long = Array(repeating: UInt8(0x41), count: 10) + [0x0D]
        #expect(split(long + [0x0A, 0x42], chunks: [11, 1, 1], limit: 4, prefix: 2)
                == [.overlong(1, 10, [0x41, 0x41]), .line([0x42], 2)])
    }
}
