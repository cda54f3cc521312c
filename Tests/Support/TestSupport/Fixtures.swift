import Foundation

/// The repository's `Fixtures` folder, found from this source file's location.
package enum TestFixtures {
    /// `Fixtures/` at the root of the repository: beside the `Package.swift` above this file.
    package static let folder: URL = {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/",
            !FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path)
        {
            folder = folder.deletingLastPathComponent()
        }
        return folder.appendingPathComponent("Fixtures")
    }()

    /// The JSON file at `path` below `Fixtures/`, decoded as `T`.
    /// - Throws: the read or decoding error, naming the file.
    package static func decode<T: Decodable>(_ type: T.Type, from path: String) throws -> T {
        let url = folder.appendingPathComponent(path)
        do { return try JSONDecoder().decode(T.self, from: Data(contentsOf: url)) } catch {
            throw FixtureError(message: "Fixtures/\(path) is missing or unreadable: \(error)")
        }
    }
}

/// A fixture file that could not be read or decoded.
package struct FixtureError: Error, CustomStringConvertible {
    package let message: String
    package init(message: String) { self.message = message }
    package var description: String { message }
}

/// The first position where `a` and `b` differ (the shorter one's count when one is a prefix of
/// the other), or nil when they are equal: where a parity test's report starts.
package func firstDifference<T: Equatable>(_ a: [T], _ b: [T]) -> Int? {
    if let i = zip(a, b).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset { return i }
    return a.count == b.count ? nil : min(a.count, b.count)
}
