import LinearAlgebra
import LlamaDecoder
import Synchronization

/// Decoder caches kept between sessions, so that a request whose conversation continues an
/// earlier one (a chat client sends the whole conversation each time) runs only what is new.
///
/// A session made with one (`LanguageModelSession(model:transcript:sharing:)`) borrows a cache
/// for each turn and gives it back when the turn ends. The turn takes the idle cache whose
/// conversation its prompt carries on (`Conversation.isCarriedOn(by:shared:)`: a follow-up, or the
/// same request again); when there is none and fewer than `capacity` caches are idle, it starts a
/// cache of its own, so that the others stay for their conversations; when `capacity` are idle,
/// it takes the one sharing the longest token prefix with its prompt (ties: the least recently
/// returned). A cache taken keeps what it shares with the prompt and runs the rest. At most `capacity`
/// caches are idle at once (besides those lent out); each keeps the memory its longest
/// conversation needed (keys and values, and the decoder's scratch buffers). `package`: the chat
/// endpoint of `embeddings serve` keeps one for its requests.
package final class ConversationCache: Sendable {
    /// The most idle caches kept.
    package let capacity: Int
    /// Idle caches, the least recently returned first.
    private let idle = Mutex<[Conversation]>([])

    /// An empty store of at most `capacity` idle caches (0: none are kept).
    package init(capacity: Int) {
        precondition(capacity >= 0, "a negative capacity")
        self.capacity = capacity
    }

    /// The number of idle caches held.
    package var count: Int { idle.withOrderedLock { $0.count } }

    /// The idle cache of `model` for `prompt` (the rules above), or nil: the turn starts a cache of
    /// its own.
    /// - Complexity: O(idle caches × prompt tokens).
    func take(for prompt: ChatPrompt, of model: LlamaModel) -> Conversation? {
        idle.withOrderedLock { idle in
            let ids = prompt.ids
            var best: (index: Int, shared: Int)?
            var carried: (index: Int, held: Int)?
            for (index, conversation) in idle.enumerated() where conversation.sequence.model === model {
                let shared = zip(conversation.sequence.tokens, ids).prefix { $0 == $1 }.count
                if conversation.isCarriedOn(by: prompt, shared: shared),
                    conversation.sequence.count > carried?.held ?? -1
                {
                    carried = (index, conversation.sequence.count)
                }
                if shared > best?.shared ?? -1 { best = (index, shared) }
            }
            if let carried { return idle.remove(at: carried.index) }
            guard idle.count >= capacity, let best else { return nil }
            return idle.remove(at: best.index)
        }
    }

    /// Gives `conversation` back, dropping the least recently returned idle caches beyond
    /// `capacity`.
    func give(back conversation: Conversation) {
        idle.withOrderedLock { idle in
            idle.append(conversation)
            if idle.count > capacity { idle.removeFirst(idle.count - capacity) }
        }
    }
}
