package import CallerID
package import CallerIDQuery
package import CallerIDPipeline

// `POST /v1/lookup`: a body of numbers, one per line (what `lookup -` reads) or a JSON array of
// strings and numbers, answered with one JSON object per line, in order (what `lookup - --json`
// writes for the same lines). Neither the body nor the answers are held whole: as the body
// arrives its lines (or array elements) are written to a ``Spool`` (memory up to 1 MiB, then a
// temporary file), and once it is whole the answers are made a piece at a time (``BatchStream``)
// as the connection takes them (a chunked answer). A JSON body's syntax is checked while it
// arrives, so a malformed one is refused (400) before any answer is sent.

/// An input of a batch as spooled: one frame per line or element, `kind` (0: the input's
/// bytes; 1: an over-long input, its length then its first bytes; 2: a JSON number that is not
/// a phone number, as written), a 4-byte little-endian length, the payload.
private enum Frame {
    package static let line: UInt8 = 0
    package static let overlong: UInt8 = 1
    package static let refusedNumber: UInt8 = 2

    package static func append(_ kind: UInt8, _ payload: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        out.append(kind)
        appendLength(payload.count, to: &out)
        out.append(contentsOf: payload)
    }

    package static func appendLength(_ n: Int, to out: inout [UInt8]) {
        let v = UInt32(clamping: n)
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }

    package static func length(_ bytes: [UInt8], at i: Int) -> Int {
        Int(bytes[i]) | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2]) << 16 | Int(bytes[i + 3]) << 24
    }
}

/// Receives a batch's body: tells lines from a JSON array by its first byte that is not white
/// space (`[`: an array), and spools the inputs.
package final class BatchUpload: HTTPBodySink {
    private let api: ServeAPI
    private let numbers: QueryNumbers
    private let spool = Spool()
    private enum Mode {
        case undecided([UInt8])
        case lines(LineSplitter)
        case array(JSONArraySplitter)
    }
    private var mode = Mode.undecided([])
    /// Why the body cannot be answered (status, message); once set, the rest is ignored.
    private var failure: (status: Int, message: String)? = nil
    private var frames: [UInt8] = []

    package init(api: ServeAPI, numbers: QueryNumbers) {
        self.api = api
        self.numbers = numbers
    }

    package func append(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        do {
            try feed(bytes, final: false)
        } catch {
            failure = (500, error.message)
        }
    }

    package func end(_ exchange: HTTPExchange) {
        if failure == nil {
            do {
                try feed(UnsafeRawBufferPointer(start: nil, count: 0), final: true)
            } catch {
                failure = (500, error.message)
            }
        }
        if let failure {
            exchange.respond(failure.status, endpoint: Endpoint.batch.rawValue, contentType: ServeAPI.json,
                             text: "{\"error\":\(jsonQuote(failure.message))}\n")
            return
        }
        let answers = QueryAnswers(packs: api.data.packs, format: .json)
        let batch = BatchAnswers(answers: answers, numbers: numbers) { _, _ in }
        exchange.respond(200, endpoint: Endpoint.batch.rawValue, contentType: ServeAPI.jsonLines,
                         stream: BatchStream(spool, batch, piece: api.settings.batchPiece))
    }

    private func feed(_ bytes: UnsafeRawBufferPointer, final: Bool) throws(QueryError) {
        if case .undecided(var held) = mode {
            held.append(contentsOf: bytes)
            guard let first = held.first(where: { !Self.isSpace($0) }) else {
                if final { try decide(lines: true, held, final: true) } else { mode = .undecided(held) }
                return
            }
            try decide(lines: first != UInt8(ascii: "["), held, final: final)
            return
        }
        try split(bytes, final: final)
    }

    private func decide(lines: Bool, _ held: [UInt8], final: Bool) throws(QueryError) {
        mode = lines ? .lines(LineSplitter(maxLineBytes: maxQueryLineBytes, overlongPrefix: quotedLinePrefix))
                     : .array(JSONArraySplitter(maxElementBytes: maxQueryLineBytes, prefixBytes: quotedLinePrefix))
        try held.withUnsafeBytes { raw in Result { () throws(QueryError) in try split(raw, final: final) } }.get()
    }

    private func split(_ bytes: UnsafeRawBufferPointer, final: Bool) throws(QueryError) {
        frames.removeAll(keepingCapacity: true)
        switch mode {
        case .undecided: return
        case .lines(var splitter):
            try splitter.feed(bytes, final: final, overlong: { (_, length, prefix) throws(QueryError) in
                appendOverlong(length, prefix)
            }) { (line, _) throws(QueryError) in
                Frame.append(Frame.line, line, to: &frames)
            }
            mode = .lines(splitter)
        case .array(var splitter):
            splitter.feed(bytes) { element in
                switch element {
                case .text(let text): text.withUnsafeBytes { Frame.append(Frame.line, $0, to: &frames) }
                case .refusedNumber(let text): text.withUnsafeBytes { Frame.append(Frame.refusedNumber, $0, to: &frames) }
                case .overlong(let length, let prefix): appendOverlong(length, prefix)
                }
            }
            if final { splitter.finish() }
            if let problem = splitter.problem { failure = (400, "the body is not a JSON array of strings and numbers: \(problem)") }
            mode = .array(splitter)
        }
        try spool.append(frames)
    }

    private func appendOverlong(_ length: Int, _ prefix: [UInt8]) {
        frames.append(Frame.overlong)
        Frame.appendLength(4 + prefix.count, to: &frames)
        Frame.appendLength(length, to: &frames)
        frames.append(contentsOf: prefix)
    }

    package static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
}

