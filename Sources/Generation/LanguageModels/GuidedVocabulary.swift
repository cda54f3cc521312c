import BytePairEncoding
import Foundation
import LinearAlgebra
import LlamaDecoder
import Synchronization

/// A model's vocabulary as a trie of its tokens' bytes, for masking: walking the trie from the
/// grammar's state visits each prefix once and drops a whole subtree at its first refused byte.
///
/// Control tokens (`<|im_end|>` …) are not in it: a guided response never writes one, except the
/// stop tokens, which the mask allows exactly when the value is whole.
final class GuidedVocabulary: Sendable {
    /// Per trie node: its first edge in `edgeBytes`/`edgeTargets`, and its edge count.
    private let firstEdge: [Int32]
    private let edgeCount: [UInt16]
    private let edgeBytes: [UInt8]
    private let edgeTargets: [Int32]
    /// Per trie node: the tokens whose bytes end there (`tokenStart[n] ..< tokenStart[n + 1]` in `tokenIDs`).
    private let tokenStart: [Int32]
    private let tokenIDs: [Int32]
    /// Tokens that leave a free string (no pattern) where it was: printable ASCII but `"` and `\`,
    /// and whole UTF-8 characters. Inside such a string these are allowed without a walk.
    let plainStringTokens: [UInt64]
    /// The trie of every other token, walked inside a free string.
    private let otherRoot: Int32
    /// The plain tokens' scalars, for strings with a pattern: token `plainIDs[k]` has
    /// `plainScalars[plainStart[k] ..< plainStart[k + 1]]`.
    private let plainIDs: [Int32]
    private let plainStart: [Int32]
    private let plainScalars: [UInt32]
    /// The vocabulary's size and its stop tokens.
    let size: Int
    let stopTokenIDs: Set<Int>

    /// The vocabulary of `model`, built once per model.
    static func of(_ model: LlamaModel) -> GuidedVocabulary {
        let key = ObjectIdentifier(model)
        return cache.withOrderedLock { cache in
            if let built = cache[key]?.vocabulary, cache[key]?.model === model { return built }
            let built = GuidedVocabulary(model)
            cache[key] = (model, built)
            return built
        }
    }
    private static let cache = Mutex<[ObjectIdentifier: (model: LlamaModel, vocabulary: GuidedVocabulary)]>([:])

    private init(_ model: LlamaModel) {
        let tokenizer = model.tokenizer
        size = tokenizer.vocabularySize
        stopTokenIDs = model.stopTokenIDs
        var plain = [UInt64](repeating: 0, count: (size + 63) / 64)
        var all: [(bytes: ArraySlice<UInt8>, id: Int)] = []
        var others: [(bytes: ArraySlice<UInt8>, id: Int)] = []
        for id in 0..<size where !tokenizer.isControl(id) && !model.stopTokenIDs.contains(id) {
            let bytes = tokenizer.bytes(for: id)
            guard !bytes.isEmpty else { continue }
            all.append((bytes, id))
            if Self.isPlain(bytes) { plain[id >> 6] |= 1 << UInt64(id & 63) } else { others.append((bytes, id)) }
        }
        plainStringTokens = plain
        var plainIDs: [Int32] = []
        var plainStart: [Int32] = [0]
        var plainScalars: [UInt32] = []
        for (bytes, id) in all where plain[id >> 6] >> UInt64(id & 63) & 1 != 0 {
            plainIDs.append(Int32(id))
            plainScalars.append(contentsOf: String(decoding: bytes, as: UTF8.self).unicodeScalars.map(\.value))
            plainStart.append(Int32(plainScalars.count))
        }
        (self.plainIDs, self.plainStart, self.plainScalars) = (plainIDs, plainStart, plainScalars)
        // Two tries in one node table: every token's from node 0, the others' from `otherRoot`.
        var children: [[(UInt8, Int32)]] = [[]]
        var ends: [[Int32]] = [[]]
        func insert(_ tokens: [(bytes: ArraySlice<UInt8>, id: Int)], root: Int32) {
            for (bytes, id) in tokens {
                var node = root
                for byte in bytes {
                    if let edge = children[Int(node)].first(where: { $0.0 == byte }) {
                        node = edge.1
                    } else {
                        children.append([])
                        ends.append([])
                        let made = Int32(children.count - 1)
                        children[Int(node)].append((byte, made))
                        node = made
                    }
                }
                ends[Int(node)].append(Int32(id))
            }
        }
        insert(all, root: 0)
        children.append([])
        ends.append([])
        otherRoot = Int32(children.count - 1)
        insert(others, root: otherRoot)
        var firstEdge: [Int32] = []
        var edgeCount: [UInt16] = []
        var edgeBytes: [UInt8] = []
        var edgeTargets: [Int32] = []
        var tokenStart: [Int32] = []
        var tokenIDs: [Int32] = []
        for node in children.indices {
            let sorted = children[node].sorted { $0.0 < $1.0 }
            firstEdge.append(Int32(edgeBytes.count))
            edgeCount.append(UInt16(sorted.count))
            edgeBytes.append(contentsOf: sorted.map(\.0))
            edgeTargets.append(contentsOf: sorted.map(\.1))
            tokenStart.append(Int32(tokenIDs.count))
            tokenIDs.append(contentsOf: ends[node])
        }
        tokenStart.append(Int32(tokenIDs.count))
        (self.firstEdge, self.edgeCount, self.edgeBytes, self.edgeTargets) = (
            firstEdge, edgeCount, edgeBytes, edgeTargets
        )
        (self.tokenStart, self.tokenIDs) = (tokenStart, tokenIDs)
    }

