// Happens-before edges announced to ThreadSanitizer, for synchronization it cannot see.
#ifndef CKERNELS_SANITIZER_H
#define CKERNELS_SANITIZER_H

/// Under ThreadSanitizer, __tsan_release(address): what this thread did so far happens before
/// whatever a later ce_sanitizer_acquire(address) on another thread does. Elsewhere nothing.
void ce_sanitizer_release(const void *address);

/// Under ThreadSanitizer, __tsan_acquire(address); elsewhere nothing.
void ce_sanitizer_acquire(const void *address);

/// 1 when this library was compiled with ThreadSanitizer.
int ce_sanitizer_thread(void);

#endif
