import CommandLineOptions
import Foundation
import LinearAlgebra
import LlamaDecoder
import Retrieval

/// `embeddings-bench perplexity` and `embeddings-bench generate`: the local language model's
/// quality and speed, in the shapes llama.cpp reports them (Benchmarks/peers runs llama.cpp on the
/// same file and the same text).
enum GenerationBenchOptions {
    static let model = Option<String>(
        "--model", valueName: "id|file", help: "With perplexity, generate, ask: a GGUF file or a known language model.",
        defaultDescription: DecoderCatalog.defaultModel.identifier.split(separator: "/").last.map(String.init))
    static let quantize = Option<LlamaModel.Precision>(
        "--quantize", valueName: "q", help: "With perplexity, generate: how the language model holds its weights.",
        default: .native)
    static let threads = Option<Int>(
        "--threads", valueName: "n", help: "With generate, ask: threads per forward pass.", default: 2, range: 1...256)
    static let promptTokens = Option<Int>(
        "--prompt-tokens", valueName: "n", help: "With generate: prompt length.", default: 512, range: 1...8192)
    static let tokens = Option<Int>(
        "--tokens", valueName: "n", help: "With generate: tokens generated.", default: 128, range: 1...8192)
    static let window = Option<Int>(
        "--window", valueName: "n", help: "With perplexity: tokens per window.", default: 512, range: 2...8192)
    static let compare = Flag(
        "--compare",
        help: "With perplexity: also score with float32 and report top-1 agreement and the perplexity ratio.")
}

enum PerplexityCommand: CommandDescription {
    static let name = "perplexity"
    static let abstract = "The language model's perplexity of a text (windows of 512 tokens, no BOS)."
    static var options: [any OptionDeclaration] {
        [
            GenerationBenchOptions.model, GenerationBenchOptions.quantize, GenerationBenchOptions.window,
            GenerationBenchOptions.compare,
            BenchOptions.json,
        ]
    }
    static let arguments = [
        Argument("<file>", usage: "[<file>]", help: "A UTF-8 text file (default: the built-in lessons, concatenated).")
    ]
}

enum GenerateBenchCommand: CommandDescription {
    static let name = "generate"
    static let abstract = "The language model's prompt processing and generation speed, and peak memory."
    static var options: [any OptionDeclaration] {
        [
            GenerationBenchOptions.model, GenerationBenchOptions.quantize, GenerationBenchOptions.threads,
            GenerationBenchOptions.promptTokens,
            GenerationBenchOptions.tokens, BenchOptions.json,
        ]
    }
}

/// The GGUF file `--model` names (installing a known model when missing).
func languageModelFile(_ parsed: ParsedArguments) throws -> URL {
    let value = parsed[GenerationBenchOptions.model] ?? DecoderCatalog.defaultModel.identifier
    if let descriptor = DecoderCatalog.descriptor(for: value) {
        return try reporting { try descriptor.install { FileHandle.standardError.write(Data(($0 + "\n").utf8)) } }
    }
    guard FileManager.default.fileExists(atPath: value) else {
        throw CLIError.noInput("\(value): no such GGUF file or known model")
    }
    return URL(fileURLWithPath: value)
}

/// The built-in lessons' Markdown, concatenated in path order: the perplexity text by default
/// (the same text Fixtures/generation/generate.py scores with transformers).
func lessonsText() throws -> String {
    let folder = defaultCorpus()
    let files =
        (FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? [])
        .filter { $0.pathExtension == "md" }
        .map { $0.path }
        .sorted()
    guard !files.isEmpty else { throw CLIError.noInput("no Markdown under \(folder.path)") }
    return try files.map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
}

func runPerplexity(_ parsed: ParsedArguments) throws {
    guard parsed.positionals.count <= 1 else {
        throw CLIError.usage("usage: \(PerplexityCommand.usage(program: "embeddings-bench"))")
    }
    let text =
        try parsed.positionals.first.map { path in
            try reporting(as: CLIError.noInput) { try String(contentsOfFile: path, encoding: .utf8) }
        } ?? lessonsText()
    let url = try languageModelFile(parsed)
    let precision = try parsed.value(GenerationBenchOptions.quantize)
    let window = try parsed.value(GenerationBenchOptions.window)
    print("## embeddings-bench perplexity\n\n\(Machine.current().markdown)\n")
    func measure(_ precision: LlamaModel.Precision) throws -> (TokenScores, Double) {
        let model = try reporting(as: CLIError.data) { try LlamaModel(contentsOf: url, precision: precision) }
        let ids = model.tokenizer.tokenizeWithoutSpecialTokens(text).map(\.id)
        let started = Date()
        let scores = try reporting { try model.score(ids, window: window) }
        return (scores, Date().timeIntervalSince(started))
    }
    let (scores, seconds) = try measure(precision)
    var rows = [
        [
            precision.rawValue, "\(scores.tokens.count)", "\(scores.scoredCount)",
            String(format: "%.4f", scores.perplexity),
            String(format: "%.4f", scores.accuracy), String(format: "%.1f", Double(scores.tokens.count) / seconds),
        ]
    ]
    var figures: [String: Double] = [
        "perplexity": scores.perplexity, "tokens": Double(scores.tokens.count), "seconds": seconds,
    ]
    if parsed[GenerationBenchOptions.compare], precision != .float32 {
        let (reference, referenceSeconds) = try measure(.float32)
        rows.append([
            "float32", "\(reference.tokens.count)", "\(reference.scoredCount)",
            String(format: "%.4f", reference.perplexity),
            String(format: "%.4f", reference.accuracy),
            String(format: "%.1f", Double(reference.tokens.count) / referenceSeconds),
        ])
        var agree = 0
        var scored = 0
        for (a, b) in zip(scores.predictions, reference.predictions) {
            guard let a, let b else { continue }
            scored += 1
            if a == b { agree += 1 }
        }
        let agreement = Double(agree) / Double(max(1, scored))
        figures["top1_agreement_with_float32"] = agreement
        figures["perplexity_ratio_to_float32"] = scores.perplexity / reference.perplexity
        print(
            String(
                format: "%@ against float32: top-1 agreement %.4f, perplexity ratio %.4f\n", precision.rawValue,
                agreement,
                scores.perplexity / reference.perplexity))
    }
    print(table(["Precision", "Tokens", "Scored", "Perplexity", "Top-1 = text", "Tokens/s"], rows))
    if let path = parsed[BenchOptions.json] { try writeFigures(figures, to: path) }
}

