// Where memory the core owns or maps is lent as a `Span`: the span's lifetime is tied to its
// owner's (`@_lifetime`), so the compiler refuses any use after the owner ends or changes.
// Building a span from a pointer and tying it to an owner are the unsafe steps, kept here.

extension FixedBuffer {
    /// The first `n` elements (`n ≤ count`) as a span that lives while this buffer is borrowed.
    @inlinable @_lifetime(borrow self)
    package func span(_ n: Int) -> Span<Element> {
        assert(n >= 0 && n <= count, "FixedBuffer span out of range")
        let elements = Span(_unsafeElements: UnsafeBufferPointer(start: start, count: n))
        return _overrideLifetime(elements, borrowing: self)
    }
}

extension EntryView {
    /// The label's UTF-8 bytes, without a copy, for as long as the view lives.
    @inlinable
    public var labelSpan: Span<UInt8> {
        @_lifetime(copy self) get {
            let bytes = Span(_unsafeElements: labelBytes.assumingMemoryBound(to: UInt8.self))
            return _overrideLifetime(bytes, copying: self)
        }
    }
}
