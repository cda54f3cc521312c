import Foundation
import Synchronization

#if canImport(Accelerate)
    import Accelerate
#else
    import CBLAS
#endif

/// The BLAS library the package runs on: what it is and which kernels it uses (for `embeddings
/// info` and benchmark headers), and the package's thin, typed wrappers over the C routines it calls.
///
/// All matrices are row-major `Float`. Pointers passed in are only read or written for the
/// duration of the call. This file and BLAS+Core.swift (the kernel check) are the only ones in the
/// package that talk to BLAS directly; every wrapper runs the kernel check before its first call.
package enum BLAS {
    /// Whether a matrix operand is used as stored or transposed.
    package enum Transpose: Sendable {
        case none
        case transposed

        var cblas: CBLAS_TRANSPOSE {
            switch self {
            case .none: return CblasNoTrans
            case .transposed: return CblasTrans
            }
        }
    }

    /// `C[M, N] = alpha · op(A)[M, K] · op(B)[K, N] + beta · C`, all row-major.
    ///
    /// `lda`, `ldb` and `ldc` are the row strides of the matrices as stored.
    /// - Complexity: O(M·N·K).
    package static func gemm(
        _ transA: Transpose, _ transB: Transpose,
        m: Int, n: Int, k: Int,
        alpha: Float = 1,
        a: UnsafePointer<Float>, lda: Int,
        b: UnsafePointer<Float>, ldb: Int,
        beta: Float = 0,
        c: UnsafeMutablePointer<Float>, ldc: Int
    ) {
        precondition(m >= 0 && n >= 0 && k >= 0, "gemm: negative dimension")
        guard m > 0, n > 0 else { return }
        prepare()
        cblas_sgemm(
            CblasRowMajor, transA.cblas, transB.cblas,
            Int32(m), Int32(n), Int32(k), alpha,
            a, Int32(lda), b, Int32(ldb), beta, c, Int32(ldc))
    }

    /// `y[M] = alpha · op(A) · x + beta · y` for a row-major `A[M, N]` (M and N as stored).
    /// - Complexity: O(M·N).
    package static func gemv(
        _ trans: Transpose, m: Int, n: Int, alpha: Float = 1,
        a: UnsafePointer<Float>, lda: Int,
        x: UnsafePointer<Float>, beta: Float = 0,
        y: UnsafeMutablePointer<Float>
    ) {
        precondition(m >= 0 && n >= 0, "gemv: negative dimension")
        guard m > 0, n > 0 else { return }
        prepare()
        cblas_sgemv(CblasRowMajor, trans.cblas, Int32(m), Int32(n), alpha, a, Int32(lda), x, 1, beta, y, 1)
    }

    /// The dot product of two contiguous vectors of `count` elements (0 when `count` is 0).
    package static func dot(_ x: UnsafePointer<Float>, _ y: UnsafePointer<Float>, count: Int) -> Float {
        guard count > 0 else { return 0 }
        prepare()
        return cblas_sdot(Int32(count), x, 1, y, 1)
    }

    /// The Euclidean norm of a contiguous vector, computed without overflow (0 when `count` is 0).
    package static func norm(_ x: UnsafePointer<Float>, count: Int) -> Float {
        guard count > 0 else { return 0 }
        prepare()
        return cblas_snrm2(Int32(count), x, 1)
    }

    /// `x *= alpha` in place over `count` contiguous values.
    package static func scale(_ x: UnsafeMutablePointer<Float>, count: Int, by alpha: Float) {
        guard count > 0 else { return }
        prepare()
        cblas_sscal(Int32(count), alpha, x, 1)
    }

    /// The number of threads BLAS uses inside one call (1 on Apple platforms, where Accelerate decides).
    ///
    /// Nothing in the package sets it as a side effect: OpenBLAS starts with its own choice
    /// (`OPENBLAS_NUM_THREADS`, else one per core). Inside `singleThreaded(_:)` it reads 1; a value
    /// set there takes effect when the last such scope ends.
    package static var threadCount: Int {
        get {
            #if canImport(Accelerate)
                return 1
            #else
                prepare()
                return Int(openblas_get_num_threads())
            #endif
        }
        set {
            precondition(newValue >= 1, "BLAS.threadCount must be at least 1")
            #if !canImport(Accelerate)
                prepare()
                threads.withOrderedLock { state in
                    if state.scopes > 0 {
                        state.outside = newValue
                    } else {
                        openblas_set_num_threads(Int32(newValue))
                    }
                }
            #endif
        }
    }

    /// `body` with BLAS running one thread per call, for callers that spread their own work over
    /// threads (the encoder: one batch per thread); `threadCount` is back to what it was when the
    /// last open scope ends. Scopes nest and may be open on several threads at once.
    ///
    /// OpenBLAS's thread count is process-wide: BLAS calls on other threads while a scope is open
    /// run single-threaded too.
    package static func singleThreaded<R>(_ body: () throws -> R) rethrows -> R {
        #if canImport(Accelerate)
            return try body()
        #else
            prepare()
            threads.withOrderedLock { state in
                if state.scopes == 0 {
                    state.outside = Int(openblas_get_num_threads())
                    if state.outside != 1 { openblas_set_num_threads(1) }
                }
                state.scopes += 1
            }
            defer {
                threads.withOrderedLock { state in
                    state.scopes -= 1
                    if state.scopes == 0, state.outside != 1 { openblas_set_num_threads(Int32(state.outside)) }
                }
            }
            return try body()
        #endif
    }

    #if !canImport(Accelerate)
        /// Open `singleThreaded` scopes, and the thread count to restore when the last one ends.
        private static let threads = Mutex<(scopes: Int, outside: Int)>((0, 1))
    #endif

    /// A one-line description of the BLAS library and the core in use, for benchmark headers:
    /// "OpenBLAS 0.3.21, core Cooperlake (corrected from Prescott)".
    package static var libraryDescription: String {
        let configuration = self.configuration
        var text = configuration.library + (configuration.version.map { " " + $0 } ?? "")
        if let core = configuration.coreInUse {
            text += ", core \(core)"
            if configuration.isCorrected, let atLoad = configuration.coreAtLoad {
                text += " (corrected from \(atLoad))"
            }
        }
        return text
    }
}
