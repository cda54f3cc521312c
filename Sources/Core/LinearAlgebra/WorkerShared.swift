/// What the workers of one `DispatchQueue.concurrentPerform` share: raw pointers into buffers the
/// caller owns, or a struct of them. The one pointer box of the package.
// @unchecked: workers only read through it, or each writes its own disjoint rows or slot, and
// concurrentPerform returns only after every worker is done, before the owner reads the buffers.
package struct WorkerShared<Value>: @unchecked Sendable {
    /// The shared pointers.
    package let value: Value

    /// Wraps `value` for the workers of one parallel pass.
    package init(_ value: Value) { self.value = value }
}
