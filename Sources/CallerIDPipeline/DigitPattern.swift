/// A regular expression over the digits 0–9, compiled once into a minimal deterministic automaton,
/// so that a national number is matched in one table step per digit (no regex engine per row).
/// The automaton reads the digits from the last to the first, the order in which division by 10
/// gives them.
///
/// It reads the subset of regular expressions libphonenumber's metadata writes its number
/// patterns in: digits, `\d`, classes (`[2-9]`, `[13-6]`, `[^0]`), groups (`(...)`, `(?:...)`),
/// alternation `|` and the quantifiers `?`, `*`, `+`, `{n}`, `{n,}`, `{n,m}`. A match is always a
/// whole match (libphonenumber matches a national number against its pattern whole). Anything
/// else is a ``SyntaxError``.
struct DigitPattern: Sendable {
    /// `table[state * 11 + digit]`: the next state, or -1 when no match can follow;
    /// `table[state * 11 + 10]`: 1 when the state ends a match. One array: one reference to
    /// retain when a pattern is handed out.
    private let table: [Int32]

    /// Why a pattern could not be read.
    struct SyntaxError: Error, Equatable, CustomStringConvertible {
        var offset: Int
        var reason: String
        var description: String { "at offset \(offset): \(reason)" }
    }

    /// The number of states of the minimal automaton (at least 1).
    var stateCount: Int { table.count / 11 }

    init(_ pattern: String) throws(SyntaxError) {
        var parser = Parser(Array(pattern.utf8))
        let tree = try parser.parseAll()
        var nfa = NFA()
        // The automaton reads digits from the last to the first (the pattern with every
        // sequence reversed): a number's digits come out of it in that order, by division.
        let (start, end) = nfa.build(tree)
        nfa.accept = end
        let (transitions, accepting) = DigitPattern.minimized(DigitPattern.determinized(nfa, start: start))
        var table: [Int32] = []
        table.reserveCapacity(accepting.count * 11)
        for s in accepting.indices {
            table.append(contentsOf: transitions[(s * 10)..<(s * 10 + 10)])
            table.append(accepting[s] ? 1 : 0)
        }
        self.table = table
    }

    /// True when `digits` (values 0...9, first to last) match the pattern whole.
    func matches(_ digits: some BidirectionalCollection<UInt8>) -> Bool {
        var state = 0
        for d in digits.reversed() {
            guard d < 10 else { return false }
            let next = table[state &* 11 &+ Int(d)]
            if next < 0 { return false }
            state = Int(next)
        }
        return table[state &* 11 &+ 10] != 0
    }

    /// True when the last `length` decimal digits of `number` (leading zeros included) match:
    /// read from the last, one division by the constant 10 (a multiplication) and one table step
    /// per digit, no allocation.
    func matches(lastDigits length: Int, of number: UInt64) -> Bool {
        guard length > 0, length <= 19 else { return false }
        var n = number
        var state = 0
        for _ in 0..<length {
            let (rest, d) = n.quotientAndRemainder(dividingBy: 10)
            n = rest
            let next = table[state &* 11 &+ Int(d)]
            if next < 0 { return false }
            state = Int(next)
        }
        return table[state &* 11 &+ 10] != 0
    }

    /// Whether `state` ends a match (state 0 is the start; the automaton reads digits last first).
    func isAccepting(_ state: Int) -> Bool { table[state * 11 + 10] != 0 }

    /// The digits that can come before in `state` (reading last first), each with the state it leads to.
    func nextStates(_ state: Int) -> [(digit: Int, state: Int)] {
        (0..<10).compactMap { d in
            let t = table[state * 11 + d]
            return t < 0 ? nil : (d, Int(t))
        }
    }

    // MARK: Syntax

    private indirect enum Node {
        /// One digit of the set (bit d: digit d).
        case digits(UInt16)
        case sequence([Node])
        case choice([Node])
        /// `max` nil: unbounded.
        case repeated(Node, min: Int, max: Int?)
    }

