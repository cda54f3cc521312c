import Embeddings
import Foundation

/// `embeddings-bench sts FILE`: Spearman correlation between cosine similarity and the gold
/// scores of the STS Benchmark (tab-separated: score in column 5, sentences in columns 6 and 7).
enum STSBench {
    static let published = 82.03
    /// The least the int8 encoder may score (issue #22).
    static let int8Floor = 81.5

    static func spearman(_ x: [Double], _ y: [Double]) -> Double {
        func ranks(_ v: [Double]) -> [Double] {
            let order = v.indices.sorted { v[$0] < v[$1] }
            var r = [Double](repeating: 0, count: v.count)
            var i = 0
            while i < order.count {
                var j = i
                while j + 1 < order.count, v[order[j + 1]] == v[order[i]] { j += 1 }
                let average = Double(i + j) / 2 + 1
                for k in i...j { r[order[k]] = average }
                i = j + 1
            }
            return r
        }
        let rx = ranks(x)
        let ry = ranks(y)
        let mx = rx.reduce(0, +) / Double(rx.count)
        let my = ry.reduce(0, +) / Double(ry.count)
        var num = 0.0
        var dx = 0.0
        var dy = 0.0
        for i in rx.indices {
            num += (rx[i] - mx) * (ry[i] - my)
            dx += (rx[i] - mx) * (rx[i] - mx)
            dy += (ry[i] - my) * (ry[i] - my)
        }
        return num / (dx * dy).squareRoot()
    }

    static func run(file: String, embedding: ContextualEmbedding) throws -> (Double, Int) {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw BenchFailure(message: "cannot read \(file)")
        }
        var gold = [Double]()
        var first = [String]()
        var second = [String]()
        for (n, line) in text.split(separator: "\n").enumerated() {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count >= 7, let score = Double(fields[4]) else {
                throw BenchFailure(
                    message: "\(file):\(n + 1): expected a score in column 5 and sentences in columns 6 and 7")
            }
            gold.append(score)
            first.append(String(fields[5]))
            second.append(String(fields[6]))
        }
        let a = try embedding.sentenceVectors(for: first, batchSize: 32)
        let b = try embedding.sentenceVectors(for: second, batchSize: 32)
        let similarity = zip(a, b).map { x, y in zip(x, y).reduce(0.0) { $0 + Double($1.0) * Double($1.1) } }
        return (spearman(similarity, gold) * 100, gold.count)
    }
}
