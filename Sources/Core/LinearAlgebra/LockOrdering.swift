import CKernels
import Synchronization

extension Mutex where Value: ~Copyable {
    /// `withLock`, with the lock's ordering announced to ThreadSanitizer: the package's one way
    /// to take a `Mutex`.
    ///
    /// A contended `Mutex` is taken and released inside the toolchain's Synchronization library
    /// (a futex wait and wake), which is not built with ThreadSanitizer, so TSan cannot see that
    /// two critical sections are ordered and reports the value they share as a race (seen on
    /// `WorkspacePool`'s free list and on `BLAS`'s scope count). Each section here starts with an
    /// acquire and ends with a release on the lock's address, which TSan understands;
    /// without TSan both are empty C calls (`ce_sanitizer_acquire`, `ce_sanitizer_release`).
    package borrowing func withOrderedLock<R>(_ body: (inout sending Value) throws -> sending R) rethrows -> sending R {
        // A Mutex cannot be copied, so a borrow of it is the lock itself: its address names it.
        let address = withUnsafePointer(to: self) { UnsafeRawPointer($0) }
        return try withLock { (value: inout sending Value) throws -> sending R in
            ce_sanitizer_acquire(address)
            defer { ce_sanitizer_release(address) }
            return try body(&value)
        }
    }
}
