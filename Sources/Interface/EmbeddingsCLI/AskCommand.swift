import Answering
import CommandLineOptions
import Foundation
import JSONText
import LanguageModels
import LlamaDecoder
import Retrieval

/// `embeddings ask`: one question answered from an index or a database by a local language model,
/// streamed, then the chunks it read.
struct AskCommand: AsyncCommand {
    static let name = "ask"
    static let abstract = "Answer a question from an index with a local language model, then list the chunks it read."
    static let arguments = [
        Argument("<question>", usage: "<question> ...", help: "The question (words are joined with spaces).")
    ]

    static let json = SharedOptions.json.with(
        help:
            "Print one JSON object (answer, grounding, sources with ids, titles and scores, token counts, timings) instead of streaming text."
    )

    static var options: [any OptionDeclaration] { Asking.options + [json] }

    let asking: Asking
    let question: String
    let json: Bool

    init(parsed: ParsedArguments) throws {
        asking = try Asking(parsed: parsed)
        question = parsed.positionals.joined(separator: " ")
        guard !question.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw CLIError.usage("expected a question")
        }
        json = parsed[Self.json]
    }

    func run() async throws {
        let session = try await asking.open()
        if json {
            var last: Answer?
            try await asking.mapping {
                for try await answer in session.streamAnswer(to: question) { last = answer }
            }
            guard let last else { throw CancellationError() }
            Output.standard.write(Asking.json(last, model: session.model) + "\n")
        } else {
            try await asking.answer(question, in: session)
        }
    }
}

/// `embeddings chat`: a conversation at the prompt, one question per line of standard input, each
/// answered as `ask` answers, with the last two exchanges in every prompt.
struct ChatCommand: AsyncCommand {
    static let name = "chat"
    static let abstract = "Talk with a local language model about an index: one question per line of standard input."
    static var options: [any OptionDeclaration] { Asking.options }

    let asking: Asking

    init(parsed: ParsedArguments) throws {
        guard parsed.positionals.isEmpty else {
            throw CLIError.usage("unexpected argument '\(parsed.positionals[0])' (questions come from standard input)")
        }
        asking = try Asking(parsed: parsed)
    }

    func run() async throws {
        let session = try await asking.open()
        let interactive = isatty(0) != 0
        if interactive { Console.write("Ask about the index; end of input (Ctrl-D) ends the conversation.\n> ") }
        for await line in Self.standardInputLines() {
            let question = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if question.isEmpty {
                if interactive { Console.write("> ") }
                continue
            }
            try await asking.answer(question, in: session)
            Output.standard.write("\n")
            Output.standard.flush()
            if interactive { Console.write("> ") }
        }
    }

    /// Standard input's lines, read on a thread of its own (reading blocks).
    static func standardInputLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            Engine.start {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
        }
    }
}

/// What `ask` and `chat` share: their options, opening the store and the model, and printing an
/// answer.
struct Asking: Sendable {
    static let model = LanguageModelOption.model.with(
        help:
            "The language model: a GGUF file, or a known language model's identifier: \(DecoderCatalog.known.map(\.identifier).joined(separator: ", ")). When it is not installed ('embeddings assets install --model ...'), the answer is the search results alone."
    )
    static let maxTokens = GenerateCommand.maxTokens.with(help: "The most tokens an answer may have.")
    static let greedy = GenerateCommand.greedy.with(
        help: "Always take the most likely token (the same answer every time).")

    static var options: [any OptionDeclaration] {
        [
            OneOf(SharedOptions.index, SharedOptions.store), model, SharedOptions.k, SharedOptions.mode,
            LanguageModelOption.chatTemplate, SearchCommand.budget, maxTokens, greedy,
            SharedOptions.precision, SharedOptions.rescore, SharedOptions.efSearch, SharedOptions.tablePrefix,
        ]
    }

    let parsed: ParsedArguments
    let mode: RetrievalMode
    let configuration: AnsweringSession.Configuration

    init(parsed: ParsedArguments) throws {
        self.parsed = parsed
        mode = try StoreOption.mode(parsed)
        var configuration = AnsweringSession.Configuration()
        configuration.mode = mode
        configuration.k = try parsed.value(SharedOptions.k)
        configuration.context.budget = try parsed.value(SearchCommand.budget)
        let maximumTokens = try parsed.value(Self.maxTokens)
        configuration.options = GenerationOptions(
            sampling: parsed[Self.greedy] ? .greedy : nil, maximumResponseTokens: maximumTokens)
        configuration.context.answerTokens = maximumTokens
        self.configuration = configuration
        _ = try StoreOption.location(parsed, fileOption: SharedOptions.index)
        _ = try Self.languageModel(parsed)
    }

    /// The model `--model` names, not loaded: the default model, a known one, or a GGUF file
    /// (which must exist; a file that exists but does not load gives search results, as a
    /// missing default model does).
    static func languageModel(_ parsed: ParsedArguments) throws -> SystemLanguageModel {
        try LanguageModelOption.system(
            parsed[model], option: model.name, chatTemplate: LanguageModelOption.template(parsed))
    }

