// Uses the library exactly as its documentation says: token vectors with their ranges, sentence
// vectors, distances and neighbors, one model shared by concurrent tasks. With a path to
// sentence-transformers reference vectors (Fixtures/golden/reference.json), it also checks that
// its sentence vectors equal them (cosine ≥ 0.99999) and exits 1 when they do not.
import Embeddings
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    exit(1)
}

guard let model = ContextualEmbedding(language: "en") else { fail("no model for English") }
let assets: ContextualEmbedding.AssetsResult
do { assets = try await model.requestAssets() } catch { fail("installing the model failed: \(error)") }
guard assets == .available else { fail("assets: \(assets)") }
do { try model.load() } catch { fail("loading failed: \(error)") }

// Token vectors, each tied to its range in the string.
let text = "We walked along the bank of the river."
let result: ContextualEmbeddingResult
do { result = try model.embeddingResult(for: text, language: "en") } catch { fail("\(error)") }
var tokens = 0
result.enumerateTokenVectors(in: text.startIndex..<text.endIndex) { vector, range in
    precondition(vector.count == model.dimension)
    tokens += 1
    return true
}
guard let bank = text.range(of: "bank"), let token = result.tokenVector(at: bank.lowerBound) else {
    fail("no token at 'bank'")
}
print("tokens: \(tokens); the token at 'bank' is '\(text[token.1])' with \(token.0.count) components")

// Sentence vectors, distances, neighbors.
guard let sentences = SentenceEmbedding.sentenceEmbedding(for: "en") else { fail("no sentence embedding for English") }
let near = sentences.distance(
    between: "The dog sleeps on the sofa.", and: "A puppy naps on the couch.", distanceType: .cosine)
let far = sentences.distance(
    between: "The dog sleeps on the sofa.", and: "Interest rates rose in March.", distanceType: .cosine)
guard near < far else { fail("distances out of order: \(near) ≥ \(far)") }
print(String(format: "distance: similar %.3f, unrelated %.3f", near, far))
do {
    try sentences.add([
        "Closures capture the values they use.", "Structs are copied when assigned.", "Actors protect their state.",
    ])
} catch { fail("\(error)") }
let neighbors = sentences.neighbors(for: "What does a closure keep?", maximumCount: 2, distanceType: .cosine)
guard neighbors.first?.0 == "Closures capture the values they use." else { fail("unexpected nearest: \(neighbors)") }
print("nearest: \(neighbors.map { "\($0.0) (\(String(format: "%.3f", $0.1)))" }.joined(separator: ", "))")

// One model shared by concurrent tasks.
let questions = (0..<8).map { "Question number \($0) about Swift concurrency." }
let shared = try await withThrowingTaskGroup(of: (Int, [Float]).self) { group in
    for (i, question) in questions.enumerated() {
        group.addTask { (i, try model.sentenceVector(for: question)) }
    }
    var out = [[Float]](repeating: [], count: questions.count)
    for try await (i, vector) in group { out[i] = vector }
    return out
}
for (i, question) in questions.enumerated() {
    guard let alone = sentences.vector(for: question) else { fail("no vector") }
    let dot = zip(alone, shared[i]).reduce(0.0) { $0 + $1.0 * Double($1.1) }
    guard dot > 0.99999 else { fail("task \(i) got a different vector (cosine \(dot))") }
}
print("concurrent tasks: \(questions.count) vectors equal to the sequential ones")

// The opt-in int8 encoder: chosen at creation, its vectors close to the float32 ones.
guard let int8 = ContextualEmbedding(language: "en", quantization: .int8), int8.quantization == .int8 else {
    fail("no int8 model")
}
do {
    try int8.load()
    let float = try model.sentenceVector(for: questions[0])
    let quantized = try int8.sentenceVector(for: questions[0])
    let cosine = zip(float, quantized).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
    guard cosine > 0.99, cosine < 1 else { fail("int8 cosine to float32 \(cosine)") }
    print(String(format: "int8 encoder: cosine %.4f to float32", cosine))
} catch { fail("\(error)") }

// Parity with sentence-transformers.
if CommandLine.arguments.count > 1 {
    struct Reference: Decodable {
        struct Case: Decodable {
            var text: String
            var vector: [Double]
        }
        var cases: [Case]
    }
    let url = URL(fileURLWithPath: CommandLine.arguments[1])
    guard let data = try? Data(contentsOf: url), let reference = try? JSONDecoder().decode(Reference.self, from: data)
    else {
        fail("cannot read \(url.path)")
    }
    guard let vectors = sentences.vectors(for: reference.cases.map(\.text)) else { fail("no vectors") }
    var worst = 1.0
    for (c, v) in zip(reference.cases, vectors) {
        let dot = zip(c.vector, v).reduce(0.0) { $0 + $1.0 * $1.1 }
        let norms = c.vector.reduce(0.0) { $0 + $1 * $1 }.squareRoot() * v.reduce(0.0) { $0 + $1 * $1 }.squareRoot()
        worst = min(worst, dot / norms)
    }
    print(String(format: "sentence-transformers parity: %d texts, worst cosine %.7f", reference.cases.count, worst))
    guard worst >= 0.99999 else { fail("worst cosine \(worst) < 0.99999") }
}
