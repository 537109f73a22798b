package import CallerID
package import CallerIDPipeline

/// No phone number, however written, comes near this: a longer batch line is skipped unread.
package let maxQueryLineBytes = 4096
/// How much of an over-long batch line is quoted back.
package let quotedLinePrefix = 64

/// `bytes` without a UTF-8 sequence cut short at its end (a quoted line prefix).
package func utf8Prefix(_ bytes: [UInt8]) -> [UInt8] {
    var i = bytes.count
    var back = 0
    while i > 0, back < 4, bytes[i - 1] & 0xC0 == 0x80 { i -= 1; back += 1 }
    guard i > 0, bytes[i - 1] >= 0xC0 else { return bytes }
    let lead = bytes[i - 1]
    let need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
    return bytes.count - (i - 1) < need ? Array(bytes[0..<(i - 1)]) : bytes
}

/// How `lookup NUMBER` reads its numbers: E.164 digits by default (the core's digits-only parse:
/// no library, nothing loaded at start-up), or with `--country XX` as written in that country,
/// through the normalizer a build uses (``defaultNumberNormalizer()``: the same rules, the same
/// validity), so that a query reads a number exactly as the build that stored it did.
package struct QueryNumbers {
    private let country: String?
    private let normalizer: NumberNormalizer?

    package init(country: String?) throws(QueryError) {
        guard let country else {
            self.country = nil
            normalizer = nil
            return
        }
        guard NumberingPlan.builtIn.callingCode(country: country) != nil else {
            throw QueryError(.invalidRequest, "--country: unknown country '\(country)' (use an ISO 3166 alpha-2 code such as RU, US, KR)")
        }
        self.country = country.uppercased()
        normalizer = try defaultNumberNormalizer()
    }

    /// Why the numbers are read with the built-in table rather than libphonenumber (a caller
    /// says so once); nil when libphonenumber reads them or no country was given.
    package var numberRulesFallback: String? { normalizer?.fallbackReason }

    package func read(_ text: String) -> Result<UInt64, QueryError> {
        guard let normalizer, let country else {
            do throws(CallerIDError) { return .success(try PhoneNumber.parse(text)) } catch { return .failure(QueryError(.invalidNumber, error.message)) }
        }
        do throws(NumberProblem) {
            return .success(try normalizer.normalize(text, country: country).numbers[0])
        } catch {
            return .failure(QueryError(.invalidNumber, error.message))
        }
    }

    /// For a number given without `--country` (read as E.164 digits): "'8 (843) 277-19-98' looks
    /// like a national number: give --country (…)" when it does
    /// (``NumberNormalizer/nationalFormHint(_:)``); nil when it does not, and with a country.
    /// `reader` reads the digits as a build would; by default one is made (libphonenumber loaded)
    /// for this call.
    /// `shapeOnly`: from how the number is written alone, with the built-in table (a found number).
    package func nationalHint(_ text: String, reader: NumberNormalizer? = nil, advice: String = "give --country", shapeOnly: Bool = false) -> String? {
        guard country == nil, let reader = reader ?? (shapeOnly ? NumberNormalizer() : try? NumberNormalizer(rules: .automatic)),
              let why = reader.nationalFormHint(text, shapeOnly: shapeOnly) else { return nil }
        return "\(quotedInput(text.utf8)) looks like a national number: \(advice) (\(why))"
    }

    package func read(_ line: ArraySlice<UInt8>) -> Result<UInt64, QueryError> {
        guard normalizer != nil else {
            do throws(CallerIDError) { return .success(try PhoneNumber.parse(utf8: line)) } catch { return .failure(QueryError(.invalidNumber, error.message)) }
        }
        return read(String(decoding: line, as: UTF8.self))
    }
}

/// The normalizer of a query and of a build without pipeline options: the pipeline's default
/// rules and validity, so that a query reads a number exactly as a build stores it.
package func defaultNumberNormalizer() throws(QueryError) -> NumberNormalizer {
    let defaults = PipelineOptions()
    do throws(PipelineError) {
        let normalizer = try NumberNormalizer(plan: defaults.numberingPlan, validity: defaults.validity, rules: defaults.numberRules)
        return normalizer
    } catch {
        throw QueryError(passingOn: error)
    }
}

