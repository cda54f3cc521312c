import CommandLineOptions
import Foundation
import JSONText
import LanguageModels
import LlamaDecoder

/// `embeddings generate`: a local language model continues a prompt, streaming the text.
struct GenerateCommand: Command {
    static let name = "generate"
    static let abstract = "Continue a prompt with a local language model (GGUF), streaming the text."
    static let arguments = [
        Argument("<prompt>", usage: "<prompt> ...", help: "The prompt (words are joined with spaces).")
    ]

    static let chat = Flag(
        "--chat", help: "Wrap the prompt in the model's chat template as a user message, and answer as the assistant.")
    static let system = Option<String>(
        "--system", valueName: "text", help: "With --chat: the system message (default: the template's own, if any).")
    static let maxTokens = Option<Int>(
        "--max-tokens", valueName: "n", help: "The most tokens to generate.", default: 256, range: 1...1_000_000)
    // The sampling defaults are GenerationOptions' (the sessions', `ask`'s and the server's too).
    static let temperature = Option<Float>(
        "--temperature", valueName: "t", help: "Sampling temperature; 0 picks the most likely token.",
        default: Float(GenerationOptions.defaultTemperature)
    ) { text in
        guard let value = Float(text), value.isFinite, value >= 0, value <= 100 else {
            throw CLIError.usage("--temperature must be a number from 0 to 100, got '\(text)'")
        }
        return value
    }
    static let topK = Option<Int>(
        "--top-k", valueName: "k", help: "Sample among the k most likely tokens.", defaultDescription: "all",
        range: 1...1_000_000)
    static let topP = Option<Float>(
        "--top-p", valueName: "p", help: "Sample among the most likely tokens whose probabilities add up to p.",
        default: Float(GenerationOptions.defaultProbabilityThreshold)
    ) { text in
        guard let value = Float(text), value > 0, value <= 1 else {
            throw CLIError.usage("--top-p must be a number in (0, 1], got '\(text)'")
        }
        return value
    }
    static let seed = Option<UInt64>(
        "--seed", valueName: "n", help: "The random seed: the same seed gives the same text.",
        defaultDescription: "random"
    ) { text in
        guard let value = UInt64(text) else {
            throw CLIError.usage("--seed must be an integer from 0 to \(UInt64.max), got '\(text)'")
        }
        return value
    }
    static let greedy = Flag("--greedy", help: "Always take the most likely token (the same as --temperature 0).")
    static let json = SharedOptions.json.with(
        help:
            "Print one JSON object (prompt and answer token ids, text, stop reason, timings) instead of streaming text."
    )

    static var options: [any OptionDeclaration] {
        [
            LanguageModelOption.model, chat, system, maxTokens, temperature, topK, topP, seed, greedy,
            LanguageModelOption.quantize, LanguageModelOption.chatTemplate, json,
        ]
    }

    let parsed: ParsedArguments
    let prompt: String
    let sampling: SamplingParameters

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        guard !parsed.positionals.isEmpty else { throw CLIError.usage("missing <prompt>") }
        prompt = parsed.positionals.joined(separator: " ")
        if parsed.contains(Self.system), !parsed[Self.chat] {
            throw CLIError.usage("\(Self.system.name) goes with \(Self.chat.name)")
        }
        if parsed[Self.greedy], parsed.contains(Self.temperature) {
            throw CLIError.usage("\(Self.greedy.name) and \(Self.temperature.name) conflict")
        }
        if parsed[Self.greedy] {
            sampling = .greedy
        } else {
            let (temperature, topK, topP) = (
                try parsed.value(Self.temperature), parsed[Self.topK], try parsed.value(Self.topP)
            )
            sampling = try decoding { () throws(LlamaDecoderError) in
                try SamplingParameters(temperature: temperature, topK: topK, topP: topP, seed: parsed[Self.seed])
            }
        }
    }

    func run() throws {
        let clock = ContinuousClock()
        let started = clock.now
        let model = try LanguageModelOption.load(parsed)
        let loaded = clock.now - started
        let ids: [Int]
        if parsed[Self.chat] {
            let system = parsed[Self.system]
            ids = try decoding { () throws(LlamaDecoderError) in
                try model.chatPrompt([.init(role: .user, content: prompt)], system: system).ids
            }
        } else {
            // The file's own begin (and end) tokens, as llama.cpp adds them to a plain prompt: Gemma's
            // and Llama's answers depend on the <bos> their training put first.
            let tokenized = model.tokenizer.tokenize(prompt)
            guard !tokenized.isTruncated else {
                throw CLIError.usage(
                    "the prompt is longer than the model's \(model.configuration.contextLength)-token context")
            }
            ids = tokenized.tokens.map(\.id)
        }
        guard !ids.isEmpty else { throw CLIError.usage("the prompt has no tokens") }
        let json = parsed[Self.json]
        let maximumTokens = try parsed.value(Self.maxTokens)
        let sampling = self.sampling
        let generation = try decoding { () throws(LlamaDecoderError) in
            try model.generate(
                prompt: ids, in: try model.makeSequence(), maximumTokens: maximumTokens, sampling: sampling
            ) { piece in
                if !json, !piece.isEmpty {
                    Output.standard.write(piece)
                    Output.standard.flush()
                }
                return true
            }
        }
        if json {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("model", model.name)
            writer.field("prompt", prompt)
            writer.key("prompt_tokens")
            writer.integers(generation.promptTokens)
            writer.key("tokens")
            writer.integers(generation.tokens)
            writer.field("text", generation.text)
            writer.field("stop_reason", generation.stopReason.rawValue)
            let loadSeconds = Double(loaded.components.seconds) + Double(loaded.components.attoseconds) * 1e-18
            writer.key("timings")
            writer.beginObject()
            writer.key("load_seconds")
            writer.double(loadSeconds)
            writer.key("prompt_seconds")
            writer.double(generation.promptSeconds)
            writer.key("generation_seconds")
            writer.double(generation.generationSeconds)
            writer.key("prompt_tokens_per_second")
            writer.double(generation.promptTokensPerSecond)
            // The first token comes from the prompt's logits: the rate counts the decode steps after it.
            writer.field("decode_steps", generation.decodeSteps)
            writer.key("tokens_per_second")
            writer.double(generation.tokensPerSecond)
            writer.endObject()
            writer.endObject()
            Output.standard.write(writer.text + "\n")
        } else {
            Output.standard.write("\n")
        }
        Output.standard.flush()
    }
}
