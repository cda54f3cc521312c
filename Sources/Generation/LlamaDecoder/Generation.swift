import BytePairEncoding
import Foundation

/// Why a generation ended.
package enum StopReason: String, Sendable, Equatable {
    /// The model produced one of its stop tokens (end of sequence, end of turn).
    case stopToken = "stop"
    /// The requested number of tokens was reached.
    case maximumTokens = "length"
    /// The context window is full.
    case contextFull = "context"
    /// The caller's callback asked to stop.
    case cancelled
    /// The token constraint allowed no token (a constraint should never leave none).
    case constrained
}

/// Limits the tokens generation may choose, step by step: guided generation's hook.
package protocol TokenConstraint: AnyObject {
    /// Sets to −∞ the logits of the tokens that may not come next (stop tokens too, unless the
    /// output may end here).
    /// - Returns: false when no token may come next.
    func mask(_ logits: UnsafeMutableBufferPointer<Float>) -> Bool
    /// Records the token chosen.
    func accept(_ token: Int)
    /// Whether the output is whole and nothing may follow it: generation ends without sampling.
    var isFinished: Bool { get }
}

/// What a generation produced, and how long it took.
package struct Generation: Sendable {
    /// The prompt's token ids.
    package var promptTokens: [Int]
    /// The generated token ids (the stop token excluded).
    package var tokens: [Int]
    /// The generated text.
    package var text: String
    /// Why it ended.
    package var stopReason: StopReason
    /// Seconds spent on the prompt (prefill, first token's logits included).
    package var promptSeconds: Double
    /// Seconds spent generating after the prompt.
    package var generationSeconds: Double
    /// Forward passes of one token after the prompt (the first token comes from the prompt's logits).
    package var decodeSteps: Int

    /// Decode steps per second (0 when there were none).
    package var tokensPerSecond: Double { decodeSteps > 0 ? Double(decodeSteps) / max(generationSeconds, 1e-9) : 0 }
    /// Prompt tokens per second.
    package var promptTokensPerSecond: Double { Double(promptTokens.count) / max(promptSeconds, 1e-9) }
}

extension LlamaModel {
    /// Continues `prompt` (token ids) in `sequence`, streaming text to `onText` as it is produced.
    ///
    /// The prompt is appended to what the sequence already holds (so a conversation's earlier turns
    /// are not run again); generation stops at a stop token, after `maximumTokens`, when the context
    /// is full, or when `onText` returns false (asked after every token, so a caller stops
    /// generation within one token).
    /// - Parameters:
    ///   - prompt: ids to append first (at least one, unless the sequence already holds tokens).
    ///   - sequence: where the tokens go; its cache keeps them for a following call.
    ///   - maximumTokens: the most tokens to generate (≥ 1).
    ///   - sampling: how each token is chosen.
    ///   - constraint: which tokens may be chosen at each step (nil: any).
    ///   - onText: called after every generated token with the text it completes (empty while a
    ///     character is still incomplete: text only ever arrives as whole characters); returns
    ///     false to stop.
    /// - Throws: `LlamaDecoderError`: `.contextOverflow` when the prompt does not fit,
    ///   `.invalidArgument` for `maximumTokens < 1` or a bad id.
    package func generate(
        prompt: [Int], in sequence: LlamaSequence, maximumTokens: Int, sampling: SamplingParameters,
        constraint: (any TokenConstraint)? = nil, onText: (String) -> Bool = { _ in true }
    ) throws(LlamaDecoderError) -> Generation {
        guard maximumTokens >= 1 else { throw .invalidArgument("maximum tokens \(maximumTokens) must be at least 1") }
        guard sequence.model === self else { throw .invalidArgument("the sequence belongs to another model") }
        let clock = ContinuousClock()
        let started = clock.now
        var logits: [Float]
        if prompt.isEmpty {
            guard let last = sequence.tokens.last else {
                throw .invalidArgument("an empty prompt in an empty sequence")
            }
            sequence.truncate(to: sequence.count - 1)
            logits = try sequence.append([last])
        } else {
            logits = try sequence.append(prompt)
        }
        let prefilled = clock.now
        var sampler = Sampler(sampling)
        var decoder = IncrementalDecoder(tokenizer: tokenizer)
        var generated: [Int] = []
        var text = ""
        var reason = StopReason.maximumTokens
        var steps = 0
        while true {
            if let constraint {
                if constraint.isFinished {
                    reason = .stopToken
                    break
                }
                guard logits.withUnsafeMutableBufferPointer({ constraint.mask($0) }) else {
                    reason = .constrained
                    break
                }
            }
            let next = logits.withUnsafeBufferPointer { sampler.next($0) }
            if stopTokenIDs.contains(next) {
                reason = .stopToken
                break
            }
            generated.append(next)
            constraint?.accept(next)
            let piece = decoder.append(next)
            text += piece
            if !onText(piece) {
                reason = .cancelled
                break
            }
            if generated.count == maximumTokens { break }
            if sequence.count >= sequence.contextSize {
                reason = .contextFull
                break
            }
            logits = try sequence.append([next])
            steps += 1
        }
        let tail = decoder.finish()
        if !tail.isEmpty {
            text += tail
            _ = onText(tail)
        }
        let finished = clock.now
        func seconds(_ d: Duration) -> Double {
            Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
        }
        return Generation(
            promptTokens: prompt, tokens: generated, text: text, stopReason: reason,
            promptSeconds: seconds(prefilled - started), generationSeconds: seconds(finished - prefilled),
            decodeSteps: steps)
    }
}
