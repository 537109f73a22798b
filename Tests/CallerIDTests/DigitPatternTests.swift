import Foundation
import Testing
@testable import CallerIDPipeline

/// The digit automaton that judges national numbers against libphonenumber's patterns: hand-picked
/// patterns, random patterns and every pattern of libphonenumber's metadata, each checked against
/// Foundation's regular expressions on the same digit strings.
@Suite struct DigitPatternTests {
    static func digits(_ s: String) -> [UInt8] { s.utf8.map { $0 - 0x30 } }

    /// Foundation's whole-string match: the reference.
    static func reference(_ pattern: String) throws -> NSRegularExpression {
        try NSRegularExpression(pattern: "^(?:\(pattern))$")
    }

    static func referenceMatches(_ re: NSRegularExpression, _ text: String) -> Bool {
        re.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    @Test(arguments: [
        ("[347-9]\\d{9}", ["9131234567", "4951234567"], ["1131234567", "913123456", "91312345678", ""]),
        ("(?:00|7)0\\d{8}", ["00012345678", "7001234567"], ["0101234567", "000123456", "7101234567"]),
        ("[^0]\\d?", ["1", "15", "9"], ["0", "05", "123"]),
        ("1(?:2|34)*5", ["15", "125", "1343425", "1222345"], ["1", "135", "1245"]),
        ("8\\d{13}|[347-9]\\d{9}", ["80000000000000", "3000000000"], ["8000000000000", "2000000000"]),
        ("\\d{2,}", ["12", "123456789012345"], ["1", ""]),
        ("(12)+|3", ["12", "1212", "3"], ["", "123", "33"]),
    ])
    func handPickedPatternsMatchWhatTheySay(pattern: String, matching: [String], notMatching: [String]) throws {
        let p = try DigitPattern(pattern)
        for s in matching {
            #expect(p.matches(Self.digits(s)), "\(pattern) should match \(s)")
            if !s.isEmpty { #expect(p.matches(lastDigits: s.count, of: UInt64("9" + s)!), "\(pattern) last digits of 9\(s)") }
        }
        for s in notMatching {
            #expect(!p.matches(Self.digits(s)), "\(pattern) should not match \(s)")
        }
    }

    @Test(arguments: ["\\w", "(?=1)2", "a", "[a-z]", "(12", "12)", "1{2", "1{3,2}", "1{70}", "[9-1]", "\\"])
    func unsupportedSyntaxIsRefusedNotGuessed(pattern: String) {
        #expect(throws: DigitPattern.SyntaxError.self) { try DigitPattern(pattern) }
    }

    @Test func leadingZerosOfTheNationalNumberCount() throws {
        let p = try DigitPattern("0\\d{7}")
        #expect(p.matches(lastDigits: 8, of: 88005553535))      // 05553535
        #expect(!p.matches(lastDigits: 8, of: 88015553535))     // 15553535
        #expect(!p.matches(lastDigits: 9, of: 88005553535))     // 005553535: one digit too many
    }

    /// A random pattern of the supported syntax (digits, \d, classes, groups, |, quantifiers).
    static func randomPattern(_ rng: inout SeededGenerator, depth: Int = 0) -> String {
        var out = ""
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            var atom: String
            switch Int.random(in: 0..<(depth < 2 ? 5 : 3), using: &rng) {
            case 0: atom = String(Int.random(in: 0...9, using: &rng))
            case 1: atom = "\\d"
            case 2:
                let a = Int.random(in: 0...9, using: &rng), b = Int.random(in: a...9, using: &rng)
                atom = Bool.random(using: &rng) ? "[\(a)-\(b)]" : "[^\(a)\(b)]"
            case 3: atom = "(?:" + randomPattern(&rng, depth: depth + 1) + "|" + randomPattern(&rng, depth: depth + 1) + ")"
            default: atom = "(" + randomPattern(&rng, depth: depth + 1) + ")"
            }
            // Groups get the bounded quantifiers libphonenumber puts on them; star and plus only on
            // single digits (nested unbounded repeats would make the reference backtrack for ages).
            let isGroup = atom.hasPrefix("(")
            switch Int.random(in: 0..<8, using: &rng) {
            case 0: atom += "?"
            case 1 where !isGroup: atom += "*"
            case 2 where !isGroup: atom += "+"
            case 3: atom += "{\(Int.random(in: 0...3, using: &rng))}"
            case 4: let a = Int.random(in: 0...2, using: &rng); atom += "{\(a),\(a + Int.random(in: 0...2, using: &rng))}"
            case 5 where !isGroup: atom += "{\(Int.random(in: 0...2, using: &rng)),}"
            default: break
            }
            out += atom
        }
        return out
    }

    static func randomDigits(_ rng: inout SeededGenerator, alphabet: [Character] = Array("0123456789")) -> String {
        String((0..<Int.random(in: 0...9, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
    }

    @Test func randomPatternsAgreeWithFoundationsRegularExpressions() throws {
        var rng = SeededGenerator(seed: 2026)
        var matched = 0
        // Compiling a pattern costs far more than matching: 100 patterns of 120 strings each by
        // default (every construct of the generator); 300 of 60 with CALLERID_DEEP_TESTS=1.
        let (patterns, strings) = deepTests ? (300, 60) : (100, 120)
        for _ in 0..<patterns {
            let pattern = Self.randomPattern(&rng)
            let p = try DigitPattern(pattern)
            let re = try Self.reference(pattern)
            // A small alphabet drawn from the pattern's own digits makes matches common.
            let alphabet = Array(Set(pattern.filter(\.isNumber)).union(["5"]))
            for _ in 0..<strings {
                let s = Self.randomDigits(&rng, alphabet: alphabet)
                let expected = Self.referenceMatches(re, s)
                if expected { matched += 1 }
                #expect(p.matches(Self.digits(s)) == expected, "\(pattern) on '\(s)'")
            }
        }
        #expect(matched > 1_000)   // the comparison saw both answers often
    }

    /// Every territory of libphonenumber's metadata has a pattern the automaton reads, and agrees
    /// with Foundation on numbers drawn near it: the example-like strings the automaton accepts,
    /// one digit changed, one digit more or fewer.
    @Test func everyLibphonenumberPatternCompilesAndAgrees() throws {
        guard case .success(let library) = PhoneNumberLibrary.shared else {
            Issue.record("libphonenumber is not available")
            return
        }
        let territories = library.territories
        #expect(territories.list.count > 240)
        var rng = SeededGenerator(seed: 13)
        var checked = 0
        for (i, t) in territories.list.enumerated() {
            let pattern = try #require(territories.pattern(ofTerritory: i), "\(t.id): \(t.source)")
            let re = try Self.reference(t.source)
            for _ in 0..<20 {
                guard var s = pattern.randomMatch(&rng) else { break }
                #expect(Self.referenceMatches(re, s), "\(t.id) \(t.source) on accepted '\(s)'")
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: s = String(s.dropLast())
                case 1: s += String(Int.random(in: 0...9, using: &rng))
                default:
                    var chars = Array(s)
                    if !chars.isEmpty { chars[Int.random(in: 0..<chars.count, using: &rng)] = Character(String(Int.random(in: 0...9, using: &rng))) }
                    s = String(chars)
                }
                #expect(pattern.matches(Self.digits(s)) == Self.referenceMatches(re, s), "\(t.id) \(t.source) on '\(s)'")
                checked += 1
            }
        }
        #expect(checked > 4_000)
    }
}

extension DigitPattern {
    /// A random string the automaton accepts (a walk that stops at an accepting state), or nil
    /// after 40 digits without one. For tests. The automaton reads last first: the walk's digits
    /// are the string's, from its end.
    func randomMatch(_ rng: inout SeededGenerator) -> String? {
        var out = ""
        var state = 0
        for _ in 0..<40 {
            if isAccepting(state), Int.random(in: 0..<3, using: &rng) == 0 || nextStates(state).isEmpty { return out }
            let options = nextStates(state)
            guard let (digit, next) = options.randomElement(using: &rng) else { return isAccepting(state) ? out : nil }
            out = String(digit) + out
            state = next
        }
        return nil
    }
}
