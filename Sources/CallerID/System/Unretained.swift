/// A reference that is not retained: no reference counting when it is made, copied or dropped.
///
/// ``EntryView`` holds its database this way: a scan makes one view per entry (75 M a second),
/// and a retain and release per view cost measurable throughput.
///
/// Invariant: the object outlives every copy of the wrapper. That holds for a view because it
/// is only lent: to the closure of the database call that made it (the caller holds the
/// database for the call) or by an ``EntryBatch`` (valid until the batch is filled again, while
/// the database is open, as documented there). Using a copy after the object is freed is
/// undefined behaviour, so the wrapper is never stored anywhere longer-lived.
@usableFromInline
struct Unretained<Object: AnyObject> {
    @usableFromInline unowned(unsafe) let object: Object

    @inlinable @inline(__always)
    init(_ object: Object) { self.object = object }
}
