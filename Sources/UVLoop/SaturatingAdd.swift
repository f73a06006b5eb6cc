/// `value + delta`, or `UInt64.max` where the sum would overflow.
///
/// Deadline arithmetic uses it instead of `&+`: near the end of a clock's range a wrapped sum
/// lands in the past, so a timer or sleep meant for later would fire at once. Saturating at
/// `UInt64.max` means "at the end of time", which is never early. The registry's deadlines use
/// it too (hence public), on its hot paths (hence `@inlinable`: a compare and a select).
///
/// May be called from any thread.
/// - Parameters:
///   - value: a point in nanoseconds, such as `LoopInstant.nanoseconds`.
///   - delta: how much later, in nanoseconds.
@inlinable @inline(__always)
public func saturatingAdd(_ value: UInt64, _ delta: UInt64) -> UInt64 {
    let (sum, overflow) = value.addingReportingOverflow(delta)
    return overflow ? .max : sum
}
