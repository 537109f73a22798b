// The merged stream lends its current label as a span tied to the stream (`@_lifetime`): the
// compiler refuses a call to `next()` while the span is in use. Building the span from the
// label's pointer is the unsafe step, kept here.

extension MergedStream {
    /// The current label's UTF-8 bytes, without a copy (empty for an entry from a rule), lent
    /// until the stream moves on.
    public var labelSpan: Span<UInt8> {
        @_lifetime(borrow self) get {
            let bytes = Span(_unsafeElements: label.assumingMemoryBound(to: UInt8.self))
            return _overrideLifetime(bytes, borrowing: self)
        }
    }
}