/// A batch's answers, made a piece (``ServeSettings/batchPiece`` inputs) at a time from the
/// spooled inputs as the connection takes them. An error met on the way (a pack that fails)
/// ends the answer with a last line `{"error":…}`.
package final class BatchStream: HTTPBodyStream {
    private let spool: Spool
    private var batch: BatchAnswers
    private let piece: Int
    private var output = Output(capturing: true)
    /// Spooled bytes read and not used yet: `buffer[position...]`.
    private var buffer: [UInt8] = []
    private var position = 0
    private var chunk: [UInt8] = []
    private var inputs = 0
    private var finished = false

    package init(_ spool: Spool, _ batch: BatchAnswers, piece: Int) {
        self.spool = spool
        self.batch = batch
        self.piece = piece
    }

    package func produce(into out: inout [UInt8]) -> Bool {
        guard !finished else { return false }
        do {
            while batch.waiting < piece {
                guard let (kind, start, end) = try nextFrame() else {
                    finished = true
                    break
                }
                inputs += 1
                if kind == Frame.overlong {
                    let length = Frame.length(buffer, at: start)
                    try batch.overlong(inputs, length: length, prefix: Array(buffer[(start + 4)..<end]), to: &output)
                } else if kind == Frame.refusedNumber {
                    let text = Array(buffer[start..<end])
                    try batch.refused(text, inputs, message: JSONArraySplitter.numberProblem(text) ?? "not a phone number", to: &output)
                } else {
                    try buffer[start..<end].withUnsafeBytes { raw in
                        Result { () throws(QueryError) in try batch.line(raw, inputs, to: &output) }
                    }.get()
                }
            }
            try batch.answerQueued(to: &output)
        } catch {
            output.write("{\"error\":\(jsonQuote(error.message))}\n")
            finished = true
        }
        output.withBytes { out.append(contentsOf: $0) }
        output.removeAll()
        return !out.isEmpty
    }

    /// The next frame's kind and payload (`buffer[start..<end]`), nil at the end of the spool.
    private func nextFrame() throws(QueryError) -> (UInt8, Int, Int)? {
        while true {
            let left = buffer.count - position
            if left >= 5 {
                let length = Frame.length(buffer, at: position + 1)
                if left >= 5 + length {
                    let start = position + 5
                    position = start + length
                    return (buffer[start - 5], start, start + length)
                }
            }
            // Not whole yet: keep the rest, read more.
            if position > 0 {
                buffer.removeSubrange(0..<position)
                position = 0
            }
            guard try spool.read(into: &chunk, max: 1 << 16) else { return nil }
            buffer.append(contentsOf: chunk)
        }
    }
}

