/// A dense row-major matrix of `Float`, stored contiguously.
///
/// `Matrix` is a value type with copy-on-write storage (it wraps an `Array`).
/// ```swift
/// var m = Matrix(rows: 2, columns: 3)
/// m[1, 2] = 4
/// m.row(1)   // [0, 0, 4]
/// ```
public struct Matrix: Equatable, Sendable {
    /// Number of rows.
    public let rows: Int
    /// Number of columns.
    public let columns: Int
    /// All elements, row after row (`rows × columns` values).
    public private(set) var values: [Float]

    /// A matrix of zeros.
    /// - Complexity: O(rows·columns).
    public init(rows: Int, columns: Int) {
        precondition(rows >= 0 && columns >= 0, "Matrix: negative dimension")
        self.rows = rows
        self.columns = columns
        self.values = [Float](repeating: 0, count: rows * columns)
    }

    /// A matrix over existing row-major values; `values.count` must equal `rows × columns`.
    public init(rows: Int, columns: Int, values: [Float]) {
        precondition(rows >= 0 && columns >= 0, "Matrix: negative dimension")
        precondition(values.count == rows * columns, "Matrix: \(values.count) values for \(rows)×\(columns)")
        self.rows = rows
        self.columns = columns
        self.values = values
    }

    /// The element at `row`, `column` (both must be in range).
    public subscript(row: Int, column: Int) -> Float {
        get {
            precondition(row >= 0 && row < rows && column >= 0 && column < columns, "Matrix index out of range")
            return values[row * columns + column]
        }
        set {
            precondition(row >= 0 && row < rows && column >= 0 && column < columns, "Matrix index out of range")
            values[row * columns + column] = newValue
        }
    }

    /// A copy of one row.
    public func row(_ index: Int) -> [Float] {
        precondition(index >= 0 && index < rows, "Matrix row out of range")
        return Array(values[(index * columns)..<((index + 1) * columns)])
    }

    /// Calls `body` with the contiguous elements. The pointer must not escape `body`.
    public func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<Float>) throws -> R) rethrows -> R {
        try values.withUnsafeBufferPointer(body)
    }

    /// Calls `body` with the mutable contiguous elements. The pointer must not escape `body`,
    /// and `body` must not replace the buffer.
    public mutating func withUnsafeMutableBufferPointer<R>(
        _ body: (inout UnsafeMutableBufferPointer<Float>) throws -> R
    ) rethrows -> R {
        try values.withUnsafeMutableBufferPointer(body)
    }
}
