import Dispatch
import Foundation
import LinearAlgebra
import LlamaDecoder
import ModelTestSupport
import Synchronization
import XCTest

/// One loaded model serves several sequences at once: each gets, bit for bit, what it gets alone.
final class DecoderConcurrencyTests: XCTestCase {
    func testSequencesOnManyThreadsMatchOneAtATime() throws {
        let model = try TestLanguageModel.shared()
        let prompts = [
            "The capital of France is", "def fibonacci(n):", "Los gatos son", "1, 2, 3, 4,", "Water boils at",
            "Swift arrays are",
        ]
        let alone = try prompts.map { prompt -> [Int] in
            let ids = model.tokenizer.tokenizeWithoutSpecialTokens(prompt).map(\.id)
            return try model.generate(prompt: ids, in: model.makeSequence(), maximumTokens: 12, sampling: .greedy)
                .tokens
        }
        let results = Mutex([[Int]?](repeating: nil, count: prompts.count * 2))
        DispatchQueue.concurrentPerform(iterations: prompts.count * 2) { i in
            let prompt = prompts[i % prompts.count]
            let ids = model.tokenizer.tokenizeWithoutSpecialTokens(prompt).map(\.id)
            let tokens = try? model.generate(
                prompt: ids, in: model.makeSequence(), maximumTokens: 12, sampling: .greedy
            ).tokens
            results.withOrderedLock { $0[i] = tokens }
        }
        let together = results.withOrderedLock { $0 }
        for i in together.indices {
            XCTAssertEqual(together[i], alone[i % prompts.count], prompts[i % prompts.count])
        }
    }
}
