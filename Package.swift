// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ContextualEmbeddings",
    // Synchronization's Mutex (macOS 15, iOS 18) is the oldest Apple floor the code compiles for.
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        // What a user imports. The encoder, its file readers, BLAS and the asset channel are
        // targets only: Embeddings re-exports the few of their types its API shows.
        .library(name: "Embeddings", targets: ["Embeddings"]),
        .library(name: "VectorIndex", targets: ["VectorIndex"]),
        .library(name: "Retrieval", targets: ["Retrieval"]),
        .library(name: "PostgresStorage", targets: ["PostgresStorage"]),
        // The tokenizers alone (no encoder): `import WordPiece` or `import SentencePiece`.
        .library(name: "Tokenizers", targets: ["Tokenization", "WordPiece", "SentencePiece"]),
        // Apple's FoundationModels API over the local language model: `import LanguageModels`.
        .library(name: "LanguageModels", targets: ["LanguageModels"]),
        // The retrieval app's answer step (a `ChunkStore` and a language model): `import Answering`.
        .library(name: "Answering", targets: ["Answering"]),
        .executable(name: "embeddings", targets: ["EmbeddingsCLI"]),
        .executable(name: "embeddings-bench", targets: ["EmbeddingsBench"]),
    ],
    targets: [
        // OpenBLAS on Linux; Apple platforms use Accelerate's CBLAS instead (see LinearAlgebra/BLAS.swift).
        .systemLibrary(
            name: "CBLAS",
            path: "Sources/CBLAS",
            pkgConfig: "openblas",
            providers: [.apt(["libopenblas-dev"])]
        ),
        // zlib, for the DEFLATE streams and CRC-32s of the wheels the asset channel unpacks.
        .systemLibrary(
            name: "CZlib",
            path: "Sources/CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        // libpq, PostgreSQL's C client, for the PostgreSQL + pgvector store.
        .systemLibrary(
            name: "CPostgres",
            path: "Sources/CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // GNU libmicrohttpd, the HTTP server under `embeddings serve`.
        .systemLibrary(
            name: "CMicroHTTPD",
            path: "Sources/CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]
        ),
        // Element-wise kernels in C, with an AVX2/FMA copy chosen at run time.
        .target(name: "CKernels"),
        .target(
            name: "LinearAlgebra",
            dependencies: ["CKernels", .target(name: "CBLAS", condition: .when(platforms: [.linux]))]
        ),
        .target(name: "Hashing"),
        .target(name: "Tokenization"),
        .target(name: "WordPiece", dependencies: ["Tokenization", "Hashing"]),
        .target(name: "SentencePiece", dependencies: ["Tokenization", "Hashing"]),
        .target(name: "BertEncoder", dependencies: ["LinearAlgebra"]),
        .target(name: "ModelAssets", dependencies: ["CZlib", "Hashing"]),
        .target(name: "VectorIndex", dependencies: ["LinearAlgebra"]),
        .target(
            name: "Embeddings",
            dependencies: [
                "LinearAlgebra", "Tokenization", "WordPiece", "SentencePiece", "BertEncoder", "ModelAssets",
                "VectorIndex",
            ]
        ),
        // Generation: the GGUF reader, byte-level BPE with chat templates, the causal decoder.
        .target(name: "GGUF", dependencies: ["LinearAlgebra"]),
        .target(name: "JSONText"),
        .target(name: "BytePairEncoding", dependencies: ["Tokenization", "Hashing", "JSONText"]),
        .target(
            name: "LlamaDecoder",
            dependencies: ["GGUF", "BytePairEncoding", "Tokenization", "LinearAlgebra", "ModelAssets"]),
        .target(name: "LanguageModels", dependencies: ["LlamaDecoder", "LinearAlgebra", "ModelAssets", "JSONText"]),
        .target(name: "Retrieval", dependencies: ["Embeddings", "VectorIndex", "LinearAlgebra", "Hashing"]),
        .target(name: "Answering", dependencies: ["Retrieval", "LanguageModels", "LinearAlgebra"]),
        .target(
            name: "PostgresStorage",
            dependencies: ["CPostgres", "Retrieval", "Embeddings", "VectorIndex", "LinearAlgebra"]),
        // The option declarations, parser and help layout both executables share.
        .target(name: "CommandLineOptions"),
        .executableTarget(
            name: "EmbeddingsCLI",
            dependencies: [
                "CommandLineOptions", "Embeddings", "ModelAssets", "VectorIndex", "Retrieval", "PostgresStorage",
                "LinearAlgebra", "Tokenization", "CMicroHTTPD", "LlamaDecoder", "Answering", "LanguageModels",
            ]
        ),
        .executableTarget(
            name: "EmbeddingsBench",
            dependencies: [
                "CommandLineOptions", "Embeddings", "ModelAssets", "VectorIndex", "LinearAlgebra", "Retrieval",
                "PostgresStorage",
                "LlamaDecoder", "LanguageModels", "Answering", "LoopbackHTTP",
            ],
            path: "Benchmarks/EmbeddingsBench"
        ),
        // A plain HTTP/1.1 client over a loopback socket, for the server's tests and the bench's
        // serve clients (no XCTest, so the benchmark executable can link it).
        .target(name: "LoopbackHTTP", path: "Tests/LoopbackHTTP"),
        // Helpers every test target may use; no model, no encoder.
        .target(name: "TestSupport", dependencies: ["LinearAlgebra", "LoopbackHTTP"], path: "Tests/TestSupport"),
        // The installed default model, for tests that run the real encoder.
        .target(
            name: "ModelTestSupport",
            dependencies: [
                "Embeddings", "ModelAssets", "LinearAlgebra", "TestSupport", "LlamaDecoder", "BytePairEncoding",
            ], path: "Tests/ModelTestSupport"),
        .testTarget(name: "HashingTests", dependencies: ["Hashing"]),
        .testTarget(name: "JSONTextTests", dependencies: ["JSONText"]),
        .testTarget(name: "LinearAlgebraTests", dependencies: ["LinearAlgebra", "TestSupport"]),
        .testTarget(
            name: "SentencePieceTests",
            dependencies: ["SentencePiece", "Tokenization", "Embeddings", "TestSupport", "ModelTestSupport"]),
        .testTarget(name: "WordPieceTests", dependencies: ["WordPiece", "Hashing", "TestSupport"]),
        .testTarget(
            name: "BertEncoderTests", dependencies: ["BertEncoder", "LinearAlgebra", "TestSupport", "ModelTestSupport"]),
        .testTarget(
            name: "ModelAssetsTests", dependencies: ["ModelAssets", "Hashing", "LinearAlgebra", "TestSupport"]),
        .testTarget(
            name: "EmbeddingsTests",
            dependencies: [
                "Embeddings", "Tokenization", "Retrieval", "VectorIndex", "LinearAlgebra", "ModelAssets", "TestSupport",
                "ModelTestSupport",
            ]
        ),
        .testTarget(
            name: "PostgresStorageTests",
            dependencies: [
                "PostgresStorage", "Retrieval", "Embeddings", "VectorIndex", "LinearAlgebra", "TestSupport",
                "ModelTestSupport",
            ]
        ),
        .testTarget(name: "GGUFTests", dependencies: ["GGUF", "LinearAlgebra", "TestSupport", "ModelTestSupport"]),
        .testTarget(
            name: "BytePairEncodingTests",
            dependencies: [
                "BytePairEncoding", "Tokenization", "GGUF", "LlamaDecoder", "TestSupport", "ModelTestSupport",
            ]),
        .testTarget(
            name: "LanguageModelsTests",
            dependencies: ["LanguageModels", "LlamaDecoder", "TestSupport", "ModelTestSupport"]),
        .testTarget(
            name: "AnsweringTests",
            dependencies: ["Answering", "Retrieval", "LanguageModels", "TestSupport", "ModelTestSupport"]
        ),
        .testTarget(
            name: "LlamaDecoderTests",
            dependencies: [
                "LlamaDecoder", "GGUF", "BytePairEncoding", "LinearAlgebra", "TestSupport", "ModelTestSupport",
            ]),
        .testTarget(name: "VectorIndexTests", dependencies: ["VectorIndex", "LinearAlgebra", "TestSupport"]),
        .testTarget(
            name: "RetrievalTests",
            dependencies: [
                "Retrieval", "Embeddings", "VectorIndex", "LinearAlgebra", "TestSupport", "ModelTestSupport",
            ]
        ),
        // The argument parser, its help layout and exit codes, without either executable.
        .testTarget(name: "CommandLineOptionsTests", dependencies: ["CommandLineOptions"]),
        // CrashSafetyTests' child process: an index save with AtomicFile's test settings (a stop
        // inside the save, the stale age) from its arguments, so that no shipping code reads test
        // hooks from the environment.
        .executableTarget(
            name: "CrashSafetyChild", dependencies: ["Retrieval", "VectorIndex"], path: "Tests/CrashSafetyChild"),
        // InfoCommandTests' child process: the kernel check at load with BLAS's test settings (a
        // stand-in core at load, a failing self-check) from its arguments, printing what `info` does.
        .executableTarget(name: "KernelCheckChild", dependencies: ["LinearAlgebra"], path: "Tests/KernelCheckChild"),
        // EmbeddingsCLI: the tests run the built `embeddings` executable in child processes
        // (CrashSafetyChild and KernelCheckChild are listed so that they are built, not imported).
        .testTarget(
            name: "CLITests",
            dependencies: [
                "EmbeddingsCLI", "CrashSafetyChild", "KernelCheckChild", "CommandLineOptions", "Embeddings",
                "Retrieval", "PostgresStorage", "VectorIndex", "LinearAlgebra", "TestSupport", "ModelTestSupport",
                "LlamaDecoder", "BytePairEncoding",
            ]
        ),
    ]
)