    /// The store (with its encoder, as `search` opens it; `--model` is the language model here)
    /// and a session over it, opened on a thread of their own.
    func open() async throws -> AnsweringSession {
        let parsed = parsed
        let mode = mode
        let configuration = configuration
        let model = try Self.languageModel(parsed)
        let store = try await Engine.run { () throws -> any ChunkStore in
            try StoreOption.openForSearch(parsed.removing(Self.model), mode: mode)
        }
        if case .unavailable = model.availability {
            Console.note(
                "note: \(model.identifier) is not installed ('embeddings assets install --model \(model.identifier)'): showing search results only"
            )
        }
        return AnsweringSession(store: store, model: model, configuration: configuration)
    }

    /// `body()`, its store and generation errors as the CLI reports them.
    func mapping<R>(_ body: () async throws -> R) async throws -> R {
        do { return try await body() } catch let error as LanguageModelSession.GenerationError {
            switch error {
            case .invalidGenerationOptions: throw CLIError.usage(error.description)
            default: throw CLIError.failure(error.description)
            }
        } catch {
            throw StoreOption.converted(error)
        }
    }

    /// Streams the answer to `question` on standard output, then its sources (or the search
    /// results when no model answered).
    func answer(_ question: String, in session: AnsweringSession) async throws {
        var printed = ""
        var last: Answer?
        try await mapping {
            for try await answer in session.streamAnswer(to: question) {
                last = answer
                // Snapshots hold the whole answer so far: print what is new.
                let text = answer.text
                if text.hasPrefix(printed) {
                    Output.standard.write(String(text.dropFirst(printed.count)))
                } else {
                    Output.standard.write("\n" + text)
                }
                printed = text
                Output.standard.flush()
            }
        }
        guard let last else { throw CancellationError() }
        switch last.grounding {
        case .context:
            Output.standard.write("\n\nSources:\n")
            for (i, source) in last.sources.enumerated() {
                Output.standard.write(
                    String(
                        format: "  %d. %@  (%.4f)  %@\n", i + 1, source.chunk.id, source.score,
                        Self.title(of: source.chunk)))
            }
        case .generalKnowledge:
            Output.standard.write(
                "\n\n(No source: nothing in the index matches the question; answered from general knowledge.)\n")
        case .searchOnly(let reason):
            Console.warning(reason)
            if last.hits.isEmpty { Output.standard.write("no results\n") }
            for (i, hit) in last.hits.enumerated() {
                Output.standard.write(
                    String(format: "%d. %@  (%.4f)  %@\n", i + 1, hit.chunk.id, hit.score, Self.title(of: hit.chunk)))
            }
        }
        Output.standard.flush()
    }

    /// A chunk's heading path, or its title when it has none.
    static func title(of chunk: Chunk) -> String {
        chunk.headings.isEmpty ? chunk.title : chunk.headings.joined(separator: " › ")
    }

    /// `ask --json`'s object: `{"question", "searched", "answer", "grounding"` (`context`,
    /// `general_knowledge` or `search_only`), `"reason"` (search only, else null), `"used_context",
    /// "model", "sources": [{"id", "source", "headings", "title", "score"}], "hits"` (the same
    /// fields, every hit retrieved), `"tokens": {"prompt", "answer"}, "timings": {"retrieval_seconds",
    /// "first_token_seconds", "total_seconds", "tokens_per_second"}}`; unknown figures are null.
    static func json(_ answer: Answer, model: SystemLanguageModel) -> String {
        var json = JSONWriter()
        func number(_ name: String, _ value: Int?) {
            json.key(name)
            if let value { json.integer(value) } else { json.null() }
        }
        func number(_ name: String, _ value: Double?) {
            json.key(name)
            if let value { json.double(value) } else { json.null() }
        }
        func hits(_ name: String, _ hits: [RetrievalHit]) {
            json.key(name)
            json.beginArray()
            for hit in hits { SearchCommand.writeHit(hit, into: &json, text: false) }
            json.endArray()
        }
        json.beginObject()
        json.field("question", answer.question)
        json.field("searched", answer.searchedText)
        json.field("answer", answer.text)
        let (grounding, reason): (String, String?) =
            switch answer.grounding {
            case .context: ("context", nil)
            case .generalKnowledge: ("general_knowledge", nil)
            case .searchOnly(let reason): ("search_only", reason)
            }
        json.field("grounding", grounding)
        json.field("reason", reason)
        json.field("used_context", answer.usedContext)
        json.field("model", model.identifier)
        hits("sources", answer.sources)
        hits("hits", answer.hits)
        let metrics = answer.metrics
        json.key("tokens")
        json.beginObject()
        number("prompt", metrics.promptTokens)
        number("answer", metrics.answerTokens)
        json.endObject()
        json.key("timings")
        json.beginObject()
        number("retrieval_seconds", metrics.retrievalSeconds)
        number("first_token_seconds", metrics.firstTokenSeconds)
        number("total_seconds", metrics.totalSeconds)
        number("tokens_per_second", metrics.tokensPerSecond)
        json.endObject()
        json.endObject()
        return json.text
    }
}
