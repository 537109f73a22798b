/// A binary min-heap: the least element on top.
///
/// The one heap of the module: the k-way merge of ``PrecedenceMerge`` (heads ordered by number,
/// then by cursor) and the range resolution of `RangeWriter` (ranges ordered by width, then by
/// the order they were added) both keep their candidates in it. Generic over a `Comparable`
/// element, so each use is specialized (no closure call per comparison).
package struct MinHeap<Element: Comparable> {
    private var items: [Element] = []

    package init(capacity: Int = 0) { items.reserveCapacity(capacity) }

    package var isEmpty: Bool { items.isEmpty }
    package var count: Int { items.count }
    /// The least element, or nil when the heap is empty.
    package var min: Element? { items.first }

    package mutating func push(_ x: Element) {
        items.append(x)
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i] < items[parent] else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    /// Removes and returns the least element (nil when empty).
    @discardableResult
    package mutating func popMin() -> Element? {
        guard let top = items.first else { return nil }
        let last = items.removeLast()
        guard !items.isEmpty else { return top }
        items[0] = last
        var i = 0
        let n = items.count
        while true {
            let l = 2 * i + 1
            guard l < n else { break }
            var c = l
            if l + 1 < n && items[l + 1] < items[l] { c = l + 1 }
            guard items[c] < items[i] else { break }
            items.swapAt(i, c)
            i = c
        }
        return top
    }
}

/// A merge's head in its heap: a number and the index of the input it came from; equal numbers
/// come out in input order (``PrecedenceMerge``'s cursors, the bounded build's runs).
struct MergeHead: Comparable {
    var number: UInt64
    var source: Int32
    static func < (a: MergeHead, b: MergeHead) -> Bool { a.number < b.number || (a.number == b.number && a.source < b.source) }
}
