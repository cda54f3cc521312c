import LanguageModels
import LinearAlgebra
import Synchronization

/// Admission for `/v1/chat/completions`: at most `concurrency` generations run at once, each on
/// an engine thread of its own (never the request queue, never libmicrohttpd's thread); at most
/// `maximumQueue` more wait, oldest first; further requests are refused (the caller answers 503
/// with `Retry-After`). A generation occupies the model's threads for seconds, so on two cores
/// one at a time is fastest for every request (`serve --chat-concurrency`).
final class ChatScheduler: Sendable {
    /// One request's generation.
    struct Job: Sendable {
        /// Runs the generation (on an engine thread); `stop` turns true when the server stops.
        let run: @Sendable (_ stop: @escaping @Sendable () -> Bool) -> Void
        /// Answers a job that never ran (the server stopped first).
        let refuse: @Sendable () -> Void
    }

    private struct State {
        var waiting: [Job] = []
        var running = 0
        var stopping = false
    }

    /// Generations at once.
    let concurrency: Int
    /// Jobs that may wait.
    let maximumQueue: Int
    private let state = Mutex(State())

    init(concurrency: Int, maximumQueue: Int) {
        precondition(concurrency >= 1 && maximumQueue >= 0)
        self.concurrency = concurrency
        self.maximumQueue = maximumQueue
    }

    /// Requests waiting, and generations running.
    var depth: (waiting: Int, running: Int) { state.withOrderedLock { ($0.waiting.count, $0.running) } }

    /// What `submit` did with a job.
    enum Admission: Equatable {
        /// It runs now, or when a generation ends.
        case admitted
        /// `maximumQueue` jobs already wait.
        case full
        /// The server is stopping.
        case stopping
    }

    /// Runs `job` now or when a generation ends, unless the queue is full or the server stops.
    func submit(_ job: Job) -> Admission {
        let (admission, startNow) = state.withOrderedLock { state -> (Admission, Bool) in
            guard !state.stopping else { return (.stopping, false) }
            if state.running < concurrency {
                state.running += 1
                return (.admitted, true)
            }
            guard state.waiting.count < maximumQueue else { return (.full, false) }
            state.waiting.append(job)
            return (.admitted, false)
        }
        if startNow { start(job) }
        return admission
    }

    /// Stops: jobs waiting are refused, running ones see their `stop` turn true.
    func stop() {
        let refused = state.withOrderedLock { state -> [Job] in
            state.stopping = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for job in refused { job.refuse() }
    }

    private func start(_ job: Job) {
        Engine.start { [self] in
            job.run { self.state.withOrderedLock { $0.stopping } }
            let next = state.withOrderedLock { state -> Job? in
                guard !state.waiting.isEmpty else {
                    state.running -= 1
                    return nil
                }
                return state.waiting.removeFirst()
            }
            if let next { start(next) }
        }
    }
}