    /// Whether `bytes` inside a string without a pattern leave it as it was.
    private static func isPlain(_ bytes: ArraySlice<UInt8>) -> Bool {
        var scan = StringScan(phase: .body)
        for byte in bytes {
            guard case .open(let next) = scan.read(byte, pattern: nil) else { return false }
            scan = next
        }
        return scan.phase == .body
    }

    /// The tokens that keep `state` of `grammar` completable, as bits (stop tokens not included).
    /// Inside a string, the plain tokens are decided without walking the trie: all of them in a
    /// free string, and by `plainTokens(pattern, state)` (which the caller may cache) in a string
    /// with a pattern; the trie of the others is walked.
    func allowedTokens(
        _ state: JSONGrammar.State, _ grammar: JSONGrammar,
        plainTokens: (_ node: Int32, _ pattern: GuidedPattern, _ state: Int32) -> [UInt64]
    ) -> [UInt64] {
        if state.stacks.count == 1, let top = state.stacks[0].last, case .string(let scan) = top.phase,
            scan.phase == .body, case .string(let pattern) = grammar.nodes[Int(top.node)]
        {
            var bits = pattern.map { plainTokens(top.node, $0, scan.pattern) } ?? plainStringTokens
            walk(otherRoot, state, grammar, &bits)
            return bits
        }
        return allowedTokens(grammar, from: state)
    }

    /// The plain tokens whose characters `pattern` reads from `state` without leaving every match behind.
    func plainTokens(_ pattern: GuidedPattern, from state: Int32) -> [UInt64] {
        var bits = [UInt64](repeating: 0, count: (size + 63) / 64)
        for k in plainIDs.indices {
            var at = state
            for i in Int(plainStart[k])..<Int(plainStart[k + 1]) {
                at = pattern.advance(at, plainScalars[i])
                if at < 0 { break }
            }
            if at >= 0 {
                let id = Int(plainIDs[k])
                bits[id >> 6] |= 1 << UInt64(id & 63)
            }
        }
        return bits
    }

    /// The tokens `automaton` reads whole from `state`, as bits: the trie of every token (stop
    /// and control tokens are not in it) walked from its root, each prefix advanced once.
    func allowedTokens<A: ByteAutomaton>(_ automaton: A, from state: A.State) -> [UInt64] {
        var bits = [UInt64](repeating: 0, count: (size + 63) / 64)
        walk(0, state, automaton, &bits)
        return bits
    }

