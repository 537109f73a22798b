package import CallerID
import CallerIDDirectory

/// The answers to a batch's lines, in input order: `lookup -` (lines of standard input) and
/// `POST /v1/lookup` of `lookup serve` (lines or JSON array elements of a request body). A line
/// that is a number is queued and answered with the others queued (``QueryAnswers``: pack by
/// pack, each pack's numbers in ascending order); one that is not is answered `RAW<TAB>-`
/// (text) or `{"input":…,"found":false,"error":…}` (JSON) and reported to `onProblem`; an
/// over-long line (``overlong(_:length:prefix:to:)``) is answered with its first bytes and `…`.
/// The caller says when what is queued is answered (``answerQueued(to:)``): before input may
/// block, or when output is wanted; at most ``QueryAnswers/maxNumbers`` lines wait.
///
/// A number that needs a database file seen changed under the batch (modified in place, or cut
/// short under its mapping: ``QueryError/changedFile``) is answered as not found with the error
/// (`{"number":…,"found":false,"error":…}`; in text `NUMBER<TAB>-`), reported to `onProblem`
/// and counted in ``unanswered``; the batch goes on with the next line. Any other error ends it.
package struct BatchAnswers {
    package let answers: QueryAnswers
    package let numbers: QueryNumbers
    /// Told of each line that is not a number and of each over-long one (line number, why),
    /// after its answer is queued.
    package let onProblem: (_ lineNumber: Int, _ message: String) -> Void
    /// The lines not answered yet: `lines[i]` >= 0 is number `queued[lines[i]]`, < 0 the answer
    /// `texts[-lines[i] - 1]` (a line that is not a number).
    private var lines: [Int] = [], queued: [UInt64] = [], texts: [[UInt8]] = []
    /// The input line number of each queued number.
    private var queuedLines: [Int] = []
    /// Numbers answered with an error because a file they need changed.
    package private(set) var unanswered = 0
    private var found = QueryAnswers.Answers()

    package init(answers: QueryAnswers, numbers: QueryNumbers, onProblem: @escaping (_ lineNumber: Int, _ message: String) -> Void) {
        self.answers = answers
        self.numbers = numbers
        self.onProblem = onProblem
    }

    /// Lines waiting for ``answerQueued(to:)``.
    package var waiting: Int { lines.count }

    private var json: Bool { answers.format == .json }

    /// One line (without its line end), number `lineNumber` of the input.
    package mutating func line(_ bytes: UnsafeRawBufferPointer, _ lineNumber: Int, to out: inout Output) throws(QueryError) {
        let line = ArraySlice(bytes)
        switch numbers.read(line) {
        case .success(let number):
            queued.append(number)
            queuedLines.append(lineNumber)
            lines.append(queued.count - 1)
            if lines.count >= QueryAnswers.maxNumbers { try answerQueued(to: &out) }
        case .failure(let error):
            if json {
                try queue(Array(notANumberJSON(String(decoding: line, as: UTF8.self), error.message).utf8), to: &out)
            } else {
                try queue(Array(line) + Array("\t-\n".utf8), to: &out)
            }
            onProblem(lineNumber, error.message)
        }
    }

    /// An input refused before it is read as a number (`message` says why): answered as a line
    /// that is not a number.
    package mutating func refused(_ input: [UInt8], _ lineNumber: Int, message: String, to out: inout Output) throws(QueryError) {
        if json {
            try queue(Array(notANumberJSON(String(decoding: input, as: UTF8.self), message).utf8), to: &out)
        } else {
            try queue(input + Array("\t-\n".utf8), to: &out)
        }
        onProblem(lineNumber, message)
    }

    /// A line over ``maxQueryLineBytes`` bytes (`length`), of which `prefix` are the first.
    package mutating func overlong(_ lineNumber: Int, length: Int, prefix: [UInt8], to out: inout Output) throws(QueryError) {
        let message = "line too long (\(length) bytes; at most \(maxQueryLineBytes)), skipped"
        let shown = utf8Prefix(prefix)
        if json {
            try queue(Array(notANumberJSON(String(decoding: shown, as: UTF8.self) + "…", message).utf8), to: &out)
        } else {
            try queue(shown + Array("…\t-\n".utf8), to: &out)
        }
        onProblem(lineNumber, message)
    }

    private mutating func queue(_ text: [UInt8], to out: inout Output) throws(QueryError) {
        texts.append(text)
        lines.append(-texts.count)
        if lines.count >= QueryAnswers.maxNumbers { try answerQueued(to: &out) }
    }

    /// Answers the lines waiting, in input order, into `out`. On an error, the answers to the
    /// lines before the failing one are written first (`out` flushed), then it is thrown.
    package mutating func answerQueued(to out: inout Output) throws(QueryError) {
        guard !lines.isEmpty else { return }
        defer {
            lines.removeAll(keepingCapacity: true)
            queued.removeAll(keepingCapacity: true)
            queuedLines.removeAll(keepingCapacity: true)
            texts.removeAll()
        }
        if (try? answers.answer(queued, into: &found)) != nil {
            for i in lines {
                if i >= 0 { _ = answers.write(i, of: queued, from: found, to: &out) } else { texts[-i - 1].withUnsafeBytes { out.write(bytes: $0) } }
            }
            return
        }
        // An error: one line at a time, so that the answers before the failing line are written
        // (and the numbers a changed file does not hold are answered).
        for i in lines {
            guard i >= 0 else {
                texts[-i - 1].withUnsafeBytes { out.write(bytes: $0) }
                continue
            }
            do {
                try answers.answer([queued[i]], into: &found)
                _ = answers.write(0, of: [queued[i]], from: found, to: &out)
            } catch where error.changedFile != nil {
                answers.writeUnanswered(queued[i], error, to: &out)
                unanswered += 1
                onProblem(queuedLines[i], "not answered: \(error.message)")
            } catch {
                out.flush()
                throw error
            }
        }
    }
}

