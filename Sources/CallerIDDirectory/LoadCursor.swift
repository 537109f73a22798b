import CallerID

/// Where an extension stands in loading its slot, in a few bytes (about 20–50), so that it
/// can add K entries per request and continue in the next one, and so that the next version
/// can be loaded as a delta from what is loaded now.
///
/// Keep ``bytes`` once the request **succeeded** (the app learns it from the completion of
/// `reloadExtension`: store the new cursor as pending in the extension, promote it in the
/// app); a failed request leaves the system with the previous lists, and the
/// previous cursor still describes them.
///
/// What the system holds, by phase (positions are "everything below is done"):
/// - ``Phase/addIdentification`` at p, no base: identification entries of the target below p.
/// - ``Phase/addBlocking`` at p, no base: all identification entries, blocking below p.
/// - with a base (a delta from a previous version in progress): the base's entries minus the
///   removals done so far, plus the additions done so far.
/// - ``Phase/complete``: exactly the target's entries.
public struct LoadCursor: Sendable, Equatable, CustomStringConvertible {
    public enum Phase: UInt8, Sendable, CaseIterable {
        case removeIdentification = 0, removeBlocking, addIdentification, addBlocking, complete
    }

    /// A version of a slot's entries: an installed generation and the slot's number range.
    public struct Version: Sendable, Equatable {
        public var generation: UInt64
        public var lowerBound: UInt64
        public var upperBound: UInt64
        /// Per list, the end of what is loaded (`upperBound` when the list is fully loaded).
        public var identificationEnd: UInt64
        public var blockingEnd: UInt64

        public init(generation: UInt64, range: Range<UInt64>) {
            self.generation = generation
            lowerBound = range.lowerBound
            upperBound = range.upperBound
            identificationEnd = range.upperBound
            blockingEnd = range.upperBound
        }

        func end(_ list: CallDirectoryList) -> UInt64 { list == .identification ? identificationEnd : blockingEnd }
    }

    /// The version being loaded.
    public internal(set) var target: Version
    /// The version a delta starts from, while the delta is in progress.
    public internal(set) var base: Version?
    public internal(set) var phase: Phase
    /// The next number to look at in the current phase.
    public internal(set) var position: UInt64

    /// True when the system holds exactly the target's entries.
    public var isComplete: Bool { phase == .complete }

    init(target: Version, base: Version?, phase: Phase, position: UInt64) {
        self.target = target
        self.base = base
        self.phase = phase
        self.position = position
    }

    /// What the system holds, as a single version, when it is one: a complete load, or a
    /// partial load without a delta in progress. nil for a delta in progress (a mix of two).
    var loadedVersion: Version? {
        var v = target
        switch (base, phase) {
        case (_, .complete):
            return v
        case (nil, .addIdentification):
            v.identificationEnd = max(position, v.lowerBound)
            v.blockingEnd = v.lowerBound
            return v
        case (nil, .addBlocking):
            v.blockingEnd = max(position, v.lowerBound)
            return v
        default:
            return nil
        }
    }

    public var description: String {
        "generation \(target.generation) [\(target.lowerBound), \(target.upperBound)) \(phase) at \(position)"
            + (base.map { " from generation \($0.generation)" } ?? "")
    }

    // MARK: Bytes

    private static let formatVersion: UInt8 = 1

    /// The cursor as bytes: version, phase, varints, a 32-bit check.
    public var bytes: [UInt8] {
        var out: [UInt8] = [Self.formatVersion, phase.rawValue]
        func put(_ v: UInt64) {
            var v = v
            while v >= 0x80 {
                out.append(UInt8(v & 0x7F) | 0x80)
                v >>= 7
            }
            out.append(UInt8(v))
        }
        put(position)
        for v in [target] + (base.map { [$0] } ?? []) {
            put(v.generation)
            put(v.lowerBound)
            // Ends are stored as distances below upperBound (0 when fully loaded, the usual case).
            put(v.upperBound)
            put(v.upperBound - v.identificationEnd)
            put(v.upperBound - v.blockingEnd)
        }
        let check = UInt32(truncatingIfNeeded: Checksum.xxh3(out))
        withUnsafeBytes(of: check.littleEndian) { out.append(contentsOf: $0) }
        return out
    }

    /// Reads ``bytes``. Throws `invalidArgument` for bytes that are damaged or of another
    /// version; an extension then treats the loaded state as unknown (a full reload).
    public init(bytes: [UInt8]) throws(DirectoryError) {
        let bad = DirectoryError(.invalidArgument, "load cursor: damaged or unknown bytes")
        guard bytes.count > 6, bytes[0] == Self.formatVersion else { throw bad }
        let body = Array(bytes[..<(bytes.count - 4)])
        var check: UInt32 = 0
        for (i, b) in bytes[(bytes.count - 4)...].enumerated() { check |= UInt32(b) << (8 * i) }
        guard UInt32(truncatingIfNeeded: Checksum.xxh3(body)) == check, let phase = Phase(rawValue: body[1]) else { throw bad }
        var i = 2
        func get() throws(DirectoryError) -> UInt64 {
            var v: UInt64 = 0, shift: UInt64 = 0
            while i < body.count {
                let b = body[i]
                i += 1
                guard shift < 64 else { throw bad }
                v |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return v }
                shift += 7
            }
            throw bad
        }
        func version() throws(DirectoryError) -> Version {
            let g = try get(), lo = try get(), hi = try get(), di = try get(), db = try get()
            guard lo <= hi, di <= hi - lo, db <= hi - lo else { throw bad }
            var v = Version(generation: g, range: lo..<hi)
            v.identificationEnd = hi - di
            v.blockingEnd = hi - db
            return v
        }
        position = try get()
        target = try version()
        base = i < body.count ? try version() : nil
        guard i == body.count else { throw bad }
        self.phase = phase
    }
}
