import Embeddings
import Foundation
import LinearAlgebra
import Retrieval
import VectorIndex

/// `embeddings-bench quantization`: recall@10 of int8 and binary codes (with rescoring) against
/// exact search on real embeddings — every chunk of the corpora given (default: the built-in
/// lessons, plus the Node.js API docs when the machine has them), with 500 chunks held out as
/// queries, plus the evaluation questions.
enum QuantizationBench {
    static let nodeDocs = URL(fileURLWithPath: "/usr/share/doc/nodejs/api")

    static func run(corpora: [URL], evalSets: [URL], embedding: ContextualEmbedding, report: Report) throws -> String {
        var texts = [String]()
        var sources = [String]()
        for corpus in corpora {
            let (chunks, _) = try MarkdownChunker().chunks(ofFolder: corpus)
            texts += chunks.map(\.text)
            sources.append("\(corpus.lastPathComponent) (\(chunks.count) chunks)")
        }
        guard texts.count > 1_000 else {
            throw BenchFailure(message: "need more than 1,000 chunks, found \(texts.count)")
        }
        // Every (n / 500)-th chunk is a query, not in the index.
        let stride = texts.count / 500
        let heldOut = Set((0..<500).map { $0 * stride })
        var questions = [String]()
        for set in evalSets { questions += try EvaluationSet(contentsOf: set).cases.map(\.question) }
        FileHandle.standardError.write(Data("embedding \(texts.count) chunks and \(questions.count) questions…\n".utf8))
        let (vectors, seconds) = try timed { try embedding.sentenceVectors(for: texts, batchSize: 16) }
        let questionVectors = try embedding.sentenceVectors(for: questions, batchSize: 16)
        let indexed = texts.indices.filter { !heldOut.contains($0) }
        let d = embedding.dimension
        var index = try FlatIndex(
            dimension: d, ids: indexed.map { "c\($0)" }, rowMajorVectors: indexed.flatMap { vectors[$0] })
        let queries = heldOut.sorted().map { vectors[$0] } + questionVectors
        let exact = try queries.map { Set(try index.search($0, k: 10).map(\.row)) }
        func recall(_ precision: SearchPrecision, rescore: Int, in searched: FlatIndex) throws -> Double {
            var found = 0
            var wanted = 0
            for (q, truth) in zip(queries, exact) {
                wanted += truth.count
                found += try searched.search(q, k: 10, precision: precision, rescore: rescore).filter {
                    truth.contains($0.row)
                }.count
            }
            return Double(found) / Double(wanted)
        }
        var perVector = index
        perVector.buildCodes([.int8], int8Scheme: .perVector)
        index.buildCodes([.int8, .binary])
        let factors = [1, 2, 4, 10, 20]
        var rows = [[String]]()
        for (name, precision, searched) in [
            ("int8, range per dimension (default)", SearchPrecision.int8, index),
            ("int8, symmetric scale per vector", .int8, perVector),
            ("binary (sign bits)", .binary, index),
        ] {
            var row = [name]
            for factor in factors {
                let r = try recall(precision, rescore: factor, in: searched)
                report.add("quantization", "\(name) rescore ×\(factor) recall@10", r, "")
                row.append(String(format: factor == precision.defaultRescore ? "**%.3f**" : "%.3f", r))
            }
            rows.append(row)
        }
        var out =
            "### Recall@10 of codes with rescoring, against exact search — real embeddings on \(CPUInfo.current.modelName)\n\n"
        out +=
            "Index: \(indexed.count) chunks of \(sources.joined(separator: " + ")), embedded by \(embedding.modelIdentifier) in \(String(format: "%.0f", seconds)) s; queries: \(heldOut.count) held-out chunks + \(questions.count) evaluation questions. Bold: the default rescore factor.\n\n"
        out += table(["Codes"] + factors.map { "rescore ×\($0)" }, rows)
        return out
    }
}
