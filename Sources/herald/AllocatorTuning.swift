#if canImport(Glibc)
import Glibc
#endif
import ServiceLifecycle

/// The C allocator's policy for the long-running server commands (`herald gateway`).
///
/// glibc gives memory freed at the top of a thread's heap back to the kernel once more than the
/// trim threshold (128 KiB by default) is free there. SQLite frees a ~20 KiB statement journal
/// after nearly every statement of a batch, so under load the store's thread crossed that line
/// and called `madvise(MADV_DONTNEED)` thousands of times a second, each one a TLB shootdown on
/// every core: 7% of the gateway's CPU in the provider-port benchmark (docs/benchmarks.md).
/// A higher threshold keeps up to that much free memory per heap instead.
///
/// Memory freed *inside* a heap, below chunks still in use, is not given back by `free`: after
/// 5,000 idle devices connected and left, the gateway's RSS stayed at 168 MiB (38 before), its
/// event-loop heaps holding ~110 MiB free (`malloc_stats`). ``HeapReturner`` calls
/// `malloc_trim(0)` every few seconds: 12 s after they left, 56 MiB.
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

    /// glibc's `malloc_trim(3)` (not in Swift's Glibc module either): gives the whole free pages
    /// of every heap back to the kernel; returns whether any were. `nil` where it does not exist.
    static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()
}

/// Gives the memory the C allocator holds free back to the kernel every `interval`, so that what
/// bursts of connections (handshakes, enrollments) allocated and freed does not stay resident for
/// the life of the process. A trim walks the allocator's free lists and costs well under a
/// millisecond when there is nothing to return; pages it returns and that are needed again cost
/// a page fault each.
struct HeapReturner: Service {
    let interval: Duration

    func run() async throws {
        guard let trim = AllocatorTuning.mallocTrim else { return }
        // Graceful shutdown cancels the sleep; the loop then ends.
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if !Task.isCancelled { _ = trim(0) }
            }
        }
    }
}
