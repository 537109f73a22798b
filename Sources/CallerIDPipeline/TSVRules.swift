package import CallerID

extension NumberNormalizer {
    /// The rules a plain TSV build reads rows with (`lookup build` without pipeline options), so
    /// that it takes exactly the rows a pipeline build takes and stores the same bytes:
    /// numbers through this normalizer as E.164 (no country: a national form is refused, as in
    /// the pipeline), labels through ``LabelCleaner`` with its defaults.
    ///
    /// A field of `+` and up to 15 ASCII digits not starting with 0 takes a fast path (the
    /// calling code and length check of ``normalize(e164:)``); anything else — separators,
    /// other digit scripts, an extension, several numbers — goes through
    /// ``normalize(_:country:)``. A clean label (``LabelCleaner/isClean(utf8:)``) is stored as
    /// it is, without a copy.
    package func tsvRowRules(labels: LabelCleaner = LabelCleaner()) -> PipelineTSVRules {
        PipelineTSVRules(normalizer: self, labels: labels, doubtful: DoubtfulNumbers())
    }
}

/// What a plain TSV build saw of national numbers written with a trunk prefix
/// (``NationalFormEvidence``; the row loop does not say which line a number is on, so the
/// accepted rows are counted with their readings only).
package final class DoubtfulNumbers {
    package fileprivate(set) var evidence = NationalFormEvidence()
    /// The row loop's memo of the last calling code's pattern (the loop is one thread).
    let memo = PatternMemo()
}

/// ``NumberNormalizer/tsvRowRules(labels:)``.
package struct PipelineTSVRules: TSVRowRules {
    let normalizer: NumberNormalizer
    let labels: LabelCleaner
    package let doubtful: DoubtfulNumbers

    package func readNumber(_ field: UnsafeRawBufferPointer) -> TSVNumbers {
        var value: UInt64 = 0
        var digits = 0
        var plain = !field.isEmpty
        for i in 0..<field.count {
            let b = field[i]
            if b >= 0x30 && b <= 0x39 {
                if digits == 0 && b == 0x30 { plain = false; break }   // 0…: a national form
                value = value &* 10 &+ UInt64(b - 0x30)
                digits += 1
            } else if !(i == 0 && b == 0x2B) {
                plain = false
                break
            }
        }
        if plain && (1...15).contains(digits) {
            do throws(NumberProblem) {
                let (number, reading) = try normalizer.normalize(e164: value, memo: doubtful.memo, noting: field[0] != 0x2B)
                if let reading { doubtful.evidence.noteAccepted(reading, place: nil) }
                return .one(number)
            } catch {
                doubtful.evidence.noteRefused(error)
                return .refused(error.message)
            }
        }
        do throws(NumberProblem) {
            let text = String(decoding: field, as: UTF8.self)
            let found = try normalizer.normalize(text, country: nil)
            if !text.unicodeScalars.contains(where: { $0 == "+" || $0 == "\u{FF0B}" }) {
                for n in found.numbers {
                    if let reading = normalizer.otherNationalReading(of: n) { doubtful.evidence.noteAccepted(reading, place: nil) }
                }
            }
            return found.numbers.count == 1 ? .one(found.numbers[0]) : .several(found.numbers)
        } catch {
            doubtful.evidence.noteRefused(error)
            return .refused(error.message)
        }
    }

    package func cleanLabel(_ bytes: UnsafeRawBufferPointer) -> TSVLabel {
        if labels.isClean(utf8: bytes) { return .asIs }
        do throws(LabelText.Problem) {
            let cleaned = try labels.clean(String(decoding: bytes, as: UTF8.self))
            return .replaced(Array(cleaned.label.utf8), hiddenRemoved: cleaned.hiddenRemoved.isEmpty ? nil : cleaned.hiddenRemovedWarning)
        } catch {
            return .refused("the label has \(error.what)")
        }
    }
}
