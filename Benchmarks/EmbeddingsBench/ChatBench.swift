import CommandLineOptions
import Foundation
import LoopbackHTTP
import Retrieval

/// `embeddings-bench chat`: one conversation through `embeddings serve`'s
/// `/v1/chat/completions`, each turn sending the whole conversation again (as a chat client
/// does), on a server keeping decoder caches (`--chat-caches`, default) and on one keeping none
/// (`--chat-caches 0`): per turn, the prompt's tokens, those found in a cache, and the latency.
enum ChatBenchCommand: CommandDescription {
    static let name = "chat"
    static let abstract =
        "A conversation through 'embeddings serve' with kept decoder caches and without: per turn, prompt and cached tokens, latency."
    static let turns = Option<Int>(
        "--turns", valueName: "n", help: "With chat: the conversation's turns.", default: 8, range: 1...64)
    static var options: [any OptionDeclaration] { [turns, BenchOptions.corpus, BenchOptions.json] }
}

func runChatBench(_ parsed: ParsedArguments) throws {
    try expectNoArguments(parsed)
    let turns = try parsed.value(ChatBenchCommand.turns)
    let executable = try embeddingsExecutable()
    let (chunks, _) = try reporting { try MarkdownChunker().chunks(ofFolder: corpus(parsed)) }
    guard chunks.count >= turns else {
        throw CLIError.noInput("fewer than \(turns) chunks under \(corpus(parsed).path)")
    }
    // Each turn asks about a lesson passage of about 400 characters.
    let questions = (0..<turns).map { turn in
        "In one sentence, what does this passage say?\n\n"
            + String(chunks[turn * chunks.count / turns].text.prefix(400))
    }

    /// The conversation's turns on a server started with `arguments`: each turn's prompt tokens,
    /// cached tokens, seconds and answer.
    func converse(_ arguments: [String]) throws -> [(prompt: Int, cached: Int, seconds: Double, answer: String)] {
        let (process, port) = try ServeBench.startServer(executable, arguments)
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        var messages: [[String: String]] = []
        var rows: [(prompt: Int, cached: Int, seconds: Double, answer: String)] = []
        // A first request, not counted, loads the model (and leaves nothing this conversation shares
        // but the template's start).
        _ = try LoopbackHTTP.post(
            port: port, "/v1/chat/completions",
            json: ["messages": [["role": "user", "content": "Hello."]], "max_tokens": 1, "temperature": 0])
        for question in questions {
            messages.append(["role": "user", "content": question])
            let started = now()
            let reply = try LoopbackHTTP.post(
                port: port, "/v1/chat/completions",
                json: ["messages": messages, "max_tokens": 24, "temperature": 0] as [String: Any])
            let seconds = now() - started
            guard reply.status == 200, let json = try reply.json() as? [String: Any],
                let usage = json["usage"] as? [String: Any], let prompt = usage["prompt_tokens"] as? Int,
                let details = usage["prompt_tokens_details"] as? [String: Any],
                let cached = details["cached_tokens"] as? Int,
                let message = (json["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any],
                let answer = message["content"] as? String
            else { throw BenchFailure(message: "chat completion failed: \(reply.status) \(reply.text.prefix(300))") }
            messages.append(["role": "assistant", "content": answer])
            rows.append((prompt, cached, seconds, answer))
        }
        return rows
    }

    print("## embeddings-bench chat\n\n\(Machine.current().markdown)\n")
    let kept = try reporting { try converse([]) }
    let none = try reporting { try converse(["--chat-caches", "0"]) }
    // A kept cache holds the model's own tokens for earlier answers, a cacheless server the
    // tokenizer's split of their text: where the two differ, so may the answers (reported, not
    // an error).
    let differing = zip(kept, none).enumerated().filter { $1.0.answer != $1.1.answer }.map { $0.offset + 1 }
    print(
        "One conversation of \(turns) turns (a question on a ~400-character lesson passage each, greedy, at most 24 tokens per answer), the whole conversation sent every turn; default chat model, --chat-concurrency 1. Latency is the whole request (prefill of what is not cached, then the answer). \(differing.isEmpty ? "The answers are identical with and without kept caches." : "Answers differ with and without kept caches on turns \(differing.map(String.init).joined(separator: ", ")) (a kept cache holds the model's own tokens for earlier answers).")\n"
    )
    print(
        table(
            [
                "Turn", "Prompt tokens", "Cached (kept caches)", "Latency, kept caches", "Latency, --chat-caches 0",
                "Ratio",
            ],
            zip(kept, none).enumerated().map { turn, pair in
                [
                    "\(turn + 1)", "\(pair.0.prompt)", "\(pair.0.cached)",
                    String(format: "%.0f ms", pair.0.seconds * 1000),
                    String(format: "%.0f ms", pair.1.seconds * 1000),
                    String(format: "%.2f×", pair.1.seconds / pair.0.seconds),
                ]
            }))
    let keptTotal = kept.map(\.seconds).reduce(0, +)
    let noneTotal = none.map(\.seconds).reduce(0, +)
    print(
        String(
            format: "Whole conversation: %.2f s with kept caches, %.2f s without (%.2f×); last turn %.0f vs %.0f ms.",
            keptTotal, noneTotal, noneTotal / keptTotal, (kept.last?.seconds ?? 0) * 1000,
            (none.last?.seconds ?? 0) * 1000))
    if let path = parsed[BenchOptions.json] {
        try writeFigures(
            [
                "turns": Double(turns), "kept_caches_seconds": keptTotal, "no_caches_seconds": noneTotal,
                "turns_with_different_answers": Double(differing.count),
                "last_turn_prompt_tokens": Double(kept.last?.prompt ?? 0),
                "last_turn_cached_tokens": Double(kept.last?.cached ?? 0),
                "last_turn_kept_caches_seconds": kept.last?.seconds ?? 0,
                "last_turn_no_caches_seconds": none.last?.seconds ?? 0,
            ], to: path)
    }
}
