// swift-tools-version:6.0
// A package written apart from the library, as a user's would be: it depends on ContextualEmbeddings
// by path and builds in Swift 6 language mode. `.ci/run` builds and runs it.
import PackageDescription

let package = Package(
    name: "PackageUser",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ContextualEmbeddings", path: "../..")],
    targets: [
        .executableTarget(
            name: "PackageUser",
            dependencies: [.product(name: "Embeddings", package: "ContextualEmbeddings")]
        ),
        .executableTarget(
            name: "SessionPatterns",
            dependencies: [.product(name: "LanguageModels", package: "ContextualEmbeddings")]
        ),
    ]
)
