import CKernels
import Synchronization

extension Mutex where Value: ~Copyable {
    /// `withLock`, with the lock's ordering announced to ThreadSanitizer (`key` identifies the
    /// lock: the address of the object that owns it).
    ///
    /// A contended `Mutex` is taken inside the toolchain's Synchronization library, which is not
    /// built with ThreadSanitizer, so TSan cannot see that two critical sections are ordered and
    /// reports the value they share as a race (seen on `WorkspacePool`'s free list). Each section
    /// here starts with an acquire and ends with a release on `key`, which TSan understands;
    /// without TSan both are empty C calls. Use it where a value under the lock is handed from
    /// one thread to another.
    package borrowing func withOrderedLock<R>(key: AnyObject, _ body: (inout sending Value) throws -> sending R) rethrows -> sending R {
        let address = UnsafeRawPointer(Unmanaged.passUnretained(key).toOpaque())
        return try withLock { (value: inout sending Value) throws -> sending R in
            ce_sanitizer_acquire(address)
            defer { ce_sanitizer_release(address) }
            return try body(&value)
        }
    }
}
