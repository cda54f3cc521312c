// swift-tools-version:5.9
import PackageDescription

let package = Package(
    name: "ContextualEmbeddings",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "Embeddings", targets: ["Embeddings"]),
        .library(name: "VectorIndex", targets: ["VectorIndex"]),
        .library(name: "WordPiece", targets: ["WordPiece"]),
        .library(name: "Encoder", targets: ["Encoder"]),
        .library(name: "LinearAlgebra", targets: ["LinearAlgebra"]),
        .library(name: "Retrieval", targets: ["Retrieval"]),
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
        // Element-wise kernels in C, with an AVX2/FMA copy chosen at run time.
        .target(name: "CKernels"),
        .target(
            name: "LinearAlgebra",
            dependencies: ["CKernels", .target(name: "CBLAS", condition: .when(platforms: [.linux]))]
        ),
        .target(name: "Hashing"),
        .target(name: "WordPiece", dependencies: ["Hashing"]),
        .target(name: "Encoder", dependencies: ["LinearAlgebra"]),
        .target(name: "VectorIndex", dependencies: ["LinearAlgebra"]),
        .target(name: "Embeddings", dependencies: ["LinearAlgebra", "WordPiece", "Encoder", "Hashing"]),
        .target(name: "Retrieval", dependencies: ["Embeddings", "VectorIndex", "LinearAlgebra", "Hashing"]),
        .executableTarget(name: "EmbeddingsCLI", dependencies: ["Embeddings", "VectorIndex", "Retrieval", "LinearAlgebra"]),
        .executableTarget(
            name: "EmbeddingsBench",
            dependencies: ["Embeddings", "VectorIndex", "LinearAlgebra", "Retrieval"],
            path: "Benchmarks/EmbeddingsBench"
        ),
        .target(name: "TestSupport", dependencies: ["Embeddings", "LinearAlgebra"], path: "Tests/TestSupport"),
        .testTarget(name: "LinearAlgebraTests", dependencies: ["LinearAlgebra", "TestSupport"]),
        .testTarget(name: "WordPieceTests", dependencies: ["WordPiece", "Hashing", "TestSupport"]),
        .testTarget(name: "EncoderTests", dependencies: ["Encoder", "Embeddings", "TestSupport"]),
        .testTarget(name: "EmbeddingsTests", dependencies: ["Embeddings", "TestSupport"]),
        .testTarget(name: "VectorIndexTests", dependencies: ["VectorIndex", "LinearAlgebra", "TestSupport"]),
        .testTarget(name: "RetrievalTests", dependencies: ["Retrieval", "VectorIndex", "LinearAlgebra", "TestSupport"]),
        .testTarget(name: "CLITests", dependencies: ["EmbeddingsCLI", "Embeddings", "TestSupport"]),
    ]
)