    private struct Parser {
        let bytes: [UInt8]
        var i = 0
        /// Bounds expansion: a `{n,m}` copies its operand, so a pattern may not ask for a huge automaton.
        static let maxRepeat = 64

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func parseAll() throws(SyntaxError) -> Node {
            let node = try parseChoice()
            guard i == bytes.count else { throw SyntaxError(offset: i, reason: "unexpected '\(Character(Unicode.Scalar(bytes[i])))'") }
            return node
        }

        private var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

        private mutating func parseChoice() throws(SyntaxError) -> Node {
            var options = [try parseSequence()]
            while peek == UInt8(ascii: "|") {
                i += 1
                options.append(try parseSequence())
            }
            return options.count == 1 ? options[0] : .choice(options)
        }

        private mutating func parseSequence() throws(SyntaxError) -> Node {
            var items: [Node] = []
            while let c = peek, c != UInt8(ascii: "|"), c != UInt8(ascii: ")") {
                var atom = try parseAtom()
                while let q = peek, q == UInt8(ascii: "?") || q == UInt8(ascii: "*") || q == UInt8(ascii: "+") || q == UInt8(ascii: "{") {
                    atom = try parseQuantifier(atom)
                }
                items.append(atom)
            }
            return items.count == 1 ? items[0] : .sequence(items)
        }

