import Foundation
import Testing
@testable import CallerID

/// What an `EntryView` and an `EntryBatch` lend: the label's bytes and the batch's numbers as
/// spans, the same bytes as the entries, hot (mapped) and cold (decoded) labels alike.
@Suite struct EntryViewTests {
    @Test func labelSpanHoldsTheLabelBytes() throws {
        let dir = TempDir()
        let (records, expected) = randomRecords(count: 3_000, seed: 31)
        _ = try buildDatabase(records, at: dir.path("v.cid"))
        let db = try Database(path: dir.path("v.cid"))
        var checked = 0
        for (number, entry) in expected.prefix(500) {
            let ok = try db.withEntry(number) { view -> Bool in
                let lent = Array(copying: view.labelSpan)
                return lent == Array(entry.label.utf8) && view.labelByteCount == lent.count && view.label == entry.label
            }
            #expect(ok == true, "\(number)")
            checked += 1
        }
        #expect(checked == 500)
    }

    /// A batch's `numbers` span and its views agree with the entries a plain cursor returns,
    /// fill after fill (capacities that end fills inside and at block boundaries).
    @Test func batchLendsTheEntriesOfItsLastFill() throws {
        let dir = TempDir()
        let (records, expected) = randomRecords(count: 5_000, seed: 32)
        _ = try buildDatabase(records, at: dir.path("b.cid"))
        let db = try Database(path: dir.path("b.cid"))
        let all = expected.keys.sorted().map { expected[$0]! }
        for capacity in [1, 7, 256, 4096] {
            var batch = EntryBatch(capacity: capacity)
            var cursor = db.cursor()
            var got: [Entry] = []
            while try cursor.nextBatch(&batch) > 0 {
                let numbers = Array(copying: batch.numbers)
                #expect(numbers.count == batch.count)
                for i in 0..<batch.count {
                    let view = batch[i]
                    #expect(view.number == numbers[i])
                    #expect(Array(copying: view.labelSpan) == Array(view.label.utf8))
                    got.append(view.entry)
                }
            }
            #expect(got == all, "capacity \(capacity)")
        }
    }
}

/// Views cannot outlive what lent them: code that tries to keep an `EntryView` (or a span it
/// lends) past the call or the batch fill that made it does not compile. Each snippet below
/// is type-checked against the built CallerID module with the toolchain's `swiftc`; the good
/// one must compile (so a failure of the others is theirs, not the set-up's). `-emit-sil`: the
/// lifetime and exclusivity checks run on SIL, after type checking.
@Suite struct ViewLifetimeTests {
    /// A snippet that uses views as the API intends.
    static let lawful = """
        import CallerID
        import CallerIDDirectory
        func lookups(_ db: Database) throws -> Int {
            var total = try db.withEntry(79131234567) { $0.labelSpan.count } ?? 0
            total += try db.withAnswer(79131234567) { view in view.number == 0 ? 0 : view.labelByteCount } ?? 0
            var cursor = db.cursor()
            var batch = EntryBatch(capacity: 16)
            while try cursor.nextBatch(&batch) > 0 {
                let numbers = batch.numbers
                for i in 0..<batch.count { total &+= Int(truncatingIfNeeded: numbers[i]) &+ batch[i].labelSpan.count }
            }
            try cursor.forEach { view in total += view.labelByteCount; return true }
            return total
        }
        func stream(_ s: inout MergedStream) throws -> Int {
            var n = 0
            while try s.next() { n += s.labelSpan.count }
            return n
        }
        """

    /// Ways to keep a view or a span too long, each with the word its error must contain.
    static let unlawful: [(name: String, code: String, error: String)] = [
        ("a view returned from withEntry",
         "func f(_ db: Database) throws -> UInt64 { let v: EntryView? = try db.withEntry(1) { $0 }; return v?.number ?? 0 }",
         "Escapable"),
        ("a view returned from withAnswer",
         "func f(_ db: Database) throws { _ = try db.withAnswer(1) { view -> EntryView in view } }",
         "Escapable"),
        ("a view appended to an array",
         "func f(_ db: Database) throws -> Int { var kept: [EntryView] = []; _ = try db.withEntry(1) { kept.append($0) }; return kept.count }",
         "Escapable"),
        ("a view stored in a struct",
         "struct Keeper { var view: EntryView }",
         "Escapable"),
        ("a label span returned from withEntry",
         "func f(_ db: Database) throws -> Int { let s: Span<UInt8>? = try db.withEntry(1) { $0.labelSpan }; return s?.count ?? 0 }",
         "Escapable"),
        ("a batch view used after the batch is filled again",
         """
         func f(_ db: Database) throws -> UInt64 {
             var cursor = db.cursor(); var batch = EntryBatch()
             _ = try cursor.nextBatch(&batch)
             let view = batch[0]
             _ = try cursor.nextBatch(&batch)
             return view.number
         }
         """,
         "exclusive access"),
        ("a batch's numbers used after the batch is filled again",
         """
         func f(_ db: Database) throws -> Int {
             var cursor = db.cursor(); var batch = EntryBatch()
             _ = try cursor.nextBatch(&batch)
             let numbers = batch.numbers
             _ = try cursor.nextBatch(&batch)
             return numbers.count
         }
         """,
         "exclusive access"),
        ("a merged stream's label span used after next()",
         """
         func f(_ s: inout MergedStream) throws -> Int {
             let label = s.labelSpan
             _ = try s.next()
             return label.count
         }
         """,
         "exclusive access"),
    ]

    @Test func lawfulUseCompiles() throws {
        let result = try Self.compile(Self.lawful)
        #expect(result.status == 0, "\(result.output)")
    }

    @Test(arguments: unlawful.indices)
    func keepingAViewTooLongDoesNotCompile(_ i: Int) throws {
        let (name, code, error) = Self.unlawful[i]
        let result = try Self.compile("import CallerID\nimport CallerIDDirectory\n" + code)
        #expect(result.status != 0, "\(name) compiled")
        #expect(result.output.contains(error), "\(name): expected an error about '\(error)', got:\n\(result.output)")
    }

    /// `swiftc -emit-sil` of `source` against the modules built beside the test bundle.
    static func compile(_ source: String) throws -> (status: Int32, output: String) {
        let swiftc = try #require(
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
                .map { "\($0)/swiftc" }.first { FileManager.default.isExecutableFile(atPath: $0) },
            "swiftc is not on PATH")
        let modules = try #require(
            BuiltProducts.directories.map { $0.appendingPathComponent("Modules") }
                .first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("CallerID.swiftmodule").path) },
            "no built CallerID.swiftmodule beside the test bundle")
        let root = BuiltProducts.packageRoot
        let dir = TempDir()
        let file = dir.path("snippet.swift")
        try source.write(toFile: file, atomically: true, encoding: .utf8)
        // The C modules CallerID and CallerIDDirectory are built on (a map exists only for the
        // configuration's own: the system codecs' with that trait, libsodium's on Linux).
        var arguments = ["-emit-sil", "-o", "/dev/null", "-I", modules.path, "-Xcc", "-I", "-Xcc", root.appendingPathComponent("Sources/CPortable/include").path]
        let maps = [root.appendingPathComponent("CLZ4Shim/module.modulemap"),
                    modules.deletingLastPathComponent().appendingPathComponent("CSodium.build/module.modulemap")]
        for map in maps where FileManager.default.fileExists(atPath: map.path) {
            arguments += ["-Xcc", "-fmodule-map-file=" + map.path]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: swiftc)
        process.arguments = arguments + [file]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }
}
