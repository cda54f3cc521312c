import Answering
import CommandLineOptions
import Foundation
import LanguageModels
import Retrieval

/// `embeddings-bench ask`: the answer step end to end (`AnsweringSession`, what `embeddings ask`
/// runs) on the built-in lessons: time to first token and decode tokens/s per question.
enum AskBenchCommand: CommandDescription {
    static let name = "ask"
    static let abstract = "Time to first token and tokens/s of 'embeddings ask' on the built-in corpus."
    static let questions = Option<Int>(
        "--questions", valueName: "n", help: "With ask: on-topic questions of the built-in evaluation set asked.",
        default: 10, range: 1...1_000)
    static let tokens = Option<Int>(
        "--tokens", valueName: "n", help: "With ask: the most tokens per answer.", default: 128, range: 1...8192)
    static var options: [any OptionDeclaration] {
        [GenerationBenchOptions.model, GenerationBenchOptions.threads, questions, tokens, BenchOptions.json]
    }
}

func runAskBench(_ parsed: ParsedArguments) async throws {
    try expectNoArguments(parsed)
    let count = try parsed.value(AskBenchCommand.questions)
    let tokens = try parsed.value(AskBenchCommand.tokens)
    let threads = try parsed.value(GenerationBenchOptions.threads)
    let url = try languageModelFile(parsed)
    let set = try reporting(as: CLIError.noInput) {
        try EvaluationSet(contentsOf: repositoryFolder.appendingPathComponent("Fixtures/eval/swift-lessons.json"))
    }
    let questions = Array(set.cases.filter { !$0.expected.isEmpty }.map(\.question).prefix(count))
    // Setup, outside the timed region: the corpus indexed with the real encoder, the model loaded
    // by one answer that is not counted.
    let store = EmbeddingStore(embedding: try loadModel())
    _ = try reporting { try store.index(folder: defaultCorpus()) }
    let model = SystemLanguageModel(contentsOf: url, threadCount: threads)
    var configuration = AnsweringSession.Configuration()
    configuration.options = GenerationOptions(sampling: .greedy, maximumResponseTokens: tokens)
    let warmUp = try await AnsweringSession(store: store, model: model, configuration: configuration).answer(
        to: questions[0])
    guard case .context = warmUp.grounding else {
        throw CLIError.failure("the warm-up answer was not grounded: \(warmUp.grounding)")
    }

    var rows = [[String]]()
    var retrieval = [Double]()
    var firstToken = [Double]()
    var rates = [Double]()
    var promptTokens = [Double]()
    var answerTokens = [Double]()
    for question in questions {
        // A new session per question: one question each, no history, as `embeddings ask` runs.
        let answer = try await AnsweringSession(store: store, model: model, configuration: configuration).answer(
            to: question)
        let metrics = answer.metrics
        guard case .context = answer.grounding, let first = metrics.firstTokenSeconds,
            let prompt = metrics.promptTokens,
            let generated = metrics.answerTokens
        else { throw CLIError.failure("\(question): no grounded answer (\(answer.grounding))") }
        retrieval.append(metrics.retrievalSeconds)
        firstToken.append(first)
        promptTokens.append(Double(prompt))
        answerTokens.append(Double(generated))
        if let rate = metrics.tokensPerSecond { rates.append(rate) }
        rows.append([
            String(question.prefix(48)), "\(answer.sources.count)", "\(prompt)", "\(generated)",
            String(format: "%.3f", metrics.retrievalSeconds), String(format: "%.3f", first),
            metrics.tokensPerSecond.map { String(format: "%.1f", $0) } ?? "–",
        ])
    }
    func median(_ xs: [Double]) -> Double {
        let sorted = xs.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
    print("## embeddings-bench ask\n\n\(Machine.current().markdown)\n")
    print(
        "\(model.identifier), \(threads) threads, greedy, at most \(tokens) tokens per answer; hybrid retrieval (MiniLM) on the built-in lessons, context budget \(configuration.context.budget) characters; \(questions.count) questions of Fixtures/eval/swift-lessons.json, one session each, after one warm-up answer.\n"
    )
    print(
        table(
            ["Question", "Sources", "Prompt tokens", "Answer tokens", "Retrieval s", "First token s", "Tokens/s"], rows)
    )
    print(
        String(
            format:
                "median: retrieval %.3f s, time to first token %.3f s (prompt %.0f tokens), %.1f tokens/s (answers of %.0f tokens)",
            median(retrieval), median(firstToken), median(promptTokens), median(rates), median(answerTokens)))
    if let path = parsed[BenchOptions.json] {
        try writeFigures(
            [
                "median_retrieval_seconds": median(retrieval), "median_first_token_seconds": median(firstToken),
                "median_tokens_per_second": median(rates), "median_prompt_tokens": median(promptTokens),
                "median_answer_tokens": median(answerTokens), "questions": Double(questions.count),
                "threads": Double(threads),
            ], to: path)
    }
}
