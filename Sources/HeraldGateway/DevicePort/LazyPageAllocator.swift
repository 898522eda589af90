#if canImport(Glibc)
import Glibc
#endif
@_spi(CustomByteBufferAllocator) import NIOCore

extension ByteBufferAllocator {
    /// The allocator of device connections: buffers of ``LazyPages/threshold`` bytes or more get
    /// pages of their own from the kernel, which become resident only where they are written.
    ///
    /// SwiftNIO SSL gives every connection a 32 KiB buffer for decrypted bytes and a 16 KiB one
    /// for encrypted output. From the C heap they can reuse memory the TLS handshake has just
    /// dirtied, though a device's frames fill a few hundred bytes of them; mapped fresh, only the
    /// pages written count. Measured: 35 -> 32.5 KiB per idle connected device (the rest is
    /// elsewhere, docs/benchmarks.md). Smaller buffers come from `malloc` as before; each
    /// allocation carries a 16-byte header saying which it was.
    static let lazyLargePages = ByteBufferAllocator(
        allocate: { size in LazyPages.allocate(size) },
        reallocate: { pointer, oldSize, newSize in LazyPages.reallocate(pointer, oldSize: oldSize, newSize: newSize) },
        deallocate: { pointer in LazyPages.deallocate(pointer) },
        copy: { destination, source, count in _ = memcpy(destination, source, count) })
}

/// The allocation functions of ``NIOCore/ByteBufferAllocator/lazyLargePages``.
public enum LazyPages {
    /// Mappings one device connection holds: SwiftNIO SSL's plaintext buffer (32 KiB) and its
    /// outbound buffer (16 KiB).
    public static let mappingsPerConnection = 2
    /// Buffers this large or larger are mapped from the kernel rather than taken from `malloc`.
    static let threshold = 16 * 1024
    /// Bytes before every returned pointer: the mapped length, or 0 for a `malloc` block. 16 keeps
    /// the alignment `malloc` gives.
    static let header = 16

    static func allocate(_ size: Int) -> UnsafeMutableRawPointer? {
        if size >= threshold {
            let length = size + header
            if let base = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
               base != MAP_FAILED {
                base.storeBytes(of: UInt64(length), as: UInt64.self)
                return base + header
            }
            // Out of mappings (vm.max_map_count): the heap still works.
        }
        guard let base = malloc(size + header) else { return nil }
        base.storeBytes(of: UInt64(0), as: UInt64.self)
        return base + header
    }

    static func deallocate(_ pointer: UnsafeMutableRawPointer) {
        let base = pointer - header
        let mapped = base.load(as: UInt64.self)
        if mapped == 0 {
            free(base)
        } else {
            munmap(base, Int(mapped))
        }
    }

    static func reallocate(_ pointer: UnsafeMutableRawPointer?, oldSize: Int, newSize: Int) -> UnsafeMutableRawPointer? {
        guard let pointer else { return allocate(newSize) }
        let base = pointer - header
        let mapped = Int(base.load(as: UInt64.self))
        if mapped == 0, newSize < threshold {
            guard let grown = realloc(base, newSize + header) else { return nil }
            return grown + header
        }
        if mapped != 0, newSize + header <= mapped { return pointer }
        guard let moved = allocate(newSize) else { return nil }
        memcpy(moved, pointer, min(oldSize, newSize))
        deallocate(pointer)
        return moved
    }
}