    private func walk<A: ByteAutomaton>(_ node: Int32, _ state: A.State, _ automaton: A, _ bits: inout [UInt64]) {
        let first = Int(firstEdge[Int(node)])
        for e in first..<(first + Int(edgeCount[Int(node)])) {
            guard let next = automaton.step(state, edgeBytes[e]) else { continue }
            let child = Int(edgeTargets[e])
            for t in Int(tokenStart[child])..<Int(tokenStart[child + 1]) {
                let id = Int(tokenIDs[t])
                bits[id >> 6] |= 1 << UInt64(id & 63)
            }
            walk(Int32(child), next, automaton, &bits)
        }
    }
}

/// What a mask is computed with: a state advanced one byte at a time, each byte either taken
/// (the next state) or refused (nil). `GuidedVocabulary` walks its trie with one, so every mask
/// — a guided value's (`JSONGrammar`), a tool call's opening (`ToolCallConstraint`) — is the same
/// walk, and a token is allowed exactly when all of its bytes are taken.
protocol ByteAutomaton {
    associatedtype State
    /// The state after `byte`, or nil when `byte` is refused.
    func step(_ state: State, _ byte: UInt8) -> State?
}

extension JSONGrammar: ByteAutomaton {
    func step(_ state: State, _ byte: UInt8) -> State? {
        let next = advance(state, byte)
        return next.isDead ? nil : next
    }
}

/// Guided generation's `TokenConstraint`: a grammar's state, advanced by each chosen token, and
/// the mask of the tokens that keep it completable, computed before every step.
package final class GuidedDecoding: TokenConstraint {
    let grammar: JSONGrammar
    let vocabulary: GuidedVocabulary
    let tokenizer: BytePairTokenizer
    private(set) var state: JSONGrammar.State
    /// Masks already computed, by state (a free string, an array's next element … recur).
    package var cachesMasks = true
    private var masks: [JSONGrammar.State: [UInt64]] = [:]
    /// Plain tokens a pattern allows, by string node and pattern state.
    private var plainMasks: [Int64: [UInt64]] = [:]
    private static let maximumCachedMasks = 512
    /// Time spent masking, and the steps masked.
    package private(set) var maskSeconds = 0.0
    package private(set) var maskedSteps = 0

    package init(grammar: JSONGrammar, model: LlamaModel) {
        self.grammar = grammar
        vocabulary = GuidedVocabulary.of(model)
        tokenizer = model.tokenizer
        state = grammar.initialState
    }

    /// Starts from `state` of the grammar (the bytes that led there already written).
    func start(at state: JSONGrammar.State) { self.state = state }

    package var isFinished: Bool { grammar.isFinished(state) }

    /// Whether the text so far is a whole value.
    package var isComplete: Bool { grammar.accepts(state) }

    package func mask(_ logits: UnsafeMutableBufferPointer<Float>) -> Bool {
        let started = DispatchTime.now().uptimeNanoseconds
        defer {
            maskSeconds += Double(DispatchTime.now().uptimeNanoseconds - started) * 1e-9
            maskedSteps += 1
        }
        let bits: [UInt64]
        if cachesMasks, let cached = masks[state] {
            bits = cached
        } else {
            bits = vocabulary.allowedTokens(state, grammar) { node, pattern, at in
                let key = Int64(node) << 32 | Int64(at)
                if cachesMasks, let cached = plainMasks[key] { return cached }
                let made = vocabulary.plainTokens(pattern, from: at)
                plainMasks[key] = made
                return made
            }
            if masks.count >= Self.maximumCachedMasks { masks.removeAll(keepingCapacity: true) }
            masks[state] = bits
        }
        // Stop tokens are never in the trie: they keep their logits exactly when the value is whole.
        let saved =
            grammar.accepts(state) ? vocabulary.stopTokenIDs.filter { $0 < logits.count }.map { ($0, logits[$0]) } : []
        var any = false
        for id in 0..<logits.count {
            if id < vocabulary.size, bits[id >> 6] >> UInt64(id & 63) & 1 != 0 {
                any = any || logits[id] > -.infinity
            } else {
                logits[id] = -.infinity
            }
        }
        for (id, logit) in saved {
            logits[id] = logit
            any = any || logit > -.infinity
        }
        return any
    }

    package func accept(_ token: Int) {
        guard !vocabulary.stopTokenIDs.contains(token) else { return }
        state = grammar.advance(state, tokenizer.bytes(for: token))
    }
}
