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
        // The layers, bottom up; each module's folder is Sources/<layer>/<module> (Tests/ likewise):
        //   System       the C libraries from Debian (OpenBLAS, zlib, libpq, libmicrohttpd)
        //   Core         kernels, BLAS, hashing, JSON text, tokens, the asset channel, the vector index
        //   Embedding    the tokenizers and the encoder: text → vectors
        //   Generation   GGUF, BPE, chat templates, the decoder, the FoundationModels API: text → text
        //   Application  the retrieval app: chunks, hybrid search, stores, the answer step
        //   Interface    the command line and its server
        // A module depends only on modules of its own layer or below; Package.swift lists every
        // project module a target imports (scripts/check-imports.py checks both ways).

        // MARK: System
        // OpenBLAS on Linux; Apple platforms use Accelerate's CBLAS instead (see LinearAlgebra/BLAS.swift).
        .systemLibrary(
            name: "CBLAS", path: "Sources/System/CBLAS", pkgConfig: "openblas", providers: [.apt(["libopenblas-dev"])]),
        // zlib, for the DEFLATE streams and CRC-32s of the wheels the asset channel unpacks.
        .systemLibrary(
            name: "CZlib", path: "Sources/System/CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        // libpq, PostgreSQL's C client, for the PostgreSQL + pgvector store.
        .systemLibrary(
            name: "CPostgres", path: "Sources/System/CPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        // GNU libmicrohttpd, the HTTP server under `embeddings serve`.
        .systemLibrary(
            name: "CMicroHTTPD", path: "Sources/System/CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]),

        // MARK: Core
        // Kernels in C (element-wise, int8 and block-quantized products), each with vector copies
        // chosen at run time.
        .target(name: "CKernels", path: "Sources/Core/CKernels"),
        .target(
            name: "LinearAlgebra",
            dependencies: ["CKernels", .target(name: "CBLAS", condition: .when(platforms: [.linux]))],
            path: "Sources/Core/LinearAlgebra"),
        .target(name: "Hashing", path: "Sources/Core/Hashing"),
        .target(name: "JSONText", path: "Sources/Core/JSONText"),
        .target(name: "Tokenization", path: "Sources/Core/Tokenization"),
        .target(name: "ModelAssets", dependencies: ["CZlib", "Hashing"], path: "Sources/Core/ModelAssets"),
        .target(name: "VectorIndex", dependencies: ["LinearAlgebra"], path: "Sources/Core/VectorIndex"),

        // MARK: Embedding
        .target(name: "WordPiece", dependencies: ["Tokenization", "Hashing"], path: "Sources/Embedding/WordPiece"),
        .target(
            name: "SentencePiece", dependencies: ["Tokenization", "Hashing"], path: "Sources/Embedding/SentencePiece"),
        .target(name: "BertEncoder", dependencies: ["LinearAlgebra"], path: "Sources/Embedding/BertEncoder"),
        .target(
            name: "Embeddings",
            dependencies: [
                "LinearAlgebra", "Tokenization", "WordPiece", "SentencePiece", "BertEncoder", "ModelAssets",
                "VectorIndex",
            ],
            path: "Sources/Embedding/Embeddings"),

        // MARK: Generation
        // The GGUF reader, byte-level and SentencePiece BPE, Jinja chat templates, the causal
        // decoder, and Apple's FoundationModels API over it.
        .target(name: "GGUF", dependencies: ["CKernels"], path: "Sources/Generation/GGUF"),
        .target(
            name: "BytePairEncoding", dependencies: ["Tokenization", "Hashing"],
            path: "Sources/Generation/BytePairEncoding"),
        .target(name: "ChatTemplates", dependencies: ["JSONText"], path: "Sources/Generation/ChatTemplates"),
        .target(
            name: "LlamaDecoder",
            dependencies: [
                "GGUF", "BytePairEncoding", "ChatTemplates", "Tokenization", "LinearAlgebra", "ModelAssets",
            ],
            path: "Sources/Generation/LlamaDecoder"),
        // The HTTP client of OpenAI-compatible servers (URLSession; server-sent events), for generation
        // on another machine (issue 34).
        .target(
            name: "RemoteGeneration", dependencies: ["JSONText", "LinearAlgebra"],
            path: "Sources/Generation/RemoteGeneration"),
        .target(
            name: "LanguageModels",
            dependencies: [
                "LlamaDecoder", "BytePairEncoding", "ChatTemplates", "LinearAlgebra", "ModelAssets", "JSONText",
            ],
            path: "Sources/Generation/LanguageModels"),

        // MARK: Application
        .target(
            name: "Retrieval", dependencies: ["Embeddings", "VectorIndex", "LinearAlgebra", "Hashing"],
            path: "Sources/Application/Retrieval"),
        .target(
            name: "PostgresStorage",
            dependencies: ["CPostgres", "Retrieval", "Embeddings", "VectorIndex", "LinearAlgebra"],
            path: "Sources/Application/PostgresStorage"),
        .target(
            name: "Answering", dependencies: ["Retrieval", "LanguageModels", "LinearAlgebra"],
            path: "Sources/Application/Answering"),

        // MARK: Interface
        // The option declarations, parser and help layout both executables share.
        .target(name: "CommandLineOptions", path: "Sources/Interface/CommandLineOptions"),
        .executableTarget(
            name: "EmbeddingsCLI",
            dependencies: [
                "CommandLineOptions", "Embeddings", "ModelAssets", "VectorIndex", "Retrieval", "PostgresStorage",
                "LinearAlgebra", "Tokenization", "CMicroHTTPD", "LlamaDecoder", "Answering", "LanguageModels",
                "JSONText",
            ],
            path: "Sources/Interface/EmbeddingsCLI"),
        .executableTarget(
            name: "EmbeddingsBench",
            dependencies: [
                "CommandLineOptions", "Embeddings", "ModelAssets", "VectorIndex", "LinearAlgebra", "Retrieval",
                "PostgresStorage", "LlamaDecoder", "ChatTemplates", "LanguageModels", "Answering", "LoopbackHTTP",
            ],
            path: "Benchmarks/EmbeddingsBench"),

        // MARK: Test support
        // A plain HTTP/1.1 client over a loopback socket, for the server's tests and the bench's
        // serve clients (no XCTest, so the benchmark executable can link it).
        .target(name: "LoopbackHTTP", dependencies: ["LinearAlgebra"], path: "Tests/Support/LoopbackHTTP"),
        // Helpers every test target may use; no model, no encoder.
        .target(
            name: "TestSupport", dependencies: ["LinearAlgebra", "LoopbackHTTP"], path: "Tests/Support/TestSupport"),
        // The installed default models, for tests that run the real encoder and decoder.
        .target(
            name: "ModelTestSupport",
            dependencies: [
                "Embeddings", "ModelAssets", "LinearAlgebra", "TestSupport", "LlamaDecoder", "BytePairEncoding",
            ],
            path: "Tests/Support/ModelTestSupport"),
        // CrashSafetyTests' child process: an index save with AtomicFile's test settings (a stop
        // inside the save, the stale age) from its arguments, so that no shipping code reads test
        // hooks from the environment.
        .executableTarget(
            name: "CrashSafetyChild", dependencies: ["Retrieval", "VectorIndex"], path: "Tests/Support/CrashSafetyChild"
        ),
        // InfoCommandTests' child process: the kernel check at load with BLAS's test settings (a
        // stand-in core at load, a failing self-check) from its arguments, printing what `info` does.
        .executableTarget(
            name: "KernelCheckChild", dependencies: ["LinearAlgebra"], path: "Tests/Support/KernelCheckChild"),

        // MARK: Tests, by layer
        .testTarget(name: "HashingTests", dependencies: ["Hashing"], path: "Tests/Core/HashingTests"),
        .testTarget(name: "JSONTextTests", dependencies: ["JSONText"], path: "Tests/Core/JSONTextTests"),
        .testTarget(
            name: "LinearAlgebraTests", dependencies: ["LinearAlgebra", "TestSupport"],
            path: "Tests/Core/LinearAlgebraTests"),
        .testTarget(
            name: "ModelAssetsTests", dependencies: ["ModelAssets", "Hashing", "LinearAlgebra", "TestSupport"],
            path: "Tests/Core/ModelAssetsTests"),
        .testTarget(
            name: "VectorIndexTests", dependencies: ["VectorIndex", "LinearAlgebra", "TestSupport"],
            path: "Tests/Core/VectorIndexTests"),
        .testTarget(
            name: "WordPieceTests", dependencies: ["WordPiece", "Hashing", "TestSupport"],
            path: "Tests/Embedding/WordPieceTests"),
        .testTarget(
            name: "SentencePieceTests",
            dependencies: ["SentencePiece", "Tokenization", "Embeddings", "TestSupport", "ModelTestSupport"],
            path: "Tests/Embedding/SentencePieceTests"),
        .testTarget(
            name: "BertEncoderTests",
            dependencies: ["BertEncoder", "LinearAlgebra", "TestSupport", "ModelTestSupport"],
            path: "Tests/Embedding/BertEncoderTests"),
        .testTarget(
            name: "EmbeddingsTests",
            dependencies: [
                "Embeddings", "Tokenization", "Retrieval", "VectorIndex", "LinearAlgebra", "ModelAssets", "TestSupport",
                "ModelTestSupport",
            ], path: "Tests/Embedding/EmbeddingsTests"
        ),
        .testTarget(
            name: "GGUFTests",
            dependencies: ["GGUF", "LinearAlgebra", "LlamaDecoder", "TestSupport", "ModelTestSupport"],
            path: "Tests/Generation/GGUFTests"),
        .testTarget(
            name: "BytePairEncodingTests",
            dependencies: [
                "BytePairEncoding", "Tokenization", "GGUF", "LlamaDecoder", "TestSupport", "ModelTestSupport",
            ], path: "Tests/Generation/BytePairEncodingTests"),
        .testTarget(
            name: "ChatTemplatesTests", dependencies: ["ChatTemplates", "TestSupport"],
            path: "Tests/Generation/ChatTemplatesTests"),
        .testTarget(
            name: "LlamaDecoderTests",
            dependencies: ["LlamaDecoder", "LinearAlgebra", "TestSupport", "ModelTestSupport", "ChatTemplates"],
            path: "Tests/Generation/LlamaDecoderTests"),
        .testTarget(
            name: "RemoteGenerationTests",
            dependencies: ["RemoteGeneration", "JSONText", "LinearAlgebra", "LoopbackHTTP"],
            path: "Tests/Generation/RemoteGenerationTests"),
        .testTarget(
            name: "LanguageModelsTests",
            dependencies: [
                "LanguageModels", "LlamaDecoder", "LinearAlgebra", "TestSupport", "ModelTestSupport", "ChatTemplates",
            ],
            path: "Tests/Generation/LanguageModelsTests"),
        .testTarget(
            name: "RetrievalTests",
            dependencies: [
                "Retrieval", "Embeddings", "VectorIndex", "LinearAlgebra", "TestSupport", "ModelTestSupport",
            ], path: "Tests/Application/RetrievalTests"
        ),
        .testTarget(
            name: "PostgresStorageTests",
            dependencies: [
                "PostgresStorage", "Retrieval", "Embeddings", "VectorIndex", "LinearAlgebra", "TestSupport",
                "ModelTestSupport",
            ], path: "Tests/Application/PostgresStorageTests"
        ),
        .testTarget(
            name: "AnsweringTests",
            dependencies: ["Answering", "Retrieval", "LanguageModels", "TestSupport", "ModelTestSupport"],
            path: "Tests/Application/AnsweringTests"
        ),
        // The argument parser, its help layout and exit codes, without either executable.
        .testTarget(
            name: "CommandLineOptionsTests", dependencies: ["CommandLineOptions"],
            path: "Tests/Interface/CommandLineOptionsTests"),
        // EmbeddingsCLI: the tests run the built `embeddings` executable in child processes
        // (CrashSafetyChild and KernelCheckChild are listed so that they are built, not imported).
        .testTarget(
            name: "CLITests",
            dependencies: [
                "EmbeddingsCLI", "CrashSafetyChild", "KernelCheckChild", "CommandLineOptions", "Embeddings",
                "Retrieval", "PostgresStorage", "VectorIndex", "LinearAlgebra", "TestSupport", "ModelTestSupport",
                "LlamaDecoder", "ChatTemplates",
            ], path: "Tests/Interface/CLITests"
        ),
    ]
)