extension BatchAnswers {
    /// Answers every line of `path` (`-`: standard input) as ``BatchAnswers`` says, read one
    /// `read(2)` at a time: what is queued is answered, `out` flushed and the packs told
    /// (``PackSet/inputArrived()``) before each read that may block, so the batch works as a
    /// co-process on pipes and terminals and still writes in large blocks from a file. A read
    /// that fails ends the batch after answering what was read, with an `io` error naming the
    /// input; a number left unanswered because a file changed under the batch ends it with an
    /// `io` error once every line is answered.
    package mutating func answerLines(of path: String, to out: inout Output) throws(QueryError) {
        let packs = answers.packs
        let name = path == "-" ? "stdin" : path
        packs.watchFiles()
        // An error raised inside the reader's callbacks is kept here and the reading stopped
        // with a sentinel.
        var failure: QueryError? = nil
        let stop = CallerIDError(.io, "stopped")
        var reader: LineReader
        do {
            reader = try LineReader(path: path)
        } catch {
            throw QueryError(code: .init(.io), message: "\(name): \(error.message)", underlying: error)
        }
        do {
            try reader.forEachLine(maxLineBytes: maxQueryLineBytes, overlongPrefix: quotedLinePrefix, beforeRead: { () throws(CallerIDError) in
                do throws(QueryError) { try answerQueued(to: &out) } catch { failure = error; throw stop }
                out.flush()
                packs.inputArrived()
            }, overlong: { (lineNumber, length, prefix) throws(CallerIDError) in
                do throws(QueryError) { try overlong(lineNumber, length: length, prefix: prefix, to: &out) } catch { failure = error; throw stop }
            }) { (bytes, lineNumber) throws(CallerIDError) in
                do throws(QueryError) { try line(bytes, lineNumber, to: &out) } catch { failure = error; throw stop }
            }
        } catch {
            if let failure { throw failure }
            try answerQueued(to: &out)
            out.flush()
            throw QueryError(code: .init(.io), message: "\(name): \(error.message)", underlying: error)
        }
        try answerQueued(to: &out)
        if unanswered > 0 {
            out.flush()
            throw QueryError(code: .init(.io), message: "\(grouped(unanswered)) number\(unanswered == 1 ? " was" : "s were") not answered: a database file changed while the batch read it (see above)", underlying: nil)
        }
    }
}


/// The JSON answer to an input that is not a number (a batch line, a number in a URL):
/// `{"input":…,"found":false,"error":…}` and a line end.
package func notANumberJSON(_ input: String, _ message: String) -> String {
    "{\"input\":\(jsonQuote(input)),\"found\":false,\"error\":\(jsonQuote(message))}\n"
}
