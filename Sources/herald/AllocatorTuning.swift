#if canImport(Glibc)
import Glibc
#endif

/// The C allocator's policy for the long-running server commands (`herald gateway`).
///
/// glibc gives memory freed at the top of a thread's heap back to the kernel once more than the
/// trim threshold (128 KiB by default) is free there. SQLite frees a ~20 KiB statement journal
/// after nearly every statement of a batch, so under load the store's thread crossed that line
/// and called `madvise(MADV_DONTNEED)` thousands of times a second, each one a TLB shootdown on
/// every core: 7% of the gateway's CPU in the provider-port benchmark (docs/benchmarks.md).
/// A higher threshold keeps up to that much free memory per heap instead.
enum AllocatorTuning {
    /// Free bytes a heap keeps at its top before giving them back.
    static let trimThreshold: Int32 = 16 << 20

    static func applyForServer() {
        #if canImport(Glibc)
        // mallopt(3) is not in Swift's Glibc module; glibc exports it. M_TRIM_THRESHOLD is -1.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        _ = unsafeBitCast(symbol, to: Mallopt.self)(-1, trimThreshold)
        #endif
    }
}
