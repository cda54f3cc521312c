import Dispatch
import Synchronization

/// Runs async work (an `EmbeddingStore` call) from synchronous code and waits for it: for the
/// command line and the benchmark, which run on threads of their own, never on a thread of Swift
/// concurrency's cooperative pool (waiting there could starve the pool).
package func blockingAwait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let semaphore = DispatchSemaphore(value: 0)
    let result = Mutex<Result<T, any Error>?>(nil)
    Task {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        result.withLock { $0 = outcome }
        semaphore.signal()
    }
    semaphore.wait()
    guard let outcome = result.withLock({ $0 }) else { throw CancellationError() }
    return try outcome.get()
}
