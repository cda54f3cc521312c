// Swift's Synchronization.Mutex takes its lock on a futex when it is contended, inside the
// toolchain's libswiftSynchronization.so, which is not built with ThreadSanitizer: TSan then
// sees no ordering between two threads' critical sections and reports the protected value as a
// race. These two calls announce the lock's ordering to TSan where the package relies on it
// (Docs/Reliability.md); without TSan they compile to nothing but a call.
#include "sanitizer.h"

#if defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define CE_THREAD_SANITIZER 1
#  endif
#endif
#if !defined(CE_THREAD_SANITIZER) && defined(__SANITIZE_THREAD__)
#  define CE_THREAD_SANITIZER 1
#endif

#ifdef CE_THREAD_SANITIZER
void __tsan_acquire(void *address);
void __tsan_release(void *address);

void ce_sanitizer_release(const void *address) { __tsan_release((void *)address); }
void ce_sanitizer_acquire(const void *address) { __tsan_acquire((void *)address); }
int ce_sanitizer_thread(void) { return 1; }
#else
void ce_sanitizer_release(const void *address) { (void)address; }
void ce_sanitizer_acquire(const void *address) { (void)address; }
int ce_sanitizer_thread(void) { return 0; }
#endif
