import LinearAlgebra
import LlamaDecoder
import Synchronization

/// Decoder caches kept between sessions, so that a request whose conversation continues an
/// earlier one (a chat client sends the whole conversation each time) runs only what is new.
///
/// A session made with one (`LanguageModelSession(model:transcript:sharing:)`) borrows, for each
/// turn, the idle cache whose tokens share the longest prefix with the turn's prompt, and gives
/// it back when the turn ends; the cache then keeps what its tokens share with the prompt
/// (`Conversation`'s reuse rules) and runs the rest. At most `capacity` idle caches are kept
/// (the oldest go first); each holds memory for the tokens it caches. `package`: the chat
/// endpoint of `embeddings serve` keeps one for its requests.
package final class ConversationCache: Sendable {
    /// The most idle caches kept.
    package let capacity: Int
    /// Idle caches, the most recently returned last.
    private let idle = Mutex<[Conversation]>([])

    /// An empty store of at most `capacity` idle caches (0: none are kept).
    package init(capacity: Int) {
        precondition(capacity >= 0, "a negative capacity")
        self.capacity = capacity
    }

    /// The number of idle caches held.
    package var count: Int { idle.withOrderedLock { $0.count } }

    /// Takes the idle cache of `model` sharing the longest token prefix with `ids` (ties: the
    /// most recently returned), or nil when none is idle.
    /// - Complexity: O(idle caches × prompt tokens).
    func take(closestTo ids: [Int], of model: LlamaModel) -> Conversation? {
        idle.withOrderedLock { idle in
            var best: (index: Int, shared: Int)?
            for (index, conversation) in idle.enumerated() where conversation.sequence.model === model {
                let shared = zip(conversation.sequence.tokens, ids).prefix { $0 == $1 }.count
                if shared >= best?.shared ?? 0 { best = (index, shared) }
            }
            guard let best else { return nil }
            return idle.remove(at: best.index)
        }
    }

    /// Gives `conversation` back, dropping the oldest idle caches beyond `capacity`.
    func give(back conversation: Conversation) {
        idle.withOrderedLock { idle in
            idle.append(conversation)
            if idle.count > capacity { idle.removeFirst(idle.count - capacity) }
        }
    }
}
