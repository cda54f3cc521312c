import CKernels

extension Kernels {
    /// Runs `body` with the portable C kernels forced instead of the AVX2/FMA ones, then restores
    /// the best path this CPU runs. For tests that compare both paths with the references; the
    /// switch is process-wide, so nothing else may run kernels meanwhile.
    package static func withGenericPath<R>(_ body: () throws -> R) rethrows -> R {
        ce_force_generic(1)
        defer { ce_force_generic(0) }
        return try body()
    }
}
