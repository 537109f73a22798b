import Foundation
import Testing
@testable import CallerID

/// The core k-way merge that the Call Directory feed, the Live Caller ID export and the C ABI's
/// merged cursor share, against a model: the union of the inputs, ascending, each number once,
/// the earliest input holding it answering.
@Suite struct PrecedenceMergeTests {
    /// Builds `count` databases whose numbers overlap (drawn from one small pool) and returns
    /// them with their records (last record per number, as the builder keeps).
    func databases(count: Int, seed: UInt64, dir: TempDir) throws -> (dbs: [Database], maps: [[UInt64: Entry]]) {
        var rng = SeededGenerator(seed: seed)
        let pool = (0..<400).map { _ in UInt64.random(in: 1...PhoneNumber.maximum, using: &rng) } + [1, PhoneNumber.maximum]
        var dbs: [Database] = []
        var maps: [[UInt64: Entry]] = []
        for i in 0..<count {
            var map: [UInt64: Entry] = [:]
            let size = i == 1 ? 0 : Int.random(in: 1...600, using: &rng)   // the second input is empty
            for j in 0..<size {
                let n = pool.randomElement(using: &rng)!
                let c = testCategories.randomElement(using: &rng)!
                map[n] = Entry(number: n, label: "db\(i) row\(j)", category: c)
            }
            let path = dir.path("m\(i).cid")
            _ = try buildDatabase(Array(map.values), at: path)
            dbs.append(try Database(path: path))
            maps.append(map)
        }
        return (dbs, maps)
    }

    @Test(arguments: [(1 as UInt64, 0), (2, 1), (3, 2), (4, 3), (5, 6), (6, 9)])
    func matchesTheModel(seed: UInt64, count: Int) throws {
        let dir = TempDir()
        let (dbs, maps) = try databases(count: count, seed: seed, dir: dir)
        var rng = SeededGenerator(seed: seed &* 31)
        for from in [0, UInt64.random(in: 1...PhoneNumber.maximum, using: &rng), PhoneNumber.maximum] {
            var expected: [(UInt64, String, Int)] = []
            for n in Set(maps.flatMap(\.keys)).sorted() where n >= from {
                let source = maps.firstIndex { $0[n] != nil }!
                expected.append((n, maps[source][n]!.label, source))
            }
            var merge = PrecedenceMerge(dbs.map { $0.cursor(from: from) })
            var got: [(UInt64, String, Int)] = []
            while try merge.next() {
                got.append((merge.number, String(decoding: merge.label, as: UTF8.self), merge.source))
                let category = dbs[merge.source].categories[merge.category]
                #expect(category == maps[merge.source][merge.number]!.category)
            }
            #expect(got.count == expected.count)
            #expect(got.elementsEqual(expected) { $0 == $1 }, "from \(from): first difference at \(Array(zip(got, expected)).firstIndex { $0 != $1 } ?? -1)")
            #expect(try merge.next() == false, "a finished merge stays finished")
        }
    }

    @Test func actionFilteredCursorsMergeOnlyTheirAction() throws {
        let dir = TempDir()
        let (dbs, maps) = try databases(count: 4, seed: 77, dir: dir)
        var merge = PrecedenceMerge(dbs.map { $0.cursor(filter: .action(.block)) })
        var got: [UInt64] = []
        while try merge.next() {
            #expect(dbs[merge.source].categories[merge.category].action == .block)
            got.append(merge.number)
        }
        let blocked = Set(maps.flatMap { $0.values.filter { $0.category.action == .block }.map(\.number) })
        #expect(got == blocked.sorted())
    }

    @Test func noInputsEndAtOnce() throws {
        var merge = PrecedenceMerge([])
        #expect(try merge.next() == false)
        #expect(merge.source == -1)
    }

    @Test func theSameEntriesEverywhereComeOnceFromTheFirst() throws {
        let dir = TempDir()
        let records = (1...300).map { Entry(number: UInt64($0) * 7, label: "x\($0)", category: .identify) }
        var dbs: [Database] = []
        for i in 0..<5 {
            _ = try buildDatabase(records, at: dir.path("s\(i).cid"))
            dbs.append(try Database(path: dir.path("s\(i).cid")))
        }
        var merge = PrecedenceMerge(dbs.map { $0.cursor() })
        var numbers: [UInt64] = []
        while try merge.next() {
            #expect(merge.source == 0)
            numbers.append(merge.number)
        }
        #expect(numbers == records.map(\.number))
    }
}
