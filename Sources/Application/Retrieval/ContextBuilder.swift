/// Fits retrieved chunks, and only those, into a small model's context window.
public struct ContextBuilder: Sendable {
    /// Characters of chunk text allowed in the context block.
    public var budget: Int
    /// The model's window, in tokens.
    public var windowTokens: Int
    /// Tokens kept free for the answer.
    public var answerTokens: Int

    /// A builder with these sizes; `budget` and `windowTokens` must be positive, `answerTokens`
    /// not negative.
    public init(budget: Int = 1_400, windowTokens: Int = 4_096, answerTokens: Int = 1_200) {
        precondition(budget > 0 && windowTokens > 0 && answerTokens >= 0, "ContextBuilder: bad sizes")
        self.budget = budget
        self.windowTokens = windowTokens
        self.answerTokens = answerTokens
    }

    /// The hits, in rank order, that fit the budget when taken one by one (each costs its text
    /// plus 4 characters of separator): a hit too long to fit is skipped and shorter ones after it
    /// may still get in. The top hit always gets in, even alone over budget. The returned hits
    /// are exactly the sources of the context.
    public func select(_ hits: [RetrievalHit]) -> [RetrievalHit] {
        var included = [RetrievalHit]()
        var used = 0
        for hit in hits {
            let cost = hit.chunk.text.count + 4
            if !included.isEmpty, used + cost > budget { continue }
            included.append(hit)
            used += cost
        }
        return included
    }

    /// The context block: the selected chunks separated by blank lines and `---`.
    public func context(for included: [RetrievalHit]) -> String {
        included.map(\.chunk.text).joined(separator: "\n\n---\n\n")
    }

    /// One earlier exchange of the conversation.
    public struct Exchange: Sendable, Equatable {
        /// What the user asked.
        public var question: String
        /// What the model answered.
        public var answer: String
        /// An exchange of `question` and `answer`.
        public init(question: String, answer: String) {
            self.question = question
            self.answer = answer
        }
    }

    /// The instruction line `prompt(question:included:history:countTokens:)` opens with.
    public static let groundingInstructions =
        "Answer the question using only the context. If the context does not answer it, say so."

    /// An augmented prompt, with exactly what went into it.
    public struct AugmentedPrompt: Sendable, Equatable {
        /// The prompt's text.
        public var text: String
        /// The chunks whose text is in `text`, in order: an answer's sources are these, and only
        /// these.
        public var sources: [RetrievalHit]
        /// The earlier exchanges in `text`, oldest first.
        public var history: [Exchange]
    }

    /// An augmented prompt: instructions, the last two exchanges, the context, the question.
    /// `countTokens` measures text in the model's tokens (default: characters ÷ 4, rounded up).
    /// Older history is dropped first, then the context is shortened, until the prompt and
    /// `answerTokens` fit `windowTokens`.
    public func prompt(
        question: String, included: [RetrievalHit], history: [Exchange],
        countTokens: (String) -> Int = { ($0.count + 3) / 4 }
    ) -> String {
        augmentedPrompt(
            question: question, included: included, history: history, instructions: Self.groundingInstructions,
            countTokens: countTokens
        ).text
    }

    /// The augmented prompt and what it holds: `instructions` (left out when nil, for a caller
    /// that sends them as a system message), the last two exchanges (`Q:`/`A:` lines), the
    /// `CONTEXT:` block (left out when `included` is empty: nothing was retrieved), then
    /// `QUESTION:` and `ANSWER:`. Older history is dropped first, then the last chunks, until the
    /// prompt and `answerTokens` fit `windowTokens` as `countTokens` measures them; the top hit
    /// stays even when the prompt still does not fit.
    /// - Complexity: O(p · r), p the prompt's length and r the exchanges and chunks dropped.
    public func augmentedPrompt(
        question: String, included: [RetrievalHit], history: [Exchange], instructions: String?,
        countTokens: (String) -> Int = { ($0.count + 3) / 4 }
    ) -> AugmentedPrompt {
        var exchanges = Array(history.suffix(2))
        var sources = included
        func render() -> String {
            var text = instructions.map { $0 + "\n\n" } ?? ""
            for exchange in exchanges { text += "Q: \(exchange.question)\nA: \(exchange.answer)\n\n" }
            if !sources.isEmpty { text += "CONTEXT:\n\(context(for: sources))\n\n" }
            text += "QUESTION: \(question)\nANSWER:"
            return text
        }
        var prompt = render()
        while countTokens(prompt) + answerTokens > windowTokens {
            if !exchanges.isEmpty {
                exchanges.removeFirst()
            } else if sources.count > 1 {
                sources.removeLast()
            } else {
                break
            }
            prompt = render()
        }
        return AugmentedPrompt(text: prompt, sources: sources, history: exchanges)
    }
}