        private mutating func parseAtom() throws(SyntaxError) -> Node {
            let c = bytes[i]
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                i += 1
                return .digits(1 << UInt16(c - 0x30))
            case UInt8(ascii: "\\"):
                guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "d") else {
                    throw SyntaxError(offset: i, reason: "only \\d is supported after a backslash")
                }
                i += 2
                return .digits(0x3FF)
            case UInt8(ascii: "["):
                return try parseClass()
            case UInt8(ascii: "("):
                i += 1
                if peek == UInt8(ascii: "?") {
                    guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: ":") else {
                        throw SyntaxError(offset: i, reason: "only (?: groups are supported")
                    }
                    i += 2
                }
                let inner = try parseChoice()
                guard peek == UInt8(ascii: ")") else { throw SyntaxError(offset: i, reason: "missing ')'") }
                i += 1
                return inner
            default:
                throw SyntaxError(offset: i, reason: "unsupported character '\(Character(Unicode.Scalar(c)))'")
            }
        }

        private mutating func parseClass() throws(SyntaxError) -> Node {
            let open = i
            i += 1
            var negated = false
            if peek == UInt8(ascii: "^") { negated = true; i += 1 }
            var set: UInt16 = 0
            while let c = peek, c != UInt8(ascii: "]") {
                if c == UInt8(ascii: "\\") {
                    guard i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "d") else {
                        throw SyntaxError(offset: i, reason: "only \\d is supported in a class")
                    }
                    set |= 0x3FF
                    i += 2
                    continue
                }
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) else {
                    throw SyntaxError(offset: i, reason: "a class may hold only digits")
                }
                var last = c
                if i + 2 < bytes.count, bytes[i + 1] == UInt8(ascii: "-"), bytes[i + 2] != UInt8(ascii: "]") {
                    last = bytes[i + 2]
                    guard (c...UInt8(ascii: "9")).contains(last) else { throw SyntaxError(offset: i, reason: "bad range in a class") }
                    i += 3
                } else {
                    i += 1
                }
                for d in c...last { set |= 1 << UInt16(d - 0x30) }
            }
            guard peek == UInt8(ascii: "]") else { throw SyntaxError(offset: open, reason: "missing ']'") }
            i += 1
            return .digits(negated ? ~set & 0x3FF : set)
        }

        private mutating func parseQuantifier(_ atom: Node) throws(SyntaxError) -> Node {
            let c = bytes[i]
            i += 1
            switch c {
            case UInt8(ascii: "?"): return .repeated(atom, min: 0, max: 1)
            case UInt8(ascii: "*"): return .repeated(atom, min: 0, max: nil)
            case UInt8(ascii: "+"): return .repeated(atom, min: 1, max: nil)
            default: break
            }
            let open = i - 1
            let low = try parseCount()
            var high: Int? = low
            if peek == UInt8(ascii: ",") {
                i += 1
                high = peek == UInt8(ascii: "}") ? nil : try parseCount()
            }
            guard peek == UInt8(ascii: "}") else { throw SyntaxError(offset: open, reason: "missing '}'") }
            i += 1
            if let high, high < low { throw SyntaxError(offset: open, reason: "{\(low),\(high)}: the maximum is below the minimum") }
            return .repeated(atom, min: low, max: high)
        }

        private mutating func parseCount() throws(SyntaxError) -> Int {
            var n = 0
            var any = false
            while let c = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) {
                n = n * 10 + Int(c - 0x30)
                any = true
                i += 1
                guard n <= Parser.maxRepeat else { throw SyntaxError(offset: i, reason: "a repeat count over \(Parser.maxRepeat)") }
            }
            guard any else { throw SyntaxError(offset: i, reason: "expected a repeat count") }
            return n
        }
    }

    // MARK: Automata

    /// A Thompson automaton: each state has digit edges and empty edges.
    private struct NFA {
        var digitEdges: [[(set: UInt16, to: Int)]] = []
        var emptyEdges: [[Int]] = []
        var accept = 0

        mutating func newState() -> Int {
            digitEdges.append([])
            emptyEdges.append([])
            return digitEdges.count - 1
        }

        /// A fresh fragment for `node`: its entry and exit states.
        mutating func build(_ node: Node) -> (Int, Int) {
            switch node {
            case .digits(let set):
                let (a, b) = (newState(), newState())
                digitEdges[a].append((set, b))
                return (a, b)
            case .sequence(let items):
                let start = newState()
                var end = start
                for item in items.reversed() {
                    let (s, e) = build(item)
                    emptyEdges[end].append(s)
                    end = e
                }
                return (start, end)
            case .choice(let options):
                let (start, end) = (newState(), newState())
                for option in options {
                    let (s, e) = build(option)
                    emptyEdges[start].append(s)
                    emptyEdges[e].append(end)
                }
                return (start, end)
            case .repeated(let inner, let low, let high):
                let start = newState()
                var end = start
                for _ in 0..<low {
                    let (s, e) = build(inner)
                    emptyEdges[end].append(s)
                    end = e
                }
                if let high {
                    // Each optional copy may be skipped to the common exit.
                    let exit = newState()
                    for _ in low..<high {
                        let (s, e) = build(inner)
                        emptyEdges[end].append(s)
                        emptyEdges[end].append(exit)
                        end = e
                    }
                    emptyEdges[end].append(exit)
                    return (start, exit)
                }
                let (s, e) = build(inner)
                let exit = newState()
                emptyEdges[end].append(s)
                emptyEdges[end].append(exit)
                emptyEdges[e].append(s)
                emptyEdges[e].append(exit)
                return (start, exit)
            }
        }

    }

    /// Subset construction over the states that digit edges lead to (the start state, and each
    /// edge's target): a DFA state is the set of them the digits read so far can reach. Each
    /// NFA state's empty-edge closure is computed once, as the digit edges it reaches and whether
    /// it reaches the accepting state. State 0 is the start; a dead state is -1.
    private static func determinized(_ nfa: NFA, start: Int) -> (transitions: [Int32], accepting: [Bool]) {
        var closureEdges = [[(set: UInt16, to: Int32)]?](repeating: nil, count: nfa.digitEdges.count)
        var reachesAccept = [Bool](repeating: false, count: nfa.digitEdges.count)
        var mark = [Int](repeating: -1, count: nfa.digitEdges.count)
        func closure(_ s: Int) -> [(set: UInt16, to: Int32)] {
            if let known = closureEdges[s] { return known }
            var edges: [(set: UInt16, to: Int32)] = []
            var accepts = false
            var stack = [s]
            mark[s] = s
            while let t = stack.popLast() {
                if t == nfa.accept { accepts = true }
                for e in nfa.digitEdges[t] { edges.append((e.set, Int32(e.to))) }
                for u in nfa.emptyEdges[t] where mark[u] != s {
                    mark[u] = s
                    stack.append(u)
                }
            }
            closureEdges[s] = edges
            reachesAccept[s] = accepts
            return edges
        }
        var index: [[Int32]: Int32] = [:]
        var sets: [[Int32]] = []
        var transitions: [Int32] = []
        var accepting: [Bool] = []
        func add(_ set: [Int32]) -> Int32 {
            if let k = index[set] { return k }
            let k = Int32(sets.count)
            index[set] = k
            sets.append(set)
            var accepts = false
            for s in set { _ = closure(Int(s)); if reachesAccept[Int(s)] { accepts = true } }
            accepting.append(accepts)
            transitions.append(contentsOf: repeatElement(-1, count: 10))
            return k
        }
        _ = add([Int32(start)])
        var buckets = [[Int32]](repeating: [], count: 10)
        var next = 0
        while next < sets.count {
            for d in 0..<10 { buckets[d].removeAll(keepingCapacity: true) }
            for s in sets[next] {
                for edge in closure(Int(s)) {
                    var bits = edge.set
                    while bits != 0 {
                        let d = bits.trailingZeroBitCount
                        buckets[d].append(edge.to)
                        bits &= bits - 1
                    }
                }
            }
            for d in 0..<10 where !buckets[d].isEmpty {
                var targets = buckets[d]
                targets.sort()
                var unique: [Int32] = []
                unique.reserveCapacity(targets.count)
                for t in targets where unique.last != t { unique.append(t) }
                transitions[next * 10 + d] = add(unique)
            }
            next += 1
        }
        return (transitions, accepting)
    }

    /// Moore's partition refinement: states that accept the same digit strings become one.
    private static func minimized(_ dfa: (transitions: [Int32], accepting: [Bool])) -> ([Int32], [Bool]) {
        let n = dfa.accepting.count
        var block = dfa.accepting.map { $0 ? 1 : 0 }
        var blockCount = Set(block).count
        while true {
            var signatures: [[Int]: Int] = [:]
            var refined = [Int](repeating: 0, count: n)
            for s in 0..<n {
                var signature = [block[s]]
                for d in 0..<10 {
                    let t = dfa.transitions[s * 10 + d]
                    signature.append(t < 0 ? -1 : block[Int(t)])
                }
                if let k = signatures[signature] { refined[s] = k } else {
                    refined[s] = signatures.count
                    signatures[signature] = signatures.count
                }
            }
            block = refined
            if signatures.count == blockCount { break }
            blockCount = signatures.count
        }
        // Renumber so that the start state's block is 0.
        var order = [Int](repeating: -1, count: blockCount)
        var count = 0
        var queue = [0]
        order[block[0]] = 0
        count = 1
        var transitions = [Int32](repeating: -1, count: blockCount * 10)
        var accepting = [Bool](repeating: false, count: blockCount)
        var head = 0
        while head < queue.count {
            let s = queue[head]
            head += 1
            let b = order[block[s]]
            accepting[b] = dfa.accepting[s]
            for d in 0..<10 {
                let t = dfa.transitions[s * 10 + d]
                guard t >= 0 else { continue }
                if order[block[Int(t)]] < 0 {
                    order[block[Int(t)]] = count
                    count += 1
                    queue.append(Int(t))
                }
                transitions[b * 10 + d] = Int32(order[block[Int(t)]])
            }
        }
        return (Array(transitions.prefix(count * 10)), Array(accepting.prefix(count)))
    }
}