/// Splits a JSON array of strings and numbers into its elements as its bytes arrive (in pieces
/// of any size): a string's text (unescaped by the pipeline's JSON reader, ``jsonUnescape(_:)``),
/// a number as written. Anything else, or bad syntax, sets ``problem`` (with the byte offset).
/// A number that is not digits alone (a sign, a fraction, an exponent, a leading zero) is
/// refused on its own (``numberProblem(_:)``): read as text, `7913000000.1` and `-79130000001`
/// would be the phone number 79130000001, and `1.5` the number 15.
package struct JSONArraySplitter {
    package enum Element {
        case text([UInt8])
        /// A number that cannot be a phone number, as written.
        case refusedNumber([UInt8])
        /// An element longer than `maxElementBytes`: its length and first bytes.
        case overlong(Int, [UInt8])
    }

    private enum State { case start, value, string, escape, bare, after, end }
    private var state = State.start
    /// Right after `[`: `]` may close an empty array.
    private var first = true
    private var element: [UInt8] = []
    private var elementBytes = 0
    /// Bytes read so far.
    private var offset = 0
    package private(set) var problem: String? = nil
    package let maxElementBytes: Int
    package let prefixBytes: Int

    package init(maxElementBytes: Int, prefixBytes: Int) {
        self.maxElementBytes = maxElementBytes
        self.prefixBytes = prefixBytes
    }

    package mutating func feed(_ bytes: UnsafeRawBufferPointer, _ emit: (Element) -> Void) {
        for b in bytes {
            guard problem == nil else { return }
            offset += 1
            step(b, emit)
        }
    }

    /// The body ended: a number at its very end is emitted; an array not closed is a problem.
    package mutating func finish() {
        guard problem == nil else { return }
        if state != .end { fail(state == .start ? "the body is empty" : "the array is not closed (expected ',' or ']')") }
    }

    private mutating func step(_ b: UInt8, _ emit: (Element) -> Void) {
        let space = BatchUpload.isSpace(b)
        switch state {
        case .start:
            if space { return }
            if b == UInt8(ascii: "[") { state = .value } else { fail("expected '['") }
        case .value:
            if space { return }
            if b == UInt8(ascii: "]") && first {
                state = .end
            } else if b == UInt8(ascii: "\"") {
                begin()
                state = .string
            } else if b == UInt8(ascii: "-") || b == UInt8(ascii: "+") || (b >= 0x30 && b <= 0x39) {
                begin()
                keep(b)
                state = .bare
            } else {
                fail("expected a string or a number, found \(Self.describe(b))")
            }
        case .string:
            if b == UInt8(ascii: "\\") {
                keep(b)
                state = .escape
            } else if b == UInt8(ascii: "\"") {
                state = .after
                emitString(emit)
            } else if b < 0x20 {
                fail("a control character (\(Self.describe(b))) inside a string")
            } else {
                keep(b)
            }
        case .escape:
            keep(b)
            state = .string
        case .bare:
            if (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: ".") || b == UInt8(ascii: "e") || b == UInt8(ascii: "E")
                || b == UInt8(ascii: "+") || b == UInt8(ascii: "-") {
                keep(b)
            } else {
                state = .after
                if elementBytes <= maxElementBytes, Self.numberProblem(element) != nil {
                    emit(.refusedNumber(element))
                } else {
                    emitElement(element, emit)
                }
                step(b, emit)
            }
        case .after:
            if space { return }
            if b == UInt8(ascii: ",") {
                state = .value
                first = false
            } else if b == UInt8(ascii: "]") {
                state = .end
            } else {
                fail("expected ',' or ']' after an element, found \(Self.describe(b))")
            }
        case .end:
            if !space { fail("text after the array: \(Self.describe(b))") }
        }
    }

    /// Why a JSON number (as written) cannot be a phone number, nil when it is digits alone.
    package static func numberProblem(_ text: some Collection<UInt8>) -> String? {
        let why = "a JSON number must be a whole number written in digits alone, like 79131234567 (or a string)"
        if text.contains(where: { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "+") }) { return "a signed number: " + why }
        if text.contains(UInt8(ascii: ".")) { return "a number with a fraction: " + why }
        if text.contains(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) { return "a number with an exponent: " + why }
        if text.count > 1 && text.first == UInt8(ascii: "0") { return "a number with a leading zero: " + why }
        return nil
    }

    private mutating func begin() {
        element.removeAll(keepingCapacity: true)
        elementBytes = 0
    }

    private mutating func keep(_ b: UInt8) {
        elementBytes += 1
        if element.count <= maxElementBytes { element.append(b) }
    }

    private mutating func emitString(_ emit: (Element) -> Void) {
        guard elementBytes <= maxElementBytes else { return emitElement(element, emit) }
        let (text, problem) = jsonUnescape(element)
        if let problem { return fail(problem) }
        emitElement(text, emit)
    }

    private func emitElement(_ text: [UInt8], _ emit: (Element) -> Void) {
        if elementBytes > maxElementBytes {
            emit(.overlong(elementBytes, Array(element.prefix(prefixBytes))))
        } else {
            emit(.text(text))
        }
    }

    private mutating func fail(_ message: String) {
        problem = "byte \(offset): \(message)"
    }

    private static func describe(_ b: UInt8) -> String {
        b >= 0x21 && b < 0x7F ? "'\(Character(Unicode.Scalar(b)))'" : "byte 0x\(String(b, radix: 16))"
    }
}
