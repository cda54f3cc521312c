import Foundation

/// Where the decoder runs: blocking work on a thread of its own, never on Swift concurrency's
/// cooperative pool (a response takes seconds of matrix products). `package`: the answer step
/// (`Answering`) and the CLI run their blocking work (retrieval, opening stores) the same way.
package enum Engine {
    /// `work()` on a new thread; the caller's task waits without holding a pool thread.
    package static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
            start { continuation.resume(returning: Result(catching: work)) }
        }
        return try result.get()
    }

    /// Starts `body` on a new thread and returns at once.
    package static func start(_ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.name = "LanguageModels.engine"
        thread.start()
    }
}
