import ChatTemplates
import CommandLineOptions
import Foundation
import LanguageModels
import LlamaDecoder

/// `embeddings-bench guided`: what enforcing a schema while decoding costs — the mask's time per
/// token, and guided against free decoding speed from the same prompt on the same model.
enum GuidedBenchCommand: CommandDescription {
    static let name = "guided"
    static let abstract = "Guided generation's cost: mask time per token, guided vs free decoding tokens/s."
    static var options: [any OptionDeclaration] {
        [
            GenerationBenchOptions.model, GenerationBenchOptions.quantize, GenerationBenchOptions.threads,
            BenchOptions.json,
        ]
    }
}

/// The schemas timed: the shapes a retrieval app asks for.
private let guidedCases: [(name: String, prompt: String, schema: GenerationSchema)] = {
    let recipe = DynamicGenerationSchema(
        name: "Recipe",
        properties: [
            .init(name: "title", schema: .init(type: String.self)),
            .init(name: "minutes", schema: .init(type: Int.self, guides: [.range(1...240)])),
            .init(name: "difficulty", schema: .init(name: "Difficulty", anyOf: ["easy", "medium", "hard"])),
            .init(
                name: "steps", schema: .init(arrayOf: .init(type: String.self), minimumElements: 2, maximumElements: 5)),
        ])
    let contact = DynamicGenerationSchema(
        name: "Contact",
        properties: [
            .init(name: "name", schema: .init(type: String.self, guides: [.pattern("[A-Z][a-z]+ [A-Z][a-z]+")])),
            .init(name: "phone", schema: .init(type: String.self, guides: [.pattern(#"\d{3}-\d{3}-\d{4}"#)])),
            .init(name: "email", schema: .init(type: String.self, guides: [.pattern(#"[a-z]+@[a-z]+\.(com|org)"#)])),
            .init(name: "note", schema: .init(type: String.self), isOptional: true),
        ])
    let reading = DynamicGenerationSchema(
        name: "Reading",
        properties: [
            .init(name: "sensor", schema: .init(name: "Sensor", anyOf: ["temperature", "humidity", "pressure"])),
            .init(name: "value", schema: .init(type: Double.self, guides: [.range(-50...50)])),
            .init(name: "ok", schema: .init(type: Bool.self)),
        ])
    let readings = DynamicGenerationSchema(
        name: "Readings",
        properties: [.init(name: "readings", schema: .init(arrayOf: reading, minimumElements: 3, maximumElements: 6))])
    return [
        (
            "recipe (strings, enum, range, counted array)", "Write a short recipe for pancakes.",
            try! GenerationSchema(root: recipe, dependencies: [])
        ),
        (
            "contact (three patterns, an optional)", "Invent a contact card for a fictional person.",
            try! GenerationSchema(root: contact, dependencies: [])
        ),
        (
            "readings (array of objects, bounded doubles)", "Report a few sensor readings.",
            try! GenerationSchema(root: readings, dependencies: [])
        ),
        ("any object (json_object: recursive choice, free keys)", "Describe a cat as a JSON object.", .anyJSONObject),
    ]
}()

func runGuidedBench(_ parsed: ParsedArguments) throws {
    try expectNoArguments(parsed)
    let url = try languageModelFile(parsed)
    let precision = try parsed.value(GenerationBenchOptions.quantize)
    let threads = try parsed.value(GenerationBenchOptions.threads)
    let model = try reporting(as: CLIError.data) {
        try LlamaModel(contentsOf: url, precision: precision, threadCount: threads)
    }
    print("## embeddings-bench guided\n\n\(Machine.current().markdown)\n")
    print("\(model.name), \(precision.rawValue), \(threads) threads; greedy; at most 200 tokens per response\n")
    var rows: [[String]] = []
    var totals = (
        guidedSteps: 0, guidedSeconds: 0.0, freeSteps: 0, freeSeconds: 0.0, masked: 0, maskSeconds: 0.0,
        coldSeconds: 0.0
    )
    for (index, example) in guidedCases.enumerated() {
        let message =
            example.prompt + "\n\nRespond with JSON that follows this JSON schema:\n" + example.schema.debugDescription
        let prompt = try reporting {
            try model.chatPrompt([ChatMessage(role: .user, content: message)], addGenerationPrompt: true)
        }
        let grammar = try reporting(as: CLIError.data) { try JSONGrammar(example.schema) }
        func run(_ constraint: GuidedDecoding?, tokens: Int) throws -> Generation {
            let sequence = try reporting { try model.makeSequence(contextSize: prompt.ids.count + 256) }
            return try reporting {
                try model.generate(
                    prompt: prompt.ids, in: sequence, maximumTokens: tokens, sampling: .greedy, constraint: constraint)
            }
        }
        if index == 0 { _ = try run(nil, tokens: 8) }  // warm-up
        let guide = GuidedDecoding(grammar: grammar, model: model)
        let guided = try run(guide, tokens: 200)
        // Free decoding from the same prompt, as many steps (it may stop earlier at its own end).
        let free = try run(nil, tokens: max(guided.tokens.count, 8))
        // The mask without its cache: the same states again, each mask computed afresh.
        let cold = GuidedDecoding(grammar: grammar, model: model)
        cold.cachesMasks = false
        var logits = [Float](repeating: 0, count: model.tokenizer.vocabularySize)
        for token in guided.tokens {
            _ = logits.withUnsafeMutableBufferPointer { cold.mask($0) }
            cold.accept(token)
        }
        let valid = (try? GeneratedContent(json: guided.text)) != nil && guide.isComplete
        let maskMicro = guide.maskSeconds / Double(max(1, guide.maskedSteps)) * 1e6
        let coldMicro = cold.maskSeconds / Double(max(1, cold.maskedSteps)) * 1e6
        rows.append([
            example.name, "\(guided.tokens.count)", valid ? "yes" : "NO", String(format: "%.0f", maskMicro),
            String(format: "%.0f", coldMicro), String(format: "%.1f", guided.tokensPerSecond),
            String(format: "%.1f", free.tokensPerSecond),
            String(format: "%.3f", guided.tokensPerSecond / free.tokensPerSecond),
        ])
        totals.guidedSteps += guided.decodeSteps
        totals.guidedSeconds += guided.generationSeconds
        totals.freeSteps += free.decodeSteps
        totals.freeSeconds += free.generationSeconds
        totals.masked += guide.maskedSteps
        totals.maskSeconds += guide.maskSeconds
        totals.coldSeconds += cold.maskSeconds
        print("\(example.name): \(guided.text)\n")
    }
    let guidedRate = Double(totals.guidedSteps) / max(totals.guidedSeconds, 1e-9)
    let freeRate = Double(totals.freeSteps) / max(totals.freeSeconds, 1e-9)
    rows.append([
        "all", "", "", String(format: "%.0f", totals.maskSeconds / Double(max(1, totals.masked)) * 1e6),
        String(format: "%.0f", totals.coldSeconds / Double(max(1, totals.masked)) * 1e6),
        String(format: "%.1f", guidedRate), String(format: "%.1f", freeRate),
        String(format: "%.3f", guidedRate / freeRate),
    ])
    print(
        table(
            [
                "Schema", "Tokens", "Valid", "Mask µs/token", "Uncached µs/token", "Guided tok/s", "Free tok/s",
                "Guided / free",
            ], rows))
    if let path = parsed[BenchOptions.json] {
        try writeFigures(
            [
                "mask_microseconds_per_token": totals.maskSeconds / Double(max(1, totals.masked)) * 1e6,
                "uncached_mask_microseconds_per_token": totals.coldSeconds / Double(max(1, totals.masked)) * 1e6,
                "guided_tokens_per_second": guidedRate, "free_tokens_per_second": freeRate,
                "guided_over_free": guidedRate / freeRate,
            ], to: path)
    }
}