func runGenerateBench(_ parsed: ParsedArguments) throws {
    try expectNoArguments(parsed)
    let url = try languageModelFile(parsed)
    let precision = try parsed.value(GenerationBenchOptions.quantize)
    let threads = try parsed.value(GenerationBenchOptions.threads)
    let promptLength = try parsed.value(GenerationBenchOptions.promptTokens)
    let generated = try parsed.value(GenerationBenchOptions.tokens)
    let loadStart = Date()
    let model = try reporting(as: CLIError.data) {
        try LlamaModel(contentsOf: url, precision: precision, threadCount: threads)
    }
    let loadSeconds = Date().timeIntervalSince(loadStart)
    // The prompt: the lessons' first tokens, so that the text is real and the same for every run.
    let ids = Array(model.tokenizer.tokenizeWithoutSpecialTokens(try lessonsText()).map(\.id).prefix(promptLength))
    guard ids.count == promptLength else { throw CLIError.data("the lessons have only \(ids.count) tokens") }
    let sequence = try reporting {
        try model.makeSequence(contextSize: min(model.configuration.contextLength, promptLength + generated))
    }
    let promptStart = Date()
    var logits = try reporting { try sequence.append(ids) }
    let promptSeconds = Date().timeIntervalSince(promptStart)
    // Generation: the most likely token each step, whatever it is (a stop token does not end the run),
    // so that every run does the same work.
    let decodeStart = Date()
    for _ in 0..<generated {
        let next = logits.withUnsafeBufferPointer { Sampler.argmax($0) }
        logits = try reporting { try sequence.append([next]) }
    }
    let decodeSeconds = Date().timeIntervalSince(decodeStart)
    let peak = peakResidentBytes()
    print("## embeddings-bench generate\n\n\(Machine.current().markdown)\n")
    print(
        "\(model.name), \(precision.rawValue), \(threads) threads; weights \(model.weightByteCount >> 20) MiB; loaded in \(String(format: "%.2f", loadSeconds)) s\n"
    )
    print(
        table(
            ["Test", "Tokens", "Seconds", "Tokens/s"],
            [
                [
                    "prompt (pp\(promptLength))", "\(promptLength)", String(format: "%.3f", promptSeconds),
                    String(format: "%.1f", Double(promptLength) / promptSeconds),
                ],
                [
                    "generation (tg\(generated))", "\(generated)", String(format: "%.3f", decodeSeconds),
                    String(format: "%.1f", Double(generated) / decodeSeconds),
                ],
            ]))
    print("peak RSS: \(peak >> 20) MiB")
    // The bound of decoding from memory: every weight byte read once per token. Measured after the
    // peak above, since its buffer is as large as the weights.
    let bandwidth = TopKBench.readBandwidth(bytes: model.weightByteCount, threads: threads, repeats: 3)
    let limit = bandwidth / Double(model.weightByteCount)
    let decodeRate = Double(generated) / decodeSeconds
    print(
        "read bandwidth \(String(format: "%.1f", bandwidth / 1e9)) GB/s (\(threads) threads, a pass over \(model.weightByteCount >> 20) MiB): weight bytes per token ÷ bandwidth = \(String(format: "%.1f", limit)) tokens/s; generation at \(String(format: "%.0f", 100 * decodeRate / limit))% of it"
    )
    if let path = parsed[BenchOptions.json] {
        try writeFigures(
            [
                "prompt_tokens_per_second": Double(promptLength) / promptSeconds,
                "generation_tokens_per_second": decodeRate,
                "peak_rss_bytes": Double(peak), "load_seconds": loadSeconds, "threads": Double(threads),
                "weight_bytes": Double(model.weightByteCount), "read_bandwidth_bytes_per_second": bandwidth,
                "bandwidth_limit_tokens_per_second": limit,
            ], to: path)
    }
}

/// Writes `{"machine": {...}, "figures": {...}}` for scripts (Benchmarks/peers reads it).
func writeFigures(_ figures: [String: Double], to path: String) throws {
    let object: [String: Any] = ["machine": Machine.current().dictionary, "figures": figures]
    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
    try reporting { try data.write(to: URL(fileURLWithPath: path)) }
}
